//! What commands print: the `--json` output types and the [`Ui`] that writes
//! results to stdout and status to stderr.
//!
//! Results go to stdout, status and progress to stderr. With `--json`, stdout
//! receives exactly one JSON document (compact, newline-terminated) whose
//! shape is the contract of docs/cli.md; fields may be added, never renamed or
//! removed. Library records (facts, reports, conflict cases, day summaries)
//! are serialized with their own format-stable serde types.
//!
//! Text output never writes a raw control or format character: everything
//! printed to a terminal goes through `escape_controls`, so a hostile
//! memory directory cannot retitle, clear or reorder a terminal (JSON output
//! is escaped by its encoder).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::command_error::CommandError;
use crate::escape::escape_controls;

/// `init --json`.
///
/// ```json
/// {"project": "/home/me/app", "memory_dir": "/home/me/app/.workmem/memory", "workspace_id": "0123456789abcdef"}
/// ```
#[derive(Debug, Serialize)]
pub struct InitOutput<'a> {
    /// The canonical project directory.
    pub project: &'a Path,
    /// The memory directory.
    pub memory_dir: &'a Path,
    /// 16 hex characters identifying the project.
    pub workspace_id: &'a str,
}

/// `import --json`.
///
/// ```json
/// {"imported": 3}
/// ```
#[derive(Debug, Serialize)]
pub struct ImportOutput {
    /// Facts appended.
    pub imported: usize,
    /// Items already stored with identical fields (an earlier run of the
    /// same import): not appended again.
    pub already_present: usize,
}

/// `memory --json`.
///
/// ```json
/// {"memory": "# Workspace Memory\n..."}
/// ```
#[derive(Debug, Serialize)]
pub struct MemoryOutput<'a> {
    /// The MEMORY.md text.
    pub memory: &'a str,
}

/// `context --json`.
///
/// ```json
/// {"context": "# Workspace Memory\n...\n\n# Recent Workspace Facts\n..."}
/// ```
#[derive(Debug, Serialize)]
pub struct ContextOutput<'a> {
    /// The bounded agent context.
    pub context: &'a str,
}

/// `diff --json`: the library's diff with the commits compared.
///
/// ```json
/// {"base": "1f0c...", "head": "9ab2...", "memory_dir": ".workmem/memory",
///  "facts_added": [...], "facts_removed": [], "decisions_added": [...],
///  "decisions_removed": [], "decisions_set_aside": [],
///  "entries": {"created": [...], "superseded": [...], "retracted": [], "removed": []},
///  "context": {"added": [...], "removed": [...], "complete": true},
///  "credentials": [], "problems_at_base": [], "problems_at_head": []}
/// ```
#[derive(Debug, Serialize)]
pub struct DiffOutput<'a> {
    /// The base commit (`None`: the empty tree, before a root commit).
    pub base: Option<&'a str>,
    /// The head commit.
    pub head: &'a str,
    /// The memory directory's path in the trees.
    pub memory_dir: &'a str,
    /// What the range changes.
    #[serde(flatten)]
    pub diff: &'a workmem::MemoryDiff,
}

/// `setup --json`.
///
/// ```json
/// {"client": "codex", "scope": "project", "notes": ["..."],
///  "files": [{"path": "/home/me/app/.codex/config.toml", "action": "create"}]}
/// ```
#[derive(Debug, Serialize)]
pub struct SetupOutput<'a> {
    /// The client's name on the command line (`claude-code`, `codex`, ...).
    pub client: &'static str,
    /// `project` or `user`.
    pub scope: &'static str,
    /// Every file setup owns a part of, in the order they are written.
    pub files: Vec<SetupFile>,
    /// What the user should know (also printed on stderr without `--json`).
    pub notes: &'a [String],
}

