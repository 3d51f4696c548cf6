//! The library's error type.
//!
//! Every failure a caller can act on has its own variant; the command line
//! maps each to its exit code. Messages are
//! lowercase fragments that name the object, its file and, where known, the
//! line.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A location in a durable file: the path and, for line-based files, the
/// 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub path: PathBuf,
    /// The 1-based line, for JSONL streams.
    pub line: Option<usize>,
}

impl Location {
    /// Returns a location naming a whole file.
    pub fn file(path: &Path) -> Self {
        Location { path: path.to_path_buf(), line: None }
    }

    /// Returns a location naming one line of a file.
    pub fn line(path: &Path, line: usize) -> Self {
        Location { path: path.to_path_buf(), line: Some(line) }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// Errors returned by every workmem operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Input rejected before anything was written: which field, and why.
    #[error("invalid {field}{}: {reason}", item.map(|i| format!(" of item {i}")).unwrap_or_default())]
    InvalidInput {
        /// The field or argument that was wrong.
        field: String,
        /// The 1-based item of a batch (an import) it belongs to.
        item: Option<usize>,
        /// What was wrong with it.
        reason: Invalid,
    },
    /// A durable record belongs to another workspace.
    #[error(
        "{location}: belongs to workspace {found}, but this workspace is {expected}; if this \
         memory was written at another path (a moved, copied or re-mounted project), it can \
         be adopted at this one"
    )]
    Scope {
        /// Where the record was read.
        location: Location,
        /// The workspace id found in the record.
        found: String,
        /// The workspace id of the open workspace.
        expected: String,
    },
    /// The records of a memory directory carry several workspace ids (two
    /// projects' files mixed, or a pin that the records do not carry):
    /// taking over either would hide the other.
    #[error(
        "the memory directory holds records of {} workspaces ({}); adopting one would hide the others",
        found.len(),
        found.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    MixedWorkspaces {
        /// Each id, how many records carry it and where it was first seen.
        found: Vec<WorkspaceSighting>,
    },
    /// Durable state is invalid or inconsistent.
    #[error("{location}: {damage}")]
    Corrupt {
        /// Where the problem was found.
        location: Location,
        /// What is wrong.
        damage: Damage,
    },
    /// A durable file or record of a schema version this build does not
    /// know: never guessed, never rewritten.
    #[error("{location}: unsupported {what} schema_version {found} (supported: {supported})")]
    UnsupportedVersion {
        /// Where it was read.
        location: Location,
        /// What kind of file or record.
        what: &'static str,
        /// The version found.
        found: i64,
        /// The versions this build reads, e.g. `1, 2`.
        supported: &'static str,
    },
    /// A resolution was based on a view that is no longer current.
    #[error("stale resolution: {0}")]
    StaleResolution(Stale),
    /// A resolution was refused.
    #[error("resolution rejected: {0}")]
    ResolutionRejected(Rejected),
    /// An operating-system call failed on a path.
    #[error("cannot access {path}")]
    Io {
        /// The file or directory the call was about.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// What kind of failure an [`Error`] is, one per variant: what
/// [`Error::kind`] returns for a caller that acts on the kind and not on the
/// details (the command line picks its exit code by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::InvalidInput`].
    InvalidInput,
    /// [`Error::Scope`].
    Scope,
    /// [`Error::MixedWorkspaces`].
    MixedWorkspaces,
    /// [`Error::Corrupt`].
    Corrupt,
    /// [`Error::UnsupportedVersion`].
    UnsupportedVersion,
    /// [`Error::StaleResolution`].
    StaleResolution,
    /// [`Error::ResolutionRejected`].
    ResolutionRejected,
    /// [`Error::Io`].
    Io,
}

