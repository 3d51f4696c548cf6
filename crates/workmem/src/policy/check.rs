//! The checks of what the policy computed (docs/trust.md): a curated state
//! and a conflict queue held against the facts of the log and the
//! decisions of the audit stream. Every field the policy derives from
//! facts is recomputed from them; every status a case or an entry has must
//! have the facts or the decision that gave it. Pure: the workspace reads
//! the files, `verify` and the check of state this clone did not write
//! report what this returns.
//!
//! What a valid state satisfies, beyond the load-time invariants:
//! - an entry's evidence facts all have its kind, memory key and normal
//!   form; its wording is the content of one of them; its `first_seen` and
//!   `last_seen` are their earliest and latest `recorded_at`;
//! - a candidate's evidence facts have its kind, the case's memory key and
//!   its normal form; its dates, occurrences and highest importance are
//!   theirs; its wording is one of theirs;
//! - a case observes only facts of its memory key;
//! - a superseded case was superseded by something: a later case of its
//!   domain, facts of its key it did not observe, another active value,
//!   or a correction that retracted a fact it observed;
//! - a candidate a correction changed is checked as detected: its
//!   retracted evidence counts with its evidence for its dates, highest
//!   importance and wording (docs/corrections.md);
//! - a decision's outcome is held: the entry it made active exists, and a
//!   revision that replaced it came from a later decision or from newer
//!   evidence, never the candidate the decision rejected with no new fact
//!   (unless the domain is back under review).

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;
use xxhash_rust::xxh3::xxh3_64;

use crate::model::canon;
use crate::model::fact::{Fact, Kind};
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::store::Finding;
use crate::store::conflict_queue::{Candidate, Case, CaseStatus, ConflictQueue};
use crate::store::curated_state::{CuratedState, Entry};
use crate::store::journal::Adjudication;

/// What the checks need of one fact: a few dozen bytes instead of the
/// whole record, so that holding every fact of a large log stays small.
/// Texts are kept as hashes (xxh3): the checks only compare them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FactDigest {
    kind: Kind,
    importance: u8,
    /// Its memory key, as an index into [`Facts`]' keys.
    key: Option<u32>,
    at: Timestamp,
    /// The hash of its content.
    content: u64,
    /// The hash of its content's normal form.
    normal: u64,
    /// The hash of the whole record: two lines of one id that differ.
    record: u64,
    /// Where it was read: the caller's number of its file, and its line.
    place: (u32, u32),
}

impl FactDigest {
    /// Returns whether `text` is this fact's content.
    pub(crate) fn has_content(&self, text: &str) -> bool {
        self.content == xxh3_64(text.as_bytes())
    }

    /// Returns where it was read, as given to [`Facts::digest`].
    pub(crate) fn place(&self) -> (u32, u32) {
        self.place
    }
}

/// The facts of a log as [`FactDigest`]s, sorted by id once
/// [`Facts::seal`] ran (a sorted list: a hash table of a million ids costs
/// twice the memory).
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// The tombstones read: fact id, the redact record's event id, the
    /// replaced line's SHA-256.
    pub(crate) tombstones: Vec<(String, String, String)>,
    entries: Vec<(Box<str>, FactDigest)>,
    keys: Vec<String>,
    key_index: HashMap<String, u32>,
}

impl Facts {
    /// Returns the digest of `fact`, read at `place` (a file number of the
    /// caller's and a line).
    pub(crate) fn digest(&mut self, fact: &Fact, place: (u32, u32)) -> FactDigest {
        let key = fact.memory_key.as_ref().map(|key| {
            if let Some(&index) = self.key_index.get(key) {
                return index;
            }
            let index = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
            self.keys.push(key.clone());
            self.key_index.insert(key.clone(), index);
            index
        });
        let record = serde_json::to_vec(fact).map_or(0, |bytes| xxh3_64(&bytes));
        if let (Some(by), Some(hash)) = (&fact.redacted_by, &fact.line_sha256) {
            self.tombstones.push((fact.fact_id.clone(), by.clone(), hash.clone()));
        }
        FactDigest {
            kind: fact.kind,
            importance: fact.importance,
            key,
            at: fact.recorded_at.instant(),
            content: xxh3_64(fact.content.as_bytes()),
            normal: xxh3_64(canon::normal_form(&fact.content).as_bytes()),
            record,
            place,
        }
    }

    /// Adds a fact read under `id`, in reading order.
    pub(crate) fn push(&mut self, id: &str, digest: FactDigest) {
        self.entries.push((id.into(), digest));
    }

