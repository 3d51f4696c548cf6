//! The review queue: `conflicts.json`, every conflict case distill could not
//! settle, open or closed.
//!
//! Invariants (docs/format.md), checked on load and before every save: ids
//! are unique; (memory_key, revision) is unique; at most one open case per
//! memory_key; fingerprints, conflict ids and candidate ids recompute from
//! the content; candidate content passes the rules of fact content;
//! candidates are sorted and unique with at most one
//! incumbent, present iff `active_entry_key` is set; candidate evidence is a
//! subset of `observed_fact_ids`; closure fields match the status. This
//! module only encodes and decodes; the caller writes through
//! `atomic_io::replace`.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Damage, Error, IoContext, Location, Result};
use crate::model::canon;
use crate::model::fact::{Kind, REDACTED};
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::store::Finding;
use crate::store::names::CONFLICTS_LAYOUT_FILE;
use crate::store::state_file::{Encoder, Record, StateFile, field, field_at};

/// Schema version written to `conflicts.json` of a memory that never had
/// a correction.
pub const CONFLICTS_SCHEMA_VERSION: u32 = 1;

/// Schema version written to `conflicts.json` from the first correction
/// on (docs/corrections.md): candidates may list `retracted_evidence_ids`.
pub const CONFLICTS_SCHEMA_CORRECTED: u32 = 2;

/// One value competing in a conflict case. Format-stable.
///
/// Fields are declared in sorted order: [`crate::model::canon::encode`] writes them
/// as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// `candidate-` + 16 hex of (memory_key, kind, normal content).
    pub candidate_id: String,
    /// Its wording.
    pub content: String,
    /// Facts behind it, sorted.
    pub evidence_ids: IdList,
    /// Earliest evidence timestamp.
    pub first_seen: Stamp,
    /// Whether this is the active value at detection time.
    pub incumbent: bool,
    /// Kind of the proposal.
    pub kind: Kind,
    /// Latest evidence timestamp.
    pub last_seen: Stamp,
    /// Highest importance among its facts.
    pub maximum_importance: u8,
    /// Number of evidence ids.
    pub occurrences: u64,
    /// Ids of facts a correction took from its evidence and a restore
    /// released after the domain moved on (docs/corrections.md,
    /// "Restore"), sorted and unique; neither evidence nor retracted
    /// evidence. Absent from the file when empty.
    #[serde(default, skip_serializing_if = "IdList::is_empty")]
    pub released_evidence_ids: IdList,
    /// Ids of the facts a correction took from its evidence and that are
    /// retracted, sorted and unique; never evidence. Absent from the file
    /// when empty. Its
    /// dates and highest importance stay those it had when the case was
    /// detected, when these facts were evidence.
    #[serde(default, skip_serializing_if = "IdList::is_empty")]
    pub retracted_evidence_ids: IdList,
}

impl Candidate {
    /// Returns the facts a correction took from this candidate's evidence:
    /// those still retracted, then those a restore released.
    pub fn taken_ids(&self) -> impl Iterator<Item = &str> + Clone {
        self.retracted_evidence_ids.iter().chain(self.released_evidence_ids.iter())
    }

    /// Returns whether a correction took some of this candidate's
    /// evidence.
    pub fn holds_correction(&self) -> bool {
        !self.retracted_evidence_ids.is_empty() || !self.released_evidence_ids.is_empty()
    }

    /// Returns the candidate as its case detected it: the facts a
    /// correction took put back among its evidence (the fingerprint and
    /// the conflict id are of that observation).
    pub fn as_detected(&self) -> std::borrow::Cow<'_, Candidate> {
        if !self.holds_correction() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut taken: Vec<&str> = self.taken_ids().collect();
        taken.sort_unstable();
        let evidence_ids = IdList::union(&self.evidence_ids, taken);
        std::borrow::Cow::Owned(Candidate {
            occurrences: evidence_ids.len() as u64,
            evidence_ids,
            released_evidence_ids: IdList::new(),
            retracted_evidence_ids: IdList::new(),
            ..self.clone()
        })
    }
}

/// Lifecycle of a conflict case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    /// Awaiting a human decision.
    Open,
    /// Decided by an adjudication.
    Resolved,
    /// Replaced by a newer case or by a distill that settled the domain.
    Superseded,
}

