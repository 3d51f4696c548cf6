//! The error every command returns, and how it reaches the user.
//!
//! A [`CommandError`] carries a [`CommandErrorKind`] (which names the
//! `--json` error kind and picks the exit code of the contract in
//! docs/cli.md, one `match` each), a message, the causes behind it and
//! hints. Library errors convert with one `From` that takes the kind from
//! [`workmem::Error::kind`] and the hints from `workmem-hints` (shared with
//! the MCP server) or from the CLI's own flags. Nothing here reads a file to
//! classify an error. This module prints only to stderr and never exits the
//! process.

use std::io::{self, Write};

use serde::Serialize;

use crate::escape::escape_controls;

/// Exit code of a usage error or invalid input.
pub const EXIT_USAGE: i32 = 2;
/// Exit code of an I/O or unexpected failure.
pub const EXIT_IO: i32 = 1;
/// Exit code of invalid or inconsistent durable state.
pub const EXIT_CORRUPT: i32 = 4;

/// What kind of failure a command had: the stable `kind` of `--json` error
/// output and, through one `match`, the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandErrorKind {
    /// Arguments the CLI itself rejects.
    Usage,
    /// Input the library or the CLI refused.
    InvalidInput,
    /// An operating-system call failed, or an unexpected failure.
    Io,
    /// Invalid or inconsistent durable state.
    Corrupt,
    /// A durable file of a schema version this build does not know.
    UnsupportedVersion,
    /// A resolution based on a view that is no longer current.
    StaleResolution,
    /// A record or memory directory of another workspace.
    Scope,
    /// A resolution refused outright.
    ResolutionRejected,
    /// `scan` found credentials.
    SecretsFound,
    /// `setup --check` found a problem.
    CheckFailed,
    /// A library error of a kind this build does not know.
    Other,
}

impl CommandErrorKind {
    /// Returns the kind of a library error.
    pub fn of(kind: workmem::ErrorKind) -> CommandErrorKind {
        match kind {
            workmem::ErrorKind::Io => CommandErrorKind::Io,
            workmem::ErrorKind::InvalidInput => CommandErrorKind::InvalidInput,
            workmem::ErrorKind::StaleResolution => CommandErrorKind::StaleResolution,
            workmem::ErrorKind::Corrupt => CommandErrorKind::Corrupt,
            workmem::ErrorKind::UnsupportedVersion => CommandErrorKind::UnsupportedVersion,
            workmem::ErrorKind::Scope | workmem::ErrorKind::MixedWorkspaces => {
                CommandErrorKind::Scope
            }
            workmem::ErrorKind::ResolutionRejected => CommandErrorKind::ResolutionRejected,
            // The library may gain kinds: an unknown one is an unexpected
            // failure, like I/O.
            _ => CommandErrorKind::Other,
        }
    }

    /// Returns the stable name of `--json` error output.
    pub fn name(self) -> &'static str {
        match self {
            CommandErrorKind::Usage => "usage",
            CommandErrorKind::InvalidInput => "invalid_input",
            CommandErrorKind::Io => "io",
            CommandErrorKind::Corrupt => "corruption",
            CommandErrorKind::UnsupportedVersion => "unsupported_version",
            CommandErrorKind::StaleResolution => "stale_resolution",
            CommandErrorKind::Scope => "scope",
            CommandErrorKind::ResolutionRejected => "resolution_rejected",
            CommandErrorKind::SecretsFound => "secrets_found",
            CommandErrorKind::CheckFailed => "check_failed",
            CommandErrorKind::Other => "error",
        }
    }

    /// Returns the process exit code of the command-line contract: the one
    /// place the exit-code table lives.
    pub fn exit_code(self) -> i32 {
        match self {
            CommandErrorKind::Usage | CommandErrorKind::InvalidInput => EXIT_USAGE,
            CommandErrorKind::Io
            | CommandErrorKind::SecretsFound
            | CommandErrorKind::CheckFailed
            | CommandErrorKind::Other => EXIT_IO,
            CommandErrorKind::StaleResolution => 3,
            CommandErrorKind::Corrupt | CommandErrorKind::UnsupportedVersion => EXIT_CORRUPT,
            CommandErrorKind::Scope => 5,
            CommandErrorKind::ResolutionRejected => 6,
        }
    }
}

