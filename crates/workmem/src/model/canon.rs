//! Normal forms, identifiers and the JSON encodings of docs/format.md.
//!
//! Everything here is pure and must stay byte-compatible with the Python
//! teaching implementation: whitespace is Python's `str.isspace` set, case
//! folding is Unicode full folding (`str.casefold`), hashes are SHA-256 of
//! UTF-8, and JSON is written with sorted keys and raw non-ASCII in three
//! layouts (canonical, JSONL line, pretty).

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

use crate::error::{Error, Invalid, Result};
use crate::model::text::{check_text, is_space};

/// Longest accepted memory_key, in characters.
pub const MAX_MEMORY_KEY_CHARS: usize = 120;
/// Longest accepted id (fact, event, conflict, candidate), in characters.
pub const MAX_ID_CHARS: usize = 200;

/// Returns `text` with every whitespace run collapsed to one space and the
/// ends trimmed (no case change).
pub fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        if is_space(c) {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    out
}

/// Returns whether `text` is already whitespace-collapsed (what
/// [`collapse_whitespace`] would return unchanged), without allocating.
pub fn is_collapsed(text: &str) -> bool {
    let mut previous_space = true; // no leading space
    for c in text.chars() {
        if c == ' ' {
            if previous_space {
                return false;
            }
            previous_space = true;
        } else if is_space(c) {
            return false;
        } else {
            previous_space = false;
        }
    }
    !previous_space || text.is_empty()
}

/// Whether `bytes` is non-empty printable ASCII, already
/// whitespace-collapsed: no space at either end, never two in a row. Most
/// fact content is; it needs no collapsing, folding or character checks.
pub(crate) fn is_collapsed_printable_ascii(bytes: &[u8]) -> bool {
    printable_ascii(bytes)
        && bytes.first().is_some_and(|&b| b != b' ')
        && bytes.last().is_some_and(|&b| b != b' ')
        && !has_double_space(bytes)
}

/// Whether every byte of `bytes` is printable ASCII (`' '..='~'`): never a
/// refused character, and one byte per character.
pub(crate) fn printable_ascii(bytes: &[u8]) -> bool {
    // No early exit: the loop is vectorized (content is at most 8,000 bytes).
    bytes.iter().fold(0, |other, &b| other | u8::from(!(0x20..0x7f).contains(&b))) == 0
}

/// Whether `bytes` holds two spaces in a row (whitespace-collapsed text
/// never does). Fact content is short: one pass over byte pairs, which
/// the compiler vectorizes, costs less than setting up a substring search
/// for each fact.
fn has_double_space(bytes: &[u8]) -> bool {
    let pairs = bytes.iter().zip(bytes.iter().skip(1));
    pairs.fold(0u8, |found, (a, b)| found | u8::from(*a == b' ' && *b == b' ')) != 0
}

/// Returns the normal form of `text`: whitespace collapsed and trimmed, then
/// Unicode full case folding (`"Straße"` becomes `"strasse"`).
pub fn normal_form(text: &str) -> String {
    // ASCII without whitespace to collapse (stored content): lowercase.
    if is_collapsed_printable_ascii(text.as_bytes()) {
        return text.to_ascii_lowercase();
    }
    let collapsed = collapse_whitespace(text);
    if collapsed.is_ascii() {
        return collapsed.to_ascii_lowercase();
    }
    caseless::default_case_fold_str(&collapsed)
}

/// Returns the cleaned memory_key: trimmed, case-folded and checked against
/// `^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$` and the 120-character limit.
///
/// Errors: [`Error::InvalidInput`] naming `memory_key`.
pub fn clean_memory_key(raw: &str) -> Result<String> {
    let trimmed = raw.trim_matches(is_space);
    let key = if trimmed.is_ascii() {
        trimmed.to_ascii_lowercase()
    } else {
        caseless::default_case_fold_str(trimmed)
    };
    if key.is_empty() {
        return Err(Error::invalid("memory_key", Invalid::Empty));
    }
    if key.chars().count() > MAX_MEMORY_KEY_CHARS {
        return Err(Error::invalid(
            "memory_key",
            Invalid::TooLong { chars: key.chars().count(), max: MAX_MEMORY_KEY_CHARS },
        ));
    }
    if !memory_key_shape(&key) {
        return Err(Error::invalid(
            "memory_key",
            Invalid::Malformed {
                rule: "lowercase words of a-z and 0-9 joined by '.', '_' or '-', starting with a letter \
                       (e.g. runtime.python-version)",
            },
        ));
    }
    Ok(key)
}

