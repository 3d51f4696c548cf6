//! Opening a workspace: resolving the project and its memory directory,
//! the identity of the workspace, and the recovery every writer needs
//! first. [`Workspace::builder`] sets the clock and configuration before
//! anything runs, so recovery already reads the clock the caller chose.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Invalid, IoContext, Result};
use crate::model::canon;
use crate::model::clock::{Clock, SystemClock};
use crate::policy::config::Config;
use crate::store::fact_log::FactLog;
use crate::store::identity;
use crate::store::memory_dir::{MemoryDir, ReadOnlyMemoryDir};
use crate::store::names::{DAILY_DIR, DEFAULT_MEMORY_DIR, DOT_DIR};
use crate::workspace::Workspace;

/// How to open a [`Workspace`]: the project, and optionally its memory
/// directory, clock and configuration.
///
/// ```no_run
/// # fn main() -> workmem::Result<()> {
/// let ws = workmem::Workspace::builder("/path/to/project").open()?;
/// println!("{}", ws.workspace_id());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct WorkspaceBuilder {
    project: PathBuf,
    memory_dir: Option<PathBuf>,
    clock: Arc<dyn Clock>,
    config: Config,
}

impl Workspace {
    /// Returns a builder for the workspace of `project`, with the default
    /// memory directory, the system clock and the default configuration.
    pub fn builder(project: impl Into<PathBuf>) -> WorkspaceBuilder {
        WorkspaceBuilder {
            project: project.into(),
            memory_dir: None,
            clock: Arc::new(SystemClock),
            config: Config::default(),
        }
    }

    /// Opens the workspace of `project` with the system clock and the
    /// default configuration; shorthand for [`Workspace::builder`] and
    /// [`WorkspaceBuilder::open`].
    ///
    /// Errors: as [`WorkspaceBuilder::open`].
    pub fn open(project: &Path, memory_dir: Option<&Path>) -> Result<Workspace> {
        let builder = Workspace::builder(project);
        match memory_dir {
            Some(dir) => builder.memory_dir(dir).open(),
            None => builder.open(),
        }
    }
}

impl WorkspaceBuilder {
    /// Returns the builder with `dir` as the memory directory instead of
    /// `<project>/.workmem/memory`; a relative one is taken relative to the
    /// project. A directory named here may be a symlink.
    pub fn memory_dir(mut self, dir: impl Into<PathBuf>) -> WorkspaceBuilder {
        self.memory_dir = Some(dir.into());
        self
    }

    /// Returns the builder reading time and fresh ids from `clock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> WorkspaceBuilder {
        self.clock = clock;
        self
    }

    /// Returns the builder with `config`.
    pub fn config(mut self, config: Config) -> WorkspaceBuilder {
        self.config = config;
        self
    }

    /// Opens the workspace (the project must exist) and finishes any
    /// resolution or distill a crash left unfinished (see
    /// [`Workspace::recover`]). Nothing is created otherwise.
    ///
    /// Errors: [`Error::InvalidInput`] for an out-of-range configuration
    /// value or a non-UTF-8 path; [`Error::Io`] when the project cannot be
    /// resolved; [`Error::Corrupt`] when the default memory directory is
    /// reached through a symlinked `.workmem` or `.workmem/memory`, or
    /// recovery finds tampered state.
    pub fn open(self) -> Result<Workspace> {
        let workspace = self.resolve(false)?;
        workspace.recover()?;
        Ok(workspace)
    }

    pub(super) fn resolve(self, read_only: bool) -> Result<Workspace> {
        self.config.validate()?;
        let project = self.project;
        let memory_dir = self.memory_dir;
        let memory_dir = memory_dir.as_deref();
        let project = std::fs::canonicalize(&project).at(&project)?;
        if !project.is_dir() {
            return Err(Error::invalid(
                "project",
                Invalid::Project { path: project, problem: "not a directory" },
            ));
        }
        let text = project.to_str().ok_or_else(|| {
            Error::invalid(
                "project",
                Invalid::Project { path: project.clone(), problem: "not valid UTF-8" },
            )
        })?;
        let path_id = canon::workspace_id(text);
        // `.workmem/` belongs to the checkout, which may be hostile: a linked
        // one is refused for the default memory directory (below) and its
        // pin is not read when the memory directory is named explicitly.
        let dot = project.join(DOT_DIR);
        let linked = ReadOnlyMemoryDir::refuse_symlink(&dot).is_err();
        let pinned = if linked { None } else { identity::read_pin(&dot)? };
        let workspace_id = pinned.clone().unwrap_or_else(|| path_id.clone());
        let memory_dir = match memory_dir {
            Some(dir) if dir.is_absolute() => dir.to_path_buf(),
            Some(dir) => project.join(dir),
            None => {
                // The default location is part of the checkout, which may be
                // hostile: a linked `.workmem` or `.workmem/memory` would make
                // appends write outside the project. A memory directory the
                // caller names explicitly may be a link.
                ReadOnlyMemoryDir::refuse_symlink(&dot)?;
                ReadOnlyMemoryDir::refuse_symlink(&project.join(DEFAULT_MEMORY_DIR))?;
                project.join(DEFAULT_MEMORY_DIR)
            }
        };
        let log = FactLog::new(memory_dir.join(DAILY_DIR), workspace_id.clone());
        Ok(Workspace {
            project,
            dir: MemoryDir::new(memory_dir, workspace_id.clone()),
            workspace_id,
            path_id,
            pinned: pinned.is_some(),
            log,
            clock: self.clock,
            config: self.config,
            read_only,
        })
    }
}
