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
         memory was written at another path (a moved, copied or re-mounted project), \
         `workmem adopt` takes it over"
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
    #[error("{location}: {message}")]
    Corrupt {
        /// Where the problem was found.
        location: Location,
        /// What is wrong.
        message: String,
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
        "looks like it contains a secret ({kind}); workmem never stores credentials, remove it and retry"
    )]
    Secret {
        /// The kind of credential (`private key`, `AWS access key`, ...).
        kind: &'static str,
    },
    /// An instant workmem does not accept.
    #[error("{0}")]
    Instant(#[from] crate::model::stamp::StampError),
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

/// Returns whether `path` is a regular file holding git's conflict markers
/// (a FIFO would block a read, a link may point anywhere).
fn corrupt_by_merge_markers(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file())
        && std::fs::read(path).is_ok_and(|data| crate::has_conflict_markers(&data))
}

/// Whether `path` names one of the files `workmem rebuild` derives again.
fn is_derived_state(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|name| name == "curated.json" || name == "conflicts.json")
}

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Returns what to do about the error, where the library can say: for
    /// damaged state, to finish a merge git left with conflict markers in
    /// the named file, or that nothing was changed and where to look. The
    /// CLI and the MCP server give the same hint.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Corrupt { location, .. } => Some(if corrupt_by_merge_markers(&location.path) {
                "git left merge conflict markers in this file: finish the merge with `workmem \
                 merge --continue`, then commit; `workmem share` sets up the merge driver that \
                 avoids this"
                    .to_owned()
            } else if is_derived_state(&location.path) {
                "nothing was changed and nothing of this file is served; `workmem verify` lists \
                 every problem; restore the file from git if a checkout or a merge damaged or \
                 deleted it, or run `workmem rebuild` to derive curated.json and conflicts.json \
                 again from the daily logs and the audit stream"
                    .to_owned()
            } else {
                "nothing was changed; inspect the named file and line (`workmem verify` lists \
                 every problem)"
                    .to_owned()
            }),
            _ => None,
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

    /// Returns a corruption error at `location`.
    pub fn corrupt(location: Location, message: impl Into<String>) -> Self {
        Error::Corrupt { location, message: message.into() }
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

#[cfg(test)]
mod tests {
    use super::{Location, WorkspaceSighting};

    #[test]
    fn a_sighting_counts_its_records_in_the_right_number() {
        let first = Location { path: "daily/2026-01-05.jsonl".into(), line: Some(3) };
        let one = WorkspaceSighting { workspace_id: "0123".into(), records: 1, first };
        assert!(one.to_string().starts_with("0123 in 1 record, first at "), "{one}");
        let two = WorkspaceSighting { records: 2, ..one };
        assert!(two.to_string().starts_with("0123 in 2 records, first at "), "{two}");
    }
}
