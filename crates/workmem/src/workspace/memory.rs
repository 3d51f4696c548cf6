//! MEMORY.md and the agent context: rendering them from the curated state,
//! repairing a stale MEMORY.md, and the projection index that lets
//! `context` answer without parsing curated.json.

use std::collections::BTreeMap;
use std::io::Write as _;

use crate::error::{Error, Result};
use crate::model::stamp::Stamp;
use crate::policy::projection::{self, Projection};
use crate::store::conflict_queue::{ConflictQueue, ConflictsFile};
use crate::store::curated_file::CuratedFile;
use crate::store::curated_state::CuratedState;
use crate::store::failpoint;
use crate::store::memory_dir::FileStamp;
use crate::store::names::{CONFLICTS_FILE, CURATED_FILE, MEMORY_FILE, PROJECTION_INDEX_FILE};
use crate::workspace::Workspace;

impl Workspace {
    /// Replaces curated.json with the encoding of `state`, then MEMORY.md.
    ///
    /// Errors: [`Error::Io`]; [`Error::Corrupt`] if `state` breaks an
    /// invariant.
    pub(crate) fn save_curated(&self, state: &CuratedState) -> Result<()> {
        self.write_curated(CuratedFile::encode(
            state,
            &self.file(CURATED_FILE),
            &self.workspace_id,
        )?)
    }

    /// Replaces curated.json with `file`, records its hash as known valid,
    /// then rewrites MEMORY.md and the projection index.
    ///
    /// Errors: [`Error::Io`].
    pub(crate) fn write_curated(&self, file: CuratedFile) -> Result<()> {
        self.write_curated_after(file, || Ok(()))
    }