/// Returns whether `key` has the shape of a clean memory key (lowercase
/// words of `a-z 0-9` joined by `.`, `_` or `-`, starting with a letter);
/// such a key of at most [`MAX_MEMORY_KEY_CHARS`] bytes is its own
/// [`clean_memory_key`].
pub(crate) fn memory_key_shape(key: &str) -> bool {
    let bytes = key.as_bytes();
    if !bytes.first().is_some_and(u8::is_ascii_lowercase) {
        return false;
    }
    let mut after_separator = false;
    for &b in bytes {
        match b {
            b'a'..=b'z' | b'0'..=b'9' => after_separator = false,
            b'.' | b'_' | b'-' if !after_separator => after_separator = true,
            _ => return false,
        }
    }
    !after_separator
}

/// Returns whether every byte of `bytes` may be in an id: `A-Z a-z 0-9 .
/// _ : / -`. Comparisons only, no early exit, so that the compiler checks
/// many bytes at a time: a large curated state holds hundreds of thousands
/// of evidence ids, each checked on every load and save.
fn id_bytes(bytes: &[u8]) -> bool {
    // `-` `.` `/` `0-9` `:` are 0x2d..=0x3a; `| 0x20` folds the case.
    let allowed =
        |b: u8| b.wrapping_sub(b'-') < 14 || b == b'_' || (b | 0x20).wrapping_sub(b'a') < 26;
    bytes.iter().fold(0u8, |refused, &b| refused | u8::from(!allowed(b))) == 0
}

/// Checks an id (fact, event, conflict or candidate id) against
/// `^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$`.
///
/// Errors: [`Error::InvalidInput`] naming `field`.
pub fn check_id(field: &str, id: &str) -> Result<()> {
    let bytes = id.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= MAX_ID_CHARS
        && bytes[0].is_ascii_alphanumeric()
        && id_bytes(bytes);
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            Invalid::Malformed {
                rule: "1-200 characters of A-Z a-z 0-9 . _ : / -, starting with a letter or digit",
            },
        ))
    }
}

/// Returns `text` whitespace-collapsed and checks it is non-empty, at most
/// `max_chars` characters and free of control and format characters
/// ([`check_text`]; used for actor and rationale).
///
/// Errors: [`Error::InvalidInput`] naming `field`.
pub fn clean_text(field: &str, text: &str, max_chars: usize) -> Result<String> {
    let cleaned = collapse_whitespace(text);
    if cleaned.is_empty() {
        return Err(Error::invalid(field, Invalid::Empty));
    }
    check_text(field, &cleaned)?;
    let chars = cleaned.chars().count();
    if chars > max_chars {
        return Err(Error::invalid(field, Invalid::TooLong { chars, max: max_chars }));
    }
    Ok(cleaned)
}

/// Returns the lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The first `chars` hex digits of the SHA-256 of `material`: the ids
/// below, and the checks that end the lines of some caches.
pub(crate) fn short_hash(material: &str, chars: usize) -> String {
    let mut full = sha256_hex(material.as_bytes());
    full.truncate(chars);
    full
}

/// Returns the workspace id of a canonical project path.
pub fn workspace_id(canonical_project: &str) -> String {
    short_hash(canonical_project, 16)
}

/// Returns the entry key of an unkeyed curated entry.
pub fn unkeyed_entry_key(kind: &str, content: &str) -> String {
    short_hash(&format!("{kind}\0{}", normal_form(content)), 16)
}

/// Returns the entry key of revision `revision` of a keyed curated entry.
pub fn keyed_entry_key(memory_key: &str, revision: u32, kind: &str, content: &str) -> String {
    short_hash(&format!("{memory_key}\0revision:{revision}\0{kind}\0{}", normal_form(content)), 16)
}

/// Returns the candidate id of a proposal in a conflict domain.
pub fn candidate_id(memory_key: &str, kind: &str, content: &str) -> String {
    format!(
        "candidate-{}",
        short_hash(&format!("{memory_key}\0{kind}\0{}", normal_form(content)), 16)
    )
}

/// Returns the conflict id of a case with `fingerprint`.
pub fn conflict_id(workspace_id: &str, memory_key: &str, fingerprint: &str) -> String {
    format!("conflict-{}", short_hash(&format!("{workspace_id}\0{memory_key}\0{fingerprint}"), 16))
}

/// Returns the transaction id of the resolution with `event_id`.
pub fn transaction_id(workspace_id: &str, event_id: &str) -> String {
    format!("resolution-{}", short_hash(&format!("{workspace_id}\0{event_id}"), 24))
}

