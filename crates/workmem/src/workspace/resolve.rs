//! Running human decisions through the transaction journal, and finishing
//! unfinished ones (docs/policy.md and docs/format.md).
//!
//! Every path here holds the workspace lock. A decision is planned by
//! `adjudication::plan` (scoped to the case's domain), its intent made
//! durable as a `prepared` line, and then applied by the same code recovery
//! uses, so a crash at any boundary leaves exactly what recovery finishes.
//! Once it committed, the journal is compacted: empty at rest.

use std::path::Path;

use crate::error::{Damage, Error, Location, Rejected, Result};
use crate::model::canon;
use crate::policy::adjudication::{self, Resolution};
use crate::policy::projection::Projection;
use crate::store::audit::AuditRead;
use crate::store::conflict_queue::{Case, CaseHead, ConflictQueue, ConflictsFile};
use crate::store::curated_file::{CuratedFile, EntryHead};
use crate::store::curated_state::{CURATED_SCHEMA_VERSION, CuratedState, Entry};
use crate::store::failpoint;
use crate::store::journal::{
    self, Adjudication, INTENT_SCHEMA_FULL, INTENT_SCHEMA_VERSION, Intent, Phase,
};
use crate::store::lock::WorkspaceLock;
use crate::store::memory_dir::Placement;
use crate::store::names::{AUDIT_FILE, CONFLICTS_FILE, CURATED_FILE};
use crate::store::state_file::Output;
use crate::workspace::Workspace;

impl Workspace {
    /// Records a human decision on an open conflict case: choosing a
    /// challenger makes it the next revision of the domain, choosing the
    /// incumbent records the decision only. Retrying with the same event id
    /// and the same decision returns the stored adjudication without
    /// writing anything.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{DistillOptions, NewFact, Resolution, Stamp, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// ws.init()?;
    /// // Two equally strong answers to one question: distill will not guess.
    /// for tool in ["Use npm", "Use pnpm"] {
    ///     ws.remember(NewFact {
    ///         kind: Some("decision".into()),
    ///         importance: Some(4),
    ///         memory_key: Some("tooling.package-manager".into()),
    ///         recorded_at: Some("2026-01-05T09:00:00Z".into()),
    ///         ..NewFact::new(tool)
    ///     })?;
    /// }
    /// let as_of = Stamp::parse("2026-03-01T00:00:00Z").unwrap();
    /// ws.distill(&DistillOptions::new().as_of(as_of))?;
    /// let case = ws.conflicts()?.cases.remove(0);
    /// let pnpm = case.candidates.iter().find(|c| c.content == "Use pnpm").unwrap();
    /// let decision = ws.resolve(Resolution {
    ///     conflict_id: case.conflict_id.clone(),
    ///     candidate_id: pnpm.candidate_id.clone(),
    ///     expected_revision: i64::from(case.revision),
    ///     actor: "Ada <ada@example.com>".into(),
    ///     rationale: "pnpm is what CI uses".into(),
    ///     event_id: "review:1".into(),
    ///     resolved_at: None,
    /// })?;
    /// assert_eq!(decision.selected_candidate_id, pnpm.candidate_id);
    /// assert!(ws.memory()?.contains("- Use pnpm"));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: [`Error::InvalidInput`] for a malformed id, actor, rationale
    /// or revision; [`Error::ResolutionRejected`] for an unknown conflict or
    /// candidate or an event id used for another decision;
    /// [`Error::StaleResolution`] when the case changed since it was shown;
    /// [`Error::Corrupt`], [`Error::Io`].
    pub fn resolve(&self, resolution: Resolution) -> Result<Adjudication> {
        let resolution = resolution.validated()?;
        let _lock = self.lock()?;
        let prepared = match self.prepare_locked(resolution)? {
            Prepare::Stored(stored) => return Ok(*stored),
            Prepare::Ready(prepared) => prepared,
        };
        failpoint::hit("after_prepared");
        let Prepared { intent, digest, targets, domain_index, audit_checked } = *prepared;
        // Under the lock since the states were read: both files hold the
        // before state and the audit stream lacks the event.
        let appended = self.apply(&intent, &digest, &[Phase::Prepared], targets)?;
        // The journal held nothing before this transaction (pending work
        // was finished and compacted first, under the same lock), and the
        // transaction committed: the journal is empty again.
        self.dir.journal().compact(&[])?;
        if let Some(index) = domain_index {
            self.save_domain_index(&index);
        }
        if let Some(audit) = audit_checked {
            audit.record(&self.dir, appended);
        }
        Ok(intent.adjudication)
    }

