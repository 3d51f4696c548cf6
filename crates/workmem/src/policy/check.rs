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
//!   theirs; a challenger's wording is the one the policy picks (highest
//!   importance, then newest, then largest id), an incumbent's one of them;
//! - a case observes only facts of its memory key;
//! - a superseded case was superseded by something: a later case of its
//!   domain, facts of its key it did not observe, or another active value;
//! - a decision's outcome is held: the entry it made active exists, and a
//!   revision that replaced it came from a later decision or from newer
//!   evidence, never the candidate the decision rejected with no new fact
//!   (unless the domain is back under review).

use std::collections::{HashMap, HashSet};

use crate::model::canon;
use crate::model::fact::Fact;
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::store::Finding;
use crate::store::conflict_queue::{Candidate, Case, CaseStatus, ConflictQueue};
use crate::store::curated_state::{CuratedState, Entry};
use crate::store::journal::Adjudication;

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
/// id) and the decisions of the audit stream (`records`). Evidence that is
/// not in the log is reported by the caller, and skipped here.
pub(crate) fn check(
    facts: &HashMap<&str, &Fact>,
    state: Option<&CuratedState>,
    queue: Option<&ConflictQueue>,
    records: &[Adjudication],
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
            check_superseded(case, queue, state, &observed_now, &mut out.conflicts);
        }
        if let Some(state) = state {
            check_decisions_held(state, queue, records, &mut out.curated);
        }
    }
    out
}

/// The evidence facts of `ids` found in the log, in id order.
fn evidence<'f>(ids: &IdList, facts: &HashMap<&str, &'f Fact>) -> Vec<&'f Fact> {
    ids.iter().filter_map(|id| facts.get(id).copied()).collect()
}

/// Whether `fact` states the value `(kind, memory_key, normal)`.
fn states(fact: &Fact, kind: crate::Kind, memory_key: Option<&str>, normal: &str) -> bool {
    fact.kind == kind
        && fact.memory_key.as_deref() == memory_key
        && canon::normal_form(&fact.content) == normal
}

/// The earliest and latest `recorded_at` of `facts` (non-empty).
fn span<'f>(facts: &[&'f Fact]) -> (&'f Stamp, &'f Stamp) {
    let first = facts.iter().map(|f| &f.recorded_at).min_by_key(|s| s.instant());
    let last = facts.iter().map(|f| &f.recorded_at).max_by_key(|s| s.instant());
    (first.expect("non-empty"), last.expect("non-empty"))
}

fn check_entry(entry: &Entry, facts: &HashMap<&str, &Fact>, out: &mut Vec<Finding>) {
    let found = evidence(&entry.evidence_ids, facts);
    if found.is_empty() {
        return;
    }
    let normal = canon::normal_form(&entry.content);
    let key = entry.memory_key.as_deref();
    for fact in found.iter().filter(|f| !states(f, entry.kind, key, &normal)) {
        out.push(finding(
            &entry.key,
            format!(
                "entry {} cites fact {}, which states another value (kind, memory key or wording)",
                entry.key, fact.fact_id
            ),
        ));
    }
    if found.len() < entry.evidence_ids.len() {
        // Dates are checked only against the whole evidence.
        return;
    }
    let (first, last) = span(&found);
    if entry.first_seen.instant() != first.instant() || entry.last_seen.instant() != last.instant()
    {
        out.push(finding(
            &entry.key,
            format!(
                "entry {} spans {} to {}, but its evidence facts were recorded from {first} to {last}",
                entry.key, entry.first_seen, entry.last_seen
            ),
        ));
    }
}

fn check_case(case: &Case, facts: &HashMap<&str, &Fact>, out: &mut Vec<Finding>) {
    let id = &case.conflict_id;
    for fact_id in &case.observed_fact_ids {
        if let Some(fact) = facts.get(fact_id)
            && fact.memory_key.as_deref() != Some(case.memory_key.as_str())
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

fn check_candidate(
    case: &Case,
    candidate: &Candidate,
    facts: &HashMap<&str, &Fact>,
    out: &mut Vec<Finding>,
) {
    let found = evidence(&candidate.evidence_ids, facts);
    if found.is_empty() {
        return;
    }
    let (id, cid) = (&case.conflict_id, &candidate.candidate_id);
    let normal = canon::normal_form(&candidate.content);
    for fact in found.iter().filter(|f| !states(f, candidate.kind, Some(&case.memory_key), &normal))
    {
        out.push(finding(
            id,
            format!(
                "case {id} candidate {cid} cites fact {}, which states another value",
                fact.fact_id
            ),
        ));
    }
    if found.len() < candidate.evidence_ids.len() {
        return;
    }
    let (first, last) = span(&found);
    let importance = found.iter().map(|f| f.importance).max().unwrap_or(1);
    let mut wrong = Vec::new();
    if candidate.first_seen.instant() != first.instant() {
        wrong.push("first_seen");
    }
    if candidate.last_seen.instant() != last.instant() {
        wrong.push("last_seen");
    }
    if candidate.maximum_importance != importance {
        wrong.push("maximum_importance");
    }
    let worded = if candidate.incumbent {
        found.iter().any(|f| f.content == candidate.content)
    } else {
        // The policy's pick: highest importance, then newest, then largest id.
        found
            .iter()
            .max_by(|a, b| {
                (a.importance, a.recorded_at.instant(), &a.fact_id).cmp(&(
                    b.importance,
                    b.recorded_at.instant(),
                    &b.fact_id,
                ))
            })
            .is_some_and(|f| f.content == candidate.content)
    };
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
    facts: &HashMap<&str, &'f Fact>,
    queue: &ConflictQueue,
) -> HashMap<&'f str, HashSet<&'f str>> {
    let domains: HashSet<&str> = queue.cases.iter().map(|c| c.memory_key.as_str()).collect();
    let mut out: HashMap<&str, HashSet<&str>> = HashMap::new();
    for fact in facts.values() {
        if let Some(key) = fact.memory_key.as_deref()
            && domains.contains(key)
        {
            out.entry(key).or_default().insert(fact.fact_id.as_str());
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
    out: &mut Vec<Finding>,
) {
    if case.status != CaseStatus::Superseded {
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

/// Every decision that closed a case still holds: the entry it made
/// active exists, and what replaced it came from a later decision or from
/// evidence newer than the chosen value, never the rejected candidate
/// again with no new fact. A domain back under review is exempt.
fn check_decisions_held(
    state: &CuratedState,
    queue: &ConflictQueue,
    records: &[Adjudication],
    out: &mut Vec<Finding>,
) {
    let entries: HashMap<&str, &Entry> =
        state.entries.iter().map(|e| (e.key.as_str(), e)).collect();
    let decided: HashSet<&str> = records.iter().map(|r| r.event_id.as_str()).collect();
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
        let under_review = queue.cases.iter().any(|c| {
            c.memory_key == case.memory_key
                && c.status == CaseStatus::Open
                && c.revision > case.revision
        });
        if under_review {
            continue;
        }
        let id = &case.conflict_id;
        let Some(chosen) = entries.get(result) else {
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
        let next_normal = canon::normal_form(&next.content);
        let rejected_again = case.candidates.iter().any(|c| {
            c.candidate_id != selected.candidate_id
                && c.kind == next.kind
                && canon::normal_form(&c.content) == next_normal
                && next.evidence_ids.iter().all(|e| c.evidence_ids.contains(e))
        });
        let newer = next.last_seen.instant() > selected.last_seen.instant();
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