    /// Sorts the facts by id and keeps the first read of each id; returns
    /// the later records of an id that differ from its first (a duplicate
    /// id with other content), with their ids.
    pub(crate) fn seal(&mut self) -> Vec<(Box<str>, FactDigest)> {
        self.entries.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.place.cmp(&b.1.place)));
        let mut differing = Vec::new();
        let mut first = 0;
        for i in 1..self.entries.len() {
            if self.entries[i].0 != self.entries[first].0 {
                first = i;
            } else if self.entries[i].1.record != self.entries[first].1.record {
                differing.push(self.entries[i].clone());
            }
        }
        self.entries.dedup_by(|later, earlier| later.0 == earlier.0);
        self.entries.shrink_to_fit();
        differing
    }

    /// Returns the fact `id`, if the log holds it.
    pub(crate) fn get(&self, id: &str) -> Option<&FactDigest> {
        self.entries.binary_search_by(|(e, _)| (**e).cmp(id)).ok().map(|i| &self.entries[i].1)
    }

    /// Returns whether the log holds `id`.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// Takes the facts `ids` out of what the policy checks look at.
    pub(crate) fn remove_all(&mut self, ids: &HashSet<&str>) {
        self.entries.retain(|(id, _)| !ids.contains(&**id));
    }

    fn key(&self, digest: &FactDigest) -> Option<&str> {
        digest.key.and_then(|k| self.keys.get(k as usize)).map(String::as_str)
    }
}

/// What [`check`] found, by file.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Problems of curated.json.
    pub(crate) curated: Vec<Finding>,
    /// Problems of conflicts.json.
    pub(crate) conflicts: Vec<Finding>,
}

fn finding(subject: &str, message: String) -> Finding {
    Finding { subject: Some(subject.to_owned()), message }
}

/// Holds `state` and `queue` against the facts of the log (`facts`, by
/// id), the decisions of the audit stream (`records`) and the facts a
/// retract or redact record names (`corrected`; the corrections stream is
/// checked by its caller). Evidence that is not in the log is reported by
/// the caller, and skipped here.
pub(crate) fn check(
    facts: &Facts,
    state: Option<&CuratedState>,
    queue: Option<&ConflictQueue>,
    records: &[Adjudication],
    corrected: &HashSet<&str>,
) -> Findings {
    let mut out = Findings::default();
    if let Some(state) = state {
        for entry in &state.entries {
            check_entry(entry, facts, &mut out.curated);
        }
    }
    if let Some(queue) = queue {
        let observed_now = observed_by_domain(facts, queue);
        for case in &queue.cases {
            check_case(case, facts, &mut out.conflicts);
            check_superseded(case, queue, state, &observed_now, corrected, &mut out.conflicts);
        }
        if let Some(state) = state {
            check_decisions_held(state, queue, records, &mut out.curated);
        }
    }
    out
}

/// The evidence facts of `ids` found in the log, in id order, with their
/// ids.
fn evidence<'f, 'i>(ids: &'i IdList, facts: &'f Facts) -> Vec<(&'i str, &'f FactDigest)> {
    ids.iter().filter_map(|id| Some((id, facts.get(id)?))).collect()
}

/// Whether `fact` states the value `(kind, memory_key, normal)`.
fn states(
    facts: &Facts,
    fact: &FactDigest,
    kind: Kind,
    memory_key: Option<&str>,
    normal: u64,
) -> bool {
    fact.kind == kind && facts.key(fact) == memory_key && fact.normal == normal
}

/// The earliest and latest `recorded_at` of `facts` (non-empty).
fn span(facts: &[(&str, &FactDigest)]) -> (Timestamp, Timestamp) {
    let first = facts.iter().map(|(_, f)| f.at).min();
    let last = facts.iter().map(|(_, f)| f.at).max();
    (first.expect("non-empty"), last.expect("non-empty"))
}

fn normal_hash(text: &str) -> u64 {
    xxh3_64(canon::normal_form(text).as_bytes())
}

fn check_entry(entry: &Entry, facts: &Facts, out: &mut Vec<Finding>) {
    let found = evidence(&entry.evidence_ids, facts);
    if found.is_empty() {
        return;
    }
    let normal = normal_hash(&entry.content);
    let key = entry.memory_key.as_deref();
    for (id, _) in found.iter().filter(|(_, f)| !states(facts, f, entry.kind, key, normal)) {
        out.push(finding(
            &entry.key,
            format!(
                "entry {} cites fact {id}, which states another value (kind, memory key or wording)",
                entry.key
            ),
        ));
    }
    if found.len() < entry.evidence_ids.len() {
        // Dates are checked only against the whole evidence.
        return;
    }
    let (first, last) = span(&found);
    if entry.first_seen.instant() != first || entry.last_seen.instant() != last {
        out.push(finding(
            &entry.key,
            format!(
                "entry {} spans {} to {}, but its evidence facts were recorded from {} to {}",
                entry.key,
                entry.first_seen,
                entry.last_seen,
                Stamp::from_timestamp(first),
                Stamp::from_timestamp(last)
            ),
        ));
    }
}

