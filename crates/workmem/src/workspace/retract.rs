//! Retracting facts and restoring a retraction through the transaction
//! journal, and finishing one a crash left unfinished
//! (docs/corrections.md, "One transaction").
//!
//! Every path here holds the workspace lock. A correction is planned by
//! `policy::correction::plan` over the entries and cases of the domains
//! and unkeyed entries its facts belong to, its intent made durable as a
//! `prepared` line, and then applied by the same code recovery uses:
//! curated.json (and MEMORY.md), conflicts.json, the record appended to
//! the corrections stream, `committed`. A crash at any boundary leaves
//! exactly what recovery rolls forward, file by file, by hash.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use crate::error::{Damage, Error, Invalid, Location, Rejected, Result};
use crate::model::canon;
use crate::model::fact::Fact;
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::policy::correction;
use crate::policy::projection::Projection;
use crate::policy::retractions::{self, Retractions};
use crate::store::conflict_queue::{CONFLICTS_SCHEMA_CORRECTED, Case, CaseHead, ConflictsFile};
use crate::store::corrections::{self, Action, CORRECTION_SCHEMA_VERSION, Correction};
use crate::store::curated_file::EntryHead;
use crate::store::curated_state::{CURATED_SCHEMA_CORRECTED, Entry, sort_entries};
use crate::store::journal::{
    self, CORRECTION_INTENT_SCHEMA_VERSION, CorrectionIntent, Phase, RewrittenFile,
};
use crate::store::memory_dir::Stored;
use crate::store::names::{CONFLICTS_FILE, CORRECTIONS_FILE, CURATED_FILE};
use crate::store::state_file::Output;
use crate::store::{atomic_io, failpoint};
use crate::workspace::Workspace;
use crate::workspace::resolve::Curated;

/// A request to retract facts (`workmem retract`): they stop counting
/// everywhere, and the record of them stays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retraction {
    /// The facts to retract (with `entry_key`, may be empty: every
    /// evidence fact of that entry).
    pub fact_ids: Vec<String>,
    /// An entry whose every evidence fact is retracted (`--entry`).
    pub entry_key: Option<String>,
    /// Who retracts them.
    pub actor: String,
    /// Why.
    pub rationale: String,
    /// The record's id: a retry with the same id and the same record
    /// writes nothing.
    pub event_id: String,
    /// When the person made the correction; now when `None`.
    pub recorded_at: Option<Stamp>,
}

/// A request to undo one retraction (`workmem restore`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restoration {
    /// The event id of the retraction to undo.
    pub restores: String,
    /// Who restores it.
    pub actor: String,
    /// Why.
    pub rationale: String,
    /// The restore record's id: a retry with the same id and the same
    /// record writes nothing.
    pub event_id: String,
    /// When the person made the correction; now when `None`.
    pub recorded_at: Option<Stamp>,
}

/// What a correction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrected {
    /// The record in the corrections stream.
    pub correction: Correction,
    /// Whether it was there already (an idempotent retry: nothing written).
    pub already_recorded: bool,
    /// The keys of the entries it changed.
    pub entry_keys: Vec<String>,
    /// The conflict cases it changed.
    pub conflict_ids: Vec<String>,
    /// The memory keys of the domains it touched, which the next distill
    /// judges again.
    pub memory_keys: Vec<String>,
}

