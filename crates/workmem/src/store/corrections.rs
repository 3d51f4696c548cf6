//! The corrections stream `memory-corrections.jsonl` (docs/corrections.md):
//! the append-only record of the human acts that retract, restore or
//! redact facts. One record per line; an append is one fsynced write, and
//! a torn final line is repaired before it, as for the audit stream.
//!
//! This module owns the file's name, its record and the record's rules. A
//! record is checked on every read as on append: an unknown field or
//! action, a malformed id, an unsorted list or fields that do not belong to
//! the record's action are corruption naming the file and line. What the
//! records mean together (which facts are retracted) is computed by
//! [`crate::policy::retractions`], which never reads the file.
//!
//! It never rewrites the stream: a correction, like a decision, is kept.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Damage, Result, Violation};
use crate::model::canon;
use crate::model::fact::REDACTED;
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::store::stream::{self, Numbered, StreamRecord};

pub use crate::store::names::CORRECTIONS_FILE;
/// Schema version of correction records.
pub const CORRECTION_SCHEMA_VERSION: u32 = 1;
/// The most characters an actor or a rationale may hold.
pub const MAX_CORRECTION_TEXT_CHARS: usize = 1_000;

/// What a correction does to the facts it names. Format-stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The facts stop counting; the record of them stays.
    Retract,
    /// Undoes one retraction, named in `restores`.
    Restore,
    /// The facts stop counting and their text leaves the memory directory.
    Redact,
}

impl Action {
    /// The action's name, as the record spells it.
    pub fn name(self) -> &'static str {
        match self {
            Action::Retract => "retract",
            Action::Restore => "restore",
            Action::Redact => "redact",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One correction, as appended to the corrections stream. Format-stable.
///
/// Fields are declared in sorted order: [`crate::model::canon::encode`]
/// writes them as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Correction {
    /// What the record does.
    pub action: Action,
    /// Who made the correction.
    pub actor: String,
    /// The entry named with `--entry` (for the reader; `fact_ids` is what
    /// counts); `None` otherwise.
    pub entry_key: Option<String>,
    /// The record's id: unique in the stream, distinct from every audit
    /// event id.
    pub event_id: String,
    /// For a redaction: the decision and correction records whose actor
    /// and rationale it replaced; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_ids: Option<IdList>,
    /// The facts the record retracts, restores or redacts: sorted, unique,
    /// the explicit list (also for `--entry` and `--scan`).
    pub fact_ids: IdList,
    /// For a redaction: the SHA-256 (hex) of each replaced line, by fact id
    /// or event id; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_sha256: Option<BTreeMap<String, String>>,
    /// Why.
    pub rationale: String,
    /// When the person made the correction.
    pub recorded_at: Stamp,
    /// For a restore: the event id of the retraction it undoes; `None`
    /// otherwise.
    pub restores: Option<String>,
    /// Always [`CORRECTION_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Owning workspace.
    pub workspace_id: String,
}

impl Correction {
    /// Returns the JSONL record, newline included.
    pub fn to_line(&self) -> String {
        let mut line = canon::encode(self, canon::JsonStyle::Line);
        line.push('\n');
        line
    }

    /// Checks the record's rules (docs/corrections.md): ids, sorted lists,
    /// the fields of its action, and actor and rationale as text. The
    /// secret guard is the command's (a record that a hand edit gave a
    /// credential must still be read, so that `redact --scan` can replace
    /// it).
    ///
    /// Errors: the first [`Violation`] found.
    pub fn check_rules(&self) -> std::result::Result<(), Violation> {
        let id = |field: &'static str, id: &str| {
            canon::check_id(field, id).map_err(|_| Violation::BadId { field, id: id.to_owned() })
        };
        id("event_id", &self.event_id)?;
        for fact in &self.fact_ids {
            id("fact_ids", fact)?;
        }
        if !self.fact_ids.is_sorted_unique() {
            return Err(Violation::Unsorted { field: "fact_ids" });
        }
        if let Some(key) = &self.entry_key {
            id("entry_key", key)?;
        }
        if let Some(restored) = &self.restores {
            id("restores", restored)?;
        }
        if let Some(events) = &self.event_ids {
            for event in events {
                id("event_ids", event)?;
            }
            if !events.is_sorted_unique() {
                return Err(Violation::Unsorted { field: "event_ids" });
            }
        }
        self.check_action_fields()?;
        for (field, text) in [("actor", &self.actor), ("rationale", &self.rationale)] {
            check_text(field, text)?;
        }
        Ok(())
    }

