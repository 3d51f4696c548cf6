//! `verify`'s checks of the corrections stream (docs/corrections.md, "What
//! `verify` checks"): every record valid and of this workspace, event ids
//! unique in the stream and distinct from the audit stream's, a restore
//! naming a retraction of the stream, every fact a record names in the log,
//! and no fact that a correction in force retracts cited as evidence by an
//! entry or by a candidate of an open case, nor observed by an open case. Read-only, like the rest of `verify`.

use std::collections::{HashMap, HashSet};

use crate::error::Damage;
use crate::model::fact::REDACTED;
use crate::model::id_list::IdList;
use crate::policy::check::Facts;
use crate::policy::retractions::Retractions;
use crate::store::conflict_queue::{Candidate, CaseStatus, ConflictQueue};
use crate::store::corrections::{self, Action, Correction};
use crate::store::curated_state::CuratedState;
use crate::store::journal::Adjudication;
use crate::store::names::{AUDIT_FILE, CORRECTIONS_FILE};
use crate::store::names::{CONFLICTS_FILE, CURATED_FILE};
use crate::workspace::Workspace;
use crate::workspace::verify::{Problem, damaged, from_error, problem};

impl Workspace {
    /// Checks the corrections stream against itself, the audit stream, the
    /// log (`facts`) and the derived state, adding what is wrong to
    /// `problems`. Returns every fact a retract or redact record names (in
    /// force or not: what a correction may have changed).
    pub(crate) fn verify_corrections(
        &self,
        facts: &Facts,
        audit: &[(usize, Adjudication)],
        curated: Option<&CuratedState>,
        queue: &ConflictQueue,
        problems: &mut Vec<Problem>,
    ) -> HashSet<String> {
        let path = self.file(CORRECTIONS_FILE);
        let lines = match corrections::read_each(&path) {
            Ok(Some(lines)) => lines,
            Ok(None) => {
                self.verify_redacted_records(audit, &[], &HashSet::new(), problems);
                return HashSet::new();
            }
            Err(err) => {
                problems.push(from_error(err, &path));
                return HashSet::new();
            }
        };
        let audit_events: HashSet<&str> = audit.iter().map(|(_, r)| r.event_id.as_str()).collect();
        let mut records: Vec<(usize, Correction)> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for (number, parsed) in lines {
            let record = match parsed {
                Ok(record) => record,
                Err(damage) => {
                    problems.push(problem(&path, Some(number), damage.to_string()));
                    continue;
                }
            };
            let mut report = |message: String| problems.push(problem(&path, Some(number), message));
            if record.workspace_id != self.workspace_id() {
                report(format!("belongs to workspace {}", record.workspace_id));
            }
            if !seen.insert(record.event_id.clone()) {
                report(format!("event id {} appears twice", record.event_id));
            }
            if audit_events.contains(record.event_id.as_str()) {
                report(format!(
                    "event id {} is also the event id of a decision in the audit stream",
                    record.event_id
                ));
            }
            for fact in record.fact_ids.iter().filter(|fact| !facts.contains(fact)) {
                report(format!(
                    "{} {} names fact {fact}, which is not in the log",
                    record.action, record.event_id
                ));
            }
            records.push((number, record));
        }
        let by_event: HashMap<&str, &Correction> =
            records.iter().map(|(_, r)| (r.event_id.as_str(), r)).rev().collect();
        for (number, record) in &records {
            let Some(target) = record.restores.as_deref() else { continue };
            let message = match by_event.get(target).map(|r| r.action) {
                Some(Action::Retract) => continue,
                None => format!(
                    "restore {} names {target}, which is not a correction of the stream",
                    record.event_id
                ),
                Some(action) => format!(
                    "restore {} names {target}, which is a {action}, not a retraction",
                    record.event_id
                ),
            };
            problems.push(problem(&path, Some(*number), message));
        }
        let retracted = Retractions::from_records(records.iter().map(|(_, r)| r));
        self.verify_retracted_evidence(&retracted, curated, queue, problems);
        self.verify_tombstones(facts, &records, problems);
        self.verify_marked(&retracted, curated, queue, problems);
        self.verify_superseded_by_correction(&records, queue, problems);
        // A failure to plan is a damaged state file or log: reported there.
        let mut waits: HashSet<&str> = HashSet::new();
        if let Ok(waiting) = self.waiting_over(&records, curated, queue) {
            for (number, record) in waiting {
                waits.insert(record.event_id.as_str());
                let message = format!(
                    "{} {} by {} is not applied to curated.json and conflicts.json yet (it \
                     arrived through git)",
                    record.action, record.event_id, record.actor
                );
                let damage = Damage::CorrectionWaiting {
                    action: record.action.to_string(),
                    event_id: record.event_id.clone(),
                };
                problems.push(damaged(&path, Some(number), damage, Some(message)));
            }
        }
        if waits.is_empty() {
            self.verify_taken(&retracted, curated, queue, problems);
        }
        self.verify_redacted_records(audit, &records, &waits, problems);
        records
            .iter()
            .filter(|(_, r)| r.action != Action::Restore)
            .flat_map(|(_, r)| r.fact_ids.iter().map(str::to_owned))
            .collect()
    }

