//! The plan of a correction (docs/corrections.md, "The derived state"):
//! from the entries and cases of the domains and unkeyed entries a
//! retraction or a restore touches, the record and the facts retracted
//! after it, the entries and cases after it. Pure: the workspace reads the
//! state and the facts, and writes the result through the journal.
//!
//! It never runs the policy: a retraction only moves facts out of the
//! evidence of what they were part of (recomputing counts, dates and
//! wording from what is left), marks an entry left with no evidence
//! `retracted` and supersedes an open case that rested on a fact it took;
//! a restore moves them back. The next distill re-judges the touched
//! domains.

use std::collections::{BTreeSet, HashMap};

use crate::model::canon;
use crate::model::fact::Fact;
use crate::model::stamp::Stamp;
use crate::policy::retractions::Retractions;
use crate::store::conflict_queue::{Candidate, Case, CaseStatus};
use crate::store::corrections::{Action, Correction};
use crate::store::curated_state::{Entry, Status};

/// The entries and cases a correction changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The entries changed, after (in the order given).
    pub(crate) entries: Vec<Entry>,
    /// The cases changed, after (in the order given).
    pub(crate) cases: Vec<Case>,
}

/// Returns the facts `record` makes count again or stop counting, given
/// which facts are retracted after it: for a retraction, the facts it
/// names (each retracted now); for a restore, those of the retraction it
/// undoes that no other retraction still names.
fn moved(record: &Correction, after: &Retractions) -> BTreeSet<String> {
    match record.action {
        Action::Retract | Action::Redact => {
            record.fact_ids.iter().filter(|id| after.is_retracted(id)).map(str::to_owned).collect()
        }
        Action::Restore => {
            record.fact_ids.iter().filter(|id| !after.is_retracted(id)).map(str::to_owned).collect()
        }
    }
}

/// Plans `record` (a retraction or a redaction taking facts out, or a
/// restore putting them back) over `entries` (whole keyed domains and
/// unkeyed entries) and `cases` (whole domains), with `after` the facts
/// retracted once the record is in the stream and `facts` every fact that
/// is or becomes evidence of one of `entries`. For a restore,
/// `retracted_at` is when the retraction it undoes was recorded. Returns
/// only what changes.
pub(crate) fn plan(
    record: &Correction,
    retracted_at: Option<&Stamp>,
    entries: &[Entry],
    cases: &[Case],
    after: &Retractions,
    facts: &HashMap<String, Fact>,
) -> Plan {
    let moved = moved(record, after);
    let mut plan = Plan::default();
    if moved.is_empty() {
        return plan;
    }
    match record.action {
        Action::Retract | Action::Redact => {
            for entry in entries {
                if let Some(changed) = take_from_entry(entry, &moved, facts) {
                    plan.entries.push(changed);
                }
            }
            for case in cases.iter().filter(|c| c.is_open()) {
                if let Some(changed) = supersede_case(case, &moved, &record.recorded_at) {
                    plan.cases.push(changed);
                }
            }
        }
        Action::Restore => {
            let at = retracted_at.map(Stamp::instant);
            // A domain that moved on since the retraction: a case was
            // detected after it (its facts are then judged by the next
            // distill like new evidence).
            let moved_on = |memory_key: &str| {
                cases.iter().any(|c| {
                    c.memory_key == memory_key && at.is_some_and(|t| c.detected_at.instant() > t)
                })
            };
            for entry in entries {
                let changed = if entry.memory_key.as_deref().is_some_and(moved_on) {
                    release_from_entry(entry, &moved)
                } else {
                    give_back_to_entry(entry, &moved, facts)
                };
                plan.entries.extend(changed);
            }
            let superseded_at = retracted_at.cloned();
            let reopen = Reopen { superseded_at: superseded_at.as_ref(), moved: &moved, after };
            plan.cases = reopen.cases(cases, &plan.entries, entries, moved_on);
            for case in cases.iter().filter(|c| moved_on(&c.memory_key)) {
                plan.cases.extend(release_from_case(case, &moved));
            }
        }
    }
    plan
}

/// `entry` with the facts of `moved` taken from its evidence, or `None`
/// when it cites none of them.
fn take_from_entry(
    entry: &Entry,
    moved: &BTreeSet<String>,
    facts: &HashMap<String, Fact>,
) -> Option<Entry> {
    if !entry.evidence_ids.iter().any(|id| moved.contains(id)) {
        return None;
    }
    let mut out = entry.clone();
    out.evidence_ids.move_to(&mut out.retracted_evidence_ids, |id| moved.contains(id));
    out.occurrences = out.evidence_ids.len() as u64;
    if out.evidence_ids.is_empty() {
        // Its dates stay those it had: the record of what it stood on.
        out.status = Status::Retracted;
    } else {
        restate(&mut out, facts);
    }
    Some(out)
}

