//! The format-stable JSONL line of a fact: the encoder of the append path,
//! and the decoder every reader uses, which checks each field by the rules
//! of the fact model and reads either a whole [`Fact`] or the slim
//! [`FactSummary`] whole-log scans need.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;

use crate::error::{Damage, Invalid, describe_json_error};
use crate::model::canon;
use crate::model::fact::{
    FACT_SCHEMA_VERSION, Fact, Kind, MAX_EVIDENCE_ENTRIES, REDACTED, check_evidence_pair,
    check_importance, check_source, check_stored_content, json_type,
};
use crate::model::stamp::Stamp;

impl Fact {
    /// Returns the JSONL record of this fact, newline included, laid out like
    /// Python's `json.dumps(sort_keys=True, ensure_ascii=False)`.
    pub fn to_line(&self) -> String {
        // Straight from the type (its fields are declared in sorted order)
        // by the one typed encoder; pinned by a unit test and the canonical
        // pins.
        let mut line = canon::encode(self, canon::JsonStyle::Line);
        line.push('\n');
        line
    }

    /// Parses and validates one log line (without its newline).
    ///
    /// Returns a message fragment naming the bad field; the caller adds the
    /// file and line. Scope is checked by the caller.
    pub(crate) fn parse_line(line: &[u8]) -> std::result::Result<Fact, Damage> {
        let (raw, checked) = RawFact::parse(line)?;
        Ok(raw.into_fact(checked))
    }
}

/// Names what is wrong with a line serde refused, more precisely than
/// serde's message: invalid UTF-8, a JSON value that is not an object, or
/// the field whose value has the wrong type. Runs on the error path only.
fn describe_line_error(line: &[u8], err: &serde_json::Error) -> String {
    if let Err(bad) = std::str::from_utf8(line) {
        return format!("not valid UTF-8 (invalid byte at offset {})", bad.valid_up_to());
    }
    if err.classify() == serde_json::error::Category::Data
        && let Ok(value) = serde_json::from_slice::<serde_json::Value>(line)
    {
        let Some(object) = value.as_object() else {
            return format!("not a JSON object (found {})", json_type(&value));
        };
        for (name, expected) in FIELD_TYPES {
            let Some(found) = object.get(*name) else { continue };
            let fits = match *expected {
                "a string" => found.is_string(),
                "a string or null" => found.is_string() || found.is_null(),
                "an integer or null" => found.is_i64() || found.is_u64() || found.is_null(),
                _ => {
                    found.is_null()
                        || found
                            .as_object()
                            .is_some_and(|map| map.values().all(serde_json::Value::is_string))
                }
            };
            if !fits {
                return format!("invalid {name}: expected {expected}, found {}", json_type(found));
            }
        }
    }
    describe_json_error(err)
}

/// The JSON type each field of a fact line must have.
const FIELD_TYPES: &[(&str, &str)] = &[
    ("content", "a string"),
    ("evidence", "an object of strings or null"),
    ("fact_id", "a string"),
    ("importance", "an integer or null"),
    ("kind", "a string"),
    ("line_sha256", "a string or null"),
    ("memory_key", "a string or null"),
    ("recorded_at", "a string"),
    ("redacted_by", "a string or null"),
    ("schema_version", "an integer or null"),
    ("source", "a string or null"),
    ("workspace_id", "a string"),
];

/// A fact line as parsed, borrowing from the line where it can. Validated
/// once, then turned into a [`Fact`] or a [`FactSummary`].
#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct RawFact<'a> {
    #[serde(borrow)]
    content: Cow<'a, str>,
    #[serde(default, borrow)]
    evidence: Option<RawEvidence<'a>>,
    #[serde(borrow)]
    fact_id: Cow<'a, str>,
    #[serde(default)]
    importance: Option<i64>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    line_sha256: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    memory_key: Option<Cow<'a, str>>,
    #[serde(borrow)]
    recorded_at: Cow<'a, str>,
    #[serde(default, borrow)]
    redacted_by: Option<Cow<'a, str>>,
    #[serde(default)]
    schema_version: Option<i64>,
    #[serde(default, borrow)]
    source: Option<Cow<'a, str>>,
    #[serde(borrow)]
    workspace_id: Cow<'a, str>,
}

/// Evidence pairs in file order, borrowed where possible.
#[derive(Debug, PartialEq)]
struct RawEvidence<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'de: 'a, 'a> Deserialize<'de> for RawEvidence<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct Pairs<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Pairs<'a> {
            type Value = RawEvidence<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> std::result::Result<Self::Value, M::Error> {
                let mut pairs = Vec::new();
                while let Some((key, value)) =
                    map.next_entry::<BorrowedText<'a>, BorrowedText<'a>>()?
                {
                    if pairs.len() == MAX_EVIDENCE_ENTRIES {
                        return Err(serde::de::Error::custom(format!(
                            "more than {MAX_EVIDENCE_ENTRIES} evidence entries"
                        )));
                    }
                    pairs.push((key.0, value.0));
                }
                Ok(RawEvidence(pairs))
            }
        }
        deserializer.deserialize_map(Pairs(std::marker::PhantomData))
    }
}

/// A string that borrows from the input when it has no escapes.
struct BorrowedText<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for BorrowedText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        Cow::<'a, str>::deserialize(deserializer).map(BorrowedText)
    }
}

/// The checked fields of a line that every reader needs.
struct Checked {
    /// Whether recorded_at is `YYYY-MM-DDTHH:MM:SSZ`, what
    /// [`Stamp::from_timestamp`] writes of its instant.
    plain_stamp: bool,
    kind: Kind,
    importance: u8,
    has_key: bool,
    recorded_at: jiff::Timestamp,
    schema_version: u32,
}

