//! What the editors of each file format (`block`, `json`, `toml`) share
//! with the plan that drives them (`edit`): why a file could not be
//! edited, and how much of what a removed part leaves empty goes too.

/// Why a file could not be edited.
#[derive(Debug)]
pub enum EditError {
    /// The file is not valid in its format.
    Parse {
        /// 1-based line of the error.
        line: usize,
        /// What the parser said.
        message: String,
    },
    /// The file is valid but a key holds something else than expected.
    Shape(String),
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::Parse { line, message } => write!(f, "line {line}: {message}"),
            EditError::Shape(message) => f.write_str(message),
        }
    }
}

/// How much of what a part leaves empty a removal takes away too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prune {
    /// Empty containers, and the file when nothing is left of it.
    File,
    /// Empty containers, keeping the file.
    Containers,
    /// Only the part itself.
    Nothing,
}