/// What is wrong with durable state: the reason of an [`Error::Corrupt`].
///
/// The code that decodes or checks a file returns the reason; the code that
/// knows which file it read adds the [`Location`]. Each message is a
/// lowercase fragment that follows the location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Damage {
    /// git's conflict markers, left by a merge that did not finish.
    #[error("git left merge conflict markers in this file")]
    MergeMarkers,
    /// A correction record that arrived through git and whose effect is
    /// not in curated.json and conflicts.json yet.
    #[error(
        "{action} {event_id} arrived through git and is not applied to curated.json and \
         conflicts.json yet"
    )]
    CorrectionWaiting {
        /// The record's action.
        action: String,
        /// The record's event id.
        event_id: String,
    },
    /// Bytes that are not UTF-8 where text is required.
    #[error("is not valid UTF-8")]
    NotUtf8,
    /// A symbolic link where workmem keeps a file.
    #[error(
        "is a symbolic link; links inside a project's `.workmem/` or memory directory are never followed"
    )]
    Symlink,
    /// Something other than a regular file (a directory, a FIFO, ...).
    #[error("is {kind}, not a regular file; only regular files are read and written")]
    NotRegularFile {
        /// What it is instead (`a directory`, ...).
        kind: &'static str,
    },
    /// Not JSON of the expected shape.
    #[error("{detail}")]
    Json {
        /// What the decoder found, and where in the record.
        detail: String,
    },
    /// Not TOML of the expected shape.
    #[error("column {column}: {detail}")]
    Toml {
        /// The 1-based column of the problem.
        column: usize,
        /// What the decoder found.
        detail: String,
    },
    /// A workspace pin whose id is not a workspace id.
    #[error("`id` must be 16 lowercase hexadecimal digits (a workspace id)")]
    PinId,
    /// A record without the `workspace_id` every record carries.
    #[error("is not a JSON record with a string `workspace_id`")]
    NoWorkspaceId,
    /// A record that decodes but breaks a rule of its format: a field out
    /// of its range, two records that disagree.
    #[error("{problem}")]
    Record {
        /// Which field or record, and which rule it breaks.
        problem: String,
    },
    /// A stored field that fails the check its input passed: which field,
    /// and why, as an [`Error::InvalidInput`] would say it.
    #[error("invalid {field}: {reason}")]
    Field {
        /// The field (`fact_id`, `content`, `memory_key`, `evidence id`, ...).
        field: String,
        /// What is wrong with it.
        reason: Invalid,
    },
    /// One record of a state file known to be valid no longer decodes.
    #[error("{id}: {detail}")]
    RecordJson {
        /// The record's id.
        id: String,
        /// What the decoder found.
        detail: String,
    },
    /// A state about to be written breaks a rule: nothing is written.
    #[error("refusing to save: {0}")]
    RefusedSave(Box<Damage>),
    /// The last complete line of a stream is damaged.
    #[error("last complete line: {0}")]
    LastLine(Box<Damage>),
    /// A file in the place of the distill intent that is not one.
    #[error("not a distill intent ({detail}); remove it and run distill again")]
    NotDistillIntent {
        /// What the decoder found.
        detail: String,
    },
    /// A new revision whose entry key is already used.
    #[error("new revision {revision} of {memory_key} collides with existing entry {key}")]
    KeyCollision {
        /// The domain.
        memory_key: String,
        /// The revision number.
        revision: u32,
        /// The key both would have.
        key: String,
    },
    /// A journal transaction whose first line is not `prepared`.
    #[error("transaction {transaction_id} starts with {status} instead of prepared")]
    TransactionStart {
        /// The transaction.
        transaction_id: String,
        /// The status of its first line.
        status: String,
    },
    /// A `prepared` journal line without its intent.
    #[error("prepared line has no intent")]
    NoIntent,
    /// An intent whose bytes do not hash to the digest its line records.
    #[error("intent was modified: transaction {transaction_id} does not hash to its intent_sha256")]
    IntentHash {
        /// The transaction.
        transaction_id: String,
    },
    /// An intent that no longer decodes.
    #[error("intent was modified: {detail}")]
    IntentUnreadable {
        /// What the decoder found.
        detail: String,
    },
    /// A later line of a transaction with another intent digest.
    #[error("intent was modified: {status} line of {transaction_id} carries another intent_sha256")]
    IntentDigestChanged {
        /// The line's status.
        status: String,
        /// The transaction.
        transaction_id: String,
    },
    /// A later line of a transaction that carries an intent.
    #[error("{status} line of {transaction_id} must not carry an intent")]
    IntentRepeated {
        /// The line's status.
        status: String,
        /// The transaction.
        transaction_id: String,
    },
    /// Transaction lines out of order.
    #[error("transaction {transaction_id} records {status} after {after}")]
    TransactionOrder {
        /// The transaction.
        transaction_id: String,
        /// The status of the line out of order.
        status: String,
        /// The status before it.
        after: String,
    },
    /// The audit stream holds another decision under a transaction's
    /// event id.
    #[error("holds another adjudication with event id {event_id} of transaction {transaction_id}")]
    AdjudicationReused {
        /// The event id.
        event_id: String,
        /// The transaction.
        transaction_id: String,
    },
    /// A file that recovery finds in neither state of a transaction.
    #[error(
        "matches neither the before nor the after state of transaction {transaction_id}; recovery stopped"
    )]
    NeitherState {
        /// The transaction.
        transaction_id: String,
    },
    /// An intent whose snapshots disagree with the file hashes it records.
    #[error(
        "intent was modified: the {what} of transaction {transaction_id} do not agree with its file \
         hashes; recovery stopped"
    )]
    IntentSnapshots {
        /// Which snapshots (`curated entries`, ...).
        what: &'static str,
        /// The transaction.
        transaction_id: String,
    },
    /// An unfinished transaction this clone did not prepare.
    #[error(
        "holds unfinished transaction {transaction_id}{} that this clone did not prepare (it arrived \
         through git or was copied); it is never applied, and nothing that writes the memory \
         runs while it is there",
        decision.as_ref().map(|(actor, case)| format!(" (a decision by {actor:?} on case {case})")).unwrap_or_default()
    )]
    ForeignTransaction {
        /// The transaction.
        transaction_id: String,
        /// The actor and the case of its decision, when its intent says.
        decision: Option<(String, String)>,
    },
    /// A journal this clone did not write that cannot be read.
    #[error(
        "was not written by this clone (it arrived through git or was copied) and cannot be \
         read ({detail}); it is never applied"
    )]
    ForeignJournal {
        /// Why it cannot be read.
        detail: String,
    },
    /// A distill intent this clone did not write.
    #[error(
        "is a distill intent this clone did not write (it arrived through git or \
         was copied); it is never applied, and nothing that writes the memory runs \
         while it is there"
    )]
    ForeignDistillIntent,
    /// A merge that would change the pinned workspace id.
    #[error(
        "the merge would change the pinned workspace id ({ours} here, {theirs} on \
         the other side): every record carries the id, so a merge never changes \
         it; keep this side's file (`git checkout --ours {}`) and ask why the \
         other side changed it",
        path.display()
    )]
    PinChanged {
        /// This side's id.
        ours: String,
        /// The other side's id.
        theirs: String,
        /// The pin file.
        path: PathBuf,
    },
    /// A merged journal side that holds a resolution in flight.
    #[error(
        "the {side} version holds a resolution in flight; finish it on the machine \
         that wrote it (any command that opens the memory there does) and commit the \
         empty journal"
    )]
    ResolutionInFlight {
        /// Which side (`base`, `ours`, `theirs`).
        side: &'static str,
    },
    /// A line of a merged version that is not a record.
    #[error("{problem}{}", if *markers { MARKERS } else { "" })]
    MergeRecord {
        /// Why it is not a record.
        problem: String,
        /// Whether that version holds git's conflict markers.
        markers: bool,
    },
    /// Merged versions that hold several workspaces' records.
    #[error(
        "the versions hold records of several workspaces ({}); a merge never joins two \
         projects' memories",
        ids.join(", ")
    )]
    SeveralWorkspaces {
        /// The workspace ids.
        ids: Vec<String>,
    },
    /// A merged version of a state file without a workspace id.
    #[error("is not a JSON state file with a workspace_id{}", if *markers { MARKERS } else { "" })]
    NotStateFile {
        /// Whether it holds git's conflict markers.
        markers: bool,
    },
    /// Merged versions of a state file of two workspaces.
    #[error(
        "the versions belong to two workspaces ({first} and {second}); a merge never \
         joins two projects' memories"
    )]
    TwoWorkspaces {
        /// The id seen first.
        first: String,
        /// The other id.
        second: String,
    },
    /// A memory directory that does not exist (where one is expected: a
    /// check of the memory, not a first write).
    #[error("memory directory does not exist")]
    NoMemoryDir,
    /// A merge whose every version is empty.
    #[error("every version is empty")]
    EveryVersionEmpty,
    /// Derived state that fails its check against the logs.
    #[error(
        "{problem}{}; {}",
        match more { 0 => String::new(), n => format!(" (and {n} more problems)") },
        if *deleted {
            "no curated memory is served until it is restored or derived again"
        } else {
            "this state did not come from this clone and fails its check against the daily \
             logs and the audit stream, so none of it is used"
        }
    )]
    Unchecked {
        /// The first problem found.
        problem: String,
        /// How many more were found.
        more: usize,
        /// Whether a state file was deleted (rather than changed).
        deleted: bool,
    },
}

