//! Running distill on a workspace: reading the log, the curated state and
//! the queue, running the pure policy, and saving what changed under the
//! lock, with a durable intent between the writes so a crash is finished
//! by the next writer.

use std::thread::ScopedJoinHandle;

use crate::error::{IoContext, Result};
use crate::model::fact_line::FactSummary;
use crate::model::stamp::Stamp;
use crate::policy::distill::{self, Policy};
use crate::policy::projection::Projection;
use crate::store::conflict_queue::{ConflictQueue, ConflictsFile};
use crate::store::curated_file::CuratedFile;
use crate::store::day_stamps;
use crate::store::domain_index::{self, DomainIndex};
use crate::store::fact_log;
use crate::store::failpoint;
use crate::store::journal::DistillIntent;
use crate::store::names::{CONFLICTS_FILE, CURATED_FILE, DISTILL_INTENT_FILE};
use crate::workspace::Workspace;
use crate::workspace::distill_cache::{ReadLog, UnitsPrep};
use crate::workspace::distilled::{CuratedOutcome, Distilled, drop_in_background};

impl Workspace {
    /// Runs the distill policy as `options` say and, unless it is a dry
    /// run, saves what changed under the lock: curated.json then MEMORY.md,
    /// then conflicts.json. The policy defaults to the workspace's
    /// configuration, `as_of` to now. With `explain` the result also holds,
    /// for every fact, where it stands after the run and why, decided by
    /// the same code.
    ///
    /// A distill that changes curated.json first makes its intent durable
    /// (`.distill-pending.json`), so a crash between its writes is finished
    /// by the next open, like a resolution.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use workmem::{DistillOptions, Workspace};
    /// let ws = Workspace::open(dir.path(), None)?;
    /// let preview = ws.distill(&DistillOptions::new().dry_run().explain())?;
    /// assert_eq!(preview.report.created, 0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: [`crate::Error::InvalidInput`] for a bad policy; read errors as
    /// [`Workspace::facts`]; [`crate::Error::Io`].
    pub fn distill(&self, options: &DistillOptions) -> Result<Distilled> {
        let policy = options.policy.as_ref().unwrap_or(&self.config.policy);
        self.run_distill(policy, options.as_of.clone(), options.dry_run, options.explain)
    }