impl Workspace {
    /// Retracts facts: each stops counting (never evidence, never pending,
    /// never in the context), and the entries and cases they were part of
    /// change in one transaction (docs/corrections.md). The domains it
    /// touched are judged again by the next distill.
    ///
    /// Errors: [`Error::InvalidInput`] for a malformed id, actor or
    /// rationale, a fact id no fact of this workspace has, or an entry key
    /// that names no entry; [`Error::ResolutionRejected`] for an event id
    /// already used by another record or decision; [`Error::Corrupt`] for
    /// a journal holding a transaction this clone did not prepare;
    /// [`Error::Io`].
    pub fn retract(&self, request: Retraction) -> Result<Corrected> {
        self.writable()?;
        check_text(&request.actor, &request.rationale, &request.event_id)?;
        if let Some(key) = &request.entry_key {
            canon::check_id("entry_key", key)?;
        }
        for id in &request.fact_ids {
            canon::check_id("fact_ids", id)?;
        }
        if request.fact_ids.is_empty() && request.entry_key.is_none() {
            return Err(Error::invalid("fact_ids", Invalid::Empty));
        }
        let _lock = self.lock()?;
        self.finish_pending_locked()?;
        let mut fact_ids: BTreeSet<String> = request.fact_ids.iter().cloned().collect();
        if let Some(key) = &request.entry_key {
            let stored = self.dir.stored_curated()?;
            let path = self.file(CURATED_FILE);
            let entry = stored.file.records(&path, |head| head.key == *key)?;
            let Some(entry) = entry.first() else {
                return Err(Error::invalid("entry_key", Invalid::NoSuchEntry { key: key.clone() }));
            };
            fact_ids.extend(entry.evidence_ids.iter().map(str::to_owned));
            if fact_ids.is_empty() {
                return Err(Error::invalid("entry_key", Invalid::NoSuchEntry { key: key.clone() }));
            }
        }
        let record = Correction {
            action: Action::Retract,
            actor: request.actor,
            entry_key: request.entry_key,
            event_id: request.event_id,
            event_ids: None,
            fact_ids: fact_ids.iter().collect::<IdList>(),
            line_sha256: None,
            rationale: request.rationale,
            recorded_at: request.recorded_at.clone().unwrap_or_else(|| self.now()),
            restores: None,
            schema_version: CORRECTION_SCHEMA_VERSION,
            workspace_id: self.workspace_id().to_owned(),
        };
        self.correct_locked(record, request.recorded_at.is_some(), None)
    }

    /// Undoes one retraction: each fact it named that no other retraction
    /// names counts again, and goes back where it was unless its domain
    /// moved on (docs/corrections.md, "Restore").
    ///
    /// Errors: [`Error::InvalidInput`] for a malformed id, actor or
    /// rationale, and for an event id that names no retraction in force
    /// (unknown, a redaction, a restore, or already restored:
    /// [`Invalid::Restore`]); otherwise as [`Workspace::retract`].
    pub fn restore(&self, request: Restoration) -> Result<Corrected> {
        self.writable()?;
        check_text(&request.actor, &request.rationale, &request.event_id)?;
        canon::check_id("restores", &request.restores)?;
        let _lock = self.lock()?;
        self.finish_pending_locked()?;
        let records = self.corrections()?;
        // A retry of this very restore is answered before the refusals
        // (its retraction is restored: by it).
        if let Some(stored) = records.iter().find(|r| r.event_id == request.event_id) {
            let same = stored.action == Action::Restore
                && stored.restores.as_deref() == Some(request.restores.as_str())
                && stored.actor == request.actor
                && stored.rationale == request.rationale
                && request.recorded_at.as_ref().is_none_or(|at| *at == stored.recorded_at);
            if same {
                return Ok(self.stored_outcome(stored.clone()));
            }
            return Err(Error::ResolutionRejected(Rejected::EventIdReused {
                event_id: request.event_id,
            }));
        }
        let target = retractions::restorable(&records, &request.restores)
            .map_err(|refusal| Error::invalid("restores", Invalid::Restore(refusal)))?;
        let record = Correction {
            action: Action::Restore,
            actor: request.actor,
            entry_key: None,
            event_id: request.event_id,
            event_ids: None,
            fact_ids: target.fact_ids.clone(),
            line_sha256: None,
            rationale: request.rationale,
            recorded_at: request.recorded_at.clone().unwrap_or_else(|| self.now()),
            restores: Some(target.event_id.clone()),
            schema_version: CORRECTION_SCHEMA_VERSION,
            workspace_id: self.workspace_id().to_owned(),
        };
        let retracted_at = target.recorded_at.clone();
        self.correct_locked(record, request.recorded_at.is_some(), Some(retracted_at))
    }

