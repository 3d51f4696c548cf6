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
    /// Input rejected before anything was written (bad kind, importance,
    /// memory_key, id, timestamp, policy value, detected secret, ...).
    #[error("invalid {field}: {message}")]
    InvalidInput {
        /// The field or argument that was wrong.
        field: String,
        /// What was wrong with it.
        message: String,
    },
    /// A durable record belongs to another workspace.
    #[error("{location}: belongs to workspace {found}, not {expected}")]
    Scope {
        /// Where the record was read.
        location: Location,
        /// The workspace id found in the record.
        found: String,
        /// The workspace id of the open workspace.
        expected: String,
    },
    /// Durable state is invalid or inconsistent.
    #[error("{location}: {message}")]
    Corrupt {
        /// Where the problem was found.
        location: Location,
        /// What is wrong.
        message: String,
    },
    /// A resolution was based on a view that is no longer current.
    #[error("stale resolution: {0}")]
    StaleResolution(String),
    /// A resolution was refused (unknown conflict or candidate, event id
    /// reused for another decision).
    #[error("resolution rejected: {0}")]
    ResolutionRejected(String),
    /// An operating-system call failed on a path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory the call was about.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Returns an invalid-input error for `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidInput { field: field.into(), message: message.into() }
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