impl CaseStatus {
    /// Returns the on-disk name.
    pub fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Open => "open",
            CaseStatus::Resolved => "resolved",
            CaseStatus::Superseded => "superseded",
        }
    }
}

/// One conflict case. Format-stable.
///
/// Fields are declared in sorted order: [`crate::model::canon::encode`] writes them
/// as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Active entry of the domain at detection, if any.
    pub active_entry_key: Option<String>,
    /// The competing values, sorted by candidate_id.
    pub candidates: Vec<Candidate>,
    /// `conflict-` + 16 hex of (workspace, memory_key, fingerprint).
    pub conflict_id: String,
    /// When distill detected the tie.
    pub detected_at: Stamp,
    /// SHA-256 of the canonical observation.
    pub fingerprint: String,
    /// The conflict domain.
    pub memory_key: String,
    /// Every fact id of the domain seen at detection, sorted.
    pub observed_fact_ids: IdList,
    /// Who decided.
    pub resolution_actor: Option<String>,
    /// The adjudication event id.
    pub resolution_event_id: Option<String>,
    /// Why.
    pub resolution_rationale: Option<String>,
    /// When a human resolved it.
    pub resolved_at: Option<Stamp>,
    /// Active entry key after the decision.
    pub resulting_active_entry_key: Option<String>,
    /// 1 + the domain's previous highest case revision.
    pub revision: u32,
    /// The chosen candidate.
    pub selected_candidate_id: Option<String>,
    /// Lifecycle status.
    pub status: CaseStatus,
    /// When a newer case or distill superseded it.
    pub superseded_at: Option<Stamp>,
    /// Owning workspace.
    pub workspace_id: String,
}

/// Returns the fingerprint of an observation (docs/format.md).
pub fn fingerprint(
    memory_key: &str,
    active_entry_key: Option<&str>,
    candidates: &[Candidate],
    observed_fact_ids: &IdList,
) -> String {
    /// The observation, fields declared in sorted order: encoded straight
    /// from its fields, without building a JSON value (verify checks the
    /// fingerprint of every case, closed ones included).
    #[derive(Serialize)]
    struct Observation<'a> {
        active_entry_key: Option<&'a str>,
        candidates: &'a [Candidate],
        memory_key: &'a str,
        observed_fact_ids: &'a IdList,
    }
    // A candidate a correction changed is observed as it was detected.
    let detected: Vec<Candidate>;
    let candidates = if candidates.iter().any(Candidate::holds_correction) {
        detected = candidates.iter().map(|c| c.as_detected().into_owned()).collect();
        detected.as_slice()
    } else {
        candidates
    };
    let observation = Observation { active_entry_key, candidates, memory_key, observed_fact_ids };
    canon::sha256_hex(canon::encode(&observation, canon::JsonStyle::Canonical).as_bytes())
}

impl Case {
    /// Returns the fingerprint recomputed from this case's content.
    pub fn computed_fingerprint(&self) -> String {
        fingerprint(
            &self.memory_key,
            self.active_entry_key.as_deref(),
            &self.candidates,
            &self.observed_fact_ids,
        )
    }

    /// Returns whether the case awaits a decision.
    pub fn is_open(&self) -> bool {
        self.status == CaseStatus::Open
    }