    /// Runs a resolution up to its `prepared` line and stops there, as a
    /// crash right after that line would: for tests of recovery (see
    /// `internals::prepare_resolution`). Returns the intent written, or
    /// `None` when the event id is already in the audit stream.
    ///
    /// Errors: as [`Workspace::resolve`].
    pub(crate) fn prepare_resolution(&self, resolution: Resolution) -> Result<Option<Intent>> {
        let resolution = resolution.validated()?;
        let _lock = self.lock()?;
        Ok(match self.prepare_locked(resolution)? {
            Prepare::Stored(_) => None,
            Prepare::Ready(prepared) => Some(prepared.intent),
        })
    }

    /// Finishes pending work, checks `resolution` against the current state
    /// and makes its intent durable as a `prepared` line; the lock must be
    /// held. Returns the stored adjudication instead when the event id was
    /// already used for the same decision.
    ///
    /// Errors: as [`Workspace::resolve`].
    #[expect(
        clippy::too_many_lines,
        reason = "one transaction's phases in order under the lock (check, decode the domain, stage both files, make the intent durable); splitting would pass the lock, the staged files and the journal around"
    )]
    fn prepare_locked(&self, resolution: Resolution) -> Result<Prepare> {
        self.finish_pending_locked()?;
        let audit_path = self.file(AUDIT_FILE);
        journal::repair_stream::<Adjudication>(&audit_path)?;
        let (stored, audit_checked) = self.dir.find_adjudication(&resolution.event_id)?;
        if let Some(stored) = stored {
            if resolution.matches(&stored) {
                return Ok(Prepare::Stored(Box::new(stored)));
            }
            return Err(Error::ResolutionRejected(Rejected::EventIdReused {
                event_id: resolution.event_id,
            }));
        }
        // Once, before the threads below read the two files.
        self.check_state()?;
        // curated.json is laid out on another thread while the queue and
        // the domain's fact ids are read.
        let (stored, read) = std::thread::scope(|scope| {
            let stored = scope.spawn(|| self.dir.stored_curated());
            let read = self.dir.stored_conflicts().and_then(|conflicts| {
                let memory_key = conflicts
                    .file
                    .heads()
                    .find(|head| head.conflict_id == resolution.conflict_id)
                    .map(|head| head.memory_key.clone());
                let domain = match &memory_key {
                    Some(key) => self.domain_fact_ids(key)?,
                    None => crate::store::domain_index::Lookup { ids: Vec::new(), updated: None },
                };
                Ok((conflicts, memory_key, domain))
            });
            (stored.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), read)
        });
        let stored = stored?;
        let (conflicts, memory_key, domain) = read?;
        let resolved_at = resolution.resolved_at.clone().unwrap_or_else(|| self.now());
        // A decision changes one domain: only its entries and cases are
        // decoded.
        let curated_path = self.file(CURATED_FILE);
        let conflicts_path = self.file(CONFLICTS_FILE);
        let in_case = |head: &EntryHead| memory_key.is_some() && head.memory_key == memory_key;
        let curated = CuratedState {
            schema_version: CURATED_SCHEMA_VERSION,
            entries: stored.file.records(&curated_path, in_case)?,
        };
        let queue = ConflictQueue::of(conflicts.file.records(&conflicts_path, |head| {
            memory_key.as_deref() == Some(head.memory_key.as_str())
        })?);
        let plan = adjudication::plan(
            &resolution,
            &curated,
            &queue,
            &domain.ids,
            resolved_at,
            self.workspace_id(),
        )
        .map_err(|err| err.at(&curated_path))?;
        // The whole files after: the domain's part replaced, every other
        // byte as read (and never copied into the intent). Both are staged
        // at once, each on its own thread: their copying and hashing run
        // side by side (their fsyncs mostly wait for one journal commit
        // after the other on ext4).
        let curated_sha256_before = stored.sha256;
        let (curated, queue_after) = std::thread::scope(|scope| {
            let queue_after = scope.spawn(|| {
                conflicts.file.splice(
                    &conflicts_path,
                    self.workspace_id(),
                    |head| head.memory_key == plan.memory_key,
                    &plan.cases_after,
                    Output::Staged,
                )
            });
            let curated = if plan.curated_after == plan.curated_before {
                // Keeping the incumbent leaves curated.json as it is.
                let projection = Projection::of_heads(stored.file.heads());
                Ok((Curated::Done(projection), curated_sha256_before.clone()))
            } else {
                let in_domain =
                    |head: &EntryHead| head.memory_key.as_deref() == Some(&plan.memory_key);
                stored
                    .file
                    .splice(
                        &curated_path,
                        self.workspace_id(),
                        in_domain,
                        &plan.curated_after,
                        Output::Staged,
                    )
                    .map(|after| {
                        let hash = after.sha256().to_owned();
                        (Curated::Write(after), hash)
                    })
            };
            (curated, queue_after.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        let (curated, curated_sha256_after) = curated?;
        let queue_after = queue_after?;
        let queue_sha256_before = conflicts.sha256;
        let queue_sha256_after = queue_after.sha256().to_owned();
        let queue = (queue_sha256_after != queue_sha256_before).then_some(queue_after);
        let intent = Intent {
            transaction_id: canon::transaction_id(self.workspace_id(), &resolution.event_id),
            workspace_id: self.workspace_id().to_owned(),
            conflict_id: resolution.conflict_id.clone(),
            event_id: resolution.event_id.clone(),
            prepared_at: self.now(),
            curated_before: plan.curated_before,
            curated_after: plan.curated_after,
            curated_sha256_before: Some(curated_sha256_before),
            curated_sha256_after: Some(curated_sha256_after),
            conflicts_before: plan.cases_before,
            conflicts_after: plan.cases_after,
            conflicts_sha256_before: Some(queue_sha256_before),
            conflicts_sha256_after: Some(queue_sha256_after),
            adjudication: plan.adjudication,
            schema_version: INTENT_SCHEMA_VERSION,
        };
        let digest = intent.digest();
        // Durable before the `prepared` line: recovery rolls forward only a
        // transaction this clone prepared (see `store::journal_owner`).
        self.dir.journal().claim(&intent.transaction_id, &digest)?;
        self.append_phase(&intent, &digest, Phase::Prepared)?;
        let targets = Targets { curated, queue, audit_done: false };
        Ok(Prepare::Ready(Box::new(Prepared {
            intent,
            digest,
            targets,
            domain_index: domain.updated,
            audit_checked,
        })))
    }

    /// Returns every adjudication of the audit stream, oldest first.
    ///
    /// Errors: [`Error::Corrupt`] naming file and line, [`Error::Scope`],
    /// [`Error::Io`].
    pub fn adjudications(&self) -> Result<Vec<Adjudication>> {
        Ok(journal::read_stream::<Adjudication>(&self.file(AUDIT_FILE), self.workspace_id())?
            .into_iter()
            .map(|n| n.record)
            .collect())
    }

    /// Finishes what a crash left unfinished: a resolution whose transaction
    /// did not commit, or a distill interrupted between its writes. Reads
    /// only the end of the journal and one directory entry when there is
    /// nothing to do; takes the workspace lock otherwise, and then also
    /// compacts the journal. A journal whose last transaction committed
    /// (a crash between `committed` and the compaction, or a journal of the
    /// teaching implementation) is left for the next writer (resolve,
    /// distill) to compact: opening stays cheap and never waits for the
    /// lock when there is nothing to finish.
    ///
    /// A transaction this clone did not prepare (a journal that arrived
    /// through git or was copied, see [`Workspace::journal`]) is never
    /// rolled forward, and does not make opening fail: it is left as it is
    /// for `verify` to report and for the writers to refuse.
    ///
    /// Errors: [`Error::Corrupt`] when the intent was modified or a target
    /// matches neither snapshot (nothing is changed then); [`Error::Io`].
    pub fn recover(&self) -> Result<()> {
        let journal = self.dir.journal();
        if !self.distill_pending()
            && (journal.is_empty()? || !journal.is_own()? || journal.last_is_committed()?)
        {
            return Ok(());
        }
        let _lock: WorkspaceLock = self.lock()?;
        self.finish_pending_with(Foreign::Leave)
    }

    /// Finishes an interrupted distill, rolls every unfinished transaction
    /// forward and compacts the journal (it then holds nothing); the lock
    /// must be held. With an empty journal, the state at rest, this costs
    /// one `stat` of each file.
    ///
    /// Errors: as [`Workspace::recover`], and [`Error::Corrupt`] naming the
    /// journal and `workmem journal` when it holds an unfinished
    /// transaction this clone did not prepare: a writer refuses to build on
    /// state such a transaction may be meant to change.
    pub(crate) fn finish_pending_locked(&self) -> Result<()> {
        self.finish_pending_with(Foreign::Refuse)
    }

    fn finish_pending_with(&self, foreign: Foreign) -> Result<()> {
        self.finish_distill_locked(foreign == Foreign::Refuse)?;
        let journal = self.dir.journal();
        let path = journal.path();
        if journal.is_empty()? {
            return Ok(());
        }
        let own_file = journal.is_own()?;
        if !own_file && foreign == Foreign::Leave {
            return Ok(());
        }
        // Repair first: a complete record missing only its newline is kept
        // by the next append, so it must count here too. Otherwise a
        // `prepared` line torn just before its newline is skipped, a retry
        // prepares the same transaction again, and the journal ends up with
        // two `prepared` lines for one transaction. (Only this clone's
        // journal: a foreign one is never written but to discard it.)
        if own_file {
            journal.repair()?;
        }
        let mut transactions = journal
            .transactions()
            .map_err(|err| if own_file { err } else { foreign_unreadable(path, &err) })?;
        for transaction in &transactions {
            if transaction.committed()
                || journal.prepared_here(&transaction.transaction_id, &transaction.digest)?
            {
                continue;
            }
            match foreign {
                Foreign::Leave => return Ok(()),
                Foreign::Refuse => return Err(foreign_transaction(path, transaction)),
            }
        }
        for transaction in &mut transactions {
            // Only uncommitted transactions keep their intent.
            if let Some(intent) = transaction.intent.take() {
                self.roll_forward(&intent, &transaction.digest, &transaction.done)?;
                transaction.done = Phase::ALL.to_vec();
            }
            if let Some(intent) = transaction.correction.take() {
                self.roll_forward_correction(&intent, &transaction.digest, &transaction.done)?;
                transaction.done = Phase::of(&intent.transaction_id, intent.rewrites()).to_vec();
            }
        }
        // Every transaction committed, those just finished included.
        journal.compact(&transactions)
    }

    /// Brings every target of `intent` to its after state and records the
    /// missing phases. Idempotent; checks both canonical files and the
    /// audit stream before changing anything.
    fn roll_forward(&self, intent: &Intent, digest: &str, done: &[Phase]) -> Result<()> {
        // A complete audit record missing only its newline counts as
        // appended (the next append keeps it).
        journal::repair_stream::<Adjudication>(&self.file(AUDIT_FILE))?;
        let targets = self.recovery_targets(intent, Output::Staged)?;
        self.apply(intent, digest, done, targets).map(drop)
    }

    /// Returns what rolling `intent` forward writes, reading the canonical
    /// files and the audit stream; the files to write are put where `to`
    /// says (held in memory, it writes nothing: verify uses it so to tell
    /// whether recovery would stop).
    ///
    /// A schema-2 intent is checked per file through the whole-file
    /// hashes: a file that hashes to *after* is done; one that hashes to
    /// *before* gets the domain's part replaced by the intent's after
    /// snapshot, and the result must hash to *after*. A schema-1 intent
    /// compares the whole state with its full snapshots.
    ///
    /// Errors: [`Error::Corrupt`] when a file matches neither state or
    /// the audit stream holds another record with the event id;
    /// read errors.
    pub(crate) fn recovery_targets(&self, intent: &Intent, to: Output) -> Result<Targets> {
        let (curated, queue) = if intent.schema_version == INTENT_SCHEMA_FULL {
            (self.full_curated_target(intent)?, self.full_queue_target(intent)?)
        } else {
            (self.scoped_curated_target(intent, to)?, self.scoped_queue_target(intent, to)?)
        };
        let audit_path = self.file(AUDIT_FILE);
        let (stored, _) = self.dir.find_adjudication(&intent.event_id)?;
        if stored.as_ref().is_some_and(|a| *a != intent.adjudication) {
            return Err(Error::corrupt(
                Location::file(&audit_path),
                Damage::AdjudicationReused {
                    event_id: intent.event_id.clone(),
                    transaction_id: intent.transaction_id.clone(),
                },
            ));
        }
        Ok(Targets { curated, queue, audit_done: stored.is_some() })
    }

    /// The curated target of a schema-1 intent: the state equals the after
    /// or the before snapshot.
    fn full_curated_target(&self, intent: &Intent) -> Result<Curated> {
        let snapshot = |entries: &[Entry]| {
            let mut state =
                CuratedState { schema_version: CURATED_SCHEMA_VERSION, entries: entries.to_vec() };
            state.sort();
            state
        };
        // Recovery checks its targets against the intent's snapshots, not
        // against the log: read as stored.
        let now = self.curated_unchecked()?;
        let after = snapshot(&intent.curated_after);
        if now.entries == after.entries {
            return Ok(Curated::Done(Projection::of_entries(&now.entries)));
        }
        if now.entries != snapshot(&intent.curated_before).entries {
            return Err(neither(&self.file(CURATED_FILE), intent));
        }
        Ok(Curated::Write(CuratedFile::encode(
            &after,
            &self.file(CURATED_FILE),
            self.workspace_id(),
        )?))
    }

    /// The conflicts target of a schema-1 intent: `None` when done, else
    /// the file to write.
    fn full_queue_target(&self, intent: &Intent) -> Result<Option<ConflictsFile>> {
        let snapshot = |cases: &[Case]| {
            let mut queue = ConflictQueue::of(cases.to_vec());
            queue.sort();
            queue
        };
        let now = self.conflicts_unchecked()?;
        let after = snapshot(&intent.conflicts_after);
        if now.cases == after.cases {
            return Ok(None);
        }
        if now.cases != snapshot(&intent.conflicts_before).cases {
            return Err(neither(&self.file(CONFLICTS_FILE), intent));
        }
        ConflictsFile::encode(&after, &self.file(CONFLICTS_FILE), self.workspace_id()).map(Some)
    }

    /// The curated target of a schema-2 intent, decided by the file's hash.
    fn scoped_curated_target(&self, intent: &Intent, to: Output) -> Result<Curated> {
        let path = self.file(CURATED_FILE);
        let stored = self.dir.stored_curated()?;
        let (before, after) = scoped_hashes(
            intent.curated_sha256_before.as_deref(),
            intent.curated_sha256_after.as_deref(),
        );
        if stored.sha256 == after {
            return Ok(Curated::Done(Projection::of_heads(stored.file.heads())));
        }
        let memory_key = intent.memory_key().unwrap_or_default();
        if stored.sha256 != before {
            return Err(neither(&path, intent));
        }
        let in_domain = |head: &EntryHead| head.memory_key.as_deref() == Some(memory_key);
        if stored.file.records(&path, in_domain)? != intent.curated_before {
            return Err(modified(&path, intent, "curated entries"));
        }
        let written =
            stored.file.splice(&path, self.workspace_id(), in_domain, &intent.curated_after, to)?;
        if written.sha256() != after {
            return Err(modified(&path, intent, "curated entries"));
        }
        Ok(Curated::Write(written))
    }

    /// The conflicts target of a schema-2 intent, decided by the file's
    /// hash: `None` when done, else the file to write.
    fn scoped_queue_target(&self, intent: &Intent, to: Output) -> Result<Option<ConflictsFile>> {
        let path = self.file(CONFLICTS_FILE);
        let stored = self.dir.stored_conflicts()?;
        let (before, after) = scoped_hashes(
            intent.conflicts_sha256_before.as_deref(),
            intent.conflicts_sha256_after.as_deref(),
        );
        if stored.sha256 == after {
            return Ok(None);
        }
        let memory_key = intent.memory_key().unwrap_or_default();
        if stored.sha256 != before {
            return Err(neither(&path, intent));
        }
        let in_domain = |head: &CaseHead| head.memory_key == memory_key;
        if stored.file.records(&path, in_domain)? != intent.conflicts_before {
            return Err(modified(&path, intent, "conflict cases"));
        }
        let written = stored.file.splice(
            &path,
            self.workspace_id(),
            in_domain,
            &intent.conflicts_after,
            to,
        )?;
        if written.sha256() != after {
            return Err(modified(&path, intent, "conflict cases"));
        }
        Ok(Some(written))
    }

    /// Writes the targets not yet done and the missing phase lines, in the
    /// order of docs/policy.md. Returns the audit record it appended, if
    /// any, and where it landed.
    fn apply(
        &self,
        intent: &Intent,
        digest: &str,
        done: &[Phase],
        targets: Targets,
    ) -> Result<Option<(Placement, String)>> {
        self.apply_derived(targets.curated, targets.queue, done, |phase| {
            self.append_phase(intent, digest, phase)
        })?;
        let mut appended = None;
        if !targets.audit_done {
            let line = intent.adjudication.to_line();
            let placed =
                journal::append_record_placed::<Adjudication>(&self.file(AUDIT_FILE), &line)?;
            appended = placed.map(|placement| (placement, line));
        }
        failpoint::hit("after_audit_write");
        if !done.contains(&Phase::AuditAppended) {
            self.append_phase(intent, digest, Phase::AuditAppended)?;
        }
        failpoint::hit("after_audit_appended");
        self.append_phase(intent, digest, Phase::Committed)?;
        failpoint::hit("after_committed");
        Ok(appended)
    }

    /// Writes the derived files of a transaction (a resolution's or a
    /// correction's) that do not hold their after state yet, each followed
    /// by its phase line unless `done` holds it: curated.json (and
    /// MEMORY.md), then conflicts.json.
    pub(super) fn apply_derived(
        &self,
        curated: Curated,
        queue: Option<ConflictsFile>,
        done: &[Phase],
        append_phase: impl Fn(Phase) -> Result<()>,
    ) -> Result<()> {
        match curated {
            Curated::Done(projection) => {
                self.repair_projection(&projection)?;
            }
            Curated::Write(file) => self.write_curated(file)?,
        }
        failpoint::hit("after_curated_write");
        if !done.contains(&Phase::CuratedApplied) {
            append_phase(Phase::CuratedApplied)?;
        }
        failpoint::hit("after_curated_applied");
        if let Some(file) = queue {
            self.write_conflicts(file)?;
        }
        failpoint::hit("after_conflict_write");
        if !done.contains(&Phase::ConflictClosed) {
            append_phase(Phase::ConflictClosed)?;
        }
        failpoint::hit("after_conflict_closed");
        Ok(())
    }

    fn append_phase(&self, intent: &Intent, digest: &str, phase: Phase) -> Result<()> {
        let line = intent.phase_line(digest, phase, &self.now());
        self.dir.journal().append(&line)
    }
}

/// The before and after hashes of a schema-2 intent (checked present when
/// the journal was read).
fn scoped_hashes<'a>(before: Option<&'a str>, after: Option<&'a str>) -> (&'a str, &'a str) {
    (before.unwrap_or_default(), after.unwrap_or_default())
}