/// `entry` with the facts of `moved` it lists as retracted evidence put
/// back, or `None` when it lists none of them. An entry a retraction made
/// `retracted` returns to the status it had: superseded when a revision
/// follows it, else active.
fn give_back_to_entry(
    entry: &Entry,
    moved: &BTreeSet<String>,
    facts: &HashMap<String, Fact>,
) -> Option<Entry> {
    if !entry.retracted_evidence_ids.iter().any(|id| moved.contains(id)) {
        return None;
    }
    let mut out = entry.clone();
    out.retracted_evidence_ids.move_to(&mut out.evidence_ids, |id| moved.contains(id));
    out.occurrences = out.evidence_ids.len() as u64;
    if out.is_retracted() {
        out.status = if out.superseded_by.is_some() { Status::Superseded } else { Status::Active };
    }
    restate(&mut out, facts);
    Some(out)
}

/// `entry` of a domain that moved on since the retraction a restore
/// undoes, with the facts of `moved` it lists as retracted evidence
/// released: they count again, judged by the next distill like new
/// evidence, and stay listed here (`released_evidence_ids`) as the record
/// of where they were, apart from the facts a later retraction takes,
/// which a restore of that one gives back. `None` when it lists none of
/// them. Its evidence, dates and status do not change.
fn release_from_entry(entry: &Entry, moved: &BTreeSet<String>) -> Option<Entry> {
    if !entry.retracted_evidence_ids.iter().any(|id| moved.contains(id)) {
        return None;
    }
    let mut out = entry.clone();
    out.retracted_evidence_ids.move_to(&mut out.released_evidence_ids, |id| moved.contains(id));
    Some(out)
}

/// The `case` of a domain that moved on with the facts of `moved` its
/// candidates list as retracted evidence released, as
/// [`release_from_entry`] does; `None` when it lists none of them.
fn release_from_case(case: &Case, moved: &BTreeSet<String>) -> Option<Case> {
    let mut out = case.clone();
    let mut changed = false;
    for candidate in &mut out.candidates {
        let released = &mut candidate.released_evidence_ids;
        changed |= candidate.retracted_evidence_ids.move_to(released, |id| moved.contains(id));
    }
    changed.then_some(out)
}

/// Computes an entry's dates again from its evidence, and its wording when
/// no evidence fact holds it any more: by the rule that worded it (an
/// unkeyed entry: the highest importance, then the earliest, then the
/// smallest id; a keyed revision: the highest importance, then the newest,
/// then the largest id). Every evidence fact has the entry's normal form,
/// so its key does not change. Facts missing from `facts` are skipped.
fn restate(entry: &mut Entry, facts: &HashMap<String, Fact>) {
    let found: Vec<(&str, &Fact)> =
        entry.evidence_ids.iter().filter_map(|id| Some((id, facts.get(id)?))).collect();
    let (Some(first), Some(last)) = (
        found.iter().map(|(_, f)| &f.recorded_at).min_by_key(|s| s.instant()),
        found.iter().map(|(_, f)| &f.recorded_at).max_by_key(|s| s.instant()),
    ) else {
        return;
    };
    entry.first_seen = first.clone();
    entry.last_seen = last.clone();
    if found.iter().any(|(_, f)| f.content == entry.content) {
        return;
    }
    let pick = if entry.memory_key.is_none() {
        found.iter().max_by(|(a_id, a), (b_id, b)| {
            (a.importance, std::cmp::Reverse(a.recorded_at.instant()), std::cmp::Reverse(*a_id))
                .cmp(&(
                    b.importance,
                    std::cmp::Reverse(b.recorded_at.instant()),
                    std::cmp::Reverse(*b_id),
                ))
        })
    } else {
        found.iter().max_by(|(a_id, a), (b_id, b)| {
            (a.importance, a.recorded_at.instant(), a_id).cmp(&(
                b.importance,
                b.recorded_at.instant(),
                b_id,
            ))
        })
    };
    if let Some((_, fact)) = pick {
        debug_assert_eq!(canon::normal_form(&fact.content), canon::normal_form(&entry.content));
        entry.content = fact.content.clone();
    }
}

/// The open `case` superseded at `at` with the facts of `moved` taken from
/// its candidates' evidence, or `None` when it neither cites nor observes
/// one of them.
fn supersede_case(case: &Case, moved: &BTreeSet<String>, at: &Stamp) -> Option<Case> {
    let cited = case.candidates.iter().flat_map(|c| c.evidence_ids.iter());
    if !cited.chain(case.observed_fact_ids.iter()).any(|id| moved.contains(id)) {
        return None;
    }
    let mut out = case.clone();
    for candidate in &mut out.candidates {
        move_candidate(candidate, |id| moved.contains(id), true);
    }
    out.status = CaseStatus::Superseded;
    out.superseded_at = Some(at.clone());
    Some(out)
}