    /// Returns the candidate with `candidate_id`.
    pub fn candidate(&self, candidate_id: &str) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.candidate_id == candidate_id)
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one check per invariant of a case, in the order of the format's list; each stands alone and reads best beside the others"
    )]
    fn check(&self, workspace_id: &str) -> std::result::Result<(), Damage> {
        let id = &self.conflict_id;
        if self.workspace_id != workspace_id {
            return Err(Damage::record(format!(
                "case {id} belongs to workspace {}",
                self.workspace_id
            )));
        }
        match canon::clean_memory_key(&self.memory_key) {
            Ok(clean) if clean == self.memory_key => {}
            _ => {
                return Err(Damage::record(format!(
                    "case {id} has an invalid memory_key {:?}",
                    self.memory_key
                )));
            }
        }
        if self.revision < 1 {
            return Err(Damage::record(format!("case {id} has revision 0")));
        }
        for (field, text) in [
            ("resolution_actor", &self.resolution_actor),
            ("resolution_rationale", &self.resolution_rationale),
        ] {
            if let Some(text) = text {
                crate::model::text::check_text(field, text)
                    .map_err(|err| Damage::record(format!("case {id}: {err}")))?;
            }
        }
        if let Some(event_id) = &self.resolution_event_id {
            canon::check_id("resolution_event_id", event_id)
                .map_err(|err| Damage::record(format!("case {id}: {err}")))?;
        }
        // A redacted wording keeps the ids it was recorded with: verify
        // checks them against the redact record instead.
        // A key a redaction replaced keeps every id computed from it as
        // recorded too (verify checks that its candidates hold the marker).
        let rekeyed = crate::model::fact::is_redacted_key(&self.memory_key);
        let redacted = rekeyed || self.candidates.iter().any(|c| c.content == REDACTED);
        if !redacted && self.fingerprint != self.computed_fingerprint() {
            return Err(Damage::record(format!(
                "case {id} has a fingerprint that does not match its content"
            )));
        }
        if !rekeyed && *id != canon::conflict_id(workspace_id, &self.memory_key, &self.fingerprint)
        {
            return Err(Damage::record(format!(
                "case {id} has a conflict_id that does not match its fingerprint"
            )));
        }
        if self.candidates.len() < 2 {
            return Err(Damage::record(format!("case {id} has fewer than two candidates")));
        }
        if self.candidates.windows(2).any(|w| w[0].candidate_id >= w[1].candidate_id) {
            return Err(Damage::record(format!(
                "case {id} has candidates not sorted by candidate_id or repeated"
            )));
        }
        if !self.observed_fact_ids.is_sorted_unique() {
            return Err(Damage::record(format!(
                "case {id} has observed_fact_ids not sorted and unique"
            )));
        }
        let observed: HashSet<&str> = self.observed_fact_ids.iter().collect();
        let mut incumbents = 0;
        for candidate in &self.candidates {
            let cid = &candidate.candidate_id;
            if let Err(msg) = crate::model::fact::check_stored_content(&candidate.content) {
                return Err(Damage::record(format!("case {id}: candidate {cid}: {msg}")));
            }
            if candidate.content != REDACTED
                && !rekeyed
                && *cid
                    != canon::candidate_id(
                        &self.memory_key,
                        candidate.kind.as_str(),
                        &candidate.content,
                    )
            {
                return Err(Damage::record(format!(
                    "case {id}: candidate {cid} does not match its kind and content"
                )));
            }
            if candidate.incumbent {
                incumbents += 1;
            }
            if candidate.occurrences != candidate.evidence_ids.len() as u64 {
                return Err(Damage::record(format!(
                    "case {id}: candidate {cid} has occurrences that differ from its evidence"
                )));
            }
            if !candidate.evidence_ids.is_sorted_unique() {
                return Err(Damage::record(format!(
                    "case {id}: candidate {cid} has evidence_ids not sorted and unique"
                )));
            }
            if !(1..=5).contains(&candidate.maximum_importance) {
                return Err(Damage::record(format!(
                    "case {id}: candidate {cid} has maximum_importance outside 1-5"
                )));
            }
            if !candidate.retracted_evidence_ids.is_sorted_unique()
                || candidate
                    .retracted_evidence_ids
                    .iter()
                    .any(|e| candidate.evidence_ids.contains(e))
            {
                return Err(Damage::record(format!(
                    "case {id}: candidate {cid} has retracted_evidence_ids not sorted and unique, or also evidence"
                )));
            }
            if !candidate.released_evidence_ids.is_sorted_unique()
                || candidate.released_evidence_ids.iter().any(|e| {
                    candidate.evidence_ids.contains(e)
                        || candidate.retracted_evidence_ids.contains(e)
                })
            {
                return Err(Damage::record(format!(
                    "case {id}: candidate {cid} has released_evidence_ids not sorted and unique, or also evidence or retracted evidence"
                )));
            }
            let cited = candidate.evidence_ids.iter().chain(candidate.taken_ids());
            if let Some(missing) = cited.clone().find(|e| !observed.contains(e)) {
                return Err(Damage::record(format!(
                    "case {id}: candidate {cid} evidence {missing} is not in observed_fact_ids"
                )));
            }
        }
        if incumbents > 1 {
            return Err(Damage::record(format!("case {id} has more than one incumbent")));
        }
        if (incumbents == 1) != self.active_entry_key.is_some() {
            return Err(Damage::record(format!(
                "case {id} must have an incumbent exactly when active_entry_key is set"
            )));
        }
        let resolution = [
            self.resolved_at.is_some(),
            self.selected_candidate_id.is_some(),
            self.resolution_event_id.is_some(),
            self.resolution_actor.is_some(),
            self.resolution_rationale.is_some(),
            self.resulting_active_entry_key.is_some(),
        ];
        match self.status {
            CaseStatus::Open => {
                if resolution.iter().any(|set| *set) || self.superseded_at.is_some() {
                    return Err(Damage::record(format!("open case {id} has closure fields")));
                }
            }
            CaseStatus::Resolved => {
                if !resolution.iter().all(|set| *set) || self.superseded_at.is_some() {
                    return Err(Damage::record(format!(
                        "resolved case {id} must have every resolution field and no superseded_at"
                    )));
                }
                let selected = self.selected_candidate_id.as_deref().unwrap_or_default();
                if self.candidate(selected).is_none() {
                    return Err(Damage::record(format!(
                        "resolved case {id} selected unknown candidate {selected}"
                    )));
                }
            }
            CaseStatus::Superseded => {
                if resolution.iter().any(|set| *set) || self.superseded_at.is_none() {
                    return Err(Damage::record(format!(
                        "superseded case {id} must have only superseded_at"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The decoded contents of `conflicts.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictQueue {
    /// Cases sorted by (memory_key, revision).
    pub cases: Vec<Case>,
    /// Schema version read from disk (1 for a new queue, 2 once a
    /// correction was made); the encoding keeps it, at least 1.
    pub schema_version: u32,
}

impl Default for ConflictQueue {
    fn default() -> ConflictQueue {
        ConflictQueue::of(Vec::new())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQueue {
    schema_version: i64,
    workspace_id: String,
    cases: Vec<Case>,
}

impl ConflictQueue {
    /// Decodes and validates `data`, read from `path`.
    ///
    /// Errors: [`Error::Corrupt`] naming the file and case, [`Error::Scope`].
    pub fn decode(data: &[u8], path: &Path, workspace_id: &str) -> Result<ConflictQueue> {
        let queue = Self::decode_known(data, path, workspace_id)?;
        queue
            .validate(workspace_id)
            .map_err(|damage| super::corrupt_in(data, Location::file(path), damage))?;
        Ok(queue)
    }

    /// Decodes conflicts.json like [`ConflictQueue::decode`] but without
    /// checking the invariants of its cases again: for a file known to be
    /// valid ([`crate::store::valid_hashes`]).
    ///
    /// Errors: as [`ConflictQueue::decode`], but for broken invariants.
    pub(crate) fn decode_known(
        data: &[u8],
        path: &Path,
        workspace_id: &str,
    ) -> Result<ConflictQueue> {
        let here = || Location::file(path);
        let raw: RawQueue = serde_json::from_slice(data)
            .map_err(|err| super::corrupt_in(data, here(), Damage::json(&err)))?;
        if raw.workspace_id != workspace_id {
            return Err(Error::Scope {
                location: here(),
                found: raw.workspace_id,
                expected: workspace_id.to_owned(),
            });
        }
        let schema_version = match raw.schema_version {
            1 => CONFLICTS_SCHEMA_VERSION,
            2 => CONFLICTS_SCHEMA_CORRECTED,
            other => {
                return Err(Error::UnsupportedVersion {
                    location: here(),
                    what: "conflicts",
                    found: other,
                    supported: "1, 2",
                });
            }
        };
        // Only a file written after a correction holds what one leaves.
        if schema_version < CONFLICTS_SCHEMA_CORRECTED
            && let Some(case) = raw
                .cases
                .iter()
                .find(|case| case.candidates.iter().any(Candidate::holds_correction))
        {
            return Err(super::corrupt_in(
                data,
                here(),
                Damage::record(format!(
                    "case {} holds what a correction leaves, in a schema 1 file",
                    case.conflict_id
                )),
            ));
        }
        if let Some(other) = raw.cases.iter().find(|case| case.workspace_id != workspace_id) {
            return Err(Error::Scope {
                location: here(),
                found: other.workspace_id.clone(),
                expected: workspace_id.to_owned(),
            });
        }
        let mut queue = ConflictQueue { cases: raw.cases, schema_version };
        queue.sort();
        Ok(queue)
    }

    /// Returns the canonical encoding after checking every invariant.
    ///
    /// Errors: [`Error::Corrupt`] if an invariant does not hold (a bug).
    pub fn encode(&self, path: &Path, workspace_id: &str) -> Result<Vec<u8>> {
        let file = ConflictsFile::encode(self, path, workspace_id)?;
        Ok(file.contents().at(path)?.into_owned())
    }

    /// Returns a queue of `cases` (schema 1 until a correction).
    pub fn of(cases: Vec<Case>) -> ConflictQueue {
        ConflictQueue { cases, schema_version: CONFLICTS_SCHEMA_VERSION }
    }

    /// The schema version this queue is written with: the one it was read
    /// with, at least [`CONFLICTS_SCHEMA_VERSION`], and
    /// [`CONFLICTS_SCHEMA_CORRECTED`] when a candidate holds what a
    /// correction leaves.
    pub fn written_version(&self) -> u32 {
        let corrected =
            self.cases.iter().any(|case| case.candidates.iter().any(Candidate::holds_correction));
        let floor = if corrected { CONFLICTS_SCHEMA_CORRECTED } else { CONFLICTS_SCHEMA_VERSION };
        self.schema_version.max(floor)
    }

    /// Sorts cases into canonical order.
    pub fn sort(&mut self) {
        self.cases.sort_by(|a, b| (&a.memory_key, a.revision).cmp(&(&b.memory_key, b.revision)));
    }

    /// Returns the cases of `memory_key`, in canonical order.
    pub fn domain(&self, memory_key: &str) -> Vec<Case> {
        self.cases.iter().filter(|c| c.memory_key == memory_key).cloned().collect()
    }

    /// Replaces the cases of `memory_key` by `cases` (which must all belong
    /// to it) and restores canonical order; every other case is kept as it
    /// is.
    pub fn replace_domain(&mut self, memory_key: &str, cases: Vec<Case>) {
        self.cases.retain(|c| c.memory_key != memory_key);
        self.cases.extend(cases);
        self.sort();
    }

    /// Returns the case with `conflict_id`.
    pub fn get(&self, conflict_id: &str) -> Option<&Case> {
        self.cases.iter().find(|c| c.conflict_id == conflict_id)
    }

    /// Checks every invariant; the message names the case.
    pub(crate) fn validate(&self, workspace_id: &str) -> std::result::Result<(), Damage> {
        match self.problems(workspace_id).into_iter().next() {
            Some(finding) => Err(Damage::record(finding.message)),
            None => Ok(()),
        }
    }

    /// Returns every violated invariant, each message naming the case.
    pub(crate) fn problems(&self, workspace_id: &str) -> Vec<Finding> {
        problems_of(&self.cases, workspace_id)
    }
}

/// Returns every violated invariant among `cases`, each message naming the
/// case. Every check but the uniqueness of conflict ids stays inside one
/// memory key, so the cases of whole domains can be checked apart from the
/// rest of the queue.
fn problems_of(cases: &[Case], workspace_id: &str) -> Vec<Finding> {
    let mut problems = Vec::new();
    let mut ids = HashSet::new();
    let mut revisions = HashSet::new();
    let mut open: BTreeSet<&str> = BTreeSet::new();
    for case in cases {
        if !ids.insert(case.conflict_id.as_str()) {
            problems.push(Finding {
                subject: Some(case.conflict_id.clone()),
                message: format!("conflict id {} appears twice", case.conflict_id),
            });
        }
        if !revisions.insert((case.memory_key.as_str(), case.revision)) {
            problems.push(Finding {
                subject: Some(case.conflict_id.clone()),
                message: format!(
                    "memory_key {} has two cases at revision {}",
                    case.memory_key, case.revision
                ),
            });
        }
        if case.is_open() && !open.insert(case.memory_key.as_str()) {
            problems.push(Finding {
                subject: Some(case.conflict_id.clone()),
                message: format!("memory_key {} has more than one open case", case.memory_key),
            });
        }
        if let Err(problem) = case.check(workspace_id) {
            problems.push(Finding {
                subject: Some(case.conflict_id.clone()),
                message: problem.to_string(),
            });
        }
    }
    problems
}

/// conflicts.json as stored ([`crate::store::state_file`]).
pub(crate) type ConflictsFile = StateFile<Case>;

/// What a writer needs of a case without decoding it. Ordered as cases are
/// in the file: by (memory_key, revision).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct CaseHead {
    /// The conflict domain.
    pub(crate) memory_key: String,
    /// The case's revision in its domain.
    pub(crate) revision: u32,
    /// The case's id.
    pub(crate) conflict_id: String,
}

impl Record for Case {
    type Head = CaseHead;
    const ARRAY: &'static str = "cases";
    const SCHEMA_VERSION: u32 = CONFLICTS_SCHEMA_VERSION;
    const SCHEMA_VERSIONS: &'static [u32] = &[CONFLICTS_SCHEMA_VERSION, CONFLICTS_SCHEMA_CORRECTED];

    fn head(&self) -> CaseHead {
        CaseHead {
            memory_key: self.memory_key.clone(),
            revision: self.revision,
            conflict_id: self.conflict_id.clone(),
        }
    }

    const LAYOUT_CACHE: Option<&'static str> = Some(CONFLICTS_LAYOUT_FILE);

    /// `<revision> <conflict_id> <memory_key>` (neither an id nor a memory
    /// key holds a space or a newline).
    fn head_text(head: &CaseHead) -> Option<String> {
        let CaseHead { memory_key, revision, conflict_id } = head;
        let plain = |text: &str| !text.contains([' ', '\n']);
        (plain(memory_key) && plain(conflict_id))
            .then(|| format!("{revision} {conflict_id} {memory_key}"))
    }

    fn head_of_text(text: &str) -> Option<CaseHead> {
        let mut fields = text.splitn(3, ' ');
        let revision = fields.next()?.parse().ok()?;
        let conflict_id = fields.next()?.to_owned();
        let memory_key = fields.next()?.to_owned();
        Some(CaseHead { memory_key, revision, conflict_id })
    }

    /// Reads the three fields in one pass over the record: `conflict_id`
    /// after the candidates, `memory_key` from there (fields are written
    /// in sorted order), `revision` back from the end (after the observed
    /// fact ids, which a large domain has thousands of).
    fn read_head(encoded: &[u8]) -> Option<CaseHead> {
        let (conflict_id, rest) = field_at(encoded, "conflict_id")?;
        let (memory_key, rest) = field_at(&encoded[rest..], "memory_key")?;
        let tail = &encoded[rest..];
        let revision = memchr::memmem::rfind(tail, b"\n      \"revision\": ")?;
        Some(CaseHead {
            memory_key: serde_json::from_slice(memory_key).ok()?,
            revision: serde_json::from_slice(field(&tail[revision..], "revision")?).ok()?,
            conflict_id: serde_json::from_slice(conflict_id).ok()?,
        })
    }

    fn id(head: &CaseHead) -> &str {
        &head.conflict_id
    }

    fn domain(head: &CaseHead) -> Option<&str> {
        Some(&head.memory_key)
    }

    fn schema_needed(&self) -> u32 {
        if self.candidates.iter().any(Candidate::holds_correction) {
            CONFLICTS_SCHEMA_CORRECTED
        } else {
            CONFLICTS_SCHEMA_VERSION
        }
    }

    fn problem(records: &[Case], workspace_id: &str) -> Option<String> {
        problems_of(records, workspace_id).into_iter().next().map(|finding| finding.message)
    }
}

impl ConflictsFile {
    /// Encodes `queue` (checking every invariant) as the file it is
    /// written to.
    ///
    /// Errors: [`Error::Corrupt`] if an invariant does not hold (a bug).
    pub(crate) fn encode(
        queue: &ConflictQueue,
        path: &Path,
        workspace_id: &str,
    ) -> Result<ConflictsFile> {
        queue.validate(workspace_id).map_err(|msg| {
            Error::corrupt(Location::file(path), Damage::RefusedSave(Box::new(msg)))
        })?;
        let mut cases: Vec<&Case> = queue.cases.iter().collect();
        cases.sort_by(|a, b| (&a.memory_key, a.revision).cmp(&(&b.memory_key, b.revision)));
        let mut out = Encoder::<Case>::new(workspace_id, queue.written_version(), cases.len(), 0);
        for case in &cases {
            out.record(*case);
        }
        Ok(StateFile::of_encoding(out.finish(), &cases))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::state_file::Body;
    use crate::{DistillOptions, NewFact, Resolution, Stamp, Workspace};

    /// A queue with an open case and a resolved one, as a workspace keeps it.
    fn queue() -> (ConflictQueue, String) {
        let project = tempfile::tempdir().unwrap();
        let ws = Workspace::open(project.path(), None).unwrap();
        ws.init().unwrap();
        for key in ["db.engine", "tooling.package-manager"] {
            for value in ["A", "B"] {
                ws.remember(NewFact {
                    kind: Some("decision".into()),
                    importance: Some(4),
                    memory_key: Some(key.into()),
                    recorded_at: Some("2026-01-05T09:00:00Z".into()),
                    ..NewFact::new(format!("Use {value}."))
                })
                .unwrap();
            }
        }
        let as_of = Stamp::parse("2026-03-01T00:00:00Z").unwrap();
        ws.distill(&DistillOptions::new().as_of(as_of)).unwrap();
        let case = ws.conflicts().unwrap().cases.remove(0);
        ws.resolve(Resolution {
            conflict_id: case.conflict_id.clone(),
            candidate_id: case.candidates[1].candidate_id.clone(),
            expected_revision: i64::from(case.revision),
            actor: "Ada <ada@example.com>".into(),
            rationale: "what CI uses".into(),
            event_id: "review:1".into(),
            resolved_at: None,
        })
        .unwrap();
        (ws.conflicts().unwrap(), ws.workspace_id().to_owned())
    }

    #[test]
    fn a_known_valid_queue_reads_back_its_layout_and_heads() {
        let (queue, workspace_id) = queue();
        assert_eq!(queue.cases.iter().filter(|c| c.is_open()).count(), 1);
        let path = Path::new("conflicts.json");
        let file = ConflictsFile::encode(&queue, path, &workspace_id).unwrap();
        let bytes = file.contents().unwrap().into_owned();
        let read = ConflictsFile::known_valid(Body::Held(bytes), String::new(), &workspace_id)
            .unwrap()
            .expect("the layout of an encoding is read back");
        let heads: Vec<CaseHead> = queue.cases.iter().map(Case::head).collect();
        assert_eq!(read.heads().cloned().collect::<Vec<_>>(), heads);
        assert_eq!(read.records(path, |_| true).unwrap(), queue.cases);
    }

    #[test]
    fn a_cached_layout_gives_the_layout_read_and_nothing_else_is_taken() {
        let (queue, workspace_id) = queue();
        let path = Path::new("conflicts.json");
        let file = ConflictsFile::encode(&queue, path, &workspace_id).unwrap();
        let bytes = file.contents().unwrap().into_owned();
        let lines = file.layout_lines().expect("cases' layouts are cached");
        let laid = |lines: &[crate::store::layout_cache::Line], bytes: &[u8]| {
            ConflictsFile::with_layout(
                Body::Held(bytes.to_vec()),
                String::new(),
                &workspace_id,
                lines,
            )
            .unwrap()
            .ok()
        };
        let read = laid(&lines, &bytes).expect("the encoder's layout is taken");
        let heads: Vec<CaseHead> = queue.cases.iter().map(Case::head).collect();
        assert_eq!(read.heads().cloned().collect::<Vec<_>>(), heads);
        assert_eq!(read.records(path, |_| true).unwrap(), queue.cases);
        // A layout that does not tile the file, or out of order, is not.
        let mut shifted = lines.clone();
        shifted[1].start += 1;
        let mut swapped = lines.clone();
        swapped.swap(0, 1);
        let longer = [&bytes[..], b" "].concat();
        assert!(laid(&shifted, &bytes).is_none());
        assert!(laid(&swapped, &bytes).is_none());
        assert!(laid(&lines[..1], &bytes).is_none());
        assert!(laid(&lines, &longer).is_none());
        let mut garbled = lines.clone();
        garbled[0].head = "x conflict-1 db.engine".into();
        assert!(laid(&garbled, &bytes).is_none());
    }
}