/// Returns the transaction id of a correction: `correction-` and 24 hex of
/// SHA-256 of the workspace id and the correction's event id.
pub fn correction_transaction_id(workspace_id: &str, event_id: &str) -> String {
    format!("correction-{}", short_hash(&format!("{workspace_id}\0{event_id}"), 24))
}

/// Returns the fact id an imported item without `fact_id` gets: `import-`
/// and 32 hex of SHA-256 of the workspace id, the item's canonical JSON
/// and its occurrence among identical items of the input (0 for the first),
/// so that re-running an interrupted import finds what it already wrote.
pub fn import_fact_id(workspace_id: &str, item_json: &str, occurrence: usize) -> String {
    format!("import-{}", short_hash(&format!("{workspace_id}\0{item_json}\0{occurrence}"), 32))
}

/// JSON layouts used on disk and for hashing. Keys are always sorted by code
/// point and non-ASCII is written raw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonStyle {
    /// `,` and `:` separators, no whitespace: the input of every hash.
    Canonical,
    /// Python's `json.dumps` defaults (`, ` and `: `): one JSONL record.
    Line,
    /// Two-space indentation (Python `indent=2`): the canonical state files.
    Pretty,
}

/// Returns `value` encoded in `style` (no trailing newline).
pub fn to_json(value: &Value, style: JsonStyle) -> String {
    let mut out = String::new();
    write_value(&mut out, value, style, 0);
    out
}

/// Returns the canonical JSON of `value` (docs/format.md).
pub fn canonical_json(value: &Value) -> String {
    to_json(value, JsonStyle::Canonical)
}

/// Returns a workmem record encoded in `style` straight from its
/// `Serialize` implementation, without building a [`Value`]: the same bytes
/// as [`to_json`] of its value, several times faster on large states.
///
/// The record's struct fields must be declared in sorted order (serde emits
/// them in declaration order); debug builds, and so every test, check the
/// result against [`to_json`].
///
/// # Panics
/// If `record` cannot be represented as JSON (a map with non-string keys),
/// which no workmem record has.
pub fn encode<T: serde::Serialize + ?Sized>(record: &T, style: JsonStyle) -> String {
    let mut out = Vec::with_capacity(256);
    let written = match style {
        JsonStyle::Canonical => record.serialize(&mut serde_json::Serializer::new(&mut out)),
        JsonStyle::Line => {
            record.serialize(&mut serde_json::Serializer::with_formatter(&mut out, LineFormatter))
        }
        JsonStyle::Pretty => record.serialize(&mut serde_json::Serializer::with_formatter(
            &mut out,
            serde_json::ser::PrettyFormatter::with_indent(b"  "),
        )),
    };
    written.expect("records serialize to JSON");
    let text = String::from_utf8(out).expect("serde_json writes UTF-8");
    debug_assert_eq!(
        text,
        to_json(&serde_json::to_value(record).expect("records serialize to JSON"), style),
        "the fields of {} must be declared in sorted order",
        std::any::type_name::<T>()
    );
    text
}

/// Python's `json.dumps` default separators, `, ` and `: `.
struct LineFormatter;

impl serde_json::ser::Formatter for LineFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

fn write_value(out: &mut String, value: &Value, style: JsonStyle, depth: usize) {
    match value {
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                separator(out, style, index, depth + 1);
                write_value(out, item, style, depth + 1);
            }
            close(out, style, depth, ']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            // Sorting here (not relying on the map's order) keeps hashes
            // stable even if a dependency turns on serde_json's
            // `preserve_order` through feature unification.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                separator(out, style, index, depth + 1);
                write_string(out, key);
                out.push_str(if style == JsonStyle::Canonical { ":" } else { ": " });
                write_value(out, &map[key], style, depth + 1);
            }
            close(out, style, depth, '}');
        }
        Value::String(text) => write_string(out, text),
        other => out.push_str(&other.to_string()),
    }
}

fn separator(out: &mut String, style: JsonStyle, index: usize, depth: usize) {
    match style {
        JsonStyle::Canonical => {
            if index > 0 {
                out.push(',');
            }
        }
        JsonStyle::Line => {
            if index > 0 {
                out.push_str(", ");
            }
        }
        JsonStyle::Pretty => {
            if index > 0 {
                out.push(',');
            }
            out.push('\n');
            for _ in 0..depth {
                out.push_str("  ");
            }
        }
    }
}