    /// Checks that a case whose candidates lost facts to a correction was
    /// superseded by one: a retract or redact record recorded at its
    /// `superseded_at` that names one of its facts.
    fn verify_superseded_by_correction(
        &self,
        records: &[(usize, Correction)],
        queue: &ConflictQueue,
        problems: &mut Vec<Problem>,
    ) {
        let conflicts_path = self.file(CONFLICTS_FILE);
        for case in &queue.cases {
            if !case.candidates.iter().any(Candidate::holds_correction) {
                continue;
            }
            let facts: HashSet<&str> = case
                .candidates
                .iter()
                .flat_map(|c| c.evidence_ids.iter().chain(c.taken_ids()))
                .chain(case.observed_fact_ids.iter())
                .collect();
            let at = case.superseded_at.as_ref().map(crate::model::stamp::Stamp::instant);
            let explained = case.status == CaseStatus::Superseded
                && records.iter().any(|(_, r)| {
                    r.action != Action::Restore
                        && Some(r.recorded_at.instant()) == at
                        && r.fact_ids.iter().any(|f| facts.contains(f))
                });
            if !explained {
                problems.push(problem(
                    &conflicts_path,
                    None,
                    format!(
                        "case {} lists retracted evidence, but no correction at its superseded_at \
                         names one of its facts",
                        case.conflict_id
                    ),
                ));
            }
        }
    }

    /// Checks that no fact a correction in force retracts is evidence of an
    /// entry (whatever its status: a correction moves it to the entry's
    /// retracted evidence), of a candidate of an open case, or observed by
    /// an open case. A closed case keeps the facts its decision saw.
    fn verify_retracted_evidence(
        &self,
        retracted: &Retractions,
        curated: Option<&CuratedState>,
        queue: &ConflictQueue,
        problems: &mut Vec<Problem>,
    ) {
        if retracted.is_empty() {
            return;
        }
        let by = |fact: &str| retracted.retracted_by(fact).collect::<Vec<_>>().join(", ");
        let curated_path = self.file(CURATED_FILE);
        for entry in curated.map(|state| state.entries.as_slice()).unwrap_or_default() {
            let status = entry.status.as_str();
            for fact in entry.evidence_ids.iter().filter(|f| retracted.is_retracted(f)) {
                problems.push(problem(
                    &curated_path,
                    None,
                    format!(
                        "{status} entry {} cites fact {fact}, which correction {} retracts",
                        entry.key,
                        by(fact)
                    ),
                ));
            }
        }
        let conflicts_path = self.file(CONFLICTS_FILE);
        for case in queue.cases.iter().filter(|case| case.status == CaseStatus::Open) {
            let cited = case.candidates.iter().flat_map(|c| c.evidence_ids.iter());
            let mut named = HashSet::new();
            for fact in cited.chain(case.observed_fact_ids.iter()) {
                if retracted.is_retracted(fact) && named.insert(fact) {
                    problems.push(problem(
                        &conflicts_path,
                        None,
                        format!(
                            "open case {} rests on fact {fact}, which correction {} retracts",
                            case.conflict_id,
                            by(fact)
                        ),
                    ));
                }
            }
        }
    }

