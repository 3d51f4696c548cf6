//! The fact: one line of a daily log, what a caller asks to append
//! ([`NewFact`]), and the one set of rules both are validated by. The line
//! encoding lives in [`crate::model::fact_line`].
//!
//! Facts are validated twice with the same rules: when a caller appends one,
//! and when a line is read back from disk, because a cloned repository may
//! carry a hostile memory directory.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Damage, Error, Invalid, Result};
use crate::model::canon;
use crate::model::secret;
use crate::model::stamp::Stamp;
use crate::model::text::{self, check_text, refused_character};

/// Current schema version of a fact line.
pub(crate) const FACT_SCHEMA_VERSION: u32 = 2;
/// Longest accepted content, in characters (after whitespace cleaning).
pub const MAX_CONTENT_CHARS: usize = 2_000;
/// Most evidence entries one fact may carry.
pub(crate) const MAX_EVIDENCE_ENTRIES: usize = 32;
/// Longest evidence key, in characters.
pub(crate) const MAX_EVIDENCE_KEY_CHARS: usize = 100;
/// Longest evidence value, in characters.
pub(crate) const MAX_EVIDENCE_VALUE_CHARS: usize = 4_000;
/// Longest source name, in characters.
pub(crate) const MAX_SOURCE_CHARS: usize = 64;
/// The importance of a fact: 1 (trivia) to 5 (critical).
pub(crate) const IMPORTANCE: std::ops::RangeInclusive<u8> = 1..=5;

/// What a fact records. Decisions, conventions and pitfalls are *stable*
/// kinds that may be promoted; outcomes stay in the recent log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A choice the project made.
    Decision,
    /// A rule the project follows.
    Convention,
    /// A trap to avoid.
    Pitfall,
    /// Something that happened; never promoted by the default policy.
    Outcome,
}

impl Kind {
    /// Every kind, in the order MEMORY.md lists sections.
    pub const ALL: [Kind; 4] = [Kind::Decision, Kind::Convention, Kind::Pitfall, Kind::Outcome];

    /// Returns the on-disk name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Decision => "decision",
            Kind::Convention => "convention",
            Kind::Pitfall => "pitfall",
            Kind::Outcome => "outcome",
        }
    }

    /// Parses an on-disk name.
    ///
    /// Errors: [`Error::InvalidInput`] naming `kind`.
    pub fn parse(name: &str) -> Result<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == name).ok_or_else(|| {
            Error::invalid(
                "kind",
                Invalid::Malformed { rule: "one of decision, convention, pitfall or outcome" },
            )
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One immutable fact as stored in a daily log, valid by construction: it is
/// made only by [`Workspace::remember`](crate::Workspace::remember) and its
/// siblings from a checked [`NewFact`], or read back from a checked line.
/// Format-stable: the field set and the JSONL layout are pinned by golden
/// tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact {
    /// Whitespace-cleaned statement, 1 to 2,000 characters.
    pub(crate) content: String,
    /// Pointers to where the fact came from (file, commit, URL, ...).
    pub(crate) evidence: BTreeMap<String, String>,
    /// Unique id (random 32-hex UUID by default).
    pub(crate) fact_id: String,
    /// 1 (trivia) to 5 (critical).
    pub(crate) importance: u8,
    /// What the fact records.
    pub(crate) kind: Kind,
    /// Of a tombstone: the SHA-256 (hex) of the line it replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) line_sha256: Option<String>,
    /// The question the fact answers, for replaceable decisions.
    pub(crate) memory_key: Option<String>,
    /// When it was recorded (UTC).
    pub(crate) recorded_at: Stamp,
    /// Of a tombstone: the event id of the redact record that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) redacted_by: Option<String>,
    /// 1 (legacy, unkeyed) or 2.
    pub(crate) schema_version: u32,
    /// Who recorded it (`agent`, `user`, `model_tool`, ...).
    pub(crate) source: String,
    /// The workspace it belongs to.
    pub(crate) workspace_id: String,
}

/// A fact to append, before validation. `None` fields take their defaults.
/// Serialized, it holds only the fields that were given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewFact {
    /// The statement.
    pub content: String,
    /// Kind name; default `outcome`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// 1-5; default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<i64>,
    /// Optional conflict domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_key: Option<String>,
    /// Who records it; default `agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Evidence pointers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence: BTreeMap<String, String>,
    /// RFC 3339 instant (any offset); default now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<String>,
    /// Explicit id; default a random UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact_id: Option<String>,
}

/// The source recorded for facts a model writes through a tool.
pub const MODEL_TOOL_SOURCE: &str = "model_tool";