/// The error of a file that matches neither state of a transaction.
fn neither(path: &Path, intent: &Intent) -> Error {
    Error::corrupt(
        Location::file(path),
        Damage::NeitherState { transaction_id: intent.transaction_id.clone() },
    )
}

/// The error of a schema-2 intent whose snapshots do not agree with the
/// file hashes it records.
fn modified(path: &Path, intent: &Intent, what: &'static str) -> Error {
    Error::corrupt(
        Location::file(path),
        Damage::IntentSnapshots { what, transaction_id: intent.transaction_id.clone() },
    )
}

/// What finishing pending work does with a transaction this clone did not
/// prepare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Foreign {
    /// Leave the journal as it is (opening a workspace, for any command).
    Leave,
    /// Refuse, naming the way out (a writer).
    Refuse,
}

/// The error of an unfinished transaction this clone did not prepare.
fn foreign_transaction(path: &Path, transaction: &journal::Transaction) -> Error {
    let decision = transaction
        .intent
        .as_ref()
        .map(|intent| (intent.adjudication.actor.clone(), intent.adjudication.conflict_id.clone()));
    Error::corrupt(
        Location::line(path, transaction.first_line),
        Damage::ForeignTransaction { transaction_id: transaction.transaction_id.clone(), decision },
    )
}