impl RawFact<'_> {
    /// Checks every field as on append; returns the parsed values.
    fn check(&self) -> std::result::Result<Checked, Damage> {
        let schema_version = match self.schema_version.unwrap_or(1) {
            1 => 1,
            2 => 2,
            other => {
                return Err(Damage::record(format!(
                    "unsupported fact schema_version {other} (supported: 1, {FACT_SCHEMA_VERSION})"
                )));
            }
        };
        canon::check_id("fact_id", &self.fact_id).map_err(Damage::field)?;
        check_stored_content(&self.content)?;
        let kind = Kind::parse(&self.kind).map_err(Damage::field)?;
        let importance = check_importance(self.importance.unwrap_or(3)).map_err(Damage::field)?;
        let has_key = match self.memory_key.as_deref() {
            None | Some("") => false,
            // Already in normal form: nothing to fold or trim.
            Some(raw)
                if raw.len() <= canon::MAX_MEMORY_KEY_CHARS && canon::memory_key_shape(raw) =>
            {
                true
            }
            Some(raw) => {
                let key = canon::clean_memory_key(raw).map_err(Damage::field)?;
                if key != raw {
                    return Err(Damage::record(format!(
                        "invalid memory_key: {raw:?} is not in normal form"
                    )));
                }
                true
            }
        };
        check_source(self.source.as_deref().unwrap_or("agent")).map_err(Damage::field)?;
        if let Some(evidence) = &self.evidence {
            for (key, value) in &evidence.0 {
                check_evidence_pair(key, value).map_err(Damage::field)?;
            }
        }
        let plain = crate::model::stamp::parse_utc_seconds(self.recorded_at.as_bytes());
        let recorded_at = match plain {
            Some(at) => at,
            None => crate::model::stamp::parse_instant(&self.recorded_at).map_err(|err| {
                Damage::Field { field: "recorded_at".to_owned(), reason: Invalid::Instant(err) }
            })?,
        };
        if self.workspace_id.len() != 16
            || !self.workspace_id.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(Damage::record(format!("invalid workspace_id {:?}", self.workspace_id)));
        }
        self.check_tombstone()?;
        Ok(Checked {
            plain_stamp: plain.is_some(),
            kind,
            importance,
            has_key,
            recorded_at,
            schema_version,
        })
    }

    /// Checks the fields of a tombstone: both of `redacted_by` and
    /// `line_sha256` or neither, and with them the marker as content and
    /// source and no evidence.
    fn check_tombstone(&self) -> std::result::Result<(), Damage> {
        let (by, hash) = match (&self.redacted_by, &self.line_sha256) {
            (None, None) => return Ok(()),
            (Some(by), Some(hash)) => (by, hash),
            _ => {
                return Err(Damage::record(
                    "a tombstone needs both redacted_by and line_sha256".to_owned(),
                ));
            }
        };
        canon::check_id("redacted_by", by).map_err(Damage::field)?;
        if hash.len() != 64 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(Damage::record(format!(
                "invalid line_sha256 {hash:?}: expected 64 lowercase hex digits"
            )));
        }
        let marked = self.content == REDACTED
            && self.source.as_deref() == Some(REDACTED)
            && self.evidence.as_ref().is_none_or(|e| e.0.is_empty());
        if !marked {
            return Err(Damage::record(format!(
                "a tombstone holds text: its content and source must be {REDACTED:?} and its evidence empty"
            )));
        }
        Ok(())
    }

    fn parse(line: &[u8]) -> std::result::Result<(RawFact<'_>, Checked), Damage> {
        // One UTF-8 check of the whole line is cheaper than serde_json's
        // check of every string in it.
        let text = std::str::from_utf8(line).map_err(|bad| {
            Damage::record(format!(
                "not valid UTF-8 (invalid byte at offset {})",
                bad.valid_up_to()
            ))
        })?;
        let raw: RawFact<'_> = match scan_compact(text) {
            Some(raw) => raw,
            None => serde_json::from_str(text)
                .map_err(|err| Damage::Json { detail: describe_line_error(line, &err) })?,
        };
        let checked = raw.check()?;
        Ok((raw, checked))
    }
}

/// Reads a line laid out exactly as workmem and the teaching implementation
/// write it (every key, in sorted order, `": "` and `", "` between them,
/// strings without escapes, importance and schema_version of one digit)
/// without serde: what serde would read from it, or `None` for any other
/// line, which serde then reads (and refuses with its own message).
fn scan_compact(text: &str) -> Option<RawFact<'_>> {
    let mut s = Scanner { text, at: 0 };
    s.literal("{\"content\": ")?;
    let content = s.string()?;
    s.literal(", \"evidence\": ")?;
    let evidence = s.evidence()?;
    s.literal(", \"fact_id\": ")?;
    let fact_id = s.string()?;
    s.literal(", \"importance\": ")?;
    let importance = s.digit_or_null()?;
    s.literal(", \"kind\": ")?;
    let kind = s.string()?;
    s.literal(", \"memory_key\": ")?;
    let memory_key = s.string_or_null()?;
    s.literal(", \"recorded_at\": ")?;
    let recorded_at = s.string()?;
    s.literal(", \"schema_version\": ")?;
    let schema_version = s.digit_or_null()?;
    s.literal(", \"source\": ")?;
    let source = s.string_or_null()?;
    s.literal(", \"workspace_id\": ")?;
    let workspace_id = s.string()?;
    s.literal("}")?;
    (s.at == text.len()).then_some(RawFact {
        content: Cow::Borrowed(content),
        evidence,
        fact_id: Cow::Borrowed(fact_id),
        importance,
        kind: Cow::Borrowed(kind),
        line_sha256: None,
        memory_key: memory_key.map(Cow::Borrowed),
        recorded_at: Cow::Borrowed(recorded_at),
        redacted_by: None,
        schema_version,
        source: source.map(Cow::Borrowed),
        workspace_id: Cow::Borrowed(workspace_id),
    })
}