impl NewFact {
    /// Returns the fact a model's `write_memory` tool call asks for: fields
    /// `content`, `kind`, `importance`, optional `memory_key` and `evidence`
    /// (an object of strings), with source `model_tool`. The MCP server and
    /// the agent loop share this one reading of the tool's input; the
    /// values are checked afterwards like any append ([`Fact::from_new`]).
    ///
    /// Errors: [`Error::InvalidInput`] naming an unknown, missing or
    /// mistyped field.
    pub fn from_tool_input(args: &serde_json::Map<String, serde_json::Value>) -> Result<NewFact> {
        const FIELDS: [&str; 5] = ["content", "kind", "importance", "memory_key", "evidence"];
        crate::model::json_args::reject_unknown_fields(args, &FIELDS)?;
        Ok(NewFact {
            content: tool_field(args, "content", "a string")?.ok_or_else(|| {
                Error::invalid("content", Invalid::Missing { expected: "a string" })
            })?,
            kind: Some(
                tool_field(args, "kind", "one of decision, convention, pitfall, outcome")?
                    .ok_or_else(|| {
                        Error::invalid(
                            "kind",
                            Invalid::Missing {
                                expected: "one of decision, convention, pitfall, outcome",
                            },
                        )
                    })?,
            ),
            importance: Some(
                tool_field(args, "importance", "an integer from 1 to 5")?.ok_or_else(|| {
                    Error::invalid(
                        "importance",
                        Invalid::Missing { expected: "an integer from 1 to 5" },
                    )
                })?,
            ),
            memory_key: tool_field(args, "memory_key", "a string")?,
            source: Some(MODEL_TOOL_SOURCE.to_owned()),
            evidence: tool_evidence(args)?,
            recorded_at: None,
            fact_id: None,
        })
    }

    /// Returns a new fact with `content` and every other field defaulted.
    pub fn new(content: impl Into<String>) -> NewFact {
        NewFact { content: content.into(), ..NewFact::default() }
    }

    /// Returns the canonical JSON of the fields as given (sorted keys, no
    /// whitespace; fields left to their defaults are absent).
    pub fn canonical_json(&self) -> String {
        // Through a `Value`: its map sorts the keys, which this struct's
        // field order does not.
        let value =
            serde_json::to_value(self).expect("a NewFact is plain strings, numbers and maps");
        canon::canonical_json(&value)
    }
}

impl Fact {
    /// Returns the whitespace-cleaned statement (1 to 2,000 characters).
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Returns the evidence pointers (file, commit, URL, ...).
    pub fn evidence(&self) -> &BTreeMap<String, String> {
        &self.evidence
    }

    /// Returns the fact id.
    pub fn fact_id(&self) -> &str {
        &self.fact_id
    }

    /// Returns the importance, 1 (trivia) to 5 (critical).
    pub fn importance(&self) -> u8 {
        self.importance
    }

    /// Returns what the fact records.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Returns the question the fact answers, for replaceable decisions.
    pub fn memory_key(&self) -> Option<&str> {
        self.memory_key.as_deref()
    }

    /// Returns when it was recorded, as stored.
    pub fn recorded_at(&self) -> &Stamp {
        &self.recorded_at
    }

    /// Returns the schema version of its line: 1 (legacy, unkeyed) or 2.
    pub fn schema_version(&self) -> u32 {
        self.schema_version
    }

    /// Returns who recorded it (`agent`, `user`, `model_tool`, ...).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Returns the workspace it belongs to.
    pub fn workspace_id(&self) -> &str {
        &self.workspace_id
    }

    /// Returns whether `self`, about to be appended, repeats `stored` (the
    /// fact already under its id): the same content, kind, importance,
    /// memory_key, source and evidence, and the same instant unless the
    /// retry left `recorded_at` to its default. Such an append is a retry
    /// and returns the stored fact instead of writing.
    pub(crate) fn repeats(&self, stored: &Fact, recorded_at_given: bool) -> bool {
        self.content == stored.content
            && self.kind == stored.kind
            && self.importance == stored.importance
            && self.memory_key == stored.memory_key
            && self.source == stored.source
            && self.evidence == stored.evidence
            && (!recorded_at_given || self.recorded_at.instant() == stored.recorded_at.instant())
    }
}

