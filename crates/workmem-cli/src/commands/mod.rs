//! One module per subcommand, each exposing `<Verb>Args` and
//! `run(ctx, &args)`, plus the [`Ctx`] they share: the resolved project,
//! the memory directory and the [`Ui`].
//!
//! Adding a command is one file here and one variant in `cli.rs`.

use std::path::{Path, PathBuf};

use workmem::Workspace;

use crate::cli::{Command, GlobalArgs};
use crate::command_error::CommandError;
use crate::output::Ui;

pub mod adjudications;
pub mod adopt;
#[cfg(feature = "chat")]
pub mod chat;
pub mod conflicts;
pub mod context;
pub mod demo;
pub mod diff;
pub mod distill;
pub mod explain;
pub mod facts;
pub mod history;
pub mod import;
pub mod init;
pub mod journal;
pub mod logs;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memory;
pub mod merge;
pub mod remember;
pub mod resolve;
pub mod review;
pub mod scan;
pub mod share;
pub mod status;
pub mod verify;

/// What every command needs: where the workspace is and how to print.
#[derive(Debug)]
pub struct Ctx {
    /// The project directory (not yet canonical).
    pub project: PathBuf,
    /// The memory directory override, absolute.
    pub memory_dir: Option<PathBuf>,
    /// Whether the project was found rather than assumed: `.workmem/` or
    /// `.git` in it or above it, or a memory directory named explicitly.
    /// Only `init` creates a workspace where none was found.
    pub found: bool,
    /// Whether the project was named with `-C` rather than discovered.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub explicit: bool,
    /// Output channels.
    pub ui: Ui,
}

impl Ctx {
    /// Returns the context for the global flags, resolving the project from
    /// `cwd` by the discovery rule of docs/cli.md when `-C` is not given.
    ///
    /// Errors: usage error when `-C` names no directory.
    pub fn new(global: &GlobalArgs, cwd: &Path) -> Result<Ctx, CommandError> {
        let project = match &global.project {
            Some(dir) => {
                let dir = cwd.join(dir);
                if !dir.is_dir() {
                    return Err(CommandError::usage(format!(
                        "project directory {} does not exist",
                        dir.display()
                    ))
                    .hinted("-C/--project takes an existing directory"));
                }
                dir
            }
            None => discover_project(cwd),
        };
        // A relative --memory-dir means what it says on the command line:
        // relative to where the user stands, not to the discovered project.
        let memory_dir = global
            .memory_dir
            .as_ref()
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| resolve(&cwd.join(d)));
        let found = memory_dir.is_some() || is_project(&project);
        Ok(Ctx {
            project,
            memory_dir,
            found,
            explicit: global.project.is_some(),
            ui: Ui::new(global.json, global.quiet),
        })
    }

    /// Opens the workspace of the project with its configuration (user
    /// file, then workspace file).
    ///
    /// Errors: configuration errors (exit 2); library errors of
    /// [`Workspace::open`].
    pub fn workspace(&self) -> Result<Workspace, CommandError> {
        self.require_project()?;
        let ws = self.open_workspace()?;
        self.ensure_merge_driver(&ws)?;
        Ok(ws)
    }

    /// Configures workmem's merge driver in a clone whose memory is shared
    /// (its `.gitattributes` names the driver) but whose git configuration
    /// lacks it, as a fresh clone does, and says so on stderr. This writes
    /// the clone's git configuration, never the memory, so read-only
    /// commands do it too.
    ///
    /// Errors: library errors reading the attributes; git errors.
    fn ensure_merge_driver(&self, ws: &Workspace) -> Result<(), CommandError> {
        if ws.shared_attributes()?.is_none() || crate::git::driver_configured(ws.project()) {
            return Ok(());
        }
        let Some(top) = crate::git::toplevel(ws.project()) else { return Ok(()) };
        let driver = crate::git::configure_driver(&top)?;
        self.ui.status(format_args!(
            "note: this clone shares its memory through git; configured workmem's merge driver \
             (merge.workmem.driver = {driver})"
        ));
        Ok(())
    }

    /// Returns the builder of the project's workspace, refusing to work
    /// outside a project: for commands that open it their own way (`adopt`).
    ///
    /// Errors: as [`Ctx::workspace`] before opening.
    pub fn builder_in_project(&self) -> Result<workmem::WorkspaceBuilder, CommandError> {
        self.require_project()?;
        self.builder()
    }

    /// Refuses to work outside a project (see [`Ctx::found`]).
    fn require_project(&self) -> Result<(), CommandError> {
        if self.found {
            return Ok(());
        }
        Err(CommandError::usage(format!(
            "{} is not inside a project: no .workmem/ or .git here or above",
            self.project.display()
        ))
        .hinted("run `workmem init` in the project to create its memory, or pass -C PROJECT_DIR"))
    }

    /// Opens the workspace of the project whether or not one was found
    /// there: for `init`, the one command that creates a workspace.
    ///
    /// Errors: as [`Ctx::workspace`], except that no project is required.
    pub fn open_workspace(&self) -> Result<Workspace, CommandError> {
        Ok(self.builder()?.open()?)
    }

    /// Opens the workspace like [`Ctx::workspace`] but without recovery, as
    /// a handle that never writes ([`workmem::WorkspaceBuilder::open_read_only`]):
    /// for `verify`.
    ///
    /// Errors: configuration errors (exit 2); library errors of opening.
    pub fn workspace_read_only(&self) -> Result<Workspace, CommandError> {
        self.require_project()?;
        let ws = self.builder()?.open_read_only()?;
        self.ensure_merge_driver(&ws)?;
        Ok(ws)
    }

    /// Opens the workspace read-only like [`Ctx::workspace_read_only`] but
    /// without reading its configuration: for `scan`, which must check a
    /// hostile checkout whatever its `.workmem/config.toml` holds.
    ///
    /// Errors: library errors of opening.
    pub fn workspace_unconfigured_read_only(&self) -> Result<Workspace, CommandError> {
        self.require_project()?;
        let builder = Workspace::builder(&self.project);
        let builder = match &self.memory_dir {
            Some(dir) => builder.memory_dir(dir),
            None => builder,
        };
        Ok(builder.open_read_only()?)
    }

    /// Returns the builder of the project's workspace with its
    /// configuration (user file, then workspace file) and memory directory.
    fn builder(&self) -> Result<workmem::WorkspaceBuilder, CommandError> {
        let config = crate::config_load::load(&self.project)?;
        let builder = Workspace::builder(&self.project).config(config);
        Ok(match &self.memory_dir {
            Some(dir) => builder.memory_dir(dir),
            None => builder,
        })
    }
}