fn check_case(case: &Case, facts: &Facts, out: &mut Vec<Finding>) {
    let id = &case.conflict_id;
    for fact_id in &case.observed_fact_ids {
        if let Some(fact) = facts.get(fact_id)
            && facts.key(fact) != Some(case.memory_key.as_str())
        {
            out.push(finding(
                id,
                format!(
                    "case {id} observes fact {fact_id}, which is not a fact of {}",
                    case.memory_key
                ),
            ));
        }
    }
    for candidate in &case.candidates {
        check_candidate(case, candidate, facts, out);
    }
}

fn check_candidate(case: &Case, candidate: &Candidate, facts: &Facts, out: &mut Vec<Finding>) {
    let detected = candidate.as_detected();
    let candidate: &Candidate = &detected;
    let found = evidence(&candidate.evidence_ids, facts);
    if found.is_empty() {
        return;
    }
    let (id, cid) = (&case.conflict_id, &candidate.candidate_id);
    let normal = normal_hash(&candidate.content);
    for (fact_id, _) in found
        .iter()
        .filter(|(_, f)| !states(facts, f, candidate.kind, Some(&case.memory_key), normal))
    {
        out.push(finding(
            id,
            format!("case {id} candidate {cid} cites fact {fact_id}, which states another value"),
        ));
    }
    if found.len() < candidate.evidence_ids.len() {
        return;
    }
    let (first, last) = span(&found);
    let importance = found.iter().map(|(_, f)| f.importance).max().unwrap_or(1);
    let mut wrong = Vec::new();
    if candidate.first_seen.instant() != first {
        wrong.push("first_seen");
    }
    if candidate.last_seen.instant() != last {
        wrong.push("last_seen");
    }
    if candidate.maximum_importance != importance {
        wrong.push("maximum_importance");
    }
    // The wording of one of its facts: a tie's challenger has the policy's
    // pick (highest importance, then newest, then largest id), but an
    // incumbent, and a value a merge put under review, keep the wording
    // their entry had, which later facts of the same normal form did not
    // change. Another wording would change the candidate id.
    let worded = found.iter().any(|(_, f)| f.has_content(&candidate.content));
    if !worded {
        wrong.push("content");
    }
    if !wrong.is_empty() {
        out.push(finding(
            id,
            format!(
                "case {id} candidate {cid} does not match its evidence facts in {}",
                wrong.join(", ")
            ),
        ));
    }
}

/// The observed fact ids each domain of `queue` would have now: every
/// fact of its key in the log.
fn observed_by_domain<'f>(
    facts: &'f Facts,
    queue: &ConflictQueue,
) -> HashMap<&'f str, HashSet<&'f str>> {
    let domains: HashSet<&str> = queue.cases.iter().map(|c| c.memory_key.as_str()).collect();
    let mut out: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (id, fact) in &facts.entries {
        if let Some(key) = facts.key(fact)
            && domains.contains(key)
        {
            out.entry(key).or_default().insert(id);
        }
    }
    out
}

/// A superseded case needs a cause: a later case of its domain, a fact of
/// its key it did not observe, or an active value other than the one it
/// saw. Without one, the tie it records still stands and was hidden.
fn check_superseded(
    case: &Case,
    queue: &ConflictQueue,
    state: Option<&CuratedState>,
    observed_now: &HashMap<&str, HashSet<&str>>,
    corrected: &HashSet<&str>,
    out: &mut Vec<Finding>,
) {
    if case.status != CaseStatus::Superseded {
        return;
    }
    // A correction that took a fact it observed (verify finds it at the
    // case's superseded_at).
    if case.candidates.iter().any(Candidate::holds_correction)
        || (!corrected.is_empty() && case.observed_fact_ids.iter().any(|id| corrected.contains(id)))
    {
        return;
    }
    let later =
        queue.cases.iter().any(|c| c.memory_key == case.memory_key && c.revision > case.revision);
    let unobserved = observed_now
        .get(case.memory_key.as_str())
        .is_some_and(|now| now.iter().any(|id| !case.observed_fact_ids.contains(id)));
    let active = state.and_then(|s| {
        s.entries
            .iter()
            .find(|e| e.is_active() && e.memory_key.as_deref() == Some(case.memory_key.as_str()))
    });
    let moved = active.map(|e| e.key.as_str()) != case.active_entry_key.as_deref();
    if !(later || unobserved || moved) {
        let id = &case.conflict_id;
        out.push(finding(
            id,
            format!(
                "case {id} is superseded, but nothing superseded it: no later case of {}, no fact \
                 it did not observe, the same active value; its tie still waits for a person",
                case.memory_key
            ),
        ));
    }
}

