//! Opening a workspace and the operations of the library surface: append,
//! read, distill, memory, context.
//!
//! A workspace is one project directory; its identity is pinned in
//! `.workmem/workspace.toml`, else derived from the SHA-256 of the canonical
//! path, so relative paths and symlinks to one project open the same
//! workspace. Everything durable lives in the memory directory
//! (default `<project>/.workmem/memory`), which the workspace reaches only
//! through its [`MemoryDir`] (see [`crate::store::memory_dir`]) and the
//! store's modules: canonical files are replaced atomically, logs only
//! appended, and every read-modify-write holds the workspace lock.

mod append;
mod arrived;
mod checked;
mod correct;
pub(crate) mod diff;
mod distill;
mod distill_cache;
mod distilled;
pub(crate) mod explain;
pub(crate) mod history;
mod journal_view;
mod memory;
mod merge;
mod open;
pub(crate) mod overview;
mod pending;
mod read_only;
mod rebuild;
mod redact;
mod resolve;
mod retract;
pub(crate) mod scan;
mod search;
mod share;
pub(crate) mod verify;
mod verify_corrections;

pub use append::Imported;
pub use distill::DistillOptions;
pub use distilled::Distilled;
pub use journal_view::{DistillIntentShown, JournalReport, JournalTransaction};
pub use memory::ContextOptions;
pub use merge::{MemoryFile, MergeSides, has_conflict_markers, merge_memory_file, salvage_records};
pub use open::WorkspaceBuilder;
pub use read_only::ReadOnlyWorkspace;
pub use rebuild::{Rebuilt, SetAside};
pub use redact::{Redaction, RedactionPreview};
pub use retract::{Corrected, Restoration, Retraction};
pub use search::{
    DEFAULT_SEARCH_LIMIT, HitType, MAX_SEARCH_LIMIT, MAX_SEARCH_OFFSET, SearchHit, SearchOptions,
    SearchPage, SearchScope,
};
pub use share::{Adopted, MERGE_DRIVER, NOT_COMMITTED, Shared};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Invalid, Location, Result};
use crate::model::clock::Clock;
use crate::model::fact::Fact;
use crate::model::fact_line::FactSummary;
use crate::model::stamp::Stamp;
use crate::policy::PolicyError;
use crate::policy::config::Config;
use crate::store::conflict_queue::ConflictQueue;
use crate::store::curated_state::CuratedState;
use crate::store::fact_log::FactLog;
use crate::store::lock::WorkspaceLock;
use crate::store::memory_dir::MemoryDir;

/// Facts appended per batch by [`Workspace::import`] (one fsync per batch
/// and daily file).
pub const IMPORT_BATCH: usize = 10_000;

/// An open workspace.
#[derive(Debug, Clone)]
pub struct Workspace {
    project: PathBuf,
    dir: MemoryDir,
    workspace_id: String,
    /// The id the project's path derives, whether or not it is the one in use.
    path_id: String,
    /// Whether `.workmem/workspace.toml` pins the id.
    pinned: bool,
    log: FactLog,
    clock: Arc<dyn Clock>,
    config: Config,
    /// Opened with [`WorkspaceBuilder::open_read_only`], inside a
    /// [`ReadOnlyWorkspace`]: never writes, not even a cache.
    read_only: bool,
}

/// Facts per daily log, as listed by [`Workspace::log_days`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DaySummary {
    /// `YYYY-MM-DD`.
    pub day: String,
    /// Number of facts in the file.
    pub facts: usize,
}

impl Workspace {
    /// Returns the canonical project directory.
    pub fn project(&self) -> &Path {
        &self.project
    }

    /// Returns the memory directory.
    pub fn memory_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Returns the workspace id: the one pinned in
    /// `.workmem/workspace.toml`, else the one the project's path derives.
    pub fn workspace_id(&self) -> &str {
        &self.workspace_id
    }

    /// Returns whether `.workmem/workspace.toml` pins the workspace id, so
    /// that it stays the same at any path and in every clone.
    pub fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// Returns the id the project's path derives (the first 16 hex digits
    /// of the SHA-256 of its canonical path): the workspace id when none is
    /// pinned.
    pub fn path_workspace_id(&self) -> &str {
        &self.path_id
    }