    /// Checks, once every record is applied, the lists of the facts a
    /// correction took from an entry or candidate: a fact listed as
    /// retracted evidence is retracted now (a restore gives it back or
    /// releases it), and a released fact was named by a retraction that a
    /// restore undid.
    fn verify_taken(
        &self,
        retracted: &Retractions,
        curated: Option<&CuratedState>,
        queue: &ConflictQueue,
        problems: &mut Vec<Problem>,
    ) {
        let wrong = |listed: &IdList, released: &IdList| -> Vec<String> {
            let still = listed.iter().filter(|id| !retracted.is_retracted(id)).map(|id| {
                format!(
                    "lists fact {id} as retracted evidence, but no correction in force retracts it"
                )
            });
            let released = released.iter().filter(|id| !retracted.was_restored(id)).map(|id| {
                format!("lists fact {id} as released evidence, but no restored retraction names it")
            });
            still.chain(released).collect()
        };
        let curated_path = self.file(CURATED_FILE);
        for entry in curated.map(|state| state.entries.as_slice()).unwrap_or_default() {
            for what in wrong(&entry.retracted_evidence_ids, &entry.released_evidence_ids) {
                problems.push(problem(&curated_path, None, format!("entry {} {what}", entry.key)));
            }
        }
        let conflicts_path = self.file(CONFLICTS_FILE);
        for case in &queue.cases {
            for candidate in &case.candidates {
                let lists = (&candidate.retracted_evidence_ids, &candidate.released_evidence_ids);
                for what in wrong(lists.0, lists.1) {
                    let (id, cid) = (&case.conflict_id, &candidate.candidate_id);
                    problems.push(problem(
                        &conflicts_path,
                        None,
                        format!("case {id} candidate {cid} {what}"),
                    ));
                }
            }
        }
    }

    /// Checks that every tombstone of the log has its redact record (the
    /// same event id, naming the fact, with the same line hash), and that
    /// every fact a redact record names is a tombstone.
    fn verify_tombstones(
        &self,
        facts: &Facts,
        records: &[(usize, Correction)],
        problems: &mut Vec<Problem>,
    ) {
        let path = self.file(CORRECTIONS_FILE);
        let redactions: HashMap<&str, &Correction> = records
            .iter()
            .filter(|(_, r)| r.action == Action::Redact)
            .map(|(_, r)| (r.event_id.as_str(), r))
            .collect();
        // A fact two redactions named (one on each side of a merge) has
        // one tombstone, of either: each record is satisfied by a
        // tombstone of the same line.
        let mut tombstones: HashSet<(&str, &str)> = HashSet::new();
        for (fact, by, hash) in &facts.tombstones {
            tombstones.insert((fact.as_str(), hash.as_str()));
            let recorded = redactions.get(by.as_str()).and_then(|r| {
                r.line_sha256.as_ref().filter(|_| r.fact_ids.contains(fact))?.get(fact)
            });
            if recorded != Some(hash) {
                problems.push(problem(
                    self.log().dir(),
                    None,
                    format!(
                        "fact {fact} is a tombstone of redaction {by}, which no redact record of \
                         {CORRECTIONS_FILE} names with the same line hash"
                    ),
                ));
            }
        }
        for (number, record) in records.iter().filter(|(_, r)| r.action == Action::Redact) {
            let hashes = record.line_sha256.as_ref();
            let tombstoned = |fact: &str| {
                hashes
                    .and_then(|h| h.get(fact))
                    .is_some_and(|hash| tombstones.contains(&(fact, hash.as_str())))
            };
            for fact in record.fact_ids.iter().filter(|f| !tombstoned(f)) {
                problems.push(problem(
                    &path,
                    Some(*number),
                    format!(
                        "redact {} names fact {fact}, whose line in the log is not its tombstone",
                        record.event_id
                    ),
                ));
            }
        }
    }