/// A position in a line read by [`scan_compact`].
struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

// Each reader returns `None` when the value is not of the layout, else the
// value read, which may be JSON's `null` (`Some(None)`).
#[allow(clippy::option_option)]
impl<'a> Scanner<'a> {
    /// Steps over `expected`, which must come next.
    fn literal(&mut self, expected: &str) -> Option<()> {
        let rest = self.text.as_bytes().get(self.at..)?;
        rest.starts_with(expected.as_bytes()).then(|| self.at += expected.len())
    }

    /// Reads a string without escapes or control characters (those JSON
    /// refuses unescaped); `None` for any other value.
    fn string(&mut self) -> Option<&'a str> {
        self.literal("\"")?;
        let start = self.at;
        let rest = self.text.as_bytes().get(start..)?;
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        // No early exit: the loop is vectorized, and strings are short.
        if rest[len] != b'"'
            || rest[..len].iter().fold(0, |found, &b| found | u8::from(b < 0x20)) != 0
        {
            return None;
        }
        self.at = start + len + 1;
        // Both ends are next to an ASCII quote: char boundaries.
        self.text.get(start..start + len)
    }

    fn string_or_null(&mut self) -> Option<Option<&'a str>> {
        if self.literal("null").is_some() { Some(None) } else { self.string().map(Some) }
    }

    /// Reads `null` or one digit followed by a separator.
    fn digit_or_null(&mut self) -> Option<Option<i64>> {
        if self.literal("null").is_some() {
            return Some(None);
        }
        let bytes = self.text.as_bytes();
        let digit = *bytes.get(self.at)?;
        // `03` is not JSON and `12` is read by serde.
        if !digit.is_ascii_digit() || !matches!(bytes.get(self.at + 1), Some(b',' | b'}')) {
            return None;
        }
        self.at += 1;
        Some(Some(i64::from(digit - b'0')))
    }

    /// Reads `null` or an object of strings, at most
    /// [`MAX_EVIDENCE_ENTRIES`] pairs (more: serde's error).
    fn evidence(&mut self) -> Option<Option<RawEvidence<'a>>> {
        if self.literal("null").is_some() {
            return Some(None);
        }
        self.literal("{")?;
        let mut pairs = Vec::new();
        if self.literal("}").is_some() {
            return Some(Some(RawEvidence(pairs)));
        }
        loop {
            if pairs.len() == MAX_EVIDENCE_ENTRIES {
                return None;
            }
            let key = self.string()?;
            self.literal(": ")?;
            let value = self.string()?;
            pairs.push((Cow::Borrowed(key), Cow::Borrowed(value)));
            if self.literal("}").is_some() {
                return Some(Some(RawEvidence(pairs)));
            }
            self.literal(", ")?;
        }
    }
}

/// The fields of a fact that the distill policy reads, parsed and validated
/// like a [`Fact`] but without the evidence and provenance it never looks
/// at: a smaller footprint for whole-log scans. The five strings share one
/// allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactSummary {
    /// fact_id, content, memory_key (empty when unkeyed), the recorded_at
    /// text (empty when it is what [`Stamp::from_timestamp`] writes of the
    /// instant, as it is for almost every fact: see `plain_stamp`) and
    /// source, back to back.
    text: Box<str>,
    recorded_at: jiff::Timestamp,
    /// Validated lengths: ids are at most 200 ASCII bytes, keys 120, stamps
    /// about 35, and content 2,000 characters (8,000 bytes).
    id_len: u8,
    key_len: u8,
    stamp_len: u8,
    content_len: u16,
    kind: Kind,
    importance: u8,
}

impl FactSummary {
    /// Returns a summary from its fields, as a cache stored them; `None`
    /// when one is out of its validated range (a damaged cache). The
    /// caller vouches that the fields were validated once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_fields(
        fact_id: &str,
        content: &str,
        memory_key: Option<&str>,
        stamp: &str,
        instant: jiff::Timestamp,
        source: &str,
        kind: Kind,
        importance: u8,
    ) -> Option<FactSummary> {
        let key = memory_key.unwrap_or("");
        let plain = crate::model::stamp::parse_utc_seconds(stamp.as_bytes()) == Some(instant);
        let stamp = if plain { "" } else { stamp };
        let parts = [fact_id, content, key, stamp, source];
        let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        for part in parts {
            text.push_str(part);
        }
        (crate::model::fact::IMPORTANCE.contains(&importance) && !fact_id.is_empty())
            .then_some(())?;
        Some(FactSummary {
            text: text.into_boxed_str(),
            recorded_at: instant,
            id_len: u8::try_from(fact_id.len()).ok()?,
            key_len: u8::try_from(key.len()).ok()?,
            stamp_len: u8::try_from(stamp.len()).ok()?,
            content_len: u16::try_from(content.len()).ok()?,
            kind,
            importance,
        })
    }

    /// Returns the recorded_at text as stored.
    pub(crate) fn stamp_text(&self) -> Cow<'_, str> {
        match self.stored_stamp() {
            "" => Cow::Owned(plain_stamp(self.recorded_at)),
            stored => Cow::Borrowed(stored),
        }
    }

    /// Appends the recorded_at text as stored to `out`, without allocating.
    pub(crate) fn push_stamp_text(&self, out: &mut String) {
        match self.stored_stamp() {
            "" => crate::model::stamp::push_utc(self.recorded_at, out),
            stored => out.push_str(stored),
        }
    }

    /// The recorded_at text kept with the summary: empty when it is what
    /// [`Stamp::from_timestamp`] writes of the instant.
    pub(crate) fn stored_stamp(&self) -> &str {
        let [_, _, stamp, source] = self.starts();
        &self.text[stamp..source]
    }

    /// The start of each string in `text`: content, key, stamp, source.
    fn starts(&self) -> [usize; 4] {
        let content = usize::from(self.id_len);
        let key = content + usize::from(self.content_len);
        let stamp = key + usize::from(self.key_len);
        [content, key, stamp, stamp + usize::from(self.stamp_len)]
    }
}