impl Damage {
    /// Returns the damage of a record that breaks a rule of its format.
    pub(crate) fn record(problem: impl Into<String>) -> Damage {
        Damage::Record { problem: problem.into() }
    }

    /// Returns the damage of a stored field that fails the check of its
    /// input: [`Damage::Field`] when the check names the field and the
    /// reason, else the check's message as a [`Damage::Record`].
    pub(crate) fn field(err: Error) -> Damage {
        match err {
            Error::InvalidInput { field, item: None, reason } => Damage::Field { field, reason },
            other => Damage::record(other.to_string()),
        }
    }

    /// Returns the damage `serde_json` found decoding a record.
    pub(crate) fn json(err: &serde_json::Error) -> Damage {
        Damage::Json { detail: describe_json_error(err) }
    }
}

/// Returns what `serde_json` found wrong with a record, by its category:
/// not JSON at all, JSON of the wrong shape, or unreadable.
pub(crate) fn describe_json_error(err: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match err.classify() {
        Category::Syntax | Category::Eof => format!("not valid JSON ({err})"),
        Category::Data => format!("invalid record: {err}"),
        Category::Io => format!("unreadable record: {err}"),
    }
}

/// What a merge error adds when the version it could not read holds git's
/// conflict markers.
const MARKERS: &str = " (the version holds git's conflict markers)";

