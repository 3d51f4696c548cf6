//! Opening a workspace and the operations of the library surface: append,
//! read, distill, memory, context.
//!
//! A workspace is one project directory; its identity is the SHA-256 of the
//! canonical path, so relative paths and symlinks to one project open the
//! same workspace. Everything durable lives in the memory directory
//! (default `<project>/.workmem/memory`). Canonical files are only replaced
//! through `atomic_io::replace`, logs only appended through
//! `atomic_io::append`, and every read-modify-write holds the workspace lock.

pub mod explain;
pub mod history;
mod resolve;
pub mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::store::atomic_io::{self, FileStamp, file_stamp};
use crate::model::canon;
use crate::model::clock::{Clock, SystemClock};
use crate::policy::config::Config;
use crate::store::conflict_queue::ConflictQueue;
use crate::store::curated_state::CuratedState;
use crate::policy::distill::{self, Policy, Report};
use crate::store::domain_index::{self, DomainIndex};
use crate::error::{Error, IoContext, Result};
use crate::model::fact::{Fact, NewFact};
use crate::model::fact_line::FactSummary;
use crate::store::fact_log::{self, FactLog};
use crate::store::failpoint;
use crate::store::lock::WorkspaceLock;
use crate::policy::projection;
use crate::model::stamp::Stamp;

/// Default memory directory, relative to the project.
pub const DEFAULT_MEMORY_DIR: &str = ".workmem/memory";
/// Facts appended per batch by [`Workspace::import`] (one fsync per batch
/// and daily file).
pub const IMPORT_BATCH: usize = 10_000;
/// The canonical curated state.
pub const CURATED_FILE: &str = "curated.json";
/// The canonical review queue.
pub const CONFLICTS_FILE: &str = "conflicts.json";
/// The derived prompt view.
pub const MEMORY_FILE: &str = "MEMORY.md";
/// Cache of what `context` needs of curated.json (see
/// `Workspace::write_projection_index`); never evidence, always rebuildable.
pub const PROJECTION_INDEX_FILE: &str = ".projection.json";
/// Intent of a distill that changes curated.json, present only between its
/// first and last write.
pub const DISTILL_INTENT_FILE: &str = ".distill-pending.json";
/// File name of the domain index, a cache of the keyed fact ids of each
/// daily file (see [`crate::store::domain_index`]).
pub const DOMAIN_INDEX_FILE: &str = ".domain-index";

/// An open workspace.
#[derive(Debug, Clone)]
pub struct Workspace {
    project: PathBuf,
    memory_dir: PathBuf,
    workspace_id: String,
    log: FactLog,
    clock: Arc<dyn Clock>,
    config: Config,
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
    /// Opens the workspace of `project` (which must exist). `memory_dir`
    /// overrides the default `<project>/.workmem/memory`; a relative one is
    /// taken relative to the project. Nothing is created, except when an
    /// unfinished resolution must be recovered (see [`Workspace::recover`]).
    ///
    /// Errors: [`Error::Io`] when the project cannot be resolved,
    /// [`Error::InvalidInput`] for a non-UTF-8 path, [`Error::Corrupt`] when
    /// the default memory directory is reached through a symlinked
    /// `.workmem` or `.workmem/memory`.
    pub fn open(project: &Path, memory_dir: Option<&Path>) -> Result<Workspace> {
        let workspace = Workspace::open_read_only(project, memory_dir)?;
        // Every open finishes a resolution a crash left unfinished (SPEC 7).
        workspace.recover()?;
        Ok(workspace)
    }