    /// The outcome of a record already in the stream.
    pub(crate) fn stored_outcome(&self, correction: Correction) -> Corrected {
        let _ = self;
        Corrected {
            correction,
            already_recorded: true,
            entry_keys: Vec::new(),
            conflict_ids: Vec::new(),
            memory_keys: Vec::new(),
        }
    }

    /// Plans and runs `record` as one transaction; the lock is held and
    /// pending work finished. `timed` says whether the caller gave the
    /// record's time (a retry then matches it too).
    fn correct_locked(
        &self,
        record: Correction,
        timed: bool,
        retracted_at: Option<Stamp>,
    ) -> Result<Corrected> {
        record
            .check_rules()
            .map_err(|violation| Error::invalid("correction", Invalid::Correction(violation)))?;
        let records = self.corrections()?;
        if let Some(stored) = records.iter().find(|r| r.event_id == record.event_id) {
            let same = Correction {
                recorded_at: if timed {
                    record.recorded_at.clone()
                } else {
                    stored.recorded_at.clone()
                },
                ..record.clone()
            } == *stored;
            if same {
                return Ok(self.stored_outcome(stored.clone()));
            }
            return Err(Error::ResolutionRejected(Rejected::EventIdReused {
                event_id: record.event_id,
            }));
        }
        if self.dir.find_adjudication(&record.event_id)?.0.is_some() {
            return Err(Error::ResolutionRejected(Rejected::EventIdReused {
                event_id: record.event_id,
            }));
        }
        let named: Vec<&str> = record.fact_ids.iter().collect();
        let facts = self.facts_with_ids(&named)?;
        let unknown: Vec<String> = named
            .iter()
            .filter(|id| !facts.contains_key(**id))
            .map(|id| (*id).to_owned())
            .collect();
        if !unknown.is_empty() {
            return Err(Error::invalid("fact_ids", Invalid::UnknownFacts { ids: unknown }));
        }
        let after = Retractions::from_records(records.iter().chain([&record]));
        let planned = self.plan_correction(&record, &after, retracted_at.as_ref(), &facts)?;
        // A value a merge left in dispute waits for a person: taking its
        // evidence could leave a dispute of one value, so the decision
        // comes first (docs/corrections.md, "Values under review").
        if record.action != Action::Restore {
            let disputed = planned.entries.iter().find(|e| {
                e.is_contested() && e.evidence_ids.iter().any(|id| record.fact_ids.contains(id))
            });
            if let Some(entry) = disputed {
                let memory_key = entry.memory_key.clone().unwrap_or_default();
                return Err(Error::invalid("fact_ids", Invalid::UnderReview { memory_key }));
            }
        }
        self.run_correction(record, planned, false, None)
    }

    /// Reads what `record` changes and plans it: the entries of the domains
    /// and unkeyed entries its facts (`facts`, those of the log it names)
    /// belong to, the cases of those domains, with `after` the facts
    /// retracted once the record counts.
    ///
    /// Errors: [`Error::Corrupt`] for a state file that does not decode;
    /// [`Error::Io`].
    pub(crate) fn plan_correction(
        &self,
        record: &Correction,
        after: &Retractions,
        retracted_at: Option<&Stamp>,
        facts: &HashMap<String, Fact>,
    ) -> Result<Planned> {
        self.plan_in_scope(record, after, retracted_at, Scope::of(facts))
    }

    /// Plans `record` over the entries and cases of `scope`, as
    /// [`Workspace::plan_correction`] does.
    ///
    /// Errors: as [`Workspace::plan_correction`].
    pub(crate) fn plan_in_scope(
        &self,
        record: &Correction,
        after: &Retractions,
        retracted_at: Option<&Stamp>,
        scope: Scope,
    ) -> Result<Planned> {
        let curated_path = self.file(CURATED_FILE);
        let conflicts_path = self.file(CONFLICTS_FILE);
        let stored = self.dir.stored_curated()?;
        let conflicts = self.dir.stored_conflicts()?;
        let entries = stored.file.records(&curated_path, |head: &EntryHead| {
            scope.touches(head.memory_key.as_deref(), &head.key)
        })?;
        let cases = conflicts.file.records(&conflicts_path, |head: &CaseHead| {
            scope.domains.contains(head.memory_key.as_str())
        })?;
        let plan = self.plan_entries(record, after, retracted_at, &entries, &cases)?;
        let domains = scope.domains;
        Ok(Planned { stored, conflicts, entries, cases, domains, plan })
    }