/// A failed command: what went wrong, how the process exits, and hints.
#[derive(Debug)]
pub struct CommandError {
    kind: CommandErrorKind,
    message: String,
    causes: Vec<String>,
    hints: Vec<String>,
    broken_pipe: bool,
    /// What a library error was about, for the hints only git can give.
    about: Option<Box<About>>,
}

/// What a library error was about.
#[derive(Debug)]
enum About {
    /// A scope error: the id found in a record and the id expected.
    Scope(String, String),
    /// A corruption error about this file.
    Corrupt(std::path::PathBuf),
}

impl CommandError {
    /// Returns a usage error (exit 2), for arguments the CLI itself rejects.
    pub fn usage(message: impl Into<String>) -> CommandError {
        CommandError::new(CommandErrorKind::Usage, message)
    }

    /// Returns an invalid-input error (exit 2) for `field`, worded like the
    /// library's.
    pub fn invalid(field: &str, message: impl std::fmt::Display) -> CommandError {
        CommandError::new(CommandErrorKind::InvalidInput, format!("invalid {field}: {message}"))
    }

    /// Returns a corruption error (exit 4), for problems `verify` found.
    pub fn corrupt(message: impl Into<String>) -> CommandError {
        CommandError::new(CommandErrorKind::Corrupt, message)
    }

    /// Returns the error of a `scan` that found credentials (exit 1).
    pub fn found(message: impl Into<String>) -> CommandError {
        CommandError::new(CommandErrorKind::SecretsFound, message)
    }

    /// Returns the error of a check that found a problem (exit 1), for
    /// `setup --check`.
    pub fn check_failed(message: impl Into<String>) -> CommandError {
        CommandError::new(CommandErrorKind::CheckFailed, message)
    }

    /// Returns an I/O error (exit 1) about `what`.
    pub fn io(what: impl std::fmt::Display, err: &io::Error) -> CommandError {
        let broken_pipe = err.kind() == io::ErrorKind::BrokenPipe;
        let mut error = CommandError::new(CommandErrorKind::Io, format!("{what}: {err}"));
        error.broken_pipe = broken_pipe;
        error
    }

    /// Returns an error writing results to stdout; a broken pipe is marked so
    /// that the process exits 0 without a message.
    pub fn stdout(err: &io::Error) -> CommandError {
        CommandError::io("cannot write to stdout", err)
    }

    fn new(kind: CommandErrorKind, message: impl Into<String>) -> CommandError {
        CommandError {
            kind,
            message: message.into(),
            causes: Vec::new(),
            hints: Vec::new(),
            broken_pipe: false,
            about: None,
        }
    }

    /// Returns this error with one more hint line.
    pub fn hinted(mut self, hint: impl Into<String>) -> CommandError {
        self.hints.push(hint.into());
        self
    }

    /// Returns, for a scope error, the workspace id found in a record and
    /// the id expected.
    pub fn scope_ids(&self) -> Option<(&str, &str)> {
        match self.about.as_deref() {
            Some(About::Scope(found, expected)) => Some((found, expected)),
            _ => None,
        }
    }

    /// Returns, for a corruption error, the file it is about.
    pub fn corrupt_file(&self) -> Option<&std::path::Path> {
        match self.about.as_deref() {
            Some(About::Corrupt(path)) => Some(path),
            _ => None,
        }
    }

    /// Returns the message (without causes or hints).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Returns the process exit code.
    pub fn exit_code(&self) -> i32 {
        self.kind.exit_code()
    }

    /// Returns whether the error is a closed stdout (a silent success).
    pub fn is_broken_pipe(&self) -> bool {
        self.broken_pipe
    }

    /// Writes the error to stderr: `error:`, `caused by:` and `hint:` lines,
    /// or one `{"error": {"kind", "message"}}` document with `json`.
    pub fn report(&self, json: bool) {
        // One write: stderr is unbuffered, and a document written piece by
        // piece could interleave with another writer's.
        let mut stderr = io::BufWriter::new(io::stderr().lock());
        // Nothing sensible is left to do when stderr itself is gone.
        let _ = if json { self.write_json(&mut stderr) } else { self.write_human(&mut stderr) }
            .and_then(|()| stderr.flush());
    }