/// The error of a journal this clone did not write that cannot be read.
fn foreign_unreadable(path: &Path, err: &Error) -> Error {
    Error::corrupt(Location::file(path), Damage::ForeignJournal { detail: err.to_string() })
}

/// The outcome of [`Workspace::prepare_locked`].
enum Prepare {
    /// The event id is in the audit stream with the same decision.
    Stored(Box<Adjudication>),
    /// The `prepared` line is durable.
    Ready(Box<Prepared>),
}

/// A resolution whose `prepared` line is durable, with what it writes.
struct Prepared {
    /// The intent written.
    intent: Intent,
    /// Its digest.
    digest: String,
    /// The files to write.
    targets: Targets,
    /// The domain index brought up to date by the resolve, saved once it
    /// committed.
    domain_index: Option<crate::store::domain_index::DomainIndex>,
    /// The audit stream's prefix checked, recorded once it committed.
    audit_checked: Option<AuditRead>,
}

/// What rolling a transaction forward writes.
#[derive(Debug)]
pub(crate) struct Targets {
    /// curated.json (and MEMORY.md).
    curated: Curated,
    /// conflicts.json to write, or `None` when it holds its after state.
    queue: Option<ConflictsFile>,
    /// Whether the audit stream holds the adjudication.
    audit_done: bool,
}

/// The curated target of a transaction (a resolution's or a
/// correction's).
#[derive(Debug)]
pub(super) enum Curated {
    /// curated.json holds the after state (MEMORY.md may still be stale):
    /// its projection.
    Done(Projection),
    /// The after state's file, to write.
    Write(CuratedFile),
}