/// Returns the nearest ancestor of `cwd` (itself included) holding a
/// `.workmem` directory, else the nearest holding `.git` (a directory, or a
/// file in a worktree), else `cwd`.
pub fn discover_project(cwd: &Path) -> PathBuf {
    if let Some(dir) = cwd.ancestors().find(|dir| dir.join(".workmem").is_dir()) {
        return dir.to_path_buf();
    }
    if let Some(dir) = cwd.ancestors().find(|dir| dir.join(".git").exists()) {
        return dir.to_path_buf();
    }
    cwd.to_path_buf()
}

/// Returns whether `dir` holds `.workmem/`, or it or an ancestor holds
/// `.git`: the marks of a project by the discovery rule.
fn is_project(dir: &Path) -> bool {
    // `-C ../x` must not count the directory it is given from.
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.join(".workmem").is_dir() || dir.ancestors().any(|d| d.join(".git").exists())
}

/// Returns `path` with its longest existing prefix canonicalized, so that
/// `..` and symlinks are resolved like the project path is; the missing
/// rest is appended as given.
fn resolve(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut prefix = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(prefix) {
            return rest.iter().rev().fold(real, |acc: PathBuf, part| acc.join(part));
        }
        match (prefix.parent(), prefix.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                prefix = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Runs one subcommand.
///
/// Errors: whatever the command returns.
pub fn run(ctx: &Ctx, command: &Command) -> Result<(), CommandError> {
    match command {
        Command::Init(args) => init::run(ctx, args),
        Command::Remember(args) => remember::run(ctx, args),
        Command::Import(args) => import::run(ctx, args),
        Command::Facts(args) => facts::run(ctx, args),
        Command::Logs(args) => logs::run(ctx, args),
        Command::Distill(args) => distill::run(ctx, args),
        Command::Memory(args) => memory::run(ctx, args),
        Command::Context(args) => context::run(ctx, args),
        Command::Conflicts(args) => conflicts::run(ctx, args),
        Command::Resolve(args) => resolve::run(ctx, args),
        Command::Review(args) => review::run(ctx, args),
        Command::Adjudications(args) => adjudications::run(ctx, args),
        Command::History(args) => history::run(ctx, args),
        Command::Explain(args) => explain::run(ctx, args),
        Command::Verify(args) => verify::run(ctx, args),
        Command::Diff(args) => diff::run(ctx, args),
        Command::Scan(args) => scan::run(ctx, args),
        Command::Status(args) => status::run(ctx, args),
        Command::Share(args) => share::run(ctx, args),
        Command::Adopt(args) => adopt::run(ctx, args),
        Command::Merge(args) => merge::run(ctx, args),
        Command::Journal(args) => journal::run(ctx, args),
        Command::Demo(args) => demo::run(ctx, args),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => mcp::run(ctx, args),
        #[cfg(feature = "chat")]
        Command::Chat(args) => chat::run(ctx, args),
    }
}