    /// [`Workspace::write_curated`] once `first` (a distill's intent) is
    /// written. The next MEMORY.md follows from `file`'s entry heads alone:
    /// it is rendered, written beside MEMORY.md and made durable on another
    /// thread while `first` runs and curated.json takes its place, and
    /// takes its own place after curated.json, as before. A failure drops
    /// it (its temporary file is removed).
    ///
    /// Errors: what `first` returns; [`Error::Io`].
    pub(crate) fn write_curated_after(
        &self,
        file: CuratedFile,
        first: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let path = self.file(CURATED_FILE);
        let sha256 = file.sha256().to_owned();
        let checkpoints = file.checkpoints().cloned();
        let projection = Projection::of_heads(file.heads());
        // The files put out of place are closed once MEMORY.md is durable
        // too: the blocks a close frees would hold up its `fsync`.
        let held = self.dir.hold_replaced();
        let (saved, memory) = std::thread::scope(|scope| {
            let memory = scope.spawn(|| {
                let rendered = projection.render_memory();
                self.dir.stage(MEMORY_FILE, |out| out.write_all(rendered.as_bytes()))
            });
            let saved = first().and_then(|()| file.save(&path));
            (saved, memory.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        saved?;
        let memory = memory?;
        let stamp = self.dir.stamp(CURATED_FILE)?;
        self.dir.record_state(CURATED_FILE, &sha256, checkpoints.as_ref(), stamp);
        failpoint::hit("between_curated_and_projection");
        memory.commit()?;
        drop(held);
        self.write_projection_index(&projection, stamp)
    }

    /// Replaces conflicts.json with the encoding of `queue`.
    ///
    /// Errors: [`Error::Io`]; [`Error::Corrupt`] if `queue` breaks an
    /// invariant.
    pub(crate) fn save_conflicts(&self, queue: &ConflictQueue) -> Result<()> {
        self.write_conflicts(ConflictsFile::encode(
            queue,
            &self.file(CONFLICTS_FILE),
            &self.workspace_id,
        )?)
    }

    /// Replaces conflicts.json with `file` and records its hash as known
    /// valid.
    ///
    /// Errors: [`Error::Io`].
    pub(crate) fn write_conflicts(&self, file: ConflictsFile) -> Result<()> {
        self.dir.write_conflicts(file)
    }

    /// Rewrites MEMORY.md when it differs from the rendering of
    /// `projection`, that of the current curated.json, and the projection
    /// index when it is stale; returns the rendering.
    pub(crate) fn repair_projection(&self, projection: &Projection) -> Result<String> {
        self.repair_projection_from(projection, self.dir.stamp(CURATED_FILE)?, Repair::Required)
    }

    fn repair_projection_from(
        &self,
        projection: &Projection,
        curated_stamp: Option<FileStamp>,
        repair: Repair,
    ) -> Result<String> {
        let rendered = projection.render_memory();
        let path = self.file(MEMORY_FILE);
        if self.dir.read_path(&path)?.as_deref() != Some(rendered.as_bytes()) {
            return match repair {
                Repair::Required => self.write_memory_md(projection, curated_stamp),
                // MEMORY.md is derived: a reader that cannot rewrite it (a
                // read-only mount, a full disk) still answers from
                // curated.json, and the next writer repairs it.
                Repair::BestEffort => {
                    if !self.read_only {
                        let _ = self.write_memory_md(projection, curated_stamp);
                    }
                    Ok(rendered)
                }
            };
        }
        if !self.read_only && self.fresh_projection()?.is_none() {
            // Only a cache: a reader that cannot write it (a read-only
            // checkout, say) still gets its answer, the slow way.
            let _ = self.write_projection_index(projection, curated_stamp);
        }
        Ok(rendered)
    }

    /// Replaces MEMORY.md with the rendering of `projection`, then the
    /// projection index; returns the rendering.
    pub(super) fn write_memory_md(
        &self,
        projection: &Projection,
        curated_stamp: Option<FileStamp>,
    ) -> Result<String> {
        let rendered = projection.render_memory();
        self.dir.replace(MEMORY_FILE, rendered.as_bytes())?;
        self.write_projection_index(projection, curated_stamp)?;
        Ok(rendered)
    }

    /// Records `projection` (what the bounded context needs of the curated
    /// state: the active entries, without their evidence lists) together
    /// with the identities of the curated.json it came from and of
    /// MEMORY.md, so that `context` can trust MEMORY.md without parsing
    /// curated.json, whose evidence lists grow with the log. The index is a
    /// cache: it is used only while both identities still match, and
    /// rebuilt otherwise.
    fn write_projection_index(
        &self,
        projection: &Projection,
        curated_stamp: Option<FileStamp>,
    ) -> Result<()> {
        let (Some(curated), Some(memory)) = (curated_stamp, self.dir.stamp(MEMORY_FILE)?) else {
            return Ok(());
        };
        let index = ProjectionIndex {
            schema_version: PROJECTION_INDEX_VERSION,
            workspace_id: self.workspace_id.clone(),
            curated,
            memory,
            entries: projection.entries.clone(),
            domains: projection.domains.clone(),
        };
        let text = serde_json::to_string(&index).map_err(|err| Error::Io {
            path: self.file(PROJECTION_INDEX_FILE),
            source: std::io::Error::other(err),
        })?;
        self.dir.replace_cache(PROJECTION_INDEX_FILE, text.as_bytes())
    }

    /// Returns MEMORY.md, the projected entries and the latest evidence of
    /// each keyed domain when the projection index matches the current
    /// curated.json and MEMORY.md, reading neither curated.json nor its
    /// evidence lists.
    fn fresh_projection(&self) -> Result<Option<CuratedView>> {
        // Any trouble with the cache (missing, unreadable, a directory or a
        // link in its place) is a miss, never an error.
        let Ok(Some(data)) = self.dir.read(PROJECTION_INDEX_FILE) else {
            return Ok(None);
        };
        let Ok(index) = serde_json::from_slice::<ProjectionIndex>(&data) else { return Ok(None) };
        let current = (self.dir.stamp(CURATED_FILE)?, self.dir.stamp(MEMORY_FILE)?);
        if index.schema_version != PROJECTION_INDEX_VERSION
            || index.workspace_id != self.workspace_id
            || current != (Some(index.curated), Some(index.memory))
        {
            return Ok(None);
        }
        let Some(memory) = self.dir.read(MEMORY_FILE)? else {
            return Ok(None);
        };
        match String::from_utf8(memory) {
            Ok(text) => Ok(Some(CuratedView {
                memory: text,
                entries: index.entries,
                domains: index.domains,
                state: None,
            })),
            Err(_) => Ok(None),
        }
    }

    /// Returns the MEMORY.md text, rebuilding the file from curated.json
    /// when it differs. Without curated.json an existing MEMORY.md is
    /// returned as is (empty string if there is none).
    ///
    /// Errors: [`Error::Corrupt`], [`Error::Scope`], [`Error::Io`].
    pub fn memory(&self) -> Result<String> {
        Ok(self.memory_and_state()?.0)
    }

    fn memory_and_state(&self) -> Result<(String, CuratedState)> {
        self.check_state()?;
        // Identify curated.json before reading it: if a writer replaces it
        // meanwhile, the index written below will not match and is ignored.
        let curated_stamp = self.dir.stamp(CURATED_FILE)?;
        let (state, bytes) = self.dir.curated_with_bytes()?;
        if bytes.is_none() {
            // No curated state, no curated part: a MEMORY.md on disk is
            // never served (a branch may have written anything there).
            return Ok((String::new(), state));
        }
        let projection = Projection::of_entries(&state.entries);
        Ok((self.repair_projection_from(&projection, curated_stamp, Repair::BestEffort)?, state))
    }

    /// Returns MEMORY.md as [`Workspace::memory`] does when it has at most
    /// `max_chars` characters, and otherwise its bounded form: the same
    /// layout with only the highest-priority entries that fit (more
    /// evidence, then the latest `last_seen`, then content) and the line
    /// ``- (N more entries not shown: run `workmem memory` or `workmem search`)``. For readers
    /// that must not receive an unbounded text (an MCP resource); the file
    /// itself is never truncated. Uses the projection index like
    /// [`Workspace::context`], so the cost does not grow with the log.
    ///
    /// Errors: as [`Workspace::memory`].
    pub fn memory_within(&self, max_chars: usize) -> Result<String> {
        let view = self.curated_view()?;
        Ok(projection::render_memory_within(&view.memory, &view.entries, max_chars))
    }

    /// Returns what the context needs of the curated state, from the
    /// projection index while it is fresh, else from curated.json
    /// (repairing MEMORY.md and the index).
    fn curated_view(&self) -> Result<CuratedView> {
        self.check_state()?;
        if let Some(fresh) = self.fresh_projection()? {
            return Ok(fresh);
        }
        let (memory, state) = self.memory_and_state()?;
        Ok(CuratedView {
            memory,
            entries: projection::project(&state.entries),
            domains: projection::latest_evidence_by_domain(&state.entries),
            state: Some(state),
        })
    }

    /// Returns the bounded agent context (docs/policy.md) with `recent`
    /// recent unkeyed facts (default from the config), and the configured
    /// number of pending keyed facts, within the configured budget: see
    /// [`Workspace::context_with`].
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{NewFact, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// assert_eq!(ws.context(None)?, "(no workspace memory yet)");
    /// ws.init()?;
    /// ws.remember(NewFact::new("Migrated the cache to WAL mode"))?;
    /// assert!(ws.context(None)?.starts_with("# Recent Workspace Facts"));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: as [`Workspace::memory`] and [`Workspace::facts`].
    pub fn context(&self, recent: Option<usize>) -> Result<String> {
        self.context_with(&ContextOptions { recent, ..ContextOptions::default() })
    }

    /// Returns the bounded agent context (docs/policy.md): MEMORY.md, the
    /// most recent unkeyed facts and the most recent pending keyed facts
    /// (keyed facts not yet evidence of any curated entry, under their own
    /// heading), within a character budget; each count and the budget come
    /// from `options` or else the config. Recent and pending facts come
    /// from the newest daily files only, curated.json is parsed only when
    /// the projection index is stale, and pending facts come from the
    /// pending index while it holds, so the cost does not grow with the
    /// log. With no pending facts asked for, the context is the one
    /// without that part.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{ContextOptions, NewFact, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// ws.init()?;
    /// ws.remember(NewFact {
    ///     kind: Some("decision".into()),
    ///     memory_key: Some("runtime.python-version".into()),
    ///     recorded_at: Some("2026-01-05T09:00:00Z".into()),
    ///     ..NewFact::new("Use Python 3.12")
    /// })?;
    /// assert_eq!(
    ///     ws.context_with(&ContextOptions::new())?,
    ///     "# Pending Keyed Facts (recorded, not in the curated memory)\n\n\
    ///      - [decision] runtime.python-version: Use Python 3.12 (2026-01-05)"
    /// );
    /// assert_eq!(
    ///     ws.context_with(&ContextOptions::new().pending(0))?,
    ///     "(no workspace memory yet)"
    /// );
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: as [`Workspace::memory`] and [`Workspace::facts`].
    pub fn context_with(&self, options: &ContextOptions) -> Result<String> {
        let view = self.curated_view()?;
        // A retracted fact is neither recent nor pending.
        let corrections = self.retractions_seen()?;
        let recent = self.log.recent(options.recent.unwrap_or(self.config.recent_facts), |f| {
            f.memory_key.is_none() && !corrections.0.is_retracted(&f.fact_id)
        })?;
        let pending = self.reviewed_pending(
            options.pending.unwrap_or(self.config.pending_facts),
            &view,
            &corrections,
        )?;
        let budget = options.budget.unwrap_or(self.config.context_budget);
        // With a query, the entries relevant to it come first when not all
        // fit: found by search only then.
        let query = options.query.as_deref().filter(|q| !q.trim().is_empty());
        if let Some(query) = query {
            crate::model::search_text::parse_query(query)?;
        }
        let searched = std::cell::RefCell::new(None);
        let relevant = || -> Vec<String> {
            let Some(query) = query else { return Vec::new() };
            let found = self.relevant_entries(query);
            let keys = found.as_ref().map(Clone::clone).unwrap_or_default();
            *searched.borrow_mut() = Some(found);
            keys
        };
        let context = projection::render_context(
            &view.memory,
            &view.entries,
            &recent,
            &pending,
            budget,
            &relevant,
        );
        if let Some(Err(err)) = searched.into_inner() {
            return Err(err);
        }
        Ok(context)
    }
}

/// What [`Workspace::context_with`] builds: each `None` takes the
/// workspace's configured value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextOptions {
    /// Recent unkeyed facts to include.
    pub recent: Option<usize>,
    /// Pending keyed facts to include (0 leaves the part out); more than
    /// the end of [`Config::PENDING_FACTS`](crate::Config::PENDING_FACTS)
    /// counts as that many.
    pub pending: Option<usize>,
    /// Character budget of the whole context (0: unbounded).
    pub budget: Option<usize>,
    /// A task: when the curated part cannot hold every active entry, the
    /// entries most relevant to it (by [`Workspace::search`]) come first.
    pub query: Option<String>,
}

impl ContextOptions {
    /// Returns options that take every value from the config.
    pub fn new() -> ContextOptions {
        ContextOptions::default()
    }

    /// Sets how many recent unkeyed facts to include.
    pub fn recent(mut self, n: usize) -> ContextOptions {
        self.recent = Some(n);
        self
    }

    /// Sets how many pending keyed facts to include (0: none).
    pub fn pending(mut self, n: usize) -> ContextOptions {
        self.pending = Some(n);
        self
    }

    /// Sets the character budget (0: unbounded).
    pub fn budget(mut self, chars: usize) -> ContextOptions {
        self.budget = Some(chars);
        self
    }

    /// Sets the task whose relevant entries come first.
    pub fn query(mut self, text: impl Into<String>) -> ContextOptions {
        self.query = Some(text.into());
        self
    }
}

/// Whether a stale MEMORY.md must be rewritten (writers) or only may be
/// (readers, who answer from curated.json either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repair {
    Required,
    BestEffort,
}

/// What the context needs of the curated state.
pub(super) struct CuratedView {
    /// The MEMORY.md text.
    pub(super) memory: String,
    /// The active entries, projected.
    pub(super) entries: Vec<projection::Projected>,
    /// The latest evidence of each keyed domain, over every revision.
    pub(super) domains: BTreeMap<String, Stamp>,
    /// The state itself, when it had to be read.
    pub(super) state: Option<CuratedState>,
}

/// Version of the `.projection.json` layout (2: with `domains`; 3: written
/// only from a curated.json this clone wrote or checked in full).
const PROJECTION_INDEX_VERSION: u32 = 3;

/// The projection index: the identities (inode, size, modification time)
/// of the curated.json and MEMORY.md it describes, and what the context
/// needs of curated.json. Every atomic replace makes a new inode; an edit
/// in place changes the size or the time.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectionIndex {
    schema_version: u32,
    workspace_id: String,
    curated: FileStamp,
    memory: FileStamp,
    entries: Vec<projection::Projected>,
    /// Latest evidence per keyed domain (see [`projection::latest_evidence_by_domain`]).
    domains: BTreeMap<String, Stamp>,
}