    /// Plans `record` over `entries` and `cases` (those its facts touch,
    /// see [`Scope`]), reading the facts the plan needs.
    ///
    /// Errors: as [`Workspace::facts_with_ids`].
    pub(crate) fn plan_entries(
        &self,
        record: &Correction,
        after: &Retractions,
        retracted_at: Option<&Stamp>,
        entries: &[Entry],
        cases: &[Case],
    ) -> Result<correction::Plan> {
        // Every fact that is or becomes evidence of an entry the record
        // touches, for its dates and wording.
        let moved: HashSet<&str> = record.fact_ids.iter().collect();
        let mut wanted: BTreeSet<&str> = BTreeSet::new();
        for entry in entries {
            let lists = entry.evidence_ids.iter().chain(entry.retracted_evidence_ids.iter());
            if lists.clone().any(|id| moved.contains(id)) {
                wanted.extend(entry.evidence_ids.iter());
                wanted.extend(entry.retracted_evidence_ids.iter().filter(|id| moved.contains(id)));
            }
        }
        let wanted: Vec<&str> = wanted.into_iter().collect();
        let known: HashMap<String, Fact> = self.facts_with_ids(&wanted)?;
        Ok(correction::plan(record, retracted_at, entries, cases, after, &known))
    }

    /// Runs the transaction of a planned correction: journal, curated.json
    /// (and MEMORY.md), conflicts.json, the record appended unless
    /// `appended` (a record that arrived through git is in the stream
    /// already), `committed`.
    #[expect(
        clippy::too_many_lines,
        reason = "one transaction's phases in order under the lock (scope, splice both files, intent, apply); splitting would pass the staged files around"
    )]
    pub(crate) fn run_correction(
        &self,
        record: Correction,
        planned: Planned,
        appended: bool,
        files: Option<Vec<StagedFile>>,
    ) -> Result<Corrected> {
        let Planned { stored, conflicts, entries, cases, domains, plan } = planned;
        let curated_path = self.file(CURATED_FILE);
        let conflicts_path = self.file(CONFLICTS_FILE);

        // Whole domains (and the unkeyed entries) of what changed, under
        // the key they had (a redaction may replace a key).
        let changed_entries: HashMap<&str, &Entry> =
            plan.entries.iter().map(|e| (e.key.as_str(), e)).collect();
        let changed_domains: BTreeSet<&str> = entries
            .iter()
            .filter(|e| changed_entries.contains_key(e.key.as_str()))
            .filter_map(|e| e.memory_key.as_deref())
            .chain(plan.entries.iter().filter_map(|e| e.memory_key.as_deref()))
            .chain(plan.cases.iter().map(|c| c.memory_key.as_str()))
            .chain(
                cases
                    .iter()
                    .filter(|c| plan.cases.iter().any(|p| p.conflict_id == c.conflict_id))
                    .map(|c| c.memory_key.as_str()),
            )
            .collect();
        let in_scope = |entry: &Entry| match entry.memory_key.as_deref() {
            Some(key) => changed_domains.contains(key),
            None => changed_entries.contains_key(entry.key.as_str()),
        };
        let mut curated_before: Vec<Entry> =
            entries.iter().filter(|e| in_scope(e)).cloned().collect();
        sort_entries(&mut curated_before);
        let curated_after: Vec<Entry> = curated_before
            .iter()
            .map(|e| {
                changed_entries.get(e.key.as_str()).map_or_else(|| e.clone(), |c| (*c).clone())
            })
            .collect();
        let changed_cases: HashMap<&str, &Case> =
            plan.cases.iter().map(|c| (c.conflict_id.as_str(), c)).collect();
        let conflicts_before: Vec<Case> = cases
            .iter()
            .filter(|c| changed_domains.contains(c.memory_key.as_str()))
            .cloned()
            .collect();
        let conflicts_after: Vec<Case> = conflicts_before
            .iter()
            .map(|c| {
                changed_cases
                    .get(c.conflict_id.as_str())
                    .map_or_else(|| c.clone(), |x| (*x).clone())
            })
            .collect();
        let mut entry_keys: Vec<String> = curated_before.iter().map(|e| e.key.clone()).collect();
        entry_keys.sort_unstable();
        let mut conflict_ids: Vec<String> =
            conflicts_before.iter().map(|c| c.conflict_id.clone()).collect();
        conflict_ids.sort_unstable();

        let curated_sha256_before = stored.sha256.clone();
        let conflicts_sha256_before = conflicts.sha256.clone();
        let keys: HashSet<&str> = entry_keys.iter().map(String::as_str).collect();
        let ids: HashSet<&str> = conflict_ids.iter().map(String::as_str).collect();
        let curated_file = stored.file.with_schema_at_least(CURATED_SCHEMA_CORRECTED).splice(
            &curated_path,
            self.workspace_id(),
            |head| keys.contains(head.key.as_str()),
            &curated_after,
            Output::Staged,
        )?;
        let conflicts_file =
            conflicts.file.with_schema_at_least(CONFLICTS_SCHEMA_CORRECTED).splice(
                &conflicts_path,
                self.workspace_id(),
                |head| ids.contains(head.conflict_id.as_str()),
                &conflicts_after,
                Output::Staged,
            )?;
        // A redaction's intent holds no text: no snapshot before, only the
        // hashes of the files it rewrites.
        let redaction = files.is_some();
        let rewritten = files.as_ref().map(|files| {
            files
                .iter()
                .map(|f| RewrittenFile {
                    name: f.name.clone(),
                    sha256_after: f.sha256_after.clone(),
                    sha256_before: f.sha256_before.clone(),
                })
                .collect()
        });
        let intent = CorrectionIntent {
            conflict_ids,
            conflicts_after,
            conflicts_before: (!redaction).then_some(conflicts_before),
            conflicts_sha256_after: conflicts_file.sha256().to_owned(),
            conflicts_sha256_before,
            correction: record.clone(),
            curated_after,
            curated_before: (!redaction).then_some(curated_before),
            curated_sha256_after: curated_file.sha256().to_owned(),
            curated_sha256_before,
            entry_keys,
            event_id: record.event_id.clone(),
            files: rewritten,
            prepared_at: self.now(),
            schema_version: CORRECTION_INTENT_SCHEMA_VERSION,
            transaction_id: canon::correction_transaction_id(self.workspace_id(), &record.event_id),
            workspace_id: self.workspace_id().to_owned(),
        };
        let digest = intent.digest();
        // Durable before the `prepared` line: recovery rolls forward only a
        // transaction this clone prepared.
        self.dir.journal().claim(&intent.transaction_id, &digest)?;
        self.append_correction_phase(&intent, &digest, Phase::Prepared)?;
        failpoint::hit("after_prepared");
        let curated = if curated_file.sha256() == intent.curated_sha256_before {
            Curated::Done(Projection::of_heads(curated_file.heads()))
        } else {
            Curated::Write(curated_file)
        };
        let queue =
            (conflicts_file.sha256() != intent.conflicts_sha256_before).then_some(conflicts_file);
        // Each daily file's lock is held until it is rewritten.
        let files =
            files.map(|files| files.into_iter().map(|f| (f.path, Some(f.data), f.lock)).collect());
        let targets = CorrectionTargets { curated, queue, appended, files };
        self.apply_correction(&intent, &digest, &[Phase::Prepared], targets)?;
        self.dir.journal().compact(&[])?;
        let mut memory_keys: Vec<String> =
            changed_domains.iter().map(|k| (*k).to_owned()).collect();
        memory_keys.extend(domains.iter().cloned());
        memory_keys.sort_unstable();
        memory_keys.dedup();
        Ok(Corrected {
            correction: record,
            already_recorded: false,
            entry_keys: plan.entries.iter().map(|e| e.key.clone()).collect(),
            conflict_ids: plan.cases.iter().map(|c| c.conflict_id.clone()).collect(),
            memory_keys,
        })
    }

    /// Writes the targets of a correction not yet done and the missing
    /// phase lines, in order.
    fn apply_correction(
        &self,
        intent: &CorrectionIntent,
        digest: &str,
        done: &[Phase],
        targets: CorrectionTargets,
    ) -> Result<()> {
        self.apply_derived(targets.curated, targets.queue, done, |phase| {
            self.append_correction_phase(intent, digest, phase)
        })?;
        if let Some(files) = targets.files {
            for (path, data, lock) in files {
                if let Some(data) = data {
                    self.dir.replace_path(&path, &data)?;
                    failpoint::hit("after_file_rewritten");
                }
                // Appends that waited find the file replaced, and open the
                // new one.
                drop(lock);
            }
            if !done.contains(&Phase::FilesRewritten) {
                self.append_correction_phase(intent, digest, Phase::FilesRewritten)?;
            }
            failpoint::hit("after_files_rewritten");
            self.dir.remove_caches()?;
            if !done.contains(&Phase::CachesRemoved) {
                self.append_correction_phase(intent, digest, Phase::CachesRemoved)?;
            }
            failpoint::hit("after_caches_removed");
        }
        if !targets.appended {
            corrections::append(&self.file(CORRECTIONS_FILE), &intent.correction)?;
        }
        failpoint::hit("after_correction_write");
        if !done.contains(&Phase::CorrectionAppended) {
            self.append_correction_phase(intent, digest, Phase::CorrectionAppended)?;
        }
        failpoint::hit("after_correction_appended");
        self.append_correction_phase(intent, digest, Phase::Committed)?;
        failpoint::hit("after_committed");
        Ok(())
    }

    fn append_correction_phase(
        &self,
        intent: &CorrectionIntent,
        digest: &str,
        phase: Phase,
    ) -> Result<()> {
        let line = intent.phase_line(digest, phase, &self.now());
        self.dir.journal().append(&line)
    }

    /// Brings every target of a correction's `intent` to its after state
    /// and records the missing phases: a file whose hash is the after hash
    /// is done, one whose hash is the before hash gets the intent's
    /// entries or cases spliced in (and must then hash to after); any other
    /// file stops recovery, changing nothing. Idempotent.
    ///
    /// Errors: [`Error::Corrupt`] naming the file that matches neither
    /// state, or the stream holding another record with the event id.
    pub(crate) fn roll_forward_correction(
        &self,
        intent: &CorrectionIntent,
        digest: &str,
        done: &[Phase],
    ) -> Result<()> {
        journal::repair_stream::<Correction>(&self.file(CORRECTIONS_FILE))?;
        let targets = self.correction_targets(intent, Output::Staged)?;
        self.apply_correction(intent, digest, done, targets)
    }

    /// What rolling a correction forward writes (see
    /// [`Workspace::roll_forward_correction`]).
    fn correction_targets(
        &self,
        intent: &CorrectionIntent,
        to: Output,
    ) -> Result<CorrectionTargets> {
        let tid = &intent.transaction_id;
        let curated_path = self.file(CURATED_FILE);
        let stored = self.dir.stored_curated()?;
        let curated = if stored.sha256 == intent.curated_sha256_after {
            Curated::Done(Projection::of_heads(stored.file.heads()))
        } else if stored.sha256 == intent.curated_sha256_before {
            let keys: HashSet<&str> = intent.entry_keys.iter().map(String::as_str).collect();
            let selected = |head: &EntryHead| keys.contains(head.key.as_str());
            // A redaction holds no snapshot before: its hashes decide.
            if let Some(before) = &intent.curated_before
                && stored.file.records(&curated_path, selected)? != *before
            {
                return Err(snapshots(&curated_path, tid, "curated entries"));
            }
            let written = stored.file.with_schema_at_least(CURATED_SCHEMA_CORRECTED).splice(
                &curated_path,
                self.workspace_id(),
                selected,
                &intent.curated_after,
                to,
            )?;
            if written.sha256() != intent.curated_sha256_after {
                return Err(snapshots(&curated_path, tid, "curated entries"));
            }
            Curated::Write(written)
        } else {
            return Err(neither(&curated_path, tid));
        };
        let conflicts_path = self.file(CONFLICTS_FILE);
        let stored = self.dir.stored_conflicts()?;
        let queue = if stored.sha256 == intent.conflicts_sha256_after {
            None
        } else if stored.sha256 == intent.conflicts_sha256_before {
            let ids: HashSet<&str> = intent.conflict_ids.iter().map(String::as_str).collect();
            let selected = |head: &CaseHead| ids.contains(head.conflict_id.as_str());
            if let Some(before) = &intent.conflicts_before
                && stored.file.records(&conflicts_path, selected)? != *before
            {
                return Err(snapshots(&conflicts_path, tid, "conflict cases"));
            }
            let written = stored.file.with_schema_at_least(CONFLICTS_SCHEMA_CORRECTED).splice(
                &conflicts_path,
                self.workspace_id(),
                selected,
                &intent.conflicts_after,
                to,
            )?;
            if written.sha256() != intent.conflicts_sha256_after {
                return Err(snapshots(&conflicts_path, tid, "conflict cases"));
            }
            Some(written)
        } else {
            return Err(neither(&conflicts_path, tid));
        };
        let stream = self.file(CORRECTIONS_FILE);
        let found = self.corrections()?.into_iter().find(|r| r.event_id == intent.event_id);
        if found.as_ref().is_some_and(|r| *r != intent.correction) {
            return Err(Error::corrupt(
                Location::file(&stream),
                Damage::record(format!(
                    "holds another correction with event id {} of transaction {tid}",
                    intent.event_id
                )),
            ));
        }
        let files = match &intent.files {
            Some(files) => Some(self.rewrite_targets(intent, files)?),
            None => None,
        };
        Ok(CorrectionTargets { curated, queue, appended: found.is_some(), files })
    }

    /// The daily files of a redaction's `intent` still to rewrite, each
    /// with its bytes after and its exclusive lock: a file that hashes as
    /// after is done (`None`); any other gets its tombstones again,
    /// computed from what it holds now (the intent holds no text). Appends
    /// do not take the workspace lock, so a daily file may have grown since
    /// the intent was written: a tombstone replaces only the line whose hash
    /// the record holds, and the lines appended are kept.
    ///
    /// Errors: as [`FactLog::with_tombstones`](crate::store::fact_log::FactLog::with_tombstones).
    fn rewrite_targets(
        &self,
        intent: &CorrectionIntent,
        files: &[RewrittenFile],
    ) -> Result<Vec<RewriteTarget>> {
        let mut out = Vec::with_capacity(files.len());
        for file in files {
            let path = self.redaction_file(&file.name)?;
            let Some(data) = self.dir.read_path(&path)? else {
                out.push((path, None, None));
                continue;
            };
            if canon::sha256_hex(&data) == file.sha256_after {
                out.push((path, None, None));
                continue;
            }
            let lock = atomic_io::lock_for_rewrite(&path)?;
            let data = self.dir.read_path(&path)?.unwrap_or_default();
            let after = self.redacted_file(&file.name, &path, &data, &intent.correction)?;
            let write = (after != data).then_some(after);
            out.push((path, write, Some(lock)));
        }
        Ok(out)
    }
}