/// One workspace id found in a memory directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceSighting {
    /// The id.
    pub workspace_id: String,
    /// How many records carry it.
    pub records: usize,
    /// The first record found with it.
    pub first: Location,
}

impl fmt::Display for WorkspaceSighting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.records == 1 { "record" } else { "records" };
        write!(f, "{} in {} {noun}, first at {}", self.workspace_id, self.records, self.first)
    }
}

/// Why an input was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Invalid {
    /// A required field is absent.
    #[error("missing; expected {expected}")]
    Missing {
        /// What was expected.
        expected: &'static str,
    },
    /// A value of the wrong JSON type.
    #[error("expected {expected}, got {got}")]
    WrongType {
        /// What was expected.
        expected: &'static str,
        /// What was given.
        got: &'static str,
    },
    /// A field this input does not have.
    #[error("unknown field; {}", if expected.is_empty() { "this tool takes no arguments".to_owned() } else { format!("expected one of {}", expected.join(", ")) })]
    UnknownField {
        /// The fields it has.
        expected: Vec<String>,
    },
    /// Empty after whitespace is collapsed.
    #[error("must not be empty")]
    Empty,
    /// Longer than allowed.
    #[error("is {chars} characters; at most {max} are allowed")]
    TooLong {
        /// Its length in characters.
        chars: usize,
        /// The most allowed.
        max: usize,
    },
    /// More entries than allowed.
    #[error("has {count} entries; at most {max} are allowed")]
    TooMany {
        /// How many were given.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// A number outside its range.
    #[error("{value} is outside {min}-{max}")]
    OutOfRange {
        /// The value given.
        value: i64,
        /// The smallest allowed.
        min: i64,
        /// The largest allowed.
        max: i64,
    },
    /// A number below its minimum.
    #[error("{value} is below the minimum of {min}")]
    TooSmall {
        /// The value given.
        value: i64,
        /// The smallest allowed.
        min: i64,
    },
    /// A number above its maximum.
    #[error("{value} is above the maximum of {max}")]
    TooLarge {
        /// The value given.
        value: i64,
        /// The largest allowed.
        max: i64,
    },
    /// A value that does not have the required form. The value itself is
    /// never part of the error: it failed its check, so it may be anything,
    /// a credential the guard did not recognise included.
    #[error("must be {rule}")]
    Malformed {
        /// The form it must have.
        rule: &'static str,
    },
    /// A control or format character (C0, C1, bidi override, zero-width).
    #[error(
        "contains the control character U+{code_point:04X}; control and format characters (C0, C1, bidi \
         overrides, zero-width) are not allowed"
    )]
    ControlCharacter {
        /// Its code point.
        code_point: u32,
    },
    /// A credential, which workmem never stores.
    #[error(
        "looks like it contains a secret ({kind}); credentials are never stored, remove it and retry"
    )]
    Secret {
        /// The kind of credential (`private key`, `AWS access key`, ...).
        kind: &'static str,
    },
    /// An instant workmem does not accept.
    #[error("{0}")]
    Instant(#[from] StampError),
    /// A fact id already stored with other fields. The id is shown: it
    /// is in the log already, where the secret guard checked it.
    #[error("{id} is already used by another fact")]
    IdTaken {
        /// The id.
        id: String,
    },
    /// A fact id given twice in one input (the item names the second).
    #[error("the same fact_id was given to an earlier item of the input")]
    IdRepeated,
    /// An id that names nothing in this workspace.
    #[error("no fact with the fact_id given in this workspace")]
    NoSuchFact,
    /// Fact ids a correction names that no fact of this workspace has.
    #[error("no fact of this workspace has the id {}", ids.join(", "))]
    UnknownFacts {
        /// The ids.
        ids: Vec<String>,
    },
    /// Event ids a redaction names that no decision or correction record
    /// of this workspace has.
    #[error("no decision or correction record of this workspace has the event id {}", ids.join(", "))]
    UnknownEvents {
        /// The ids.
        ids: Vec<String>,
    },
    /// An actor or rationale given as the redaction marker, which only a
    /// redaction writes (verify would take the record for a redacted one).
    #[error(
        "is the redaction marker {marker:?}, which only `redact` writes: say who or why in words"
    )]
    Marker {
        /// The marker.
        marker: &'static str,
    },
    /// Facts or records a redaction names that are redacted already
    /// (their lines are tombstones, or hold the marker).
    #[error("already redacted: {}", ids.join(", "))]
    AlreadyRedacted {
        /// The ids.
        ids: Vec<String>,
    },
    /// A fact or record a redaction names whose id is on more than one
    /// line of the log or the streams (a hand-edited file): which line to
    /// replace is not guessed.
    #[error("the id {id} is on more than one line of the memory's files")]
    RepeatedFact {
        /// The id.
        id: String,
    },
    /// Facts a redaction does not name whose content has the same normal
    /// form as a fact it redacts: the text would stay in them.
    #[error(
        "the facts {} hold the same text as a fact named (in another case or spacing): \
         name them too, or use --scan",
        ids.join(", ")
    )]
    SameText {
        /// The facts not named.
        ids: Vec<String>,
    },
    /// An entry key that names no entry of curated.json.
    #[error("no entry has the key {key}")]
    NoSuchEntry {
        /// The key.
        key: String,
    },
    /// A retraction of evidence of a value that waits for a person: a
    /// merge put the domain in dispute, and a person decides it first.
    #[error(
        "{memory_key} is under review (a merge left two values of it in dispute): \
         its evidence is retracted once a person has decided the case"
    )]
    UnderReview {
        /// The domain.
        memory_key: String,
    },
    /// A correction record that breaks a rule of the stream.
    #[error("{0}")]
    Correction(Violation),
    /// A restore that names nothing it can undo.
    #[error("{0}")]
    Restore(#[from] RestoreRefusal),
    /// The project is not a directory workmem can use.
    #[error("{path} is {problem}")]
    Project {
        /// The path.
        path: PathBuf,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A write through a handle opened read-only.
    #[error("opened read-only; this operation writes")]
    ReadOnly,
}

/// What is wrong with one correction record: the rule it breaks, naming
/// the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// A field that must hold an id does not.
    #[error("invalid correction: {field} {id:?} is not an id")]
    BadId {
        /// The field.
        field: &'static str,
        /// The value found.
        id: String,
    },
    /// `fact_ids` or `event_ids` is not sorted and unique.
    #[error("invalid correction: {field} is not sorted and unique")]
    Unsorted {
        /// The field.
        field: &'static str,
    },
    /// A record that names no fact (and, for a redaction, no record).
    #[error("invalid correction: a {action} record names no fact")]
    NamesNothing {
        /// The record's action, by name.
        action: &'static str,
    },
    /// A field that the record's action requires is missing.
    #[error("invalid correction: a {action} record needs {field}")]
    Missing {
        /// The record's action, by name.
        action: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A field that the record's action does not have is set.
    #[error("invalid correction: a {action} record has no {field}")]
    Unexpected {
        /// The record's action, by name.
        action: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A restore that names itself.
    #[error("invalid correction: restore {event_id} names itself in restores")]
    RestoresItself {
        /// The record's event id.
        event_id: String,
    },
    /// `line_sha256` does not hold one SHA-256 for exactly the ids the
    /// redaction names.
    #[error("invalid correction: line_sha256 {reason}")]
    LineHashes {
        /// What does not match.
        reason: String,
    },
    /// An actor or rationale that is empty, too long or holds a refused
    /// character.
    #[error("invalid correction: {field} {reason}")]
    Text {
        /// The field.
        field: &'static str,
        /// Why it is refused.
        reason: String,
    },
}

/// Why a retraction cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreRefusal {
    /// No record of the stream has the event id.
    #[error("no correction has event id {event_id}")]
    Unknown {
        /// The event id asked for.
        event_id: String,
    },
    /// The record is a redaction: the text is gone, and a value is never
    /// rebuilt from a guess of it.
    #[error(
        "correction {event_id} is a redaction, which cannot be restored: the text is gone, and a \
         value is never rebuilt from a guess of it; record the fact again if it holds"
    )]
    Redaction {
        /// The event id asked for.
        event_id: String,
    },
    /// The record is itself a restore.
    #[error("correction {event_id} is a restore, not a retraction; restore names a retraction")]
    NotARetraction {
        /// The event id asked for.
        event_id: String,
    },
    /// The retraction was already undone.
    #[error("retraction {event_id} was already restored by {by}; nothing to restore")]
    AlreadyRestored {
        /// The event id asked for.
        event_id: String,
        /// The restore that undid it.
        by: String,
    },
}