    /// Opens the workspace of `project` like [`Workspace::open`] but
    /// without recovery: nothing is read or written, and an unfinished
    /// resolution or distill is left as it is. Meant for [`Workspace::verify`],
    /// which must report such state rather than repair it; the other
    /// operations expect a recovered workspace and should not be called on
    /// a handle opened this way while work is unfinished.
    ///
    /// Errors: as [`Workspace::open`], without the recovery errors.
    pub fn open_read_only(project: &Path, memory_dir: Option<&Path>) -> Result<Workspace> {
        let project = std::fs::canonicalize(project).at(project)?;
        if !project.is_dir() {
            return Err(Error::invalid("project", format!("{} is not a directory", project.display())));
        }
        let text = project
            .to_str()
            .ok_or_else(|| Error::invalid("project", format!("{} is not valid UTF-8", project.display())))?;
        let workspace_id = canon::workspace_id(text);
        let memory_dir = match memory_dir {
            Some(dir) if dir.is_absolute() => dir.to_path_buf(),
            Some(dir) => project.join(dir),
            None => {
                // The default location is part of the checkout, which may be
                // hostile: a linked `.workmem` or `.workmem/memory` would make
                // appends write outside the project. A memory directory the
                // caller names explicitly may be a link.
                let dot = project.join(".workmem");
                atomic_io::refuse_symlink(&dot)?;
                atomic_io::refuse_symlink(&project.join(DEFAULT_MEMORY_DIR))?;
                project.join(DEFAULT_MEMORY_DIR)
            }
        };
        let log = FactLog::new(memory_dir.join("daily"), workspace_id.clone());
        Ok(Workspace {
            project,
            memory_dir,
            workspace_id,
            log,
            clock: Arc::new(SystemClock),
            config: Config::default(),
        })
    }