/// Checks the actor, rationale and event id of a correction as a
/// decision's are checked, the secret guard included.
pub(crate) fn check_text(actor: &str, rationale: &str, event_id: &str) -> Result<()> {
    canon::check_id("event_id", event_id)?;
    for (field, value) in [("actor", actor), ("rationale", rationale)] {
        crate::model::text::check_text(field, value)?;
        crate::model::secret::check(field, value)?;
        crate::model::fact::refuse_marker(field, value)?;
    }
    Ok(())
}

/// The error of a file that matches neither state of a correction.
fn neither(path: &Path, transaction_id: &str) -> Error {
    Error::corrupt(
        Location::file(path),
        Damage::NeitherState { transaction_id: transaction_id.to_owned() },
    )
}

/// The error of an intent whose snapshots disagree with its hashes.
fn snapshots(path: &Path, transaction_id: &str, what: &'static str) -> Error {
    Error::corrupt(
        Location::file(path),
        Damage::IntentSnapshots { what, transaction_id: transaction_id.to_owned() },
    )
}

/// What applying a correction writes.
struct CorrectionTargets {
    curated: Curated,
    /// conflicts.json to write, or `None` when it holds its after state.
    queue: Option<ConflictsFile>,
    /// Whether the stream holds the record.
    appended: bool,
    /// For a redaction: each daily file, with its bytes after when it is
    /// still to write; `None` for another correction.
    files: Option<Vec<RewriteTarget>>,
}