    /// Checks that the record holds exactly the fields of its action.
    fn check_action_fields(&self) -> std::result::Result<(), Violation> {
        let action = self.action;
        let unexpected = |field| Err(Violation::Unexpected { action: action.name(), field });
        if action != Action::Restore && self.restores.is_some() {
            return unexpected("restores");
        }
        if action != Action::Retract && self.entry_key.is_some() {
            return unexpected("entry_key");
        }
        if action != Action::Redact {
            if self.event_ids.is_some() {
                return unexpected("event_ids");
            }
            if self.line_sha256.is_some() {
                return unexpected("line_sha256");
            }
            if self.fact_ids.is_empty() {
                return Err(Violation::NamesNothing { action: action.name() });
            }
        }
        match action {
            Action::Retract => Ok(()),
            Action::Restore => match &self.restores {
                None => Err(Violation::Missing { action: action.name(), field: "restores" }),
                Some(restored) if *restored == self.event_id => {
                    Err(Violation::RestoresItself { event_id: self.event_id.clone() })
                }
                Some(_) => Ok(()),
            },
            Action::Redact => self.check_line_hashes(),
        }
    }

    /// Checks that a redaction names something and holds one line hash
    /// for each id it names, and no other.
    fn check_line_hashes(&self) -> std::result::Result<(), Violation> {
        let action = Action::Redact;
        if self.event_ids.as_ref().is_some_and(IdList::is_empty) {
            return Err(Violation::Unexpected {
                action: action.name(),
                field: "event_ids (empty)",
            });
        }
        if self.fact_ids.is_empty() && self.event_ids.is_none() {
            return Err(Violation::NamesNothing { action: action.name() });
        }
        let Some(hashes) = &self.line_sha256 else {
            return Err(Violation::Missing { action: action.name(), field: "line_sha256" });
        };
        let named = self.fact_ids.iter().chain(self.event_ids.iter().flatten());
        let mut count = 0;
        for id in named {
            count += 1;
            match hashes.get(id) {
                None => {
                    return Err(Violation::LineHashes { reason: format!("has no hash for {id}") });
                }
                Some(hash) if !is_sha256_hex(hash) => {
                    return Err(Violation::LineHashes {
                        reason: format!("of {id} is not 64 lowercase hex digits"),
                    });
                }
                Some(_) => {}
            }
        }
        if hashes.len() != count {
            return Err(Violation::LineHashes {
                reason: "names an id that the record does not redact".to_owned(),
            });
        }
        Ok(())
    }
}

/// Checks an actor or rationale as stored: non-empty, at most
/// [`MAX_CORRECTION_TEXT_CHARS`] characters, whitespace collapsed, no
/// refused character.
fn check_text(field: &'static str, text: &str) -> std::result::Result<(), Violation> {
    let reason = |reason: &str| Err(Violation::Text { field, reason: reason.to_owned() });
    if text.is_empty() {
        return reason("is empty");
    }
    if text.chars().count() > MAX_CORRECTION_TEXT_CHARS {
        return reason("is longer than 1000 characters");
    }
    if !canon::is_collapsed(text) {
        return reason("has whitespace that is not collapsed");
    }
    if let Some(c) = crate::model::text::first_refused_char(text) {
        return Err(Violation::Text { field, reason: crate::model::text::refused_message(c) });
    }
    Ok(())
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl StreamRecord for Correction {
    fn workspace(&self) -> &str {
        &self.workspace_id
    }

    fn check(&self) -> std::result::Result<(), Damage> {
        self.check_rules().map_err(|violation| Damage::record(violation.to_string()))
    }
}

impl stream::Redactable for Correction {
    fn event_id(&self) -> &str {
        &self.event_id
    }

    fn is_marked(&self) -> bool {
        self.actor == REDACTED && self.rationale == REDACTED
    }

    fn marked(&self) -> Self {
        Correction { actor: REDACTED.to_owned(), rationale: REDACTED.to_owned(), ..self.clone() }
    }

    fn line(&self) -> String {
        self.to_line()
    }
}

/// Reads every complete record of the corrections stream at `path` (none
/// when the file does not exist), each checked as on append; an
/// unterminated final line is an unacknowledged append and is not read.
///
/// Errors: [`crate::Error::Corrupt`] naming the file and line of a line
/// that is not a valid correction; [`crate::Error::Scope`] for a record of
/// another workspace; [`crate::Error::Io`].
pub fn read(path: &Path, workspace_id: &str) -> Result<Vec<Numbered<Correction>>> {
    stream::read_stream(path, workspace_id)
}

/// Appends `record` to the corrections stream at `path` as one fsynced
/// write, repairing a torn final line first (kept when it is a complete
/// valid record, else truncated).
///
/// Errors: [`crate::Error::Io`].
pub fn append(path: &Path, record: &Correction) -> Result<()> {
    stream::append_record::<Correction>(path, &record.to_line())
}

/// What a cache records of the corrections stream it was built against
/// (docs/corrections.md, "The derived state"): the stream's length and
/// SHA-256, which say which corrections it reflects, and its stamp, so
/// that a stat alone tells that the stream has not changed since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StreamSeen {
    /// Length in bytes (0: no stream).
    pub len: u64,
    /// SHA-256 (hex) of the whole file.
    pub sha256: String,
    /// The stamp the file had when it was read; `None` when it did not
    /// exist.
    pub stamp: Option<crate::store::atomic_io::FileStamp>,
}