/// Why a resolution no longer applies to the case as it is now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Stale {
    /// The case has another revision than the one reviewed.
    #[error("conflict {conflict_id} is at revision {current}, not {expected}; review it again")]
    Revision {
        /// The case.
        conflict_id: String,
        /// Its revision now.
        current: u32,
        /// The revision reviewed.
        expected: i64,
    },
    /// The case was resolved or superseded meanwhile.
    #[error("conflict {conflict_id} is {status}, not open")]
    Closed {
        /// The case.
        conflict_id: String,
        /// Its status now.
        status: &'static str,
    },
    /// The domain's active value changed since the case was detected.
    #[error("the active value of {memory_key} changed since conflict {conflict_id} was detected")]
    ActiveChanged {
        /// The case.
        conflict_id: String,
        /// Its domain.
        memory_key: String,
    },
    /// Facts of the domain were added since the case was detected.
    #[error(
        "evidence changed: facts with memory_key {memory_key} were added since conflict {conflict_id} was \
         detected; run distill and review again"
    )]
    EvidenceChanged {
        /// The case.
        conflict_id: String,
        /// Its domain.
        memory_key: String,
    },
}

/// Why a resolution was refused outright.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejected {
    /// No case has the id given (not repeated: an id that names nothing
    /// may be anything).
    #[error("unknown conflict: no case has the conflict_id given")]
    UnknownConflict,
    /// The case has no candidate with the id given (not repeated).
    #[error("the candidate_id given is not a candidate of conflict {conflict_id}")]
    UnknownCandidate {
        /// The case.
        conflict_id: String,
    },
    /// The event id already records another decision.
    #[error("event id {event_id} was already used for a different decision")]
    EventIdReused {
        /// The event id.
        event_id: String,
    },
}

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Returns what kind of failure this is: the one thing a caller
    /// matching on errors (an exit code, a retry) needs.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidInput { .. } => ErrorKind::InvalidInput,
            Error::Scope { .. } => ErrorKind::Scope,
            Error::MixedWorkspaces { .. } => ErrorKind::MixedWorkspaces,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::UnsupportedVersion { .. } => ErrorKind::UnsupportedVersion,
            Error::StaleResolution(_) => ErrorKind::StaleResolution,
            Error::ResolutionRejected(_) => ErrorKind::ResolutionRejected,
            Error::Io { .. } => ErrorKind::Io,
        }
    }

    /// Returns an invalid-input error for `field`.
    pub fn invalid(field: impl Into<String>, reason: Invalid) -> Self {
        Error::InvalidInput { field: field.into(), item: None, reason }
    }

    /// Returns this error placed at the 1-based `item` of a batch, when it
    /// is an invalid-input error.
    pub fn at_item(self, index: usize) -> Self {
        match self {
            Error::InvalidInput { field, reason, .. } => {
                Error::InvalidInput { field, item: Some(index), reason }
            }
            other => other,
        }
    }

    /// Returns a corruption error: `damage` found at `location`.
    pub fn corrupt(location: Location, damage: Damage) -> Self {
        Error::Corrupt { location, damage }
    }

    /// Returns the damage of a corruption error, else nothing.
    pub fn damage(&self) -> Option<&Damage> {
        match self {
            Error::Corrupt { damage, .. } => Some(damage),
            _ => None,
        }
    }
}