    /// Returns the error as `report` writes it for a person: `error:`,
    /// `caused by:` and `hint:` lines.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub fn to_text(&self) -> String {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_human(&mut out);
        String::from_utf8_lossy(&out).trim_end().to_owned()
    }

    fn write_human(&self, out: &mut dyn Write) -> io::Result<()> {
        // Messages may quote hostile input: never let it reach the terminal raw.
        writeln!(out, "error: {}", escape_controls(&self.message))?;
        for cause in &self.causes {
            writeln!(out, "caused by: {}", escape_controls(cause))?;
        }
        for hint in &self.hints {
            writeln!(out, "hint: {}", escape_controls(hint))?;
        }
        Ok(())
    }

    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        #[derive(Serialize)]
        struct Body<'a> {
            kind: &'a str,
            message: &'a str,
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            hints: &'a [String],
        }
        #[derive(Serialize)]
        struct Document<'a> {
            error: Body<'a>,
        }
        let doc = Document {
            error: Body { kind: self.kind.name(), message: &self.message, hints: &self.hints },
        };
        serde_json::to_writer(&mut *out, &doc).map_err(io::Error::other)?;
        writeln!(out)
    }
}

impl CommandError {
    /// Returns the invalid-input error of the library's `reason` for
    /// `field` as the CLI names it, with the library's hints.
    pub fn from_invalid(field: &str, reason: &workmem::Invalid) -> CommandError {
        let mut error = CommandError::invalid(field, reason);
        error.hints.extend(field_hint(field, reason).map(str::to_owned));
        error
    }
}

impl From<workmem::Error> for CommandError {
    fn from(err: workmem::Error) -> CommandError {
        let mut error = CommandError::new(CommandErrorKind::of(err.kind()), err.to_string());
        // The library's messages already include their immediate source;
        // list only deeper causes, and none twice.
        let mut source = std::error::Error::source(&err);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !error.message.contains(&text) {
                error.causes.push(text);
            }
            source = cause.source();
        }
        match &err {
            workmem::Error::InvalidInput { field, reason, .. } => {
                error.hints.extend(field_hint(field, reason).map(str::to_owned));
            }
            workmem::Error::Scope { found, expected, .. } => {
                error.about = Some(Box::new(About::Scope(found.clone(), expected.clone())));
                // The hint the MCP server gives too.
                error.hints.extend(workmem_hints::error_hint(&err).map(str::to_owned));
            }
            workmem::Error::ResolutionRejected(workmem::Rejected::UnknownConflict) => {
                error.hints.push(
                    "`workmem conflicts` lists the open cases with their ids (`--status all`, every case)"
                        .to_owned(),
                );
            }
            workmem::Error::ResolutionRejected(workmem::Rejected::UnknownCandidate { .. }) => {
                error.hints.push(
                    "`workmem conflicts` lists each case's candidates with their ids and numbers"
                        .to_owned(),
                );
            }
            workmem::Error::MixedWorkspaces { .. } => {
                error.hints.push(
                    "nothing was changed; move the other project's files out of the memory directory first"
                        .to_owned(),
                );
            }
            workmem::Error::Corrupt { location, .. } => {
                error.about = Some(Box::new(About::Corrupt(location.path.clone())));
                // The hint the MCP server gives too.
                error.hints.extend(workmem_hints::corruption_hint(&err).map(str::to_owned));
            }
            _ => {}
        }
        error
    }
}