/// A daily file of a redaction: its path, its bytes after when it is still
/// to write, and its exclusive lock while it is.
type RewriteTarget = (std::path::PathBuf, Option<Vec<u8>>, Option<std::fs::File>);

/// A daily file a redaction rewrites, staged in memory under its
/// exclusive lock.
pub(crate) struct StagedFile {
    /// The file's exclusive lock, held until the rewrite is made (none
    /// when it is staged only to be looked at).
    pub(crate) lock: Option<std::fs::File>,
    /// Its name in the intent (`daily/DAY.jsonl`).
    pub(crate) name: String,
    /// Its path.
    pub(crate) path: std::path::PathBuf,
    /// SHA-256 of the file as read.
    pub(crate) sha256_before: String,
    /// Its bytes with the tombstones.
    pub(crate) data: Vec<u8>,
    /// SHA-256 of `data`.
    pub(crate) sha256_after: String,
}

/// A correction planned over the state as stored (see
/// [`Workspace::plan_correction`]).
pub(crate) struct Planned {
    /// curated.json as read.
    stored: Stored<Entry>,
    /// conflicts.json as read.
    conflicts: Stored<Case>,
    /// The entries of the domains and unkeyed entries it touches.
    pub(crate) entries: Vec<Entry>,
    /// The cases of the domains it touches.
    pub(crate) cases: Vec<Case>,
    /// The memory keys of the facts it names.
    domains: BTreeSet<String>,
    /// What changes.
    pub(crate) plan: correction::Plan,
}