    /// Returns the configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Returns the fact log.
    pub(crate) fn log(&self) -> &FactLog {
        &self.log
    }

    /// Returns the current time of the workspace's clock.
    pub fn now(&self) -> Stamp {
        self.clock.now()
    }

    /// Returns the error of a step of the policy, with damage of the
    /// curated state placed in this workspace's curated.json.
    pub(crate) fn placed(&self, err: PolicyError) -> Error {
        err.at(&self.file(crate::store::names::CURATED_FILE))
    }

    /// Returns the path of a file in the memory directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.file(name)
    }

    /// Returns whether the memory directory and its `daily/` exist: what
    /// [`Workspace::init`] creates.
    pub fn is_initialized(&self) -> bool {
        self.dir.daily_dir().is_dir()
    }

    /// Creates the memory directory and `daily/` (mode 0700) if missing.
    ///
    /// Errors: [`Error::Io`], [`Error::Corrupt`] for a symlinked directory.
    pub fn init(&self) -> Result<()> {
        self.writable()?;
        self.dir.create()
    }

    /// Returns every fact, ordered by (recorded_at, fact_id).
    ///
    /// Errors: [`Error::Corrupt`] naming file and line, [`Error::Scope`],
    /// [`Error::Io`].
    pub fn facts(&self) -> Result<Vec<Fact>> {
        self.log.read_all()
    }

    /// Returns the facts recorded on `day` (`YYYY-MM-DD`, UTC), in file
    /// order.
    ///
    /// Errors: as [`Workspace::facts`].
    pub fn facts_on(&self, day: &str) -> Result<Vec<Fact>> {
        if !crate::store::names::is_day_name(day) {
            return Err(Error::invalid("day", Invalid::Malformed { rule: "a YYYY-MM-DD date" }));
        }
        self.log.read_file(&self.log.path_for_day(day))
    }

    /// Returns the `limit` most recent facts (any kind, keyed or not), oldest
    /// first, reading only the newest daily files. A retracted fact is not
    /// one of them.
    ///
    /// Errors: as [`Workspace::facts`] and [`Workspace::corrections`].
    pub fn recent_facts(&self, limit: usize) -> Result<Vec<Fact>> {
        let retracted = self.retractions()?;
        self.log.recent(limit, |f| !retracted.is_retracted(&f.fact_id))
    }

    /// Returns the `limit` most recent facts that come before the fact
    /// `(recorded_at, fact_id)` in the log's order (recorded_at instant,
    /// then fact_id), oldest first, reading only the daily files of that
    /// day and older, newest first: the next page of a listing that goes
    /// back in time. The fact itself need not exist.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{NewFact, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// for n in 0..5 {
    ///     ws.remember(NewFact {
    ///         recorded_at: Some(format!("2026-01-0{}T09:00:00Z", n + 1)),
    ///         ..NewFact::new(format!("Step {n} done"))
    ///     })?;
    /// }
    /// let newest = ws.recent_facts(2)?;
    /// let first = &newest[0];
    /// let older = ws.recent_facts_before(first.recorded_at(), first.fact_id(), 10)?;
    /// assert_eq!(older.len(), 3);
    /// assert_eq!(older[2].content(), "Step 2 done");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: as [`Workspace::recent_facts`].
    pub fn recent_facts_before(
        &self,
        recorded_at: &Stamp,
        fact_id: &str,
        limit: usize,
    ) -> Result<Vec<Fact>> {
        let retracted = self.retractions()?;
        self.log.recent_before(limit, Some((recorded_at.instant(), fact_id)), |f| {
            !retracted.is_retracted(&f.fact_id)
        })
    }

    /// Returns one summary per daily log, oldest first: from the distill
    /// cache and the lines appended since it was written when it can
    /// answer, else by reading every daily file.
    ///
    /// Errors: as [`Workspace::facts`].
    pub fn log_days(&self) -> Result<Vec<DaySummary>> {
        if let Some(days) = self.day_counts_from_cache()? {
            return Ok(days);
        }
        // Summaries (a fact's fields are checked, not kept), every core.
        let files = self.log.read_files_with::<FactSummary>(&self.log.days()?, false)?;
        Ok(files
            .files()
            .into_iter()
            .map(|file| DaySummary { facts: file.records.len(), day: file.day.day.clone() })
            .collect())
    }

    /// Returns the curated state (empty when `curated.json` does not exist).
    ///
    /// Errors: [`Error::Corrupt`] naming the entry, [`Error::Scope`],
    /// [`Error::Io`].
    pub fn curated(&self) -> Result<CuratedState> {
        self.check_state()?;
        Ok(self.dir.curated_with_bytes()?.0)
    }

    /// Returns the curated state as stored, without the check of state
    /// this clone did not write: for recovery, which checks its targets
    /// against its intent, and for that check itself.
    ///
    /// Errors: as [`Workspace::curated`].
    pub(crate) fn curated_unchecked(&self) -> Result<CuratedState> {
        Ok(self.dir.curated_with_bytes()?.0)
    }

    /// Returns the conflict queue as stored, without the check of state
    /// this clone did not write (see [`Workspace::curated_unchecked`]).
    ///
    /// Errors: as [`Workspace::conflicts`].
    pub(crate) fn conflicts_unchecked(&self) -> Result<ConflictQueue> {
        Ok(self.dir.conflicts_with_bytes()?.0)
    }

    /// Returns the conflict queue (empty when `conflicts.json` does not
    /// exist).
    ///
    /// Errors: [`Error::Corrupt`] naming the case, [`Error::Scope`],
    /// [`Error::Io`].
    pub fn conflicts(&self) -> Result<ConflictQueue> {
        self.check_state()?;
        Ok(self.dir.conflicts_with_bytes()?.0)
    }

    /// Returns a fresh event id for a human decision, `review:` and a
    /// random 32-hex id from the workspace's clock: what a decision gets
    /// when its caller names none (print it, so that a retry can reuse it).
    pub fn fresh_event_id(&self) -> String {
        format!("review:{}", self.clock.fresh_id())
    }

    /// Fails on a handle opened read-only: the check every operation that
    /// writes makes first.
    ///
    /// Errors: [`Error::InvalidInput`] naming `workspace`.
    pub(crate) fn writable(&self) -> Result<()> {
        if self.read_only { Err(Error::invalid("workspace", Invalid::ReadOnly)) } else { Ok(()) }
    }

    /// Takes the workspace lock (creating the memory directory if needed)
    /// and removes the temporary files a crashed atomic replace left behind.
    ///
    /// Errors: [`Error::Io`].
    pub(crate) fn lock(&self) -> Result<WorkspaceLock> {
        let lock = self.lock_to_append()?;
        self.dir.remove_temporaries();
        Ok(lock)
    }

    /// Takes the workspace lock (creating the memory directory if needed)
    /// for appends, which replace no file: the temporaries a crashed
    /// replace left stay for the next writer that replaces one (a listing
    /// of the memory directory less for every `remember --id` and import).
    ///
    /// Errors: [`Error::Io`].
    pub(crate) fn lock_to_append(&self) -> Result<WorkspaceLock> {
        self.init()?;
        self.dir.lock()
    }
}

impl PolicyError {
    /// Returns the error, placing damage of the curated state in `curated`,
    /// the file that state is read from and written to.
    pub(crate) fn at(self, curated: &Path) -> Error {
        match self {
            PolicyError::Curated(damage) => Error::corrupt(Location::file(curated), damage),
            PolicyError::Other(err) => err,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Damage;

    #[test]
    fn the_workspace_places_the_policys_damage_in_the_file_it_names() {
        let curated = Path::new("/m/curated.json");
        let err = PolicyError::Curated(Damage::NoIntent).at(curated);
        assert!(
            matches!(&err, Error::Corrupt { location, damage: Damage::NoIntent }
                if location.path == curated && location.line.is_none()),
            "{err:?}"
        );
        let other = PolicyError::from(Error::invalid("policy", Invalid::Empty)).at(curated);
        assert!(matches!(other, Error::InvalidInput { .. }), "{other:?}");
    }
}