/// Returns a hint for an invalid field, by the reason and the field name
/// the library reports (possibly suffixed, e.g. `evidence value of "k"`).
fn field_hint(field: &str, reason: &workmem::Invalid) -> Option<&'static str> {
    match reason {
        // The library's message already says what to do.
        workmem::Invalid::Secret { .. } | workmem::Invalid::ReadOnly => return None,
        workmem::Invalid::IdTaken { .. } | workmem::Invalid::IdRepeated => {
            return Some("fact ids are unique: a retry must repeat every field exactly");
        }
        // The library names what is missing; the command that lists what
        // there is lives here.
        workmem::Invalid::UnknownFacts { .. } => {
            return Some("`workmem facts --all` lists the facts");
        }
        workmem::Invalid::UnknownEvents { .. } => {
            return Some(
                "`workmem history` lists the decisions and corrections with their event ids",
            );
        }
        workmem::Invalid::NoSuchEntry { .. } => {
            return Some("`workmem history` and `workmem explain` show entry keys");
        }
        workmem::Invalid::UnderReview { .. } => {
            return Some(
                "`workmem distill` opens the case and `workmem review` decides it; then retract",
            );
        }
        workmem::Invalid::Restore(workmem::RestoreRefusal::Unknown { .. }) => {
            return Some("`workmem history` lists the corrections");
        }
        _ => {}
    }
    let base = field.split(' ').next().unwrap_or(field);
    Some(match base {
        "content" => "content must be 1 to 2000 characters after whitespace is collapsed",
        "importance" => "importance runs from trivia (lowest) to critical (highest)",
        "kind" => "kinds are decision, convention, pitfall and outcome",
        "memory_key" => {
            "a memory key names the question, not the answer: lowercase letters and digits joined by . _ or - \
             (e.g. runtime.python-version), at most 120 characters"
        }
        "fact_id" => "ids start with a letter or digit, then up to 199 of A-Z a-z 0-9 . _ : / -",
        "recorded_at" => "--at takes an RFC 3339 instant with an offset, e.g. 2026-01-01T12:00:00Z",
        "source" => "--source is one word of 1 to 64 characters, e.g. user or agent",
        "evidence" => "-e takes KEY=VALUE; keys are 1 to 100 characters, at most 32 entries",
        "minimum_importance" => {
            "set by --min-importance or policy.minimum_importance in .workmem/config.toml"
        }
        "repeat_threshold" => "set by --repeat or policy.repeat_threshold in .workmem/config.toml",
        "supersession_repeat_threshold" => {
            "set by --supersede-repeat or policy.supersession_repeat_threshold in .workmem/config.toml"
        }
        "minimum_age_days" => {
            "set by --min-age-days or policy.minimum_age_days in .workmem/config.toml"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::CommandErrorKind;

    /// The exit-code table of the command-line contract, kind by kind: a
    /// library kind maps to its command kind and on to its code.
    #[test]
    fn each_library_kind_has_its_contract_exit_code_and_name() {
        let table = [
            (workmem::ErrorKind::Io, "io", 1),
            (workmem::ErrorKind::InvalidInput, "invalid_input", 2),
            (workmem::ErrorKind::StaleResolution, "stale_resolution", 3),
            (workmem::ErrorKind::Corrupt, "corruption", 4),
            (workmem::ErrorKind::UnsupportedVersion, "unsupported_version", 4),
            (workmem::ErrorKind::Scope, "scope", 5),
            (workmem::ErrorKind::MixedWorkspaces, "scope", 5),
            (workmem::ErrorKind::ResolutionRejected, "resolution_rejected", 6),
        ];
        for (library, name, code) in table {
            let kind = CommandErrorKind::of(library);
            assert_eq!((kind.name(), kind.exit_code()), (name, code), "{library:?}");
        }
    }

    /// A correction that names nothing: the library says what is missing,
    /// and only the hint names the command that lists what there is.
    #[test]
    fn a_correction_naming_nothing_hints_the_command_that_lists_what_there_is() {
        use workmem::{Error, Invalid, RestoreRefusal};
        let cases = [
            (Invalid::UnknownFacts { ids: vec!["f-9".into()] }, "workmem facts --all"),
            (Invalid::NoSuchEntry { key: "0123456789abcdef".into() }, "workmem explain"),
            (
                Invalid::Restore(RestoreRefusal::Unknown { event_id: "c-9".into() }),
                "workmem history",
            ),
        ];
        for (reason, command) in cases {
            let library = Error::invalid("fact_ids", reason);
            assert!(!library.to_string().contains("workmem "), "{library}");
            let error = super::CommandError::from(library);
            assert!(error.hints.iter().any(|hint| hint.contains(command)), "{:?}", error.hints);
        }
    }

    #[test]
    fn the_cli_own_kinds_keep_their_codes() {
        let table = [
            (CommandErrorKind::Usage, "usage", 2),
            (CommandErrorKind::SecretsFound, "secrets_found", 1),
            (CommandErrorKind::CheckFailed, "check_failed", 1),
            (CommandErrorKind::Other, "error", 1),
        ];
        for (kind, name, code) in table {
            assert_eq!((kind.name(), kind.exit_code()), (name, code), "{kind:?}");
        }
    }
}