impl StreamSeen {
    /// Returns what a cache records of a stream that does not exist.
    pub(crate) fn absent() -> StreamSeen {
        StreamSeen { len: 0, sha256: canon::sha256_hex(b""), stamp: None }
    }

    /// Returns whether the stream held no record when it was seen.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns whether `other` is the same stream content (the stamps
    /// aside).
    pub(crate) fn same_content(&self, other: &StreamSeen) -> bool {
        self.len == other.len && self.sha256 == other.sha256
    }

    /// Returns whether the stream at `path` still holds what was seen: by
    /// a stat alone while its stamp did not change, else by its length
    /// and hash.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn holds(&self, path: &Path) -> Result<bool> {
        let stamp = crate::store::atomic_io::file_stamp(path)?;
        if stamp == self.stamp {
            return Ok(true);
        }
        let now = match crate::store::atomic_io::read_stamped(path)? {
            None => StreamSeen::absent(),
            Some((data, stamp)) => StreamSeen::of(&data, Some(stamp)),
        };
        Ok(self.same_content(&now))
    }

    fn of(data: &[u8], stamp: Option<crate::store::atomic_io::FileStamp>) -> StreamSeen {
        StreamSeen { len: data.len() as u64, sha256: canon::sha256_hex(data), stamp }
    }
}

/// Reads the corrections stream at `path` as [`read`] does, with what a
/// cache built from it records of it (one read of the file).
///
/// Errors: as [`read`].
pub(crate) fn read_seen(path: &Path, workspace_id: &str) -> Result<(Vec<Correction>, StreamSeen)> {
    let Some((data, stamp)) = crate::store::atomic_io::read_stamped(path)? else {
        return Ok((Vec::new(), StreamSeen::absent()));
    };
    let mut records = Vec::new();
    stream::for_each_record_in::<Correction>(path, &data, 1, workspace_id, |numbered| {
        records.push(numbered.record);
        Ok(())
    })?;
    Ok((records, StreamSeen::of(&data, Some(stamp))))
}

/// A line of the stream as [`read_each`] returns it: its 1-based number,
/// and the record or the message of what is wrong with it.
pub type EachLine = (usize, std::result::Result<Correction, Damage>);

/// Returns every complete line of the corrections stream at `path` with
/// its 1-based number, each parsed and checked or the message of what is
/// wrong with it, for `verify`, which reports every bad line instead of
/// stopping at the first; `None` when the file does not exist. Blank lines
/// and an unterminated final line (an unacknowledged append) are skipped.
///
/// Errors: [`crate::Error::Io`].
pub fn read_each(path: &Path) -> Result<Option<Vec<EachLine>>> {
    let Some(data) = crate::store::atomic_io::read_optional(path)? else { return Ok(None) };
    let mut out = Vec::new();
    for (number, bytes, terminated) in crate::store::atomic_io::lines(&data) {
        if !terminated {
            break;
        }
        if !bytes.iter().all(u8::is_ascii_whitespace) {
            out.push((number, parse_line(bytes)));
        }
    }
    Ok(Some(out))
}