    /// Returns this workspace reading time and fresh ids from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Workspace {
        self.clock = clock;
        self
    }

    /// Returns this workspace with `config`.
    ///
    /// Errors: [`Error::InvalidInput`] for an out-of-range value.
    pub fn with_config(mut self, config: Config) -> Result<Workspace> {
        config.validate()?;
        self.config = config;
        Ok(self)
    }

    /// Returns the canonical project directory.
    pub fn project(&self) -> &Path {
        &self.project
    }

    /// Returns the memory directory.
    pub fn memory_dir(&self) -> &Path {
        &self.memory_dir
    }

    /// Returns the workspace id.
    pub fn workspace_id(&self) -> &str {
        &self.workspace_id
    }

    /// Returns the configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Returns the fact log.
    pub fn log(&self) -> &FactLog {
        &self.log
    }

    /// Returns the current time of the workspace's clock.
    pub fn now(&self) -> Stamp {
        self.clock.now()
    }

    /// Returns the path of a file in the memory directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.memory_dir.join(name)
    }

    /// Creates the memory directory and `daily/` (mode 0700) if missing.
    ///
    /// Errors: [`Error::Io`], [`Error::Corrupt`] for a symlinked directory.
    pub fn init(&self) -> Result<()> {
        atomic_io::create_private_dir(&self.memory_dir)?;
        atomic_io::create_private_dir(self.log.dir())
    }

    /// Validates `new` and returns the fact it would append, without writing.
    ///
    /// Errors: [`Error::InvalidInput`] naming the field.
    pub fn prepare(&self, new: NewFact) -> Result<Fact> {
        Fact::from_new(new, &self.workspace_id, self.clock.now(), || self.clock.fresh_id())
    }

    /// Appends one fact durably and returns it as stored.
    ///
    /// A fact with an explicit id is checked and appended under the
    /// workspace lock, so two writers can never store different facts under
    /// one id. When the id is already stored with the same content, kind,
    /// importance, memory_key, source and evidence (and instant, when
    /// `recorded_at` was given), the append is a retry: nothing is written
    /// and the stored fact is returned. Facts without an id get a fresh
    /// random one and append without the lock.
    ///
    /// Errors: [`Error::InvalidInput`] (nothing written), including an id
    /// already used by another fact; [`Error::Scope`] when the existing
    /// state belongs to another workspace (nothing written); [`Error::Io`].
    pub fn remember(&self, new: NewFact) -> Result<Fact> {
        let explicit_id = new.fact_id.is_some();
        let recorded_at_given = new.recorded_at.is_some();
        let fact = self.prepare(new)?;
        self.check_append_scope([fact.recorded_at.utc_day()])?;
        let facts = std::slice::from_ref(&fact);
        if !explicit_id {
            self.append_creating_dirs(facts)?;
            return Ok(fact);
        }
        let _lock = self.lock()?;
        match self.stored_under(facts)?.pop().flatten() {
            Some(stored) if fact.repeats(&stored, recorded_at_given) => Ok(stored),
            Some(_) => Err(Error::invalid("fact_id", format!("{} is already used by another fact", fact.fact_id))),
            None => {
                self.log.append(facts)?;
                Ok(fact)
            }
        }
    }

    /// Validates every item first, then appends those not yet stored in
    /// batches of [`IMPORT_BATCH`], one write and one fsync per batch and
    /// daily file, under the workspace lock. `progress` is called with the
    /// number appended so far.
    ///
    /// An item without `fact_id` gets a deterministic id (see
    /// [`canon::import_fact_id`]), so an import that was interrupted (a
    /// killed process) can be run again: it appends only what is missing.
    /// An item whose id is stored with the same fields (the retry rule of
    /// [`Workspace::remember`]) counts as already present.
    ///
    /// Errors: [`Error::InvalidInput`] naming the 1-based item (nothing
    /// written), including an id given twice or stored with other fields;
    /// [`Error::Scope`] (nothing written); [`Error::Io`].
    pub fn import(&self, items: Vec<NewFact>, progress: &mut dyn FnMut(usize)) -> Result<Imported> {
        let item_error = |index: usize, err: Error| match err {
            Error::InvalidInput { field, message } => Error::invalid(format!("{field} of item {}", index + 1), message),
            other => other,
        };
        let mut facts = Vec::with_capacity(items.len());
        let mut times_given = Vec::with_capacity(items.len());
        let mut ids = std::collections::HashSet::new();
        let mut occurrences: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (index, mut new) in items.into_iter().enumerate() {
            if new.fact_id.is_none() {
                let json = new.canonical_json();
                let seen = occurrences.entry(canon::import_fact_id(&self.workspace_id, &json, 0)).or_insert(0);
                new.fact_id = Some(canon::import_fact_id(&self.workspace_id, &json, *seen));
                *seen += 1;
            }
            times_given.push(new.recorded_at.is_some());
            let fact = self.prepare(new).map_err(|err| item_error(index, err))?;
            if !ids.insert(fact.fact_id.clone()) {
                return Err(Error::invalid(
                    format!("fact_id of item {}", index + 1),
                    format!("{} appears twice in the input", fact.fact_id),
                ));
            }
            facts.push(fact);
        }
        let days: std::collections::BTreeSet<String> = facts.iter().map(|f| f.recorded_at.utc_day()).collect();
        self.check_append_scope(days)?;
        let _lock = self.lock()?;
        let stored = self.stored_under(&facts)?;
        let mut already_present = 0;
        let mut missing = Vec::with_capacity(facts.len());
        for (index, (fact, stored)) in facts.into_iter().zip(stored).enumerate() {
            match stored {
                None => missing.push(fact),
                Some(stored) if fact.repeats(&stored, times_given[index]) => already_present += 1,
                Some(_) => {
                    return Err(item_error(
                        index,
                        Error::invalid("fact_id", format!("{} is already used by another fact", fact.fact_id)),
                    ));
                }
            }
        }
        let mut done = 0;
        for batch in missing.chunks(IMPORT_BATCH) {
            self.log.append(batch)?;
            done += batch.len();
            progress(done);
        }
        Ok(Imported { facts: missing, already_present })
    }

    /// Appends to the log, creating the memory and `daily/` directories
    /// only when the append finds them missing (the hot path makes no
    /// directory calls).
    fn append_creating_dirs(&self, facts: &[Fact]) -> Result<()> {
        match self.log.append(facts) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                self.init()?;
                self.log.append(facts)
            }
            other => other,
        }
    }

    /// Returns, for each of `facts`, the fact already stored under its id.
    /// The caller holds the lock, so the answer stays true until it appends.
    fn stored_under(&self, facts: &[Fact]) -> Result<Vec<Option<Fact>>> {
        let wanted: std::collections::HashMap<&str, usize> =
            facts.iter().enumerate().map(|(index, f)| (f.fact_id.as_str(), index)).collect();
        let mut stored = vec![None; facts.len()];
        for fact in self.log.read_all()? {
            if let Some(&index) = wanted.get(fact.fact_id.as_str()) {
                stored[index] = Some(fact);
            }
        }
        Ok(stored)
    }

    /// Refuses an append that would join state of another workspace (a
    /// moved or copied checkout, whose path gives another id): the
    /// workspace id of each existing target daily file's first complete
    /// line, else of the newest daily file's, else of curated.json, must be
    /// this workspace's. Reads only the first line of those files.
    ///
    /// Errors: [`Error::Scope`] naming the file and both ids; [`Error::Io`].
    fn check_append_scope(&self, days: impl IntoIterator<Item = String>) -> Result<()> {
        let mut checked = false;
        for day in days {
            let path = self.log.path_for_day(&day);
            if let Some(found) = atomic_io::first_complete_line(&path)?.and_then(|l| recorded_workspace(&l)) {
                self.expect_workspace(&path, found)?;
                checked = true;
            }
        }
        if checked {
            return Ok(());
        }
        if let Some(newest) = self.log.days()?.pop()
            && let Some(found) = atomic_io::first_complete_line(&newest.path)?.and_then(|l| recorded_workspace(&l))
        {
            return self.expect_workspace(&newest.path, found);
        }
        let path = self.file(CURATED_FILE);
        match atomic_io::read_optional(&path)?.and_then(|data| recorded_workspace(&data)) {
            Some(found) => self.expect_workspace(&path, found),
            None => Ok(()),
        }
    }

    fn expect_workspace(&self, path: &Path, found: String) -> Result<()> {
        if found == self.workspace_id {
            return Ok(());
        }
        Err(Error::Scope { location: crate::error::Location::file(path), found, expected: self.workspace_id.clone() })
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
        if !crate::store::fact_log::is_day_name(day) {
            return Err(Error::invalid("day", format!("{day:?} is not a YYYY-MM-DD date")));
        }
        self.log.read_file(&self.log.path_for_day(day))
    }

    /// Returns the `limit` most recent facts (any kind, keyed or not), oldest
    /// first, reading only the newest daily files.
    ///
    /// Errors: as [`Workspace::facts`].
    pub fn recent_facts(&self, limit: usize) -> Result<Vec<Fact>> {
        self.log.recent(limit, |_| true)
    }

    /// Returns one summary per daily log, oldest first.
    ///
    /// Errors: as [`Workspace::facts`].
    pub fn log_days(&self) -> Result<Vec<DaySummary>> {
        self.log
            .days()?
            .into_iter()
            .map(|day| Ok(DaySummary { facts: self.log.read_file(&day.path)?.len(), day: day.day }))
            .collect()
    }

    /// Returns the curated state (empty when `curated.json` does not exist).
    ///
    /// Errors: [`Error::Corrupt`] naming the entry, [`Error::Scope`],
    /// [`Error::Io`].
    pub fn curated(&self) -> Result<CuratedState> {
        Ok(self.curated_with_bytes()?.0)
    }

    fn curated_with_bytes(&self) -> Result<(CuratedState, Option<Vec<u8>>)> {
        let path = self.file(CURATED_FILE);
        match atomic_io::read_optional(&path)? {
            None => Ok((CuratedState::new(), None)),
            Some(data) => Ok((CuratedState::decode(&data, &path, &self.workspace_id)?, Some(data))),
        }
    }

    /// Returns the conflict queue (empty when `conflicts.json` does not
    /// exist).
    ///
    /// Errors: [`Error::Corrupt`] naming the case, [`Error::Scope`],
    /// [`Error::Io`].
    pub fn conflicts(&self) -> Result<ConflictQueue> {
        let path = self.file(CONFLICTS_FILE);
        match atomic_io::read_optional(&path)? {
            None => Ok(ConflictQueue::default()),
            Some(data) => ConflictQueue::decode(&data, &path, &self.workspace_id),
        }
    }

    /// Takes the workspace lock (creating the memory directory if needed)
    /// and removes the temporary files a crashed atomic replace left behind.
    ///
    /// Errors: [`Error::Io`].
    pub fn lock(&self) -> Result<WorkspaceLock> {
        self.init()?;
        let lock = WorkspaceLock::acquire(&self.memory_dir)?;
        atomic_io::remove_temporaries(&self.memory_dir);
        Ok(lock)
    }

    /// Runs the distill policy at `as_of` (default now) and saves what
    /// changed: curated.json then MEMORY.md, then conflicts.json. With
    /// `dry_run` nothing is written and no lock is taken.
    ///
    /// A distill that changes curated.json first makes its intent durable
    /// (`.distill-pending.json`), so a crash between its writes is finished
    /// by the next open, like a resolution.
    ///
    /// Errors: [`Error::InvalidInput`] for a bad policy; read errors as
    /// [`Workspace::facts`]; [`Error::Io`].
    pub fn distill(&self, policy: &Policy, as_of: Option<Stamp>, dry_run: bool) -> Result<Report> {
        Ok(self.run_distill(policy, as_of, dry_run, false)?.report)
    }

    /// Runs distill like [`Workspace::distill`] and also returns, for every
    /// fact, where it stands after the run and why, decided by the same code.
    ///
    /// Errors: as [`Workspace::distill`].
    pub fn distill_explained(
        &self,
        policy: &Policy,
        as_of: Option<Stamp>,
        dry_run: bool,
    ) -> Result<(Report, Vec<distill::Decision>)> {
        let outcome = self.run_distill(policy, as_of, dry_run, true)?;
        Ok((outcome.report, outcome.decisions))
    }

    fn run_distill(
        &self,
        policy: &Policy,
        as_of: Option<Stamp>,
        dry_run: bool,
        record: bool,
    ) -> Result<distill::Outcome> {
        policy.validate()?;
        let as_of = as_of.unwrap_or_else(|| self.clock.now());
        let _lock = if dry_run { None } else { Some(self.lock()?) };
        if !dry_run {
            self.finish_pending_locked()?;
        }
        let files = self.log.read_files::<FactSummary>(&self.log.days()?)?;
        let index = if dry_run { None } else { self.stale_domain_index(&files) };
        let facts = fact_log::merge(files);
        let (curated, bytes) = self.curated_with_bytes()?;
        // Only whether the file exists matters here; free its bytes (they
        // grow with the log) before the policy runs.
        let curated_exists = bytes.is_some();
        drop(bytes);
        let queue = self.conflicts()?;
        let outcome = if record {
            distill::distill_explained(&facts, curated, &queue, policy, &as_of, &self.workspace_id)?
        } else {
            distill::distill(&facts, curated, &queue, policy, &as_of, &self.workspace_id)?
        };
        if dry_run {
            return Ok(outcome);
        }
        // Everything read was valid: the cache can describe it.
        if let Some(index) = index {
            self.save_domain_index(&index);
        }
        let conflicts_bytes = match outcome.queue_changed {
            true => Some(outcome.queue.encode(&self.file(CONFLICTS_FILE), &self.workspace_id)?),
            false => None,
        };
        if outcome.curated_changed {
            let curated_bytes = outcome.curated.encode(&self.file(CURATED_FILE), &self.workspace_id)?;
            self.write_distill_intent(&curated_bytes, conflicts_bytes.as_deref())?;
            atomic_io::replace(&self.file(CURATED_FILE), &curated_bytes)?;
            failpoint::hit("between_curated_and_projection");
            self.write_memory_md(&outcome.curated, file_stamp(&self.file(CURATED_FILE))?)?;
        } else if curated_exists {
            // Unchanged: the outcome's state is the one read.
            self.repair_projection(&outcome.curated)?;
        }
        failpoint::hit("distill_after_curated");
        if let Some(conflicts) = conflicts_bytes {
            atomic_io::replace(&self.file(CONFLICTS_FILE), &conflicts)?;
        }
        self.clear_distill_intent()?;
        Ok(outcome)
    }

    /// Returns the domain index of the files just read when the stored one
    /// does not describe them.
    fn stale_domain_index(&self, files: &[fact_log::FileRecords<FactSummary>]) -> Option<DomainIndex> {
        let current = DomainIndex::describes(&self.file(DOMAIN_INDEX_FILE), &self.workspace_id, files);
        (!current).then(|| DomainIndex::of(files))
    }

    /// Saves the domain index. Only a cache: failing to write it is not an
    /// error, the next reader reads the log instead.
    pub(crate) fn save_domain_index(&self, index: &DomainIndex) {
        let _ = index.save(&self.file(DOMAIN_INDEX_FILE), &self.workspace_id);
    }

    /// Returns the ids of every fact in the log with `memory_key`, through
    /// the domain index; see [`domain_index::Lookup`].
    ///
    /// Errors: as [`Workspace::facts`], for the daily files it reads.
    pub(crate) fn domain_fact_ids(&self, memory_key: &str) -> Result<domain_index::Lookup> {
        domain_index::domain_fact_ids(&self.log, &self.file(DOMAIN_INDEX_FILE), &self.workspace_id, memory_key)
    }

    fn write_distill_intent(&self, curated: &[u8], conflicts: Option<&[u8]>) -> Result<()> {
        let intent = serde_json::json!({
            "schema_version": 1,
            "workspace_id": self.workspace_id,
            "curated_sha256": canon::sha256_hex(curated),
            "conflicts": conflicts.map(String::from_utf8_lossy),
        });
        let mut text = canon::to_json(&intent, canon::JsonStyle::Pretty);
        text.push('\n');
        atomic_io::replace(&self.file(DISTILL_INTENT_FILE), text.as_bytes())
    }

    fn clear_distill_intent(&self) -> Result<()> {
        let path = self.file(DISTILL_INTENT_FILE);
        match std::fs::remove_file(&path) {
            Ok(()) => atomic_io::sync_dir(&self.memory_dir),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(err).at(&path),
        }
    }

    /// Returns whether a distill left its intent behind (a crash between
    /// its writes).
    pub(crate) fn distill_pending(&self) -> bool {
        std::fs::symlink_metadata(self.file(DISTILL_INTENT_FILE)).is_ok()
    }

    /// Finishes a distill interrupted between its writes; the lock must be
    /// held. When curated.json holds the new state, MEMORY.md and
    /// conflicts.json are brought up to date; otherwise nothing was applied
    /// and the intent is dropped.
    pub(crate) fn finish_distill_locked(&self) -> Result<()> {
        let path = self.file(DISTILL_INTENT_FILE);
        let Some(data) = atomic_io::read_optional(&path)? else { return Ok(()) };
        let corrupt = |message: &str| Error::corrupt(crate::error::Location::file(&path), message.to_owned());
        let intent: serde_json::Value =
            serde_json::from_slice(&data).map_err(|_| corrupt("not valid JSON; remove it and run distill again"))?;
        if intent.get("workspace_id").and_then(|v| v.as_str()) != Some(self.workspace_id.as_str()) {
            return Err(corrupt("belongs to another workspace"));
        }
        let Some(curated_sha) = intent.get("curated_sha256").and_then(|v| v.as_str()) else {
            return Err(corrupt("lacks curated_sha256"));
        };
        let conflicts = intent.get("conflicts").and_then(|v| v.as_str());
        let (state, bytes) = self.curated_with_bytes()?;
        if bytes.as_deref().map(canon::sha256_hex).as_deref() == Some(curated_sha) {
            self.repair_projection(&state)?;
            if let Some(conflicts) = conflicts {
                // Validate before writing: the intent is untrusted input too.
                ConflictQueue::decode(conflicts.as_bytes(), &path, &self.workspace_id)?;
                if atomic_io::read_optional(&self.file(CONFLICTS_FILE))?.as_deref() != Some(conflicts.as_bytes()) {
                    atomic_io::replace(&self.file(CONFLICTS_FILE), conflicts.as_bytes())?;
                }
            }
        }
        self.clear_distill_intent()
    }

    /// Replaces curated.json, then MEMORY.md.
    ///
    /// Errors: [`Error::Io`]; [`Error::Corrupt`] if `state` breaks an
    /// invariant.
    pub fn save_curated(&self, state: &CuratedState) -> Result<()> {
        let path = self.file(CURATED_FILE);
        let bytes = state.encode(&path, &self.workspace_id)?;
        atomic_io::replace(&path, &bytes)?;
        failpoint::hit("between_curated_and_projection");
        self.write_memory_md(state, file_stamp(&path)?).map(drop)
    }

    /// Replaces conflicts.json.
    ///
    /// Errors: [`Error::Io`]; [`Error::Corrupt`] if `queue` breaks an
    /// invariant.
    pub fn save_conflicts(&self, queue: &ConflictQueue) -> Result<()> {
        let path = self.file(CONFLICTS_FILE);
        let bytes = queue.encode(&path, &self.workspace_id)?;
        atomic_io::replace(&path, &bytes)
    }

    /// Rewrites MEMORY.md when it differs from the rendering of `state`,
    /// and the projection index when it is stale; returns the rendering.
    /// `curated_stamp` identifies the curated.json `state` was read from.
    pub(crate) fn repair_projection(&self, state: &CuratedState) -> Result<String> {
        self.repair_projection_from(state, file_stamp(&self.file(CURATED_FILE))?, Repair::Required)
    }

    fn repair_projection_from(
        &self,
        state: &CuratedState,
        curated_stamp: Option<FileStamp>,
        repair: Repair,
    ) -> Result<String> {
        let rendered = projection::render_memory(&state.entries);
        let path = self.file(MEMORY_FILE);
        if atomic_io::read_optional(&path)?.as_deref() != Some(rendered.as_bytes()) {
            return match repair {
                Repair::Required => self.write_memory_md(state, curated_stamp),
                // MEMORY.md is derived: a reader that cannot rewrite it (a
                // read-only mount, a full disk) still answers from
                // curated.json, and the next writer repairs it.
                Repair::BestEffort => {
                    let _ = self.write_memory_md(state, curated_stamp);
                    Ok(rendered)
                }
            };
        }
        if self.fresh_projection()?.is_none() {
            // Only a cache: a reader that cannot write it (a read-only
            // checkout, say) still gets its answer, the slow way.
            let _ = self.write_projection_index(state, curated_stamp);
        }
        Ok(rendered)
    }

    /// Replaces MEMORY.md with the rendering of `state`, then the projection
    /// index; returns the rendering.
    fn write_memory_md(&self, state: &CuratedState, curated_stamp: Option<FileStamp>) -> Result<String> {
        let rendered = projection::render_memory(&state.entries);
        atomic_io::replace(&self.file(MEMORY_FILE), rendered.as_bytes())?;
        self.write_projection_index(state, curated_stamp)?;
        Ok(rendered)
    }

    /// Records what the bounded context needs of `state` (the active
    /// entries, without their evidence lists) together with the identities
    /// of the curated.json it came from and of MEMORY.md, so that `context`
    /// can trust MEMORY.md without parsing curated.json, whose evidence
    /// lists grow with the log. The index is a cache: it is used only while
    /// both identities still match, and rebuilt otherwise.
    fn write_projection_index(&self, state: &CuratedState, curated_stamp: Option<FileStamp>) -> Result<()> {
        let (Some(curated), Some(memory)) = (curated_stamp, file_stamp(&self.file(MEMORY_FILE))?) else {
            return Ok(());
        };
        let index = ProjectionIndex {
            schema_version: 1,
            workspace_id: self.workspace_id.clone(),
            curated,
            memory,
            entries: projection::project(&state.entries),
        };
        let text = serde_json::to_string(&index)
            .map_err(|err| Error::Io { path: self.file(PROJECTION_INDEX_FILE), source: std::io::Error::other(err) })?;
        atomic_io::replace_cache(&self.file(PROJECTION_INDEX_FILE), text.as_bytes())
    }

    /// Returns MEMORY.md and the projected entries when the projection index
    /// matches the current curated.json and MEMORY.md, reading neither
    /// curated.json nor its evidence lists.
    fn fresh_projection(&self) -> Result<Option<(String, Vec<projection::Projected>)>> {
        // Any trouble with the cache (missing, unreadable, a directory or a
        // link in its place) is a miss, never an error.
        let Ok(Some(data)) = atomic_io::read_optional(&self.file(PROJECTION_INDEX_FILE)) else { return Ok(None) };
        let Ok(index) = serde_json::from_slice::<ProjectionIndex>(&data) else { return Ok(None) };
        let current = (file_stamp(&self.file(CURATED_FILE))?, file_stamp(&self.file(MEMORY_FILE))?);
        if index.schema_version != 1
            || index.workspace_id != self.workspace_id
            || current != (Some(index.curated), Some(index.memory))
        {
            return Ok(None);
        }
        let Some(memory) = atomic_io::read_optional(&self.file(MEMORY_FILE))? else { return Ok(None) };
        match String::from_utf8(memory) {
            Ok(text) => Ok(Some((text, index.entries))),
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
        // Identify curated.json before reading it: if a writer replaces it
        // meanwhile, the index written below will not match and is ignored.
        let curated_stamp = file_stamp(&self.file(CURATED_FILE))?;
        let (state, bytes) = self.curated_with_bytes()?;
        if bytes.is_none() {
            let existing = atomic_io::read_optional(&self.file(MEMORY_FILE))?;
            return Ok((existing.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default(), state));
        }
        Ok((self.repair_projection_from(&state, curated_stamp, Repair::BestEffort)?, state))
    }

    /// Returns the bounded agent context (SPEC section 8) with `recent`
    /// recent unkeyed facts (default from the config) within the configured
    /// budget. Recent facts come from the newest daily files only, and
    /// curated.json is parsed only when the projection index is stale, so
    /// the cost does not grow with the log.
    ///
    /// Errors: as [`Workspace::memory`] and [`Workspace::facts`].
    pub fn context(&self, recent: Option<usize>) -> Result<String> {
        let (memory, entries) = match self.fresh_projection()? {
            Some(fresh) => fresh,
            None => {
                let (memory, state) = self.memory_and_state()?;
                (memory, projection::project(&state.entries))
            }
        };
        let recent = self.log.recent(recent.unwrap_or(self.config.recent_facts), |f| f.memory_key.is_none())?;
        Ok(projection::render_context(&memory, &entries, &recent, self.config.context_budget))
    }
}

/// What an import appended and what it found already stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The facts appended, in input order.
    pub facts: Vec<Fact>,
    /// How many items were already stored (an earlier run of the same
    /// import, or a retry).
    pub already_present: usize,
}

/// Returns the `workspace_id` field of a JSON record (a fact line or a
/// state file), or `None` when the record does not parse or has none: the
/// readers report such a record, the append scope check only looks for
/// evidence of another workspace.
fn recorded_workspace(record: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Scoped {
        workspace_id: String,
    }
    serde_json::from_slice::<Scoped>(record).ok().map(|scoped| scoped.workspace_id)
}

/// Whether a stale MEMORY.md must be rewritten (writers) or only may be
/// (readers, who answer from curated.json either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repair {
    Required,
    BestEffort,
}

/// The identity of a file's current content: inode, size and modification
/// time. Every atomic replace makes a new inode; an edit in place changes
/// the size or the time.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectionIndex {
    schema_version: u32,
    workspace_id: String,
    curated: FileStamp,
    memory: FileStamp,
    entries: Vec<projection::Projected>,
}
