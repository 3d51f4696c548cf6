//! Running human decisions through the transaction journal, and finishing
//! unfinished ones (docs/policy.md and docs/format.md).
//!
//! Every path here holds the workspace lock. A decision is planned by
//! `adjudication::plan`, its intent made durable as a `prepared` line, and
//! then rolled forward by the same code recovery uses, so a crash at any
//! boundary leaves exactly what recovery finishes.

use crate::error::{Error, Location, Rejected, Result};
use crate::model::canon;
use crate::policy::adjudication::{self, Resolution};
use crate::store::conflict_queue::ConflictQueue;
use crate::store::curated_state::{CURATED_SCHEMA_VERSION, CuratedState};
use crate::store::failpoint;
use crate::store::journal::{
    self, AUDIT_FILE, Adjudication, Intent, JOURNAL_FILE, JOURNAL_SCHEMA_VERSION, JournalLine,
    Phase,
};
use crate::store::lock::WorkspaceLock;
use crate::workspace::{CONFLICTS_FILE, CURATED_FILE, Workspace};

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
        self.finish_pending_locked()?;
        let audit_path = self.file(AUDIT_FILE);
        journal::repair_stream::<Adjudication>(&audit_path)?;
        if let Some(stored) = self.find_adjudication(&resolution.event_id)? {
            if resolution.matches(&stored) {
                return Ok(stored);
            }
            return Err(Error::ResolutionRejected(Rejected::EventIdReused {
                event_id: resolution.event_id,
            }));
        }
        let curated = self.curated()?;
        let queue = self.conflicts()?;
        let memory_key = queue.get(&resolution.conflict_id).map(|case| case.memory_key.as_str());
        let domain = match memory_key {
            Some(key) => self.domain_fact_ids(key)?,
            None => crate::store::domain_index::Lookup { ids: Vec::new(), updated: None },
        };
        let resolved_at = resolution.resolved_at.clone().unwrap_or_else(|| self.now());
        let plan = adjudication::plan(
            &resolution,
            &curated,
            &queue,
            &domain.ids,
            resolved_at,
            self.workspace_id(),
        )?;
        let intent = Intent {
            transaction_id: canon::transaction_id(self.workspace_id(), &resolution.event_id),
            workspace_id: self.workspace_id().to_owned(),
            conflict_id: resolution.conflict_id.clone(),
            event_id: resolution.event_id.clone(),
            prepared_at: self.now(),
            curated_before: curated.entries,
            curated_after: plan.curated_after.entries.clone(),
            conflicts_before: queue.cases,
            conflicts_after: plan.queue_after.cases.clone(),
            adjudication: plan.adjudication,
            schema_version: JOURNAL_SCHEMA_VERSION,
        };
        let digest = intent.digest();
        self.append_phase(&intent, &digest, Phase::Prepared)?;
        failpoint::hit("after_prepared");
        // Under the lock since the states were read: both files hold the
        // before snapshot and the audit stream lacks the event.
        let targets = Targets { curated_done: false, queue_done: false, audit_done: false };
        self.apply(
            &intent,
            &digest,
            &[Phase::Prepared],
            &plan.curated_after,
            &plan.queue_after,
            targets,
        )?;
        if let Some(index) = domain.updated {
            self.save_domain_index(&index);
        }
        Ok(intent.adjudication)
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

    fn find_adjudication(&self, event_id: &str) -> Result<Option<Adjudication>> {
        Ok(self.adjudications()?.into_iter().find(|a| a.event_id == event_id))
    }

    /// Finishes what a crash left unfinished: a resolution whose transaction
    /// did not commit, or a distill interrupted between its writes. Reads
    /// only the end of the journal and one directory entry when there is
    /// nothing to do; takes the workspace lock otherwise.
    ///
    /// Errors: [`Error::Corrupt`] when the intent was modified or a target
    /// matches neither snapshot (nothing is changed then); [`Error::Io`].
    pub fn recover(&self) -> Result<()> {
        if !self.distill_pending()
            && journal::last_is_committed(&self.file(JOURNAL_FILE), self.workspace_id())?
        {
            return Ok(());
        }
        let _lock: WorkspaceLock = self.lock()?;
        self.finish_pending_locked()
    }

    /// Finishes an interrupted distill and rolls every unfinished
    /// transaction forward; the lock must be held.
    pub(crate) fn finish_pending_locked(&self) -> Result<()> {
        self.finish_distill_locked()?;
        let path = self.file(JOURNAL_FILE);
        // Repair first: a complete record missing only its newline is kept
        // by the next append, so it must count here too. Otherwise a
        // `prepared` line torn just before its newline is skipped, a retry
        // prepares the same transaction again, and the journal ends up with
        // two `prepared` lines for one transaction.
        journal::repair_stream::<JournalLine>(&path)?;
        if journal::last_is_committed(&path, self.workspace_id())? {
            return Ok(());
        }
        for transaction in journal::transactions(&path, self.workspace_id())? {
            // Only uncommitted transactions keep their intent.
            if let Some(intent) = &transaction.intent {
                self.roll_forward(intent, &transaction.digest, &transaction.done)?;
            }
        }
        Ok(())
    }

    /// Brings every target of `intent` to its after state and records the
    /// missing phases. Idempotent; checks both canonical files against the
    /// snapshots before changing anything.
    fn roll_forward(&self, intent: &Intent, digest: &str, done: &[Phase]) -> Result<()> {
        let tid = &intent.transaction_id;
        let snapshot = |entries: &[crate::store::curated_state::Entry]| {
            let mut state =
                CuratedState { schema_version: CURATED_SCHEMA_VERSION, entries: entries.to_vec() };
            state.sort();
            state
        };
        let queue_snapshot = |cases: &[crate::store::conflict_queue::Case]| {
            let mut queue = ConflictQueue { cases: cases.to_vec() };
            queue.sort();
            queue
        };
        let (curated_after, curated_before) =
            (snapshot(&intent.curated_after), snapshot(&intent.curated_before));
        let (queue_after, queue_before) =
            (queue_snapshot(&intent.conflicts_after), queue_snapshot(&intent.conflicts_before));

        let curated_now = self.curated()?;
        let curated_done = curated_now.entries == curated_after.entries;
        if !curated_done && curated_now.entries != curated_before.entries {
            return Err(Error::corrupt(
                Location::file(&self.file(CURATED_FILE)),
                format!(
                    "matches neither the before nor the after snapshot of transaction {tid}; recovery stopped"
                ),
            ));
        }
        let queue_now = self.conflicts()?;
        let queue_done = queue_now.cases == queue_after.cases;
        if !queue_done && queue_now.cases != queue_before.cases {
            return Err(Error::corrupt(
                Location::file(&self.file(CONFLICTS_FILE)),
                format!(
                    "matches neither the before nor the after snapshot of transaction {tid}; recovery stopped"
                ),
            ));
        }
        let audit_path = self.file(AUDIT_FILE);
        journal::repair_stream::<Adjudication>(&audit_path)?;
        let stored = self.find_adjudication(&intent.event_id)?;
        if stored.as_ref().is_some_and(|a| *a != intent.adjudication) {
            return Err(Error::corrupt(
                Location::file(&audit_path),
                format!(
                    "holds another adjudication with event id {} of transaction {tid}",
                    intent.event_id
                ),
            ));
        }
        let targets = Targets { curated_done, queue_done, audit_done: stored.is_some() };
        self.apply(intent, digest, done, &curated_after, &queue_after, targets)
    }

    /// Writes the targets not yet done and the missing phase lines, in the
    /// order of docs/policy.md.
    fn apply(
        &self,
        intent: &Intent,
        digest: &str,
        done: &[Phase],
        curated_after: &CuratedState,
        queue_after: &ConflictQueue,
        targets: Targets,
    ) -> Result<()> {
        if targets.curated_done {
            self.repair_projection(curated_after)?;
        } else {
            self.save_curated(curated_after)?;
        }
        failpoint::hit("after_curated_write");
        if !done.contains(&Phase::CuratedApplied) {
            self.append_phase(intent, digest, Phase::CuratedApplied)?;
        }
        failpoint::hit("after_curated_applied");
        if !targets.queue_done {
            self.save_conflicts(queue_after)?;
        }
        failpoint::hit("after_conflict_write");
        if !done.contains(&Phase::ConflictClosed) {
            self.append_phase(intent, digest, Phase::ConflictClosed)?;
        }
        failpoint::hit("after_conflict_closed");
        if !targets.audit_done {
            journal::append_record::<Adjudication>(
                &self.file(AUDIT_FILE),
                &intent.adjudication.to_line(),
            )?;
        }
        failpoint::hit("after_audit_write");
        if !done.contains(&Phase::AuditAppended) {
            self.append_phase(intent, digest, Phase::AuditAppended)?;
        }
        failpoint::hit("after_audit_appended");
        self.append_phase(intent, digest, Phase::Committed)?;
        failpoint::hit("after_committed");
        Ok(())
    }

    fn append_phase(&self, intent: &Intent, digest: &str, phase: Phase) -> Result<()> {
        let line = intent.phase_line(digest, phase, &self.now());
        journal::append_record::<JournalLine>(&self.file(JOURNAL_FILE), &line)
    }
}

/// Which targets of a transaction already hold their after state.
#[derive(Debug, Clone, Copy)]
struct Targets {
    curated_done: bool,
    queue_done: bool,
    audit_done: bool,
}