    /// Checks that a decision or correction record holds the marker in its
    /// actor or rationale exactly when a redact record names it: every
    /// record holding it is named, and every record named (whose redaction
    /// is not `waiting` to be applied) holds it in both.
    fn verify_redacted_records(
        &self,
        audit: &[(usize, Adjudication)],
        records: &[(usize, Correction)],
        waiting: &HashSet<&str>,
        problems: &mut Vec<Problem>,
    ) {
        let path = self.file(CORRECTIONS_FILE);
        let audit_path = self.file(AUDIT_FILE);
        let marked = |actor: &str, rationale: &str| (actor == REDACTED, rationale == REDACTED);
        let mut held: HashMap<&str, (bool, bool)> = HashMap::new();
        let named: HashSet<&str> = records
            .iter()
            .filter(|(_, r)| r.action == Action::Redact)
            .flat_map(|(_, r)| r.event_ids.iter().flatten())
            .collect();
        let mut unnamed = |file: &std::path::Path, number: usize, event: &str, what: &str| {
            if !named.contains(event) {
                problems.push(problem(
                    file,
                    Some(number),
                    format!(
                        "{what} {event} holds the redaction marker, but no redact record of \
                         {CORRECTIONS_FILE} names it"
                    ),
                ));
            }
        };
        for (number, record) in audit {
            let held_here = marked(&record.actor, &record.rationale);
            if held_here != (false, false) {
                unnamed(&audit_path, *number, &record.event_id, "decision");
            }
            held.insert(&record.event_id, held_here);
        }
        for (number, record) in records {
            let held_here = marked(&record.actor, &record.rationale);
            if held_here != (false, false) {
                unnamed(&path, *number, &record.event_id, record.action.name());
            }
            held.entry(&record.event_id).or_insert(held_here);
        }
        for (number, record) in records.iter().filter(|(_, r)| r.action == Action::Redact) {
            if waiting.contains(record.event_id.as_str()) {
                continue;
            }
            for event in record.event_ids.iter().flatten() {
                let message = match held.get(event) {
                    None => "which no decision or correction record has",
                    Some((true, true)) => continue,
                    Some(_) => "whose actor and rationale do not both hold the redaction marker",
                };
                problems.push(problem(
                    &path,
                    Some(*number),
                    format!("redact {} names event {event}, {message}", record.event_id),
                ));
            }
        }
    }

    /// Checks that an entry or candidate holds the marker exactly when it
    /// must (see `Retractions::needs_marker`): it lists a redacted fact and
    /// no fact that is not redacted words it.
    fn verify_marked(
        &self,
        retracted: &Retractions,
        curated: Option<&CuratedState>,
        queue: &ConflictQueue,
        problems: &mut Vec<Problem>,
    ) {
        let mismatch = |content: &str, listed: &mut dyn Iterator<Item = &str>| match (
            content == REDACTED,
            retracted.needs_marker(listed),
        ) {
            (false, true) => Some("lists only redacted facts and still holds their wording"),
            (true, false) => {
                Some("holds the redaction marker but is not worded by redacted facts only")
            }
            _ => None,
        };
        let curated_path = self.file(CURATED_FILE);
        for entry in curated.map(|state| state.entries.as_slice()).unwrap_or_default() {
            let mut listed = entry.evidence_ids.iter().chain(entry.taken_ids());
            if let Some(what) = mismatch(&entry.content, &mut listed) {
                problems.push(problem(&curated_path, None, format!("entry {} {what}", entry.key)));
            }
        }
        let conflicts_path = self.file(CONFLICTS_FILE);
        for case in &queue.cases {
            for candidate in &case.candidates {
                let mut listed = candidate.evidence_ids.iter().chain(candidate.taken_ids());
                if let Some(what) = mismatch(&candidate.content, &mut listed) {
                    problems.push(problem(
                        &conflicts_path,
                        None,
                        format!(
                            "case {} candidate {} {what}",
                            case.conflict_id, candidate.candidate_id
                        ),
                    ));
                }
            }
        }
    }
}