/// The revision of `memory_key` that holds the value of `candidate_id`,
/// the latest when several do: where a decision's value is after a merge
/// renumbered it, placing it after the other side's revision
/// (docs/sharing.md, "diverged, a side without a value").
fn renumbered<'s>(
    state: &'s CuratedState,
    memory_key: &str,
    candidate_id: &str,
) -> Option<&'s Entry> {
    state
        .entries
        .iter()
        .filter(|e| !e.is_contested() && e.memory_key.as_deref() == Some(memory_key))
        .filter(|e| e.candidate_id().as_deref() == Some(candidate_id))
        .max_by_key(|e| e.revision)
}

/// Every decision that closed a case still holds: the entry it made
/// active exists (or its value, renumbered by a merge), and what replaced
/// it came from a later decision or from evidence newer than the chosen
/// value, never the rejected candidate again with no new fact. A domain
/// back under review is exempt.
fn check_decisions_held(
    state: &CuratedState,
    queue: &ConflictQueue,
    records: &[Adjudication],
    out: &mut Vec<Finding>,
) {
    let entries: HashMap<&str, &Entry> =
        state.entries.iter().map(|e| (e.key.as_str(), e)).collect();
    let decided: HashSet<&str> = records.iter().map(|r| r.event_id.as_str()).collect();
    // The values in dispute after a merge, by candidate id.
    let contested: HashSet<String> =
        state.entries.iter().filter(|e| e.is_contested()).filter_map(Entry::candidate_id).collect();
    for case in queue.cases.iter().filter(|c| c.status == CaseStatus::Resolved) {
        let (Some(result), Some(selected), Some(event)) = (
            case.resulting_active_entry_key.as_deref(),
            case.selected_candidate_id.as_deref().and_then(|id| case.candidate(id)),
            case.resolution_event_id.as_deref(),
        ) else {
            continue;
        };
        // A case without its record is reported with the audit stream.
        if !decided.contains(event) {
            continue;
        }
        // Back under review (a later open case, or the chosen value in
        // dispute after a merge): exempt.
        let under_review = contested.contains(&selected.candidate_id)
            || queue.cases.iter().any(|c| {
                c.memory_key == case.memory_key
                    && c.status == CaseStatus::Open
                    && c.revision > case.revision
            });
        if under_review {
            continue;
        }
        // A later decision of the domain, on values a merge put under
        // review, may have replaced a chain this decision was part of.
        let decided_again = queue.cases.iter().any(|c| {
            c.memory_key == case.memory_key
                && c.status == CaseStatus::Resolved
                && c.revision > case.revision
                && c.resolution_event_id.as_deref().is_some_and(|e| decided.contains(e))
        });
        let id = &case.conflict_id;
        let renumbered = || renumbered(state, &case.memory_key, &selected.candidate_id);
        let Some(chosen) = entries.get(result).copied().or_else(renumbered) else {
            if decided_again {
                continue;
            }
            out.push(finding(
                result,
                format!(
                    "decision {event} on case {id} made entry {result} the value of {}, and \
                     curated.json no longer holds it",
                    case.memory_key
                ),
            ));
            continue;
        };
        let Some(next) = chosen.superseded_by.as_deref().and_then(|k| entries.get(k)) else {
            continue;
        };
        let by_decision = queue.cases.iter().any(|c| {
            c.status == CaseStatus::Resolved
                && c.revision > case.revision
                && c.memory_key == case.memory_key
                && c.resulting_active_entry_key.as_deref() == Some(next.key.as_str())
        });
        if by_decision {
            continue;
        }
        // The next value as the policy promoted it: with the facts a
        // correction took since, whose dates no longer count in its own.
        let next_normal = canon::normal_form(&next.content);
        let rejected_again = case.candidates.iter().any(|c| {
            c.candidate_id != selected.candidate_id
                && c.kind == next.kind
                && canon::normal_form(&c.content) == next_normal
                && next
                    .evidence_ids
                    .iter()
                    .chain(next.taken_ids())
                    .all(|e| c.evidence_ids.contains(e))
        });
        let newer = next.last_seen.instant() > selected.last_seen.instant()
            || next.taken_ids().next().is_some();
        if rejected_again || !newer {
            out.push(finding(
                &next.key,
                format!(
                    "entry {} replaced the value decision {event} chose for {} without newer \
                     evidence{}",
                    next.key,
                    case.memory_key,
                    if rejected_again {
                        " (it is the candidate that decision rejected)"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
}