impl Planned {
    /// Whether the correction changes nothing: its effect is in the
    /// derived state already (or it has none).
    pub(crate) fn is_empty(&self) -> bool {
        self.plan.entries.is_empty() && self.plan.cases.is_empty()
    }
}

/// The domains and unkeyed entries a correction's facts belong to: an
/// unkeyed entry's key is its facts' kind and normal form.
pub(crate) struct Scope {
    /// The memory keys of the facts.
    pub(crate) domains: BTreeSet<String>,
    /// The entry keys of the unkeyed facts.
    pub(crate) unkeyed: HashSet<String>,
}

impl Scope {
    /// The scope of `facts` (those of the log a record names).
    pub(crate) fn of(facts: &HashMap<String, Fact>) -> Scope {
        Scope {
            domains: facts.values().filter_map(|f| f.memory_key.clone()).collect(),
            unkeyed: facts
                .values()
                .filter(|f| f.memory_key.is_none())
                .map(|f| canon::unkeyed_entry_key(f.kind.as_str(), &f.content))
                .collect(),
        }
    }

    /// Whether an entry of `memory_key` (`None`: unkeyed) and `key` is in
    /// the scope.
    pub(crate) fn touches(&self, memory_key: Option<&str>, key: &str) -> bool {
        match memory_key {
            Some(memory_key) => self.domains.contains(memory_key),
            None => self.unkeyed.contains(key),
        }
    }
}