/// Moves the facts `selected` picks of `candidate` out of its evidence
/// (`out`) or back into it; its dates, highest importance and wording stay
/// those it was detected with.
fn move_candidate(candidate: &mut Candidate, selected: impl Fn(&str) -> bool, out: bool) {
    let (evidence, retracted) =
        (&mut candidate.evidence_ids, &mut candidate.retracted_evidence_ids);
    let moved = if out {
        evidence.move_to(retracted, selected)
    } else {
        retracted.move_to(evidence, selected)
    };
    if moved {
        candidate.occurrences = candidate.evidence_ids.len() as u64;
    }
}

/// What a restore needs to give cases back their facts.
struct Reopen<'a> {
    /// When the retraction it undoes was recorded: the `superseded_at` of
    /// the cases it superseded.
    superseded_at: Option<&'a Stamp>,
    /// The facts that count again.
    moved: &'a BTreeSet<String>,
    /// The facts retracted after the restore.
    after: &'a Retractions,
}

impl Reopen<'_> {
    /// The cases a restore changes: each case the retraction superseded
    /// (at its `recorded_at`, citing or observing one of the facts that
    /// count again), in a domain that did not move on, gets those facts
    /// back among its candidates' evidence; it is opened again when nothing
    /// it rests on is retracted, it is the newest case of its domain, the
    /// domain has no open case, and the domain's active entry (after the restore) is
    /// still the case's `active_entry_key`.
    fn cases(
        &self,
        cases: &[Case],
        changed: &[Entry],
        entries: &[Entry],
        moved_on: impl Fn(&str) -> bool,
    ) -> Vec<Case> {
        let mut by_key: HashMap<&str, &Entry> =
            entries.iter().map(|e| (e.key.as_str(), e)).collect();
        for entry in changed {
            by_key.insert(entry.key.as_str(), entry);
        }
        let active = |memory_key: &str| {
            by_key
                .values()
                .find(|e| e.is_active() && e.memory_key.as_deref() == Some(memory_key))
                .map(|e| e.key.clone())
        };
        let mut opened: BTreeSet<String> =
            cases.iter().filter(|c| c.is_open()).map(|c| c.memory_key.clone()).collect();
        let mut out = Vec::new();
        // A domain that moved on keeps its cases as they are, like its
        // entries.
        let cases_back =
            cases.iter().filter(|c| self.superseded_by_retraction(c) && !moved_on(&c.memory_key));
        for case in cases_back {
            let mut changed = case.clone();
            for candidate in &mut changed.candidates {
                move_candidate(candidate, |id| self.moved.contains(id), false);
            }
            let clean = changed.candidates.iter().all(|c| c.retracted_evidence_ids.is_empty())
                && !changed.observed_fact_ids.iter().any(|id| self.after.is_retracted(id));
            let newest = !cases
                .iter()
                .any(|c| c.memory_key == case.memory_key && c.revision > case.revision);
            if clean
                && newest
                && !opened.contains(&case.memory_key)
                && active(&case.memory_key) == case.active_entry_key
            {
                changed.status = CaseStatus::Open;
                changed.superseded_at = None;
                opened.insert(case.memory_key.clone());
            }
            if changed != *case {
                out.push(changed);
            }
        }
        out
    }

    /// Whether a retraction that is undone now superseded `case`: citing
    /// (as retracted evidence) a fact that counts again, or observing one
    /// and superseded at the `recorded_at` of this retraction or of an
    /// earlier-restored one that named one of its facts.
    fn superseded_by_retraction(&self, case: &Case) -> bool {
        if case.status != CaseStatus::Superseded {
            return false;
        }
        let cites = case
            .candidates
            .iter()
            .any(|c| c.retracted_evidence_ids.iter().any(|id| self.moved.contains(id)));
        let Some(at) = case.superseded_at.as_ref() else { return cites };
        // Closed by this retraction, or by another one no longer in force
        // (restored before it) that named one of the case's facts: with
        // both undone the case is as if neither had been made.
        let by_lapsed = Some(at.instant()) == self.superseded_at.map(Stamp::instant)
            || case.observed_fact_ids.iter().any(|id| self.after.lapsed_at(id, at));
        let observes = by_lapsed && case.observed_fact_ids.iter().any(|id| self.moved.contains(id));
        cites || observes
    }
}

#[cfg(test)]
mod tests;