/// Attaches a path to an `io::Error`.
pub(crate) trait IoContext<T> {
    /// Returns the result with its error wrapped as [`Error::Io`] naming `path`.
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|source| Error::Io { path: path.to_path_buf(), source })
    }
}

/// Why a text is not a timestamp workmem accepts.
///
/// The messages name the rule and never the text: a text that is not an
/// instant may be anything, a credential included.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StampError {
    /// Not the RFC 3339 shape with a date, a `T`, a time and an offset.
    #[error("is not an RFC 3339 instant with an offset (e.g. 2026-01-01T12:00:00Z)")]
    NotRfc3339,
    /// An offset outside -23:59 to +23:59.
    #[error("has an offset outside -23:59 to +23:59; an RFC 3339 offset is one of those (or Z)")]
    BadOffset,
    /// A valid instant outside 0001-01-01T00:00:00Z to the latest
    /// representable one.
    #[error("is outside the supported range 0001-01-01T00:00:00Z to {latest}")]
    OutOfRange {
        /// The latest instant accepted.
        latest: String,
    },
    /// The RFC 3339 shape with an impossible date or time.
    #[error(
        "is not a valid RFC 3339 instant: a month is 01-12, a day exists in its month, hours are \
         00-23, minutes and seconds 00-59"
    )]
    Invalid,
}