impl Fact {
    /// Returns the validated fact for `new`, stamped with `now` and
    /// `fresh_id` where the input leaves them open.
    ///
    /// Errors: [`Error::InvalidInput`] naming the first bad field.
    pub(crate) fn from_new(
        new: NewFact,
        workspace_id: &str,
        now: Stamp,
        fresh_id: impl FnOnce() -> String,
    ) -> Result<Fact> {
        screen_secrets(&new)?;
        let content = check_content(&new.content)?;
        let kind = Kind::parse(new.kind.as_deref().unwrap_or("outcome"))?;
        let importance = check_importance(new.importance.unwrap_or(3))?;
        let memory_key = match new.memory_key.as_deref() {
            None => None,
            Some(raw) => Some(canon::clean_memory_key(raw)?),
        };
        // Only a redaction writes such a key: its domain's ids are then
        // accepted as recorded.
        if memory_key.as_deref().is_some_and(is_redacted_key) {
            return Err(Error::invalid(
                "memory_key",
                Invalid::Malformed {
                    rule: "a key of the form redacted.<16 hex digits> is written only by `redact`",
                },
            ));
        }
        let source = new.source.unwrap_or_else(|| "agent".to_owned());
        check_source(&source)?;
        check_evidence(&new.evidence)?;
        let recorded_at = match new.recorded_at.as_deref() {
            None => now,
            Some(text) => Stamp::parse_normalized(text)
                .map_err(|err| Error::invalid("recorded_at", Invalid::Instant(err)))?,
        };
        let fact_id = match new.fact_id {
            Some(id) => {
                canon::check_id("fact_id", &id)?;
                id
            }
            None => fresh_id(),
        };
        Ok(Fact {
            content,
            evidence: new.evidence,
            fact_id,
            importance,
            kind,
            line_sha256: None,
            memory_key,
            recorded_at,
            redacted_by: None,
            schema_version: FACT_SCHEMA_VERSION,
            source,
            workspace_id: workspace_id.to_owned(),
        })
    }

    /// Returns the tombstone of this fact (docs/corrections.md, "Redact"):
    /// its ids, kind, key, time and numbers kept, its content and source
    /// replaced by [`REDACTED`], its evidence dropped, and the redact
    /// record's event id and the replaced line's SHA-256 added.
    ///
    /// A memory key holding a credential is replaced by [`redacted_key`].
    pub(crate) fn tombstone(&self, redacted_by: &str, line_sha256: &str) -> Fact {
        Fact {
            content: REDACTED.to_owned(),
            evidence: BTreeMap::new(),
            line_sha256: Some(line_sha256.to_owned()),
            memory_key: self.memory_key.as_deref().map(redacted_key),
            redacted_by: Some(redacted_by.to_owned()),
            source: REDACTED.to_owned(),
            ..self.clone()
        }
    }
}

/// The prefix of a memory key a redaction replaced.
pub(crate) const REDACTED_KEY_PREFIX: &str = "redacted.";

/// `memory_key` as a redaction leaves it: itself, unless the guard finds a
/// credential in it; then `redacted.` followed by the first 16 hex digits
/// of its SHA-256, a valid key that keeps the domain together without its
/// text (docs/corrections.md, "A credential in a memory key").
pub(crate) fn redacted_key(memory_key: &str) -> String {
    if secret::find(memory_key).is_none() {
        return memory_key.to_owned();
    }
    let digest = canon::sha256_hex(memory_key.as_bytes());
    format!("{REDACTED_KEY_PREFIX}{}", &digest[..16])
}