    fn run_distill(
        &self,
        policy: &Policy,
        as_of: Option<Stamp>,
        dry_run: bool,
        record: bool,
    ) -> Result<Distilled> {
        policy.validate()?;
        let as_of = as_of.unwrap_or_else(|| self.clock.now());
        let _lock = if dry_run { None } else { Some(self.lock()?) };
        if !dry_run {
            self.finish_pending_locked()?;
        }
        // Once, before the threads below read the two files.
        self.check_state()?;
        // A run that writes keeps the distill cache: it starts from it when
        // it can, and otherwise reads the whole log and leaves a new one.
        let cache = !dry_run && !record;
        if cache && let Some(done) = self.distill_incremental(policy, &as_of)? {
            return Ok(done);
        }
        // The policy never sees a retracted fact (a run from the cache
        // reads the stream only when it holds records).
        let (retractions, corrections) = self.retractions_seen()?;
        // Taken before the listing: a file created after it changes it.
        let listing = if cache { day_stamps::settled_listing(&self.log)? } else { None };
        let files = self.log.read_files_with::<FactSummary>(&self.log.days()?, cache)?;
        // The domain index is saved on another thread while the policy runs
        // (only a cache: a failure to write it is not an error).
        let _index_saved =
            if dry_run { None } else { self.stale_domain_index(&files) }.map(|index| {
                let stored = self.dir.domain_index();
                JoinOnDrop(Some(std::thread::spawn(move || stored.save(&index))))
            });
        let mut read = cache.then(|| ReadLog::of(&files, listing));
        // curated.json and conflicts.json (which grow with the log and the
        // history) are decoded on two more threads while the files' facts
        // are merged into one list.
        let (facts, curated, queue) = std::thread::scope(|scope| {
            let curated = scope.spawn(|| self.dir.curated_with_bytes());
            let queue = scope.spawn(|| {
                if dry_run { self.conflicts_unchecked() } else { self.dir.conflicts_for_writer() }
            });
            let facts = files.merge();
            let curated = curated.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (facts, curated, queue.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
        let mut facts = facts;
        let withheld = retractions.withhold(&mut facts, record);
        if let Some(read) = &mut read {
            read.withheld(withheld.ids().map(str::to_owned), corrections);
        }
        let (curated, bytes) = curated?;
        // Only whether the file exists matters here; free its bytes (they
        // grow with the log) before the policy runs.
        let curated_exists = bytes.is_some();
        drop(bytes);
        let queue = queue?;
        let options = if record {
            distill::RunOptions::explained()
        } else if cache {
            distill::RunOptions::collected()
        } else {
            distill::RunOptions::default()
        };
        let judge = || {
            distill::distill_with(
                &facts,
                curated,
                &queue,
                policy,
                &as_of,
                &self.workspace_id,
                options,
            )
            .map_err(|err| self.placed(err))
        };
        let done = if dry_run {
            judge().map(Distilled::of)
        } else {
            std::thread::scope(|scope| {
                // What the cache takes from the log alone is prepared on
                // another thread while the policy runs.
                let prepared =
                    read.map(|read| scope.spawn(|| self.prepare_distill_units(&facts, read)));
                let outcome = judge()?;
                self.save_whole_log_run(policy, &as_of, curated_exists, prepared, outcome)
            })
        };
        let allocations = facts.len();
        drop_in_background(facts, allocations);
        done.map(|mut done| {
            done.decisions = withheld.decisions(std::mem::take(&mut done.decisions));
            done
        })
    }

    /// Saves what a whole-log run changed (see [`Workspace::save_outcome`])
    /// while the cache's units file is written from what `prepared` took of
    /// the log; writes the cache's small file once both are done.
    fn save_whole_log_run(
        &self,
        policy: &Policy,
        as_of: &Stamp,
        curated_exists: bool,
        prepared: Option<ScopedJoinHandle<'_, Result<Option<UnitsPrep<'_>>>>>,
        outcome: distill::Outcome,
    ) -> Result<Distilled> {
        // Everything read was valid: the cache can describe it. Its large
        // files are written while the state is encoded and saved, its
        // small file (which makes them count) after.
        let (saved, cached) = std::thread::scope(|scope| {
            let cached = scope.spawn(|| {
                let prep =
                    prepared?.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                Some(prep.and_then(|prep| match prep {
                    Some(prep) => self.write_distill_units(policy, as_of, prep, &outcome),
                    None => Ok(None),
                }))
            });
            let saved = self.encode_and_save(&outcome, curated_exists);
            (saved, cached.join())
        });
        saved?;
        let cached = cached.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        if let Some(cached) = cached {
            // Only a cache: failing to write it costs the next distill a
            // whole read.
            let written = match cached {
                Ok(Some(header)) => self.write_distill_header(header).is_ok(),
                Ok(None) | Err(_) => false,
            };
            if !written {
                self.drop_distill_cache();
            }
        }
        Ok(Distilled::of(outcome))
    }

    /// Encodes the files a whole-log run changed and saves them (see
    /// [`Workspace::save_outcome`]).
    fn encode_and_save(&self, outcome: &distill::Outcome, curated_exists: bool) -> Result<()> {
        // The queue is encoded (in memory) on another thread while
        // curated.json is encoded and staged.
        let (curated, conflicts) = std::thread::scope(|scope| {
            let conflicts = outcome.queue_changed.then(|| {
                scope.spawn(|| {
                    ConflictsFile::encode(
                        &outcome.queue,
                        &self.file(CONFLICTS_FILE),
                        &self.workspace_id,
                    )
                })
            });
            let curated = self.encode_curated(outcome, curated_exists);
            let conflicts = conflicts.map(|thread| {
                thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (curated, conflicts)
        });
        let curated = curated?;
        self.save_outcome(curated, conflicts.transpose()?)
    }

    /// What a whole-log run leaves of curated.json, encoded and staged
    /// when it changed.
    fn encode_curated(
        &self,
        outcome: &distill::Outcome,
        curated_exists: bool,
    ) -> Result<CuratedOutcome> {
        Ok(if outcome.curated_changed {
            CuratedOutcome::Changed(CuratedFile::encode(
                &outcome.curated,
                &self.file(CURATED_FILE),
                &self.workspace_id,
            )?)
        } else if curated_exists {
            CuratedOutcome::Unchanged(Projection::of_entries(&outcome.curated.entries))
        } else {
            CuratedOutcome::Missing
        })
    }

    /// Saves what a run changed: curated.json then MEMORY.md, then
    /// `conflicts` (the new conflicts.json, when the queue changed), with the
    /// intent that makes a crash between them recoverable; an unchanged
    /// curated.json only gets its derived files repaired.
    pub(super) fn save_outcome(
        &self,
        curated: CuratedOutcome,
        conflicts: Option<ConflictsFile>,
    ) -> Result<()> {
        match curated {
            CuratedOutcome::Changed(file) => {
                let conflicts_path = self.file(CONFLICTS_FILE);
                let conflicts_bytes = conflicts
                    .as_ref()
                    .map(ConflictsFile::contents)
                    .transpose()
                    .at(&conflicts_path)?;
                let sha256 = file.sha256().to_owned();
                self.write_curated_after(file, || {
                    self.write_distill_intent(&sha256, conflicts_bytes.as_deref())
                })?;
            }
            CuratedOutcome::Unchanged(projection) => {
                self.repair_projection(&projection)?;
            }
            CuratedOutcome::Missing => {}
        }
        failpoint::hit("distill_after_curated");
        if let Some(conflicts) = conflicts {
            self.write_conflicts(conflicts)?;
        }
        self.clear_distill_intent()
    }

    /// Returns the domain index of the files just read when the stored one
    /// does not describe them.
    fn stale_domain_index(&self, read: &fact_log::LogRead<FactSummary>) -> Option<DomainIndex> {
        let files = read.files();
        (!self.dir.domain_index().describes(&files)).then(|| DomainIndex::of(&files))
    }

    /// Saves the domain index. Only a cache: failing to write it is not an
    /// error, the next reader reads the log instead.
    pub(crate) fn save_domain_index(&self, index: &DomainIndex) {
        self.dir.domain_index().save(index);
    }

    /// Returns the ids of every fact in the log with `memory_key`, through
    /// the domain index; see [`domain_index::Lookup`].
    ///
    /// Errors: as [`Workspace::facts`], for the daily files it reads.
    pub(crate) fn domain_fact_ids(&self, memory_key: &str) -> Result<domain_index::Lookup> {
        self.dir.domain_index().lookup(&self.log, memory_key)
    }

    fn write_distill_intent(&self, curated_sha256: &str, conflicts: Option<&[u8]>) -> Result<()> {
        let intent = DistillIntent::new(&self.workspace_id, curated_sha256, conflicts);
        let bytes = intent.encode();
        let staged =
            self.dir.stage(DISTILL_INTENT_FILE, |file| std::io::Write::write_all(file, &bytes))?;
        // Only an intent this clone wrote is ever finished: it is claimed
        // before it is renamed into place, so that a crash between the two
        // never leaves an intent of this clone that it refuses as another's.
        crate::store::journal_owner::claim_distill_intent(self.dir.path(), staged.file(), &bytes)?;
        failpoint::hit("distill_intent_claimed");
        staged.commit()?;
        failpoint::hit("distill_intent_written");
        Ok(())
    }

    /// Removes the intent of a distill whose writes are all durable. The
    /// removal itself need not be: an intent found again after a crash
    /// names the curated.json in place, and finishing it rewrites nothing
    /// ([`Workspace::finish_distill_locked`]); and the next fsync of the
    /// memory directory (every replace of a state file ends with one)
    /// makes the removal durable with it.
    fn clear_distill_intent(&self) -> Result<()> {
        self.dir.remove(DISTILL_INTENT_FILE)
    }

    /// Returns whether a distill left its intent behind (a crash between
    /// its writes).
    pub(crate) fn distill_pending(&self) -> bool {
        self.dir.exists(DISTILL_INTENT_FILE)
    }

    /// Finishes a distill interrupted between its writes; the lock must be
    /// held. When curated.json holds the new state, MEMORY.md and
    /// conflicts.json are brought up to date; otherwise nothing was applied
    /// and the intent is dropped. An intent this clone did not write is
    /// dropped unread.
    ///
    /// An intent this clone did not write (it arrived through git or was
    /// copied) is never applied: with `refuse` it is an error naming
    /// `workmem journal`, otherwise it is left as it is.
    ///
    /// Errors: [`crate::Error::Corrupt`] for a foreign intent with `refuse`, and
    /// for an intent of this clone that cannot be read; read errors.
    pub(crate) fn finish_distill_locked(&self, refuse: bool) -> Result<()> {
        let path = self.file(DISTILL_INTENT_FILE);
        let Some(data) = self.dir.read_path(&path)? else { return Ok(()) };
        if !crate::store::journal_owner::is_own_distill_intent(self.dir.path(), &path, &data)? {
            if !refuse {
                return Ok(());
            }
            return Err(crate::error::Error::corrupt(
                crate::error::Location::file(&path),
                crate::error::Damage::ForeignDistillIntent,
            ));
        }
        let intent = DistillIntent::decode(&data, &path, &self.workspace_id)?;
        let conflicts = intent.conflicts.as_deref();
        let stored = self.dir.stored_curated()?;
        if stored.exists && stored.sha256 == intent.curated_sha256 {
            self.repair_projection(&Projection::of_heads(stored.file.heads()))?;
            if let Some(conflicts) = conflicts {
                // Validate before writing: the intent is untrusted input too.
                ConflictQueue::decode(conflicts.as_bytes(), &path, &self.workspace_id)?;
                if self.dir.read(CONFLICTS_FILE)?.as_deref() != Some(conflicts.as_bytes()) {
                    // This clone's own intent (checked above): what it
                    // writes is this clone's state.
                    self.dir.replace(CONFLICTS_FILE, conflicts.as_bytes())?;
                    self.record_written(CONFLICTS_FILE);
                }
            }
        }
        self.clear_distill_intent()
    }
}

/// A thread joined when dropped: a run waits for what it started, on
/// every path out of it.
struct JoinOnDrop(Option<std::thread::JoinHandle<()>>);

impl Drop for JoinOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            let _ = handle.join();
        }
    }
}

/// How to run [`Workspace::distill`]: which policy, at which instant,
/// whether to write, whether to explain every fact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DistillOptions {
    pub(super) policy: Option<Policy>,
    pub(super) as_of: Option<Stamp>,
    dry_run: bool,
    explain: bool,
}

impl DistillOptions {
    /// Returns the defaults: the workspace's policy, now, writing, no
    /// per-fact explanation.
    pub fn new() -> DistillOptions {
        DistillOptions::default()
    }

    /// Returns these options with `policy` instead of the workspace's.
    pub fn policy(mut self, policy: Policy) -> DistillOptions {
        self.policy = Some(policy);
        self
    }

    /// Returns these options judging the log as of `as_of`.
    pub fn as_of(mut self, as_of: Stamp) -> DistillOptions {
        self.as_of = Some(as_of);
        self
    }

    /// Returns these options for a run that writes nothing and takes no
    /// lock.
    pub fn dry_run(self) -> DistillOptions {
        self.dry_run_if(true)
    }

    /// Returns these options for a dry run when `dry_run` is true.
    pub fn dry_run_if(mut self, dry_run: bool) -> DistillOptions {
        self.dry_run = dry_run;
        self
    }

    /// Returns these options recording every fact's [`crate::Decision`].
    pub fn explain(mut self) -> DistillOptions {
        self.explain = true;
        self
    }
}