#[cfg(test)]
mod tests {
    use super::{Damage, Error, ErrorKind, Invalid, Location, Rejected, Stale, WorkspaceSighting};

    /// Returns one error of each variant. The `match` has no wildcard: a
    /// new variant does not compile until it is listed here, with its kind.
    fn one_of_each() -> Vec<(Error, ErrorKind)> {
        let at = || Location::file(std::path::Path::new("m/curated.json"));
        let all = vec![
            (Error::invalid("content", Invalid::Empty), ErrorKind::InvalidInput),
            (
                Error::Scope { location: at(), found: "a".into(), expected: "b".into() },
                ErrorKind::Scope,
            ),
            (Error::MixedWorkspaces { found: Vec::new() }, ErrorKind::MixedWorkspaces),
            (Error::corrupt(at(), Damage::MergeMarkers), ErrorKind::Corrupt),
            (
                Error::UnsupportedVersion {
                    location: at(),
                    what: "curated",
                    found: 9,
                    supported: "1, 2",
                },
                ErrorKind::UnsupportedVersion,
            ),
            (
                Error::StaleResolution(Stale::Closed {
                    conflict_id: "c".into(),
                    status: "resolved",
                }),
                ErrorKind::StaleResolution,
            ),
            (Error::ResolutionRejected(Rejected::UnknownConflict), ErrorKind::ResolutionRejected),
            (Error::Io { path: "m".into(), source: std::io::Error::other("gone") }, ErrorKind::Io),
        ];
        for (err, _) in &all {
            match err {
                Error::InvalidInput { .. }
                | Error::Scope { .. }
                | Error::MixedWorkspaces { .. }
                | Error::Corrupt { .. }
                | Error::UnsupportedVersion { .. }
                | Error::StaleResolution(_)
                | Error::ResolutionRejected(_)
                | Error::Io { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_variant_has_its_own_kind() {
        let all = one_of_each();
        for (err, kind) in &all {
            assert_eq!(err.kind(), *kind, "{err}");
        }
        let mut kinds: Vec<String> = all.iter().map(|(_, kind)| format!("{kind:?}")).collect();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), all.len(), "two variants share a kind: {kinds:?}");
    }

    #[test]
    fn corruption_reads_as_location_then_damage() {
        let err = Error::corrupt(
            Location::line(std::path::Path::new("m/journal.jsonl"), 3),
            Damage::TransactionOrder {
                transaction_id: "t1".into(),
                status: "committed".into(),
                after: "prepared".into(),
            },
        );
        assert_eq!(
            err.to_string(),
            "m/journal.jsonl:3: transaction t1 records committed after prepared"
        );
        assert!(matches!(err.damage(), Some(Damage::TransactionOrder { .. })));
        assert_eq!(Error::invalid("content", Invalid::Empty).damage(), None);
    }

    #[test]
    fn a_sighting_counts_its_records_in_the_right_number() {
        let first = Location { path: "daily/2026-01-05.jsonl".into(), line: Some(3) };
        let one = WorkspaceSighting { workspace_id: "0123".into(), records: 1, first };
        assert!(one.to_string().starts_with("0123 in 1 record, first at "), "{one}");
        let two = WorkspaceSighting { records: 2, ..one };
        assert!(two.to_string().starts_with("0123 in 2 records, first at "), "{two}");
    }
}