/// Whether `memory_key` is one a redaction wrote (see [`redacted_key`]).
pub(crate) fn is_redacted_key(memory_key: &str) -> bool {
    memory_key.strip_prefix(REDACTED_KEY_PREFIX).is_some_and(|hex| {
        hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The marker that takes the place of redacted text: in a tombstone's
/// content and source, and in the content of every entry and candidate
/// whose wording came from a redacted fact.
pub const REDACTED: &str = "[redacted]";

/// Refuses the marker as the actor or rationale a person gives: only a
/// redaction writes it there, and `verify` takes a record holding it for
/// a redacted one.
///
/// Errors: [`Invalid::Marker`] naming `field`.
pub(crate) fn refuse_marker(field: &'static str, text: &str) -> Result<()> {
    if text == REDACTED {
        return Err(Error::invalid(field, Invalid::Marker { marker: REDACTED }));
    }
    Ok(())
}

/// Refuses a fact any of whose fields holds a credential, before any
/// other check: the other checks quote a malformed value in their message
/// (a kind, an id, an instant), and a credential must never be quoted.
/// Each field is checked as given, before cleaning or case folding (a
/// memory_key is stored case-folded, which would hide an uppercase token
/// but not remove it).
///
/// Errors: [`Error::InvalidInput`] naming the field and the kind of
/// credential.
fn screen_secrets(new: &NewFact) -> Result<()> {
    secret::check("content", &new.content)?;
    let optional = [
        ("memory_key", &new.memory_key),
        ("source", &new.source),
        ("fact_id", &new.fact_id),
        ("kind", &new.kind),
        ("recorded_at", &new.recorded_at),
    ];
    for (field, value) in optional {
        if let Some(value) = value {
            secret::check(field, value)?;
        }
    }
    for (key, value) in &new.evidence {
        secret::check_pair("evidence", key, value)?;
    }
    Ok(())
}

/// Returns the `evidence` tool argument: an object of strings; absent and
/// `null` are empty. A value that is not a string is named by its JSON
/// type (never by its key, which the secret guard has not screened yet).
fn tool_evidence(
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<BTreeMap<String, String>> {
    const EXPECTED: &str = "an object whose values are strings";
    let object = match args.get("evidence") {
        None | Some(serde_json::Value::Null) => return Ok(BTreeMap::new()),
        Some(serde_json::Value::Object(object)) => object,
        Some(value) => {
            return Err(Error::invalid(
                "evidence",
                Invalid::WrongType { expected: EXPECTED, got: json_type(value) },
            ));
        }
    };
    let mut evidence = BTreeMap::new();
    for (key, value) in object {
        let serde_json::Value::String(text) = value else {
            let got = match value {
                serde_json::Value::Null => "an object with a null value",
                serde_json::Value::Bool(_) => "an object with a boolean value",
                serde_json::Value::Number(n) if n.is_f64() => {
                    "an object with a floating-point number value"
                }
                serde_json::Value::Number(_) => "an object with an integer value",
                serde_json::Value::Array(_) => "an object with an array value",
                _ => "an object with an object value",
            };
            return Err(Error::invalid("evidence", Invalid::WrongType { expected: EXPECTED, got }));
        };
        evidence.insert(key.clone(), text.clone());
    }
    Ok(evidence)
}

/// Returns a tool argument; absent and `null` are both `None`.
fn tool_field<T: serde::de::DeserializeOwned>(
    args: &serde_json::Map<String, serde_json::Value>,
    field: &str,
    expected: &'static str,
) -> Result<Option<T>> {
    // JSON Schema counts 3.0 as an integer, and clients that carry numbers
    // as floats (Python, protobuf) send it so: an integral float within the
    // range a double holds exactly is read as that integer; 3.5 stays a
    // fractional number and is refused where an integer is expected.
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    match args.get(field) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(value) => {
            let integral = value
                .as_f64()
                .filter(|f| value.is_f64() && f.fract() == 0.0 && f.abs() <= EXACT)
                .map(|f| serde_json::Value::from(f as i64));
            serde_json::from_value(integral.unwrap_or_else(|| value.clone())).map(Some).map_err(
                |_| Error::invalid(field, Invalid::WrongType { expected, got: json_type(value) }),
            )
        }
    }
}

/// Checks content read from disk (a fact line, a curated entry, a conflict
/// candidate) by the rules content cleaning on append guarantees: already
/// whitespace-collapsed and trimmed, not empty, no control characters, at
/// most [`MAX_CONTENT_CHARS`] characters. Stored wording reaches MEMORY.md,
/// prompts and terminals, so a hostile file must not smuggle newlines,
/// headings or escape sequences through it.
///
/// Returns damage whose message starts with `invalid content`; the caller
/// names the file and record.
pub(crate) fn check_stored_content(content: &str) -> std::result::Result<(), Damage> {
    // Printable ASCII (most content): its only whitespace is ' ', and it
    // holds no refused character.
    if content.len() <= MAX_CONTENT_CHARS && canon::is_collapsed_printable_ascii(content.as_bytes())
    {
        return Ok(());
    }
    if !canon::is_collapsed(content) || content.is_empty() {
        let rule = "non-empty and whitespace-collapsed";
        return Err(Damage::Field { field: "content".into(), reason: Invalid::Malformed { rule } });
    }
    if let Some(c) = refused_character(content) {
        let code_point = u32::from(c);
        let reason = Invalid::ControlCharacter { code_point };
        return Err(Damage::Field { field: "content".into(), reason });
    }
    if let Some(chars) = chars_over(content, MAX_CONTENT_CHARS) {
        let reason = Invalid::TooLong { chars, max: MAX_CONTENT_CHARS };
        return Err(Damage::Field { field: "content".into(), reason });
    }
    Ok(())
}

fn check_content(raw: &str) -> Result<String> {
    let content = canon::collapse_whitespace(raw);
    if content.is_empty() {
        return Err(Error::invalid("content", Invalid::Empty));
    }
    let chars = content.chars().count();
    if chars > MAX_CONTENT_CHARS {
        return Err(Error::invalid("content", Invalid::TooLong { chars, max: MAX_CONTENT_CHARS }));
    }
    check_text("content", &content)?;
    Ok(content)
}

/// Returns the number of characters of `text` when it is over `max`,
/// counting them only when the byte length allows it.
fn chars_over(text: &str, max: usize) -> Option<usize> {
    if text.len() <= max {
        return None;
    }
    Some(text.chars().count()).filter(|&chars| chars > max)
}

pub(crate) fn check_importance(value: i64) -> Result<u8> {
    match u8::try_from(value) {
        Ok(v) if IMPORTANCE.contains(&v) => Ok(v),
        _ => Err(Error::invalid(
            "importance",
            Invalid::OutOfRange {
                value,
                min: (*IMPORTANCE.start()).into(),
                max: (*IMPORTANCE.end()).into(),
            },
        )),
    }
}

pub(crate) fn check_source(source: &str) -> Result<()> {
    let bytes = source.as_bytes();
    if (1..=MAX_SOURCE_CHARS).contains(&bytes.len())
        && bytes.iter().all(|&b| (0x21..0x7f).contains(&b))
    {
        return Ok(());
    }
    check_text("source", source)?;
    let chars = source.chars().count();
    if chars == 0
        || chars > MAX_SOURCE_CHARS
        || source.chars().any(|c| text::is_space(c) || c.is_control())
    {
        return Err(Error::invalid(
            "source",
            Invalid::Malformed { rule: "1-64 characters without whitespace" },
        ));
    }
    Ok(())
}

fn check_evidence(evidence: &BTreeMap<String, String>) -> Result<()> {
    if evidence.len() > MAX_EVIDENCE_ENTRIES {
        return Err(Error::invalid(
            "evidence",
            Invalid::TooMany { count: evidence.len(), max: MAX_EVIDENCE_ENTRIES },
        ));
    }
    evidence.iter().try_for_each(|(key, value)| check_evidence_pair(key, value))
}

pub(crate) fn check_evidence_pair(key: &str, value: &str) -> Result<()> {
    if (1..=MAX_EVIDENCE_KEY_CHARS).contains(&key.len())
        && value.len() <= MAX_EVIDENCE_VALUE_CHARS
        && canon::printable_ascii(key.as_bytes())
        && canon::printable_ascii(value.as_bytes())
    {
        return Ok(());
    }
    check_text("evidence", key)?;
    check_text("evidence", value)?;
    let key_chars = key.chars().count();
    if key_chars == 0 || key_chars > MAX_EVIDENCE_KEY_CHARS || key.chars().any(char::is_control) {
        return Err(Error::invalid(
            "evidence",
            Invalid::Malformed {
                rule: "an evidence key of 1-100 characters without control characters",
            },
        ));
    }
    if let Some(value_chars) = chars_over(value, MAX_EVIDENCE_VALUE_CHARS) {
        return Err(Error::invalid(
            "evidence",
            Invalid::TooLong { chars: value_chars, max: MAX_EVIDENCE_VALUE_CHARS },
        ));
    }
    Ok(())
}

pub(crate) fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(n) if n.is_f64() => "a floating-point number",
        serde_json::Value::Number(_) => "an integer",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool_input(importance: serde_json::Value) -> Result<NewFact> {
        let args = json!({"content": "Use WAL", "kind": "decision", "importance": importance});
        NewFact::from_tool_input(args.as_object().expect("an object literal"))
    }

    #[test]
    fn tool_input_reads_an_integral_float_as_an_integer_and_refuses_a_fraction() {
        assert_eq!(tool_input(json!(3.0)).unwrap().importance, Some(3));
        assert_eq!(tool_input(json!(3)).unwrap().importance, Some(3));
        // Out of range stays a value error for `Fact::from_new`, not a type error.
        assert_eq!(tool_input(json!(9.0)).unwrap().importance, Some(9));
        for fractional in [json!(3.5), json!(1e300), json!(-0.5)] {
            match tool_input(fractional.clone()) {
                Err(Error::InvalidInput {
                    field, reason: Invalid::WrongType { got, .. }, ..
                }) => {
                    assert_eq!(field, "importance", "{fractional}");
                    assert_eq!(got, "a floating-point number", "{fractional}");
                }
                other => panic!("{fractional}: expected a type error, got {other:?}"),
            }
        }
        let content_as_number = json!({"content": 3.0, "kind": "decision", "importance": 3});
        let err = NewFact::from_tool_input(content_as_number.as_object().unwrap()).unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput { ref field, .. } if field == "content"),
            "{err}"
        );
    }
}