/// Parses one line of the stream (without its newline) and checks it.
///
/// Errors: what is wrong, as [`stream::parse_record`].
pub fn parse_line(line: &[u8]) -> std::result::Result<Correction, Damage> {
    stream::parse_record::<Correction>(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    const WS: &str = "7cc7b721a32e1a2d";

    fn ids(list: &[&str]) -> IdList {
        let mut out = IdList::new();
        for id in list {
            out.push(id);
        }
        out
    }

    fn retract(event_id: &str, facts: &[&str]) -> Correction {
        Correction {
            action: Action::Retract,
            actor: "Ada <ada@example.com>".to_owned(),
            entry_key: None,
            event_id: event_id.to_owned(),
            event_ids: None,
            fact_ids: ids(facts),
            line_sha256: None,
            rationale: "recorded against the wrong service".to_owned(),
            recorded_at: Stamp::parse("2026-07-02T09:12:00Z").expect("a valid instant"),
            restores: None,
            schema_version: CORRECTION_SCHEMA_VERSION,
            workspace_id: WS.to_owned(),
        }
    }

    #[test]
    fn a_record_is_written_as_the_documented_line() {
        let record = retract("correction:5d1e", &["f-17", "f-18"]);
        assert_eq!(
            record.to_line(),
            concat!(
                r#"{"action": "retract", "actor": "Ada <ada@example.com>", "entry_key": null, "#,
                r#""event_id": "correction:5d1e", "fact_ids": ["f-17", "f-18"], "#,
                r#""rationale": "recorded against the wrong service", "#,
                r#""recorded_at": "2026-07-02T09:12:00Z", "restores": null, "#,
                r#""schema_version": 1, "workspace_id": "7cc7b721a32e1a2d"}"#,
                "\n"
            )
        );
        let line = record.to_line();
        assert_eq!(parse_line(line.trim_end().as_bytes()), Ok(record));
    }

    #[test]
    fn appended_records_read_back_in_order_and_a_torn_tail_is_repaired() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join(CORRECTIONS_FILE);
        assert!(read(&path, WS).expect("no file reads as empty").is_empty());
        let first = retract("c-1", &["f-1"]);
        append(&path, &first).expect("append");
        // A torn append: half a line with no newline.
        let torn = retract("c-torn", &["f-9"]).to_line();
        let mut data = std::fs::read(&path).expect("read");
        data.extend_from_slice(&torn.as_bytes()[..torn.len() / 2]);
        crate::store::atomic_io::replace(&path, &data).expect("write");
        assert_eq!(read(&path, WS).expect("read").len(), 1, "a torn line is not read");
        let mut second = retract("c-2", &["f-2"]);
        second.action = Action::Restore;
        second.restores = Some("c-1".to_owned());
        append(&path, &second).expect("append");
        let read_back: Vec<_> = read(&path, WS)
            .expect("read")
            .into_iter()
            .map(|numbered| (numbered.line, numbered.record))
            .collect();
        assert_eq!(read_back, vec![(1, first), (2, second)]);
    }

    #[test]
    fn a_bad_line_is_corruption_naming_the_file_and_line() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join(CORRECTIONS_FILE);
        let good = retract("c-1", &["f-1"]).to_line();
        let unsorted = retract("c-2", &["f-2", "f-1"]).to_line();
        crate::store::atomic_io::replace(&path, format!("{good}{unsorted}").as_bytes())
            .expect("write");
        let err = read(&path, WS).expect_err("an unsorted list is refused");
        let text = err.to_string();
        assert!(matches!(err, Error::Corrupt { .. }), "{text}");
        assert!(text.contains(CORRECTIONS_FILE) && text.contains(":2"), "{text}");
        assert!(text.contains("fact_ids is not sorted and unique"), "{text}");

        let unknown_field = good.replace("\"entry_key\"", "\"entry\"");
        crate::store::atomic_io::replace(&path, unknown_field.as_bytes()).expect("write");
        let text = read(&path, WS).expect_err("an unknown field is refused").to_string();
        assert!(text.contains("unknown field"), "{text}");

        let unknown_action = good.replace("\"retract\"", "\"forget\"");
        crate::store::atomic_io::replace(&path, unknown_action.as_bytes()).expect("write");
        let text = read(&path, WS).expect_err("an unknown action is refused").to_string();
        assert!(text.contains("unknown variant"), "{text}");

        let other = good.replace(WS, "0000000000000000");
        crate::store::atomic_io::replace(&path, other.as_bytes()).expect("write");
        assert!(matches!(read(&path, WS), Err(Error::Scope { .. })));

        let version = good.replace("\"schema_version\": 1", "\"schema_version\": 2");
        crate::store::atomic_io::replace(&path, version.as_bytes()).expect("write");
        let text = read(&path, WS).expect_err("an unknown version is refused").to_string();
        assert!(text.contains("unsupported schema_version 2"), "{text}");
    }

    #[test]
    fn each_action_holds_exactly_its_fields() {
        let base = retract("c-1", &["f-1"]);
        let damage = |edit: &dyn Fn(&mut Correction)| {
            let mut record = base.clone();
            edit(&mut record);
            record.check_rules().expect_err("refused")
        };
        assert_eq!(
            damage(&|r| r.fact_ids = IdList::new()),
            Violation::NamesNothing { action: "retract" }
        );
        assert_eq!(
            damage(&|r| r.restores = Some("c-0".to_owned())),
            Violation::Unexpected { action: "retract", field: "restores" }
        );
        assert_eq!(
            damage(&|r| r.action = Action::Restore),
            Violation::Missing { action: "restore", field: "restores" }
        );
        assert_eq!(
            damage(&|r| {
                r.action = Action::Restore;
                r.restores = Some("c-1".to_owned());
            }),
            Violation::RestoresItself { event_id: "c-1".to_owned() }
        );
        assert_eq!(
            damage(&|r| {
                r.action = Action::Restore;
                r.restores = Some("c-0".to_owned());
                r.entry_key = Some("e-1".to_owned());
            }),
            Violation::Unexpected { action: "restore", field: "entry_key" }
        );
        assert_eq!(
            damage(&|r| r.event_ids = Some(ids(&["d-1"]))),
            Violation::Unexpected { action: "retract", field: "event_ids" }
        );
        assert_eq!(
            damage(&|r| r.action = Action::Redact),
            Violation::Missing { action: "redact", field: "line_sha256" }
        );
        assert!(matches!(damage(&|r| r.event_id = "-bad".to_owned()), Violation::BadId { .. }));
        assert!(matches!(
            damage(&|r| r.rationale = "two  spaces".to_owned()),
            Violation::Text { field: "rationale", .. }
        ));
        assert!(matches!(
            damage(&|r| r.actor = String::new()),
            Violation::Text { field: "actor", .. }
        ));
        assert!(matches!(
            damage(&|r| r.rationale = "x".repeat(1_001)),
            Violation::Text { field: "rationale", .. }
        ));
    }

    #[test]
    fn a_redaction_holds_one_line_hash_for_each_id_it_names() {
        let hash = "9b1c".repeat(16);
        let mut record = retract("c-1", &["f-1"]);
        record.action = Action::Redact;
        record.event_ids = Some(ids(&["d-1"]));
        record.line_sha256 =
            Some([("d-1".to_owned(), hash.clone()), ("f-1".to_owned(), hash.clone())].into());
        assert_eq!(record.check_rules(), Ok(()));
        // A redaction of decision records only names no fact.
        let mut records_only = record.clone();
        records_only.fact_ids = IdList::new();
        records_only.line_sha256 = Some([("d-1".to_owned(), hash.clone())].into());
        assert_eq!(records_only.check_rules(), Ok(()));

        let mut missing = record.clone();
        missing.line_sha256 = Some([("f-1".to_owned(), hash.clone())].into());
        assert!(matches!(missing.check_rules(), Err(Violation::LineHashes { .. })));
        let mut extra = record.clone();
        extra.line_sha256.as_mut().expect("set").insert("f-2".to_owned(), hash.clone());
        assert!(matches!(extra.check_rules(), Err(Violation::LineHashes { .. })));
        let mut upper = record.clone();
        upper.line_sha256.as_mut().expect("set").insert("f-1".to_owned(), hash.to_uppercase());
        assert!(matches!(upper.check_rules(), Err(Violation::LineHashes { .. })));
        let mut nothing = record;
        nothing.fact_ids = IdList::new();
        nothing.event_ids = None;
        nothing.line_sha256 = Some(BTreeMap::new());
        assert_eq!(nothing.check_rules(), Err(Violation::NamesNothing { action: "redact" }));
    }
}