/// One file of `setup --json`.
#[derive(Debug, Serialize)]
pub struct SetupFile {
    /// The file's absolute path.
    pub path: PathBuf,
    /// `create`, `update`, `delete` or `unchanged`.
    pub action: &'static str,
    /// The unified diff, with `--print`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// `setup --check --json`.
///
/// ```json
/// {"clients": [{"client": "claude-code", "scope": "project", "path": "/home/me/app/.mcp.json",
///   "configured": true, "command": ["workmem", "mcp"], "binary": "/usr/local/bin/workmem",
///   "tools": ["write_memory", "get_context", "list_recent_facts", "list_conflicts"]}]}
/// ```
#[derive(Debug, Serialize)]
pub struct SetupCheckOutput {
    /// One item per client found, per scope.
    pub clients: Vec<ClientCheck>,
}

/// One client at one scope in `setup --check --json`.
#[derive(Debug, Serialize)]
pub struct ClientCheck {
    /// The client's name on the command line.
    pub client: &'static str,
    /// `project` or `user`.
    pub scope: &'static str,
    /// The file holding the client's MCP servers.
    pub path: PathBuf,
    /// Whether that file has a `workmem` entry.
    pub configured: bool,
    /// The entry's command and arguments, as the server is started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Where the command was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// The tools the started server listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Why the server could not be checked or started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// `context --hook`: what a client's session-start hook reads.
///
/// ```json
/// {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "# Workspace Memory\n..."}}
/// ```
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// A line shown to the user (only with a notice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    /// The context for the model.
    pub hook_specific_output: HookContext,
}

/// The part of [`HookOutput`] the model gets.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookContext {
    /// Always `SessionStart`.
    pub hook_event_name: &'static str,
    /// The context, or the notice.
    pub additional_context: String,
}

/// Where a command writes: results to stdout, status to stderr.
#[derive(Debug, Clone, Copy)]
pub struct Ui {
    json: bool,
    quiet: bool,
}

impl Ui {
    /// Returns a UI for the global `--json` and `--quiet` flags.
    pub fn new(json: bool, quiet: bool) -> Ui {
        Ui { json, quiet }
    }

    /// Returns whether `--json` was given.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Returns whether `--quiet` was given.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Returns whether live progress may be drawn on stderr.
    pub fn shows_progress(&self) -> bool {
        !self.quiet && io::stderr().is_terminal()
    }

    /// Writes `value` as the one JSON document of this run.
    ///
    /// Errors: a [`CommandError`] when stdout fails (a broken pipe is marked
    /// as such).
    pub fn json<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), CommandError> {
        let mut out = io::stdout().lock();
        serde_json::to_writer(&mut out, value)
            .map_err(|err| CommandError::stdout(&io::Error::from(err)))?;
        writeln!(out).and_then(|()| out.flush()).map_err(|err| CommandError::stdout(&err))
    }

    /// Writes `text` to stdout, control characters escaped.
    ///
    /// Errors: as [`Ui::json`].
    pub fn text(&self, text: &str) -> Result<(), CommandError> {
        let mut out = io::stdout().lock();
        out.write_all(escape_controls(text).as_bytes())
            .and_then(|()| out.flush())
            .map_err(|err| CommandError::stdout(&err))
    }

    /// Writes one line of results to stdout, control characters escaped.
    ///
    /// Errors: as [`Ui::json`].
    pub fn line(&self, line: impl std::fmt::Display) -> Result<(), CommandError> {
        self.lines([line])
    }

    /// Writes lines of results to stdout, control characters escaped, in
    /// as few writes as their length allows (stdout alone would write each
    /// line as it ends).
    ///
    /// Errors: as [`Ui::json`].
    pub fn lines<L: std::fmt::Display>(
        &self,
        lines: impl IntoIterator<Item = L>,
    ) -> Result<(), CommandError> {
        let mut out = io::BufWriter::new(io::stdout().lock());
        lines
            .into_iter()
            .try_for_each(|line| writeln!(out, "{}", escape_controls(&line.to_string())))
            .and_then(|()| out.flush())
            .map_err(|err| CommandError::stdout(&err))
    }

    /// Writes one status line to stderr unless `--quiet`, control
    /// characters escaped.
    pub fn status(&self, line: impl std::fmt::Display) {
        if !self.quiet {
            // A closed stderr must not fail a command whose work is done.
            let _ = writeln!(io::stderr().lock(), "{}", escape_controls(&line.to_string()));
        }
    }
}
