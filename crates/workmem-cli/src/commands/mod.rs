//! One module per subcommand, each exposing `<Verb>Args` and
//! `run(ctx, &args)`, plus the [`Ctx`] they share: the resolved project,
//! the memory directory and the [`Ui`].
//!
//! Adding a command is one file here and one variant in `cli.rs`, which
//! dispatches to it; nothing here knows the command line.

use std::path::{Path, PathBuf};

use workmem::{ReadOnlyWorkspace, Workspace};

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
pub mod policy;
pub mod rebuild;
pub mod redact;
pub mod remember;
pub mod resolve;
pub mod retract;
pub mod review;
pub mod scan;
pub mod search;
pub mod setup;
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
    /// Whether opening the workspace refuses while git's index holds
    /// unmerged memory files (every command but the merge driver, `merge
    /// --continue` and the appends, which never rewrite a file).
    pub refuse_unmerged: std::cell::Cell<bool>,
}

impl Ctx {
    /// Returns the context of a command run from `cwd`: `project` is the
    /// directory given with `-C` (else it is discovered from `cwd` by the
    /// rule of docs/cli.md), `memory_dir` the one given with
    /// `--memory-dir`, `ui` the output channels.
    ///
    /// Errors: usage error when `-C` names no directory.
    pub fn new(
        cwd: &Path,
        project: Option<&Path>,
        memory_dir: Option<&Path>,
        ui: Ui,
    ) -> Result<Ctx, CommandError> {
        let explicit = project.is_some();
        let project = match project {
            Some(dir) => {
                let dir = cwd.join(dir);
                if !dir.is_dir() {
                    // What names nothing is not repeated: it may be a
                    // credential passed in the wrong place.
                    return Err(CommandError::usage(
                        "the project directory given with -C/--project does not exist",
                    )
                    .hinted(format!(
                        "-C/--project takes an existing directory; a relative one is taken from {}",
                        cwd.display()
                    )));
                }
                dir
            }
            None => discover_project(cwd),
        };
        // A relative --memory-dir means what it says on the command line:
        // relative to where the user stands, not to the discovered project.
        let memory_dir =
            memory_dir.filter(|d| !d.as_os_str().is_empty()).map(|d| resolve(&cwd.join(d)));
        let found = memory_dir.is_some() || is_project(&project);
        Ok(Ctx {
            project,
            memory_dir,
            found,
            explicit,
            ui,
            refuse_unmerged: std::cell::Cell::new(true),
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
        self.ensure_merge_driver(ws.shared_attributes()?.is_some(), ws.project())?;
        self.check_unmerged()?;
        Ok(ws)
    }

    /// Refuses while git's index holds unmerged memory files: a merge,
    /// rebase, cherry-pick or stash pop that workmem's driver could not do
    /// (it could not run, or refused) leaves this side's version in the
    /// work tree without conflict markers, and the next commit would drop
    /// the other side's records. Asks git only when the index changed since
    /// the last check found nothing (its identity, recorded in the git
    /// directory, which no branch writes).
    ///
    /// Errors: a corruption error (exit 4) naming the files and `workmem
    /// merge --continue`; git errors.
    fn check_unmerged(&self) -> Result<(), CommandError> {
        if !self.refuse_unmerged.get() {
            return Ok(());
        }
        let Ok(project) = std::fs::canonicalize(&self.project) else { return Ok(()) };
        let Some((stamp, top, record)) = crate::git::index_stamp(&project) else { return Ok(()) };
        let line = format!("{} {} {} {}\n", stamp[0], stamp[1], stamp[2], stamp[3]);
        if std::fs::read_to_string(&record).is_ok_and(|text| text == line) {
            return Ok(());
        }
        let top = std::fs::canonicalize(&top).unwrap_or(top);
        let memory =
            self.memory_dir.clone().unwrap_or_else(|| workmem::default_memory_dir(&project));
        let memory = std::fs::canonicalize(&memory).unwrap_or(memory);
        let mut paths = Vec::new();
        if let Ok(relative) = memory.strip_prefix(&top) {
            paths.push(relative.to_path_buf());
        }
        if let Ok(relative) = workmem::pin_file(&project).strip_prefix(&top) {
            paths.push(relative.to_path_buf());
        }
        if paths.is_empty() {
            return Ok(());
        }
        let unmerged: Vec<PathBuf> = crate::git::unmerged_paths(&top, &paths)?
            .into_iter()
            .filter(|path| workmem::MemoryFile::for_path(path).is_some())
            .collect();
        if unmerged.is_empty() {
            // A cache in the git directory: losing it costs one more check.
            #[allow(clippy::disallowed_methods)]
            let _ = std::fs::write(&record, line);
            return Ok(());
        }
        let shown: Vec<String> = unmerged.iter().map(|p| p.display().to_string()).collect();
        Err(CommandError::corrupt(format!(
            "git's index holds unmerged memory files: {}; a merge, rebase, cherry-pick or stash \
             pop stopped without workmem's merge driver finishing them (it was not configured, \
             could not run, or refused), and the work tree holds conflict markers or only this \
             side's version",
            shown.join(", ")
        ))
        .hinted(
            "finish the merge with `workmem merge --continue` (it merges git's index stages), \
             then commit or continue the rebase; nothing was changed",
        ))
    }

    /// Configures workmem's merge driver in the clone of `project` when its
    /// memory is `shared` (its `.gitattributes` names the driver:
    /// `shared_attributes` of the workspace) but its git configuration
    /// lacks it, as a fresh clone does, and says so on stderr. This writes
    /// the clone's git configuration, never the memory, so read-only
    /// commands do it too.
    ///
    /// Errors: git errors.
    fn ensure_merge_driver(&self, shared: bool, project: &Path) -> Result<(), CommandError> {
        if !shared {
            return Ok(());
        }
        // A driver whose program is gone (the binary that ran `share` was
        // moved or reinstalled, a devcontainer) would leave every merge of a
        // memory file unfinished: it is configured again.
        let gone = crate::git::driver_program(project)
            .filter(|program| Path::new(program).is_absolute() && !Path::new(program).exists());
        if gone.is_none() && crate::git::driver_configured(project) {
            return Ok(());
        }
        let Some(top) = crate::git::toplevel(project) else { return Ok(()) };
        let driver = crate::git::configure_driver(&top)?;
        match gone {
            Some(program) => self.ui.status(format_args!(
                "note: workmem's merge driver was configured as {program}, which no longer \
                 exists; configured it again (merge.workmem.driver = {driver})"
            )),
            None => self.ui.status(format_args!(
                "note: this clone shares its memory through git; configured workmem's merge \
                 driver (merge.workmem.driver = {driver})"
            )),
        }
        Ok(())
    }

    /// Adds to a scope error what git can tell about a changed pin: when a
    /// commit changed `.workmem/workspace.toml` away from the id the records
    /// carry (or the file was changed in the work tree), the file and the
    /// commit to revert. Other errors pass unchanged.
    #[must_use]
    pub fn explain_scope(&self, error: CommandError) -> CommandError {
        let Some((found, expected)) = error.scope_ids() else { return error };
        match self.pin_change(found, expected) {
            Some(hint) => error.hinted(hint),
            None => error,
        }
    }

    /// Returns what git can tell about a pin (`expected`) that differs from
    /// the id the memory's records carry (`found`): the work-tree change or
    /// the commit to revert, with the command that reverts it.
    pub fn pin_change(&self, found: &str, expected: &str) -> Option<String> {
        let project = std::fs::canonicalize(&self.project).ok()?;
        let pin = workmem::pin_file(&project);
        let top = crate::git::toplevel(&project)?;
        let top = std::fs::canonicalize(&top).unwrap_or(top);
        let relative = pin.strip_prefix(&top).ok()?;
        let pins = |data: Option<Vec<u8>>| {
            data.is_some_and(|d| String::from_utf8_lossy(&d).contains(&format!("\"{found}\"")))
        };
        if pins(crate::git::show(&top, "HEAD", relative)) {
            return Some(format!(
                "{} was changed in the work tree to pin {expected}, but the memory's records carry \
                 {found}: restore it with `git checkout HEAD -- {}`",
                relative.display(),
                relative.display()
            ));
        }
        let (commit, subject) = crate::git::last_change(&top, relative)?;
        pins(crate::git::show(&top, &format!("{commit}^"), relative)).then(|| {
            format!(
                "commit {} (\"{subject}\") changed {} to pin {expected}, but the memory's records \
                 carry {found}: revert that file with `git checkout {commit}^ -- {}` and commit",
                &commit[..commit.len().min(12)],
                relative.display(),
                relative.display()
            )
        })
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
    pub fn workspace_read_only(&self) -> Result<ReadOnlyWorkspace, CommandError> {
        self.require_project()?;
        let ws = self.builder()?.open_read_only()?;
        self.ensure_merge_driver(ws.shared_attributes()?.is_some(), ws.project())?;
        self.check_unmerged()?;
        Ok(ws)
    }

    /// Opens the workspace read-only like [`Ctx::workspace_read_only`] but
    /// without reading its configuration: for `scan`, which must check a
    /// hostile checkout whatever its `.workmem/config.toml` holds.
    ///
    /// Errors: library errors of opening.
    pub fn workspace_unconfigured_read_only(&self) -> Result<ReadOnlyWorkspace, CommandError> {
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
    if let Some(dir) = cwd.ancestors().find(|dir| workmem::workmem_dir(dir).is_dir()) {
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
    workmem::workmem_dir(&dir).is_dir() || dir.ancestors().any(|d| d.join(".git").exists())
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

/// Runs one subcommand with `command`, opening the workspace refusing
/// unmerged memory files or not (see [`Ctx::refuse_unmerged`]), and adds
/// to its error what git can tell of the cause.
///
/// Errors: whatever the command returns.
pub fn run(
    ctx: &Ctx,
    refuse_unmerged: bool,
    command: impl FnOnce(&Ctx) -> Result<(), CommandError>,
) -> Result<(), CommandError> {
    ctx.refuse_unmerged.set(refuse_unmerged);
    command(ctx).map_err(|err| explain_misrouted(ctx.explain_scope(err)))
}

/// Adds to a corruption error about a memory file the likely cause when
/// git's attributes no longer route that file to workmem's driver: a
/// two-sided merge then joined the versions with another driver (e.g.
/// `merge=union` concatenates two curated.json into one invalid file).
fn explain_misrouted(error: CommandError) -> CommandError {
    let Some(path) = error.corrupt_file().map(Path::to_path_buf) else { return error };
    if workmem::MemoryFile::for_path(&path).is_none() {
        return error;
    }
    match crate::git::merge_attribute_of(&path) {
        Some(merge) if merge != workmem::MERGE_DRIVER => error.hinted(format!(
            "likely cause: git merges this file with merge={merge}, not workmem's driver, so a \
             merge of two sides joined them as text; {}; then re-derive the file from the logs \
             and the audit stream with `workmem rebuild`",
            crate::git::REROUTE
        )),
        _ => error,
    }
}
