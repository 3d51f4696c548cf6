//! A workspace opened read-only: its own type, with the reads of
//! [`Workspace`] and none of its writes, so that a write on a handle that
//! must never write does not compile.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::model::fact::Fact;
use crate::model::stamp::Stamp;
use crate::policy::config::Config;
use crate::store::conflict_queue::ConflictQueue;
use crate::store::corrections::Correction;
use crate::store::curated_state::CuratedState;
use crate::store::journal::Adjudication;
use crate::workspace::history::History;
use crate::workspace::memory::ContextOptions;
use crate::workspace::overview::Overview;
use crate::workspace::scan::Scan;
use crate::workspace::search::{SearchOptions, SearchPage};
use crate::workspace::verify::Problem;
use crate::workspace::{MemoryFile, Workspace, WorkspaceBuilder};

/// A workspace opened with [`WorkspaceBuilder::open_read_only`]: it never
/// writes. Unfinished work is left as it is (for [`ReadOnlyWorkspace::verify`],
/// which reports it), and reads answer without repairing MEMORY.md or
/// caches. It has no method that writes.
#[derive(Debug, Clone)]
pub struct ReadOnlyWorkspace {
    ws: Workspace,
}

impl ReadOnlyWorkspace {
    /// Wraps a handle resolved read-only (the only way one is made).
    pub(super) fn new(ws: Workspace) -> ReadOnlyWorkspace {
        debug_assert!(ws.read_only);
        ReadOnlyWorkspace { ws }
    }

    /// Returns the canonical project directory.
    pub fn project(&self) -> &Path {
        self.ws.project()
    }

    /// Returns the memory directory.
    pub fn memory_dir(&self) -> &Path {
        self.ws.memory_dir()
    }

    /// Returns the workspace id, as [`Workspace::workspace_id`].
    pub fn workspace_id(&self) -> &str {
        self.ws.workspace_id()
    }

    /// Returns whether `.workmem/workspace.toml` pins the workspace id.
    pub fn is_pinned(&self) -> bool {
        self.ws.is_pinned()
    }

    /// Returns the configuration the workspace was opened with.
    pub fn config(&self) -> &Config {
        self.ws.config()
    }

    /// Returns every fact, as [`Workspace::facts`].
    ///
    /// Errors: as [`Workspace::facts`].
    pub fn facts(&self) -> Result<Vec<Fact>> {
        self.ws.facts()
    }

    /// Returns the curated state, as [`Workspace::curated`].
    ///
    /// Errors: as [`Workspace::curated`].
    pub fn curated(&self) -> Result<CuratedState> {
        self.ws.curated()
    }

    /// Returns the conflict queue, as [`Workspace::conflicts`].
    ///
    /// Errors: as [`Workspace::conflicts`].
    pub fn conflicts(&self) -> Result<ConflictQueue> {
        self.ws.conflicts()
    }

    /// Returns every adjudication, as [`Workspace::adjudications`].
    ///
    /// Errors: as [`Workspace::adjudications`].
    pub fn adjudications(&self) -> Result<Vec<Adjudication>> {
        self.ws.adjudications()
    }

    /// Returns every correction record, as [`Workspace::corrections`].
    ///
    /// Errors: as [`Workspace::corrections`].
    pub fn corrections(&self) -> Result<Vec<Correction>> {
        self.ws.corrections()
    }

    /// Returns the revisions and corrections of `memory_key`, as
    /// [`Workspace::history`].
    ///
    /// Errors: as [`Workspace::history`].
    pub fn history(&self, memory_key: &str) -> Result<History> {
        self.ws.history(memory_key)
    }

    /// Returns the MEMORY.md text rendered from curated.json, without
    /// writing the file.
    ///
    /// Errors: as [`Workspace::memory`].
    pub fn memory(&self) -> Result<String> {
        self.ws.memory()
    }

    /// Returns the bounded agent context, as [`Workspace::context`].
    ///
    /// Errors: as [`Workspace::context`].
    pub fn context(&self, recent: Option<usize>) -> Result<String> {
        self.ws.context(recent)
    }

    /// Returns the bounded agent context, as [`Workspace::context_with`].
    ///
    /// Errors: as [`Workspace::context_with`].
    pub fn context_with(&self, options: &ContextOptions) -> Result<String> {
        self.ws.context_with(options)
    }

    /// Searches the memory, as [`Workspace::search`], without updating the
    /// search index on disk.
    ///
    /// Errors: as [`Workspace::search`].
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchPage> {
        self.ws.search(query, options)
    }

    /// Returns where the workspace stands, as [`Workspace::overview`].
    ///
    /// Errors: as [`Workspace::overview`].
    pub fn overview(&self, as_of: Option<Stamp>) -> Result<Overview> {
        self.ws.overview(as_of)
    }

    /// Checks every durable file, as [`Workspace::verify`].
    ///
    /// Errors: as [`Workspace::verify`].
    pub fn verify(&self) -> Result<Vec<Problem>> {
        self.ws.verify()
    }

    /// Looks for credentials in the memory directory, as
    /// [`Workspace::scan`].
    ///
    /// Errors: as [`Workspace::scan`].
    pub fn scan(&self) -> Result<Scan> {
        self.ws.scan()
    }

    /// Returns the `.gitattributes` that routes memory files to workmem's
    /// merge driver, as [`Workspace::shared_attributes`].
    ///
    /// Errors: as [`Workspace::shared_attributes`].
    pub fn shared_attributes(&self) -> Result<Option<PathBuf>> {
        self.ws.shared_attributes()
    }

    /// Returns whether the files that share the memory through git are
    /// present, as [`Workspace::has_sharing_files`].
    pub fn has_sharing_files(&self) -> bool {
        self.ws.has_sharing_files()
    }

    /// Returns the committed memory files routed to the merge driver, as
    /// [`Workspace::routed_files`].
    pub fn routed_files(&self) -> Vec<(MemoryFile, PathBuf)> {
        self.ws.routed_files()
    }
}

impl WorkspaceBuilder {
    /// Opens the workspace read-only: without recovery, as a handle that
    /// never writes. Unfinished work is left as it is (for
    /// [`ReadOnlyWorkspace::verify`], which reports it), reads answer
    /// without repairing MEMORY.md or caches, and the handle has no method
    /// that writes.
    ///
    /// Errors: as [`WorkspaceBuilder::open`], without the recovery errors.
    pub fn open_read_only(self) -> Result<ReadOnlyWorkspace> {
        self.resolve(true).map(ReadOnlyWorkspace::new)
    }
}