/// A fact as the log readers parse it and the policy reads it: the one
/// fact trait, implemented by [`Fact`] and by the slimmer [`FactSummary`]
/// that whole-log scans use.
pub trait FactRecord: Sized + PartialEq + Send + Sync {
    /// Parses and validates one line for the workspace `workspace_id`.
    ///
    /// Returns [`LineError::Invalid`] with a message naming the field, or
    /// [`LineError::Scope`] with the other workspace id.
    fn parse_for(line: &[u8], workspace_id: &str) -> std::result::Result<Self, LineError>;
    /// Returns the fact id.
    fn fact_id(&self) -> &str;
    /// Returns when the fact was recorded: what every ordering uses.
    fn instant(&self) -> jiff::Timestamp;
    /// Returns when it was recorded, as stored (for the entries it becomes
    /// evidence of).
    fn recorded_at(&self) -> Stamp;
    /// Returns its kind.
    fn kind(&self) -> Kind;
    /// Returns its importance, 1-5.
    fn importance(&self) -> u8;
    /// Returns who recorded it.
    fn source(&self) -> &str;
    /// Returns its memory key, if keyed.
    fn memory_key(&self) -> Option<&str>;
    /// Returns its whitespace-clean content.
    fn content(&self) -> &str;
}

/// Why a log line was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// Not a valid fact; the damage names the field.
    Invalid(Damage),
    /// A valid fact of another workspace.
    Scope(String),
}

fn scoped(raw: &RawFact<'_>, workspace_id: &str) -> std::result::Result<(), LineError> {
    if raw.workspace_id != workspace_id {
        return Err(LineError::Scope(raw.workspace_id.to_string()));
    }
    Ok(())
}

impl FactRecord for Fact {
    fn parse_for(line: &[u8], workspace_id: &str) -> std::result::Result<Self, LineError> {
        let (raw, checked) = RawFact::parse(line).map_err(LineError::Invalid)?;
        scoped(&raw, workspace_id)?;
        Ok(raw.into_fact(checked))
    }

    fn fact_id(&self) -> &str {
        &self.fact_id
    }

    fn instant(&self) -> jiff::Timestamp {
        self.recorded_at.instant()
    }

    fn recorded_at(&self) -> Stamp {
        self.recorded_at.clone()
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn importance(&self) -> u8 {
        self.importance
    }

    fn source(&self) -> &str {
        &self.source
    }

    fn memory_key(&self) -> Option<&str> {
        self.memory_key.as_deref()
    }

    fn content(&self) -> &str {
        &self.content
    }
}

impl FactRecord for FactSummary {
    fn parse_for(line: &[u8], workspace_id: &str) -> std::result::Result<Self, LineError> {
        let (raw, checked) = RawFact::parse(line).map_err(LineError::Invalid)?;
        scoped(&raw, workspace_id)?;
        let key = raw.memory_key.as_deref().filter(|_| checked.has_key).unwrap_or("");
        let source = raw.source.as_deref().unwrap_or("agent");
        let too_long =
            |field: &str| LineError::Invalid(Damage::record(format!("invalid {field}: too long")));
        let stamp = if checked.plain_stamp { "" } else { &*raw.recorded_at };
        let parts = [&*raw.fact_id, &*raw.content, key, stamp, source];
        let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        for part in parts {
            text.push_str(part);
        }
        Ok(FactSummary {
            text: text.into_boxed_str(),
            recorded_at: checked.recorded_at,
            id_len: u8::try_from(raw.fact_id.len()).map_err(|_| too_long("fact_id"))?,
            key_len: u8::try_from(key.len()).map_err(|_| too_long("memory_key"))?,
            stamp_len: u8::try_from(stamp.len()).map_err(|_| too_long("recorded_at"))?,
            content_len: u16::try_from(raw.content.len()).map_err(|_| too_long("content"))?,
            kind: checked.kind,
            importance: checked.importance,
        })
    }

    fn fact_id(&self) -> &str {
        &self.text[..usize::from(self.id_len)]
    }

    fn instant(&self) -> jiff::Timestamp {
        self.recorded_at
    }