fn close(out: &mut String, style: JsonStyle, depth: usize, bracket: char) {
    if style == JsonStyle::Pretty {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
    out.push(bracket);
}

/// Returns whether `bytes` stand in a JSON string as they are: no `"`,
/// `\\` or control character, the bytes [`write_string`] escapes (a
/// comparison per byte, which the compiler does many bytes at a time).
pub(crate) fn is_unescaped(bytes: &[u8]) -> bool {
    let plain = |b: u8| b >= 0x20 && b != b'"' && b != b'\\';
    bytes.iter().fold(0u8, |escaped, &b| escaped | u8::from(!plain(b))) == 0
}

/// Writes a JSON string the way Python's `json.dumps(ensure_ascii=False)`
/// does: `"` `\` and control characters escaped, everything else raw.
pub(crate) fn write_string(out: &mut String, text: &str) {
    out.push('"');
    let mut plain = 0;
    for (at, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[plain..at]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{byte:04x}");
        } else {
            out.push_str(escape);
        }
        plain = at + 1;
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whitespace_collapse_uses_python_isspace_set() {
        assert_eq!(collapse_whitespace("  a \t\n b\u{1c}c\u{3000}d  "), "a b c d");
        assert_eq!(collapse_whitespace("\u{85}x\u{a0}"), "x");
        assert_eq!(collapse_whitespace(""), "");
    }

    #[test]
    fn collapsed_check_agrees_with_collapse() {
        for text in
            ["", " ", "a", "a b", " a", "a ", "a  b", "a\tb", "a\u{3000}b", "\u{1c}", "ab c d"]
        {
            assert_eq!(is_collapsed(text), collapse_whitespace(text) == text, "{text:?}");
        }
    }

    #[test]
    fn double_spaces_are_found_anywhere() {
        for (text, expected) in [
            ("", false),
            (" ", false),
            ("  ", true),
            ("a b c", false),
            ("a  b", true),
            ("ab  ", true),
            ("  ab", true),
            ("a \t b", false),
        ] {
            assert_eq!(has_double_space(text.as_bytes()), expected, "{text:?}");
        }
        let long = format!("{}  x", "a b".repeat(100));
        assert!(has_double_space(long.as_bytes()));
    }

    #[test]
    fn normal_form_folds_fully() {
        assert_eq!(normal_form(" Straße  IST "), "strasse ist");
        assert_eq!(normal_form("ΣΑΣ"), "σασ");
    }

    #[test]
    fn memory_key_rules() {
        assert_eq!(
            clean_memory_key("  Runtime.Python-Version ").unwrap(),
            "runtime.python-version"
        );
        for bad in ["", "1abc", "a..b", "a.", "a b", "_a", "a-_b", "Ä"] {
            assert!(clean_memory_key(bad).is_err(), "{bad:?} accepted");
        }
        assert!(clean_memory_key(&"a".repeat(120)).is_ok());
        assert!(clean_memory_key(&"a".repeat(121)).is_err());
    }

    #[test]
    fn id_bytes_are_the_rule_s() {
        for b in 0..=255u8 {
            let allowed =
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'/' | b'-');
            assert_eq!(id_bytes(&[b]), allowed, "{b:#04x}");
            assert_eq!(id_bytes(&[b'a', b, b'9']), allowed, "{b:#04x}");
            let plain = b >= 0x20 && b != b'"' && b != b'\\';
            assert_eq!(is_unescaped(&[b, b'x']), plain, "{b:#04x}");
        }
    }

    #[test]
    fn id_rules() {
        assert!(check_id("fact_id", "a").is_ok());
        assert!(check_id("fact_id", "review:x/y-1.2_3").is_ok());
        assert!(check_id("fact_id", &"a".repeat(200)).is_ok());
        for bad in ["", "-a", "a b", "ä", &"a".repeat(201)] {
            assert!(check_id("fact_id", bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn json_layouts() {
        let value = json!({"b": [1, "x"], "a": {"é": "\u{1}\n"}, "c": [], "d": {}, "e": null});
        assert_eq!(
            to_json(&value, JsonStyle::Canonical),
            "{\"a\":{\"é\":\"\\u0001\\n\"},\"b\":[1,\"x\"],\"c\":[],\"d\":{},\"e\":null}"
        );
        assert_eq!(
            to_json(&value, JsonStyle::Line),
            "{\"a\": {\"é\": \"\\u0001\\n\"}, \"b\": [1, \"x\"], \"c\": [], \"d\": {}, \"e\": null}"
        );
        assert_eq!(
            to_json(&value, JsonStyle::Pretty),
            "{\n  \"a\": {\n    \"é\": \"\\u0001\\n\"\n  },\n  \"b\": [\n    1,\n    \"x\"\n  ],\n  \"c\": [],\n  \"d\": {},\n  \"e\": null\n}"
        );
    }
}