    fn recorded_at(&self) -> Stamp {
        Stamp::from_parts(&self.stamp_text(), self.recorded_at)
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn importance(&self) -> u8 {
        self.importance
    }

    fn source(&self) -> &str {
        &self.text[self.starts()[3]..]
    }

    fn memory_key(&self) -> Option<&str> {
        let [_, key, stamp, _] = self.starts();
        (key < stamp).then(|| &self.text[key..stamp])
    }

    fn content(&self) -> &str {
        let [content, key, ..] = self.starts();
        &self.text[content..key]
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` of an instant of whole seconds (years 1-9998):
/// the text such a stamp was read from.
fn plain_stamp(at: jiff::Timestamp) -> String {
    let mut text = String::with_capacity(20);
    crate::model::stamp::push_utc(at, &mut text);
    text
}

impl RawFact<'_> {
    fn into_fact(self, checked: Checked) -> Fact {
        Fact {
            content: self.content.into_owned(),
            evidence: self
                .evidence
                .map(|e| e.0.into_iter().map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
                .unwrap_or_default(),
            fact_id: self.fact_id.into_owned(),
            importance: checked.importance,
            kind: checked.kind,
            line_sha256: self.line_sha256.map(Cow::into_owned),
            memory_key: self.memory_key.filter(|_| checked.has_key).map(Cow::into_owned),
            recorded_at: Stamp::from_parts(&self.recorded_at, checked.recorded_at),
            redacted_by: self.redacted_by.map(Cow::into_owned),
            schema_version: checked.schema_version,
            source: self.source.map_or_else(|| "agent".to_owned(), Cow::into_owned),
            workspace_id: self.workspace_id.into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::model::canon::JsonStyle;
    use crate::model::fact::NewFact;
    use crate::model::text::{self, is_refused_char, refused_character};
    use proptest::prelude::*;

    fn now() -> Stamp {
        Stamp::parse("2026-01-02T03:04:05Z").unwrap()
    }

    #[test]
    fn a_stored_field_that_fails_its_check_is_typed_damage_naming_the_field() {
        let mut new = NewFact::new("Use WAL mode");
        new.kind = Some("decision".into());
        let good = Fact::from_new(new, "0123456789abcdef", now(), || "f1".into()).unwrap();
        let line = good.to_line();
        let cases = [
            (line.replace("\"fact_id\": \"f1\"", "\"fact_id\": \"f 1\""), "fact_id"),
            (line.replace("\"decision\"", "\"guess\""), "kind"),
            (line.replace("\"importance\": 3", "\"importance\": 9"), "importance"),
            (line.replace("2026-01-02T03:04:05Z", "2026-13-02T03:04:05Z"), "recorded_at"),
            (line.replace("Use WAL mode", "Use  WAL mode"), "content"),
            (line.replace("Use WAL mode", "Use \\u001b WAL"), "content"),
        ];
        for (bad, field) in cases {
            assert_ne!(bad, line, "{field}: the case changed nothing");
            let damage = Fact::parse_line(bad.trim_end().as_bytes()).unwrap_err();
            assert!(
                matches!(&damage, Damage::Field { field: f, .. } if f == field),
                "{field}: {damage:?}"
            );
            assert!(damage.to_string().starts_with(&format!("invalid {field}: ")), "{damage}");
        }
    }

    #[test]
    fn line_layout_matches_python_json_dumps() {
        let mut new = NewFact::new("  Use   WAL\tmode ");
        new.kind = Some("decision".into());
        new.importance = Some(5);
        new.memory_key = Some("Storage.Journal".into());
        new.evidence.insert("file".into(), "db.py".into());
        let fact = Fact::from_new(new, "0123456789abcdef", now(), || "f1".into()).unwrap();
        assert_eq!(
            fact.to_line(),
            "{\"content\": \"Use WAL mode\", \"evidence\": {\"file\": \"db.py\"}, \"fact_id\": \"f1\", \
             \"importance\": 5, \"kind\": \"decision\", \"memory_key\": \"storage.journal\", \
             \"recorded_at\": \"2026-01-02T03:04:05Z\", \"schema_version\": 2, \"source\": \"agent\", \
             \"workspace_id\": \"0123456789abcdef\"}\n"
        );
        let back = Fact::parse_line(fact.to_line().trim_end().as_bytes()).unwrap();
        assert_eq!(back, fact);
        let generic = canon::to_json(&serde_json::to_value(&fact).unwrap(), JsonStyle::Line) + "\n";
        assert_eq!(fact.to_line(), generic);
        let mut odd = fact.clone();
        odd.content = "quote \" backslash \\ tab\t \u{1} \u{e9}\u{4e2d}\u{1f600}".into();
        odd.evidence.insert("z\u{e9}".into(), "\n".into());
        odd.memory_key = None;
        let generic = canon::to_json(&serde_json::to_value(&odd).unwrap(), JsonStyle::Line) + "\n";
        assert_eq!(odd.to_line(), generic);
    }

    #[test]
    fn schema_one_line_reads_as_unkeyed() {
        let line = br#"{"content": "x", "fact_id": "a", "kind": "pitfall", "recorded_at": "2026-01-01T00:00:00Z", "workspace_id": "0123456789abcdef"}"#;
        let fact = Fact::parse_line(line).unwrap();
        assert_eq!(fact.schema_version, 1);
        assert_eq!(fact.memory_key, None);
        assert_eq!(fact.importance, 3);
        assert_eq!(fact.source, "agent");
    }

    #[test]
    fn rejects_each_bad_field() {
        let ws = "0123456789abcdef";
        let cases: Vec<(NewFact, &str)> = vec![
            (NewFact::new("   "), "content"),
            (NewFact::new("x".repeat(2001)), "content"),
            (NewFact { importance: Some(0), ..NewFact::new("x") }, "importance"),
            (NewFact { importance: Some(6), ..NewFact::new("x") }, "importance"),
            (NewFact { kind: Some("idea".into()), ..NewFact::new("x") }, "kind"),
            (NewFact { memory_key: Some("Bad Key".into()), ..NewFact::new("x") }, "memory_key"),
            (NewFact { fact_id: Some("-x".into()), ..NewFact::new("x") }, "fact_id"),
            (
                NewFact { recorded_at: Some("2026-01-01".into()), ..NewFact::new("x") },
                "recorded_at",
            ),
            (NewFact { source: Some("two words".into()), ..NewFact::new("x") }, "source"),
        ];
        for (new, field) in cases {
            match Fact::from_new(new.clone(), ws, now(), || "id".into()) {
                Err(Error::InvalidInput { field: got, .. }) => assert_eq!(got, field, "{new:?}"),
                other => panic!("{new:?} gave {other:?}"),
            }
        }
        assert!(Fact::from_new(NewFact::new("x".repeat(2000)), ws, now(), || "id".into()).is_ok());
    }

    #[test]
    fn every_control_and_format_character_is_refused() {
        let format = regex::Regex::new(r"^\p{Cf}$").unwrap();
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            let expected = (c.is_control() && !text::is_space(c))
                || format.is_match(c.encode_utf8(&mut [0; 4]));
            if expected {
                assert!(is_refused_char(c), "U+{:04X} is not refused", u32::from(c));
                assert_eq!(refused_character(&format!("ok {c}")), Some(c));
            }
        }
        for fine in [
            'a',
            ' ',
            '\t',
            '\n',
            '\u{85}',
            '\u{a0}',
            '\u{e9}',
            '\u{4e2d}',
            '\u{1f600}',
            '\u{fe0f}',
        ] {
            assert!(!is_refused_char(fine), "U+{:04X} is refused", u32::from(fine));
        }
        assert_eq!(refused_character("plain ASCII text"), None);
    }

    /// What every reader did before the scanner: serde for every line.
    fn parse_with_serde(line: &[u8]) -> std::result::Result<RawFact<'_>, Damage> {
        let text = std::str::from_utf8(line).map_err(|bad| {
            Damage::record(format!(
                "not valid UTF-8 (invalid byte at offset {})",
                bad.valid_up_to()
            ))
        })?;
        let raw: RawFact<'_> = serde_json::from_str(text)
            .map_err(|err| Damage::Json { detail: describe_line_error(line, &err) })?;
        raw.check()?;
        Ok(raw)
    }

    fn parse_now(line: &[u8]) -> std::result::Result<RawFact<'_>, Damage> {
        RawFact::parse(line).map(|(raw, _)| raw)
    }

    /// A JSON string of `text` as workmem writes it (escapes only where
    /// JSON needs them).
    fn quoted(text: &str) -> String {
        serde_json::to_string(text).unwrap()
    }

    fn text_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-zA-Z0-9 ._:/-]{1,24}",
            1 => proptest::collection::vec(
                prop_oneof![
                    Just('a'), Just(' '), Just('"'), Just('\\'), Just('\n'), Just('\t'),
                    Just('\u{1}'), Just('\u{7f}'), Just('\u{e9}'), Just('\u{4e2d}'),
                    Just('\u{1f600}'), Just('\u{200b}'), Just('/'), Just('{'), Just(','),
                ],
                0..12,
            )
            .prop_map(|chars| chars.into_iter().collect()),
        ]
    }

    fn optional<T: std::fmt::Debug + Clone>(
        inner: impl Strategy<Value = T>,
    ) -> impl Strategy<Value = Option<T>> {
        prop_oneof![1 => Just(None), 4 => inner.prop_map(Some)]
    }

    prop_compose! {
        /// A fact line in workmem's layout, with values valid or not.
        fn compact_line()(
            content in text_strategy(),
            evidence in optional(proptest::collection::vec((text_strategy(), text_strategy()), 0..4)),
            fact_id in prop_oneof![4 => "[a-f0-9]{8,32}", 1 => text_strategy()],
            importance in optional(prop_oneof![4 => 1i64..=5, 1 => -3i64..40]),
            kind in prop_oneof![4 => Just("decision".to_owned()), 1 => text_strategy()],
            memory_key in optional(prop_oneof![4 => "[a-z][a-z0-9]{0,5}([._-][a-z0-9]{1,4}){0,2}", 1 => text_strategy()]),
            recorded_at in prop_oneof![
                4 => (2000u32..2030, 1u32..13, 1u32..29, 0u32..24).prop_map(|(y, m, d, h)| format!("{y}-{m:02}-{d:02}T{h:02}:00:00Z")),
                1 => text_strategy(),
            ],
            schema_version in optional(prop_oneof![4 => 1i64..=2, 1 => 0i64..12]),
            source in optional(prop_oneof![4 => Just("agent".to_owned()), 1 => text_strategy()]),
            workspace_id in prop_oneof![4 => Just(WS.to_owned()), 1 => text_strategy()],
        ) -> String {
            let number = |n: Option<i64>| n.map_or_else(|| "null".to_owned(), |n| n.to_string());
            let string = |t: &Option<String>| t.as_deref().map_or_else(|| "null".to_owned(), quoted);
            let evidence = evidence.map_or_else(
                || "null".to_owned(),
                |pairs| {
                    let inner: Vec<String> =
                        pairs.iter().map(|(k, v)| format!("{}: {}", quoted(k), quoted(v))).collect();
                    format!("{{{}}}", inner.join(", "))
                },
            );
            format!(
                "{{\"content\": {}, \"evidence\": {evidence}, \"fact_id\": {}, \"importance\": {}, \"kind\": {}, \"memory_key\": {}, \"recorded_at\": {}, \"schema_version\": {}, \"source\": {}, \"workspace_id\": {}}}",
                quoted(&content),
                quoted(&fact_id),
                number(importance),
                quoted(&kind),
                string(&memory_key),
                quoted(&recorded_at),
                number(schema_version),
                string(&source),
                quoted(&workspace_id),
            )
        }
    }

    const WS: &str = "0123456789abcdef";

    /// One edit of a line: bytes that matter to JSON put in, taken out or
    /// swapped, a key repeated, whitespace added.
    #[derive(Debug, Clone)]
    enum Edit {
        Insert(usize, &'static [u8]),
        Remove(usize, usize),
        Replace(usize, &'static [u8]),
        RepeatField(usize),
    }

    fn edit_strategy() -> impl Strategy<Value = Edit> {
        let bytes = prop_oneof![
            Just(&b"\""[..]),
            Just(&b"\\"[..]),
            Just(&b" "[..]),
            Just(&b"\t"[..]),
            Just(&b","[..]),
            Just(&b":"[..]),
            Just(&b"{"[..]),
            Just(&b"}"[..]),
            Just(&b"0"[..]),
            Just(&b"7"[..]),
            Just(&b"-"[..]),
            Just(&b"null"[..]),
            Just(&b"\\u00e9"[..]),
            Just(&b"\\n"[..]),
            Just(&b"\x01"[..]),
            Just(&b"\xc3"[..]),
            Just(&b"\xc3\xa9"[..]),
            Just(&b"\r"[..]),
            Just(&b".0"[..]),
            Just(&b"e1"[..]),
            Just(&b"[]"[..]),
            Just(&b"true"[..]),
            Just(&b", \"kind\": \"outcome\""[..]),
            Just(&b", \"extra\": 1"[..]),
        ];
        prop_oneof![
            (any::<usize>(), bytes.clone()).prop_map(|(at, b)| Edit::Insert(at, b)),
            (any::<usize>(), 1usize..4).prop_map(|(at, n)| Edit::Remove(at, n)),
            (any::<usize>(), bytes).prop_map(|(at, b)| Edit::Replace(at, b)),
            any::<usize>().prop_map(Edit::RepeatField),
        ]
    }

    fn apply(line: &str, edit: &Edit) -> Vec<u8> {
        let mut bytes = line.as_bytes().to_vec();
        let len = bytes.len();
        match edit {
            Edit::Insert(at, b) => {
                let at = at % (len + 1);
                bytes.splice(at..at, b.iter().copied());
            }
            Edit::Remove(at, n) => {
                let at = at % len;
                bytes.drain(at..(at + n).min(len));
            }
            Edit::Replace(at, b) => {
                let at = at % len;
                bytes.splice(at..(at + b.len()).min(len), b.iter().copied());
            }
            Edit::RepeatField(which) => {
                // `, "key": value` of one field, written again after it.
                let starts: Vec<usize> = memchr::memmem::find_iter(&bytes, b", \"").collect();
                if !starts.is_empty() {
                    let start = starts[which % starts.len()];
                    let end = starts.iter().copied().find(|&s| s > start).unwrap_or(len - 1);
                    let field = bytes[start..end].to_vec();
                    bytes.splice(end..end, field);
                }
            }
        }
        bytes
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// The scanner reads what serde reads, and every line, edited or
        /// not, parses (or is refused with the same message) as it did
        /// with serde alone.
        #[test]
        fn the_scanner_agrees_with_serde(
            line in compact_line(),
            edits in proptest::collection::vec(edit_strategy(), 0..3),
        ) {
            let mut bytes = line.clone().into_bytes();
            for edit in &edits {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                bytes = apply(&text, edit);
            }
            if let Some(fast) = std::str::from_utf8(&bytes).ok().and_then(scan_compact) {
                let slow: RawFact<'_> = serde_json::from_slice(&bytes).expect("serde reads what the scanner reads");
                prop_assert_eq!(fast, slow);
            }
            prop_assert_eq!(parse_now(&bytes), parse_with_serde(&bytes));
            let now = FactSummary::parse_for(&bytes, WS);
            let before = parse_with_serde(&bytes);
            prop_assert_eq!(now.is_ok(), before.is_ok() && before.as_ref().is_ok_and(|r| r.workspace_id == WS));
        }
    }

    #[test]
    fn the_scanner_reads_the_lines_workmem_writes() {
        let mut new = NewFact::new("Use WAL mode");
        new.memory_key = Some("storage.journal".into());
        new.evidence.insert("file".into(), "db.py".into());
        new.evidence.insert("line".into(), "12".into());
        let fact = Fact::from_new(new, WS, now(), || "f1".into()).unwrap();
        let line = fact.to_line();
        let raw = scan_compact(line.trim_end()).expect("the scanner reads workmem's layout");
        assert_eq!(raw.into_fact(raw_checked(line.trim_end())), fact);
        let unkeyed = Fact::from_new(NewFact::new("x"), WS, now(), || "f2".into()).unwrap();
        assert!(scan_compact(unkeyed.to_line().trim_end()).is_some());
        // Escapes, other layouts and other key orders go to serde.
        let mut escaped = NewFact::new("say \"hi\"");
        escaped.memory_key = None;
        let escaped = Fact::from_new(escaped, WS, now(), || "f3".into()).unwrap();
        assert!(scan_compact(escaped.to_line().trim_end()).is_none());
        assert_eq!(Fact::parse_line(escaped.to_line().trim_end().as_bytes()).unwrap(), escaped);
        let pretty = serde_json::to_string_pretty(&fact).unwrap();
        assert!(scan_compact(&pretty).is_none());
        assert_eq!(Fact::parse_line(pretty.as_bytes()).unwrap(), fact);
    }

    proptest! {
        /// A summary keeps no text of a plain stamp: the text it gives back
        /// is the one read, plain or not.
        #[test]
        fn a_summary_gives_back_the_stamp_it_read(
            year in prop_oneof![1u32..10_000, 1990u32..2030],
            month in 1u32..13,
            day in 1u32..29,
            second in 0u32..60,
            tail in prop_oneof![Just("Z"), Just("+01:00"), Just(".25Z"), Just("z")],
        ) {
            let stamp = format!("{year:04}-{month:02}-{day:02}T12:34:{second:02}{tail}");
            let line = format!(
                "{{\"content\": \"x\", \"evidence\": null, \"fact_id\": \"a\", \"importance\": 3, \"kind\": \"decision\", \"memory_key\": null, \"recorded_at\": \"{stamp}\", \"schema_version\": 2, \"source\": \"agent\", \"workspace_id\": \"{WS}\"}}"
            );
            let fact = Fact::parse_line(line.as_bytes());
            let summary = FactSummary::parse_for(line.as_bytes(), WS);
            prop_assert_eq!(fact.is_ok(), summary.is_ok());
            if let (Ok(fact), Ok(summary)) = (fact, summary) {
                let recorded_at = summary.recorded_at();
                prop_assert_eq!(recorded_at.as_str(), stamp.as_str());
                prop_assert_eq!(summary.stamp_text(), stamp.as_str());
                prop_assert_eq!(summary.instant(), fact.recorded_at.instant());
                let again = FactSummary::from_fields(
                    "a", "x", None, &summary.stamp_text(), summary.instant(), "agent", Kind::Decision, 3,
                );
                prop_assert_eq!(again.as_ref(), Some(&summary));
            }
        }
    }

    #[test]
    fn a_plain_stamp_is_the_text_of_the_instant() {
        // Whole seconds across jiff's range, negative years included, and
        // every seventh second of two days.
        let (min, max) =
            (jiff::Timestamp::MIN.as_second() + 86_400, jiff::Timestamp::MAX.as_second());
        let step = (max - min) / 5_000;
        let spread = (0..5_000).map(|n| min + n * step);
        let days = (0..86_400 * 2).step_by(7).map(|s| 1_709_164_800 + s); // 2024-02-29 on
        for second in spread.chain(days).chain([0, -1, 253_402_207_200]) {
            let at = jiff::Timestamp::from_second(second).unwrap();
            let civil = jiff::tz::Offset::UTC.to_datetime(at);
            let expected = format!("{}Z", civil.strftime("%Y-%m-%dT%H:%M:%S"));
            assert_eq!(plain_stamp(at), expected, "{second}");
        }
    }

    fn raw_checked(line: &str) -> Checked {
        RawFact::parse(line.as_bytes()).unwrap().1
    }

    #[test]
    fn a_tombstone_reads_back_and_holds_no_text() {
        let new = NewFact {
            memory_key: Some("deploy.token".into()),
            source: Some("user".into()),
            evidence: [("file".to_owned(), "ci.yml".to_owned())].into(),
            ..NewFact::new("The token is hunter2-secret")
        };
        let fact = Fact::from_new(new, "0123456789abcdef", now(), || "f-1".to_owned()).unwrap();
        let hash = canon::sha256_hex(fact.to_line().trim_end().as_bytes());
        let tombstone = fact.tombstone("correction:r1", &hash);
        let line = tombstone.to_line();
        assert!(!line.contains("hunter2") && !line.contains("ci.yml") && !line.contains("user"));
        // Sorted keys, the marker in place of the text, the ids kept.
        let keys: Vec<String> = match serde_json::from_str(line.trim_end()).unwrap() {
            serde_json::Value::Object(map) => map.keys().cloned().collect(),
            _ => unreachable!(),
        };
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert!(line.contains("\"redacted_by\": \"correction:r1\""), "{line}");
        let back = Fact::parse_line(line.trim_end().as_bytes()).unwrap();
        assert_eq!(back, tombstone);
        assert_eq!(back.memory_key(), Some("deploy.token"));
        // A tombstone that holds text, or half of one, is refused.
        for bad in [
            line.replacen("\"content\": \"[redacted]\"", "\"content\": \"hunter2\"", 1),
            line.replacen("\"evidence\": {}", "\"evidence\": {\"file\": \"ci.yml\"}", 1),
            line.replacen(&format!(", \"line_sha256\": \"{hash}\""), "", 1),
        ] {
            assert!(Fact::parse_line(bad.trim_end().as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_floats_and_unknown_fields_on_read() {
        let base = r#""content": "x", "fact_id": "a", "kind": "pitfall", "recorded_at": "2026-01-01T00:00:00Z", "workspace_id": "0123456789abcdef""#;
        assert!(Fact::parse_line(format!("{{{base}, \"importance\": 3.0}}").as_bytes()).is_err());
        assert!(Fact::parse_line(format!("{{{base}, \"extra\": 1}}").as_bytes()).is_err());
        assert!(Fact::parse_line(format!("{{{base}, \"schema_version\": 3}}").as_bytes()).is_err());
        assert!(Fact::parse_line(b"[1]").is_err());
    }
}

#[cfg(test)]
mod fields_tests;
