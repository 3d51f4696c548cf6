//! The three-way merges of the memory's state files, as docs/sharing.md
//! lays them out: curated.json domain by domain, conflicts.json case by
//! case, and the union of append-only records. Pure and symmetric: merging
//! `a` into `b` gives what merging `b` into `a` gives.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use crate::model::fact::REDACTED;
use crate::model::stamp::Stamp;
use crate::store::conflict_queue::{Candidate, Case, CaseStatus, ConflictQueue};
use crate::store::curated_state::{CuratedState, Entry, Status};

/// Orders two stamps by instant, then by text, so that a choice between
/// two sides never depends on which side is which.
fn stamp_order(a: &Stamp, b: &Stamp) -> Ordering {
    a.instant().cmp(&b.instant()).then_with(|| a.as_str().cmp(b.as_str()))
}

fn earlier(a: &Stamp, b: &Stamp) -> Stamp {
    if stamp_order(a, b).is_le() { a.clone() } else { b.clone() }
}

fn later(a: &Stamp, b: &Stamp) -> Stamp {
    if stamp_order(a, b).is_ge() { a.clone() } else { b.clone() }
}

/// Returns one entry for the same entry key on two sides: the evidence is
/// the union, occurrences its count, the seen span the widest (of the
/// sides that lost no evidence to a retraction, below, when those hold
/// all the evidence left); the wording is the base's when the base has
/// the entry (reinforcement never changes it) and one of those sides still
/// has it, else the one of theirs that sorts first (a correction worded
/// it again). Status and links are `a`'s.
///
/// A fact that one side holds as evidence and the other as retracted
/// evidence (a correction made on one side) goes where the side that
/// changed it since the base put it, and stays retracted when the base
/// does not tell; the first command after the merge applies the
/// corrections stream, which says which holds. The driver has no fact
/// dates: when the sides that lost nothing do not hold all the evidence
/// left, the span of what is left is unknown here, so the facts the
/// retraction would take stay evidence, under both sides' spans, and the
/// first command after the merge applies the correction that retracts
/// them, dating the rest from the log. A fact a side's restore released
/// is released, unless a side that judged it again since the base holds
/// it as evidence. An entry left with no evidence and some retracted or
/// released evidence is retracted; one a side had
/// retracted that has evidence again is superseded when it has a
/// successor, else takes the other side's status.
fn unite(base: Option<&Entry>, a: &Entry, b: &Entry) -> Entry {
    let mut out = a.clone();
    let base = base.filter(|base| base.key == a.key);
    let mut evidence: BTreeSet<&str> = a.evidence_ids.iter().chain(&b.evidence_ids).collect();
    let mut retracted: BTreeSet<&str> =
        a.retracted_evidence_ids.iter().chain(&b.retracted_evidence_ids).collect();
    let both: Vec<&str> = evidence.intersection(&retracted).copied().collect();
    let mut taken = Vec::new();
    for fact in both {
        if base.is_some_and(|base| base.retracted_evidence_ids.iter().any(|id| id == fact)) {
            retracted.remove(fact);
        } else {
            evidence.remove(fact);
            taken.push(fact);
        }
    }
    // A fact a side's restore released (the domain had moved on there) is
    // released; held as evidence by a side, it stays evidence when that
    // side judged it again since the base (the base did not hold it so).
    let mut released: BTreeSet<&str> = BTreeSet::new();
    for fact in a.released_evidence_ids.iter().chain(&b.released_evidence_ids) {
        retracted.remove(fact);
        if !evidence.contains(fact) {
            released.insert(fact);
        } else if base.is_some_and(|base| base.evidence_ids.contains(fact)) {
            evidence.remove(fact);
            taken.push(fact);
            released.insert(fact);
        }
    }
    // The seen span is the one of the evidence left. A side's span covers
    // its own evidence; a side that lost a fact to the other's retraction
    // covers that fact too, so when the sides that lost nothing hold all
    // the evidence left, their spans alone are it.
    let intact: Vec<&Entry> = [a, b]
        .into_iter()
        .filter(|e| {
            !e.evidence_ids.is_empty() && e.evidence_ids.iter().all(|id| evidence.contains(id))
        })
        .collect();
    let covered: BTreeSet<&str> = intact.iter().flat_map(|e| e.evidence_ids.iter()).collect();
    let spans = if !covered.is_empty() && covered.len() == evidence.len() {
        intact
    } else if !evidence.is_empty() {
        // Left to the correction, which the first command applies: the
        // evidence is then both sides', which their spans cover exactly.
        for fact in taken {
            retracted.remove(fact);
            released.remove(fact);
            evidence.insert(fact);
        }
        [a, b].into_iter().filter(|e| !e.evidence_ids.is_empty()).collect()
    } else {
        // Retracted: it keeps the dates it had.
        vec![a, b]
    };
    out.evidence_ids = evidence.iter().map(|id| (*id).to_owned()).collect();
    out.retracted_evidence_ids = retracted.into_iter().collect();
    out.released_evidence_ids = released.into_iter().collect();
    out.occurrences = out.evidence_ids.len() as u64;
    if out.evidence_ids.is_empty() && out.taken_ids().next().is_some() {
        out.status = Status::Retracted;
    } else if out.status == Status::Retracted {
        // Evidence again: the status of a revision with or without a
        // successor.
        out.status = if out.superseded_by.is_some() {
            Status::Superseded
        } else if b.status == Status::Retracted {
            Status::Active
        } else {
            b.status
        };
    }
    out.first_seen =
        spans.iter().fold(spans[0].first_seen.clone(), |x, e| earlier(&x, &e.first_seen));
    out.last_seen = spans.iter().fold(spans[0].last_seen.clone(), |x, e| later(&x, &e.last_seen));
    // The wording is one of the evidence left: a side whose evidence is
    // all kept (the sides whose spans count) words it with one of its
    // facts. The base's when such a side still has it (reinforcement never
    // changes it), else the first such side's by code point (a correction
    // on that side worded it again).
    let wordings: BTreeSet<&String> = spans.iter().map(|e| &e.content).collect();
    out.content = match base {
        Some(base) if evidence.is_empty() || wordings.contains(&base.content) => {
            base.content.clone()
        }
        _ => wordings.first().map_or_else(|| a.content.clone(), |w| (*w).clone()),
    };
    out
}

/// Merges three versions of the curated state (docs/sharing.md, "curated.json").
pub(crate) fn merge_curated(
    base: &CuratedState,
    ours: &CuratedState,
    theirs: &CuratedState,
) -> CuratedState {
    let by_key = |state: &CuratedState| -> BTreeMap<String, Entry> {
        state.entries.iter().map(|e| (e.key.clone(), e.clone())).collect()
    };
    let base_entries = by_key(base);
    let chains = |state: &CuratedState| -> BTreeMap<String, Vec<Entry>> {
        let mut chains: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
        for entry in state.entries.iter().filter(|e| !e.is_contested()) {
            if let Some(domain) = &entry.memory_key {
                chains.entry(domain.clone()).or_default().push(entry.clone());
            }
        }
        for chain in chains.values_mut() {
            chain.sort_by_key(|e| e.revision);
        }
        chains
    };
    let (base_contested, mut ours_contested, mut theirs_contested) =
        (contested(base), contested(ours), contested(theirs));
    let mut entries = Vec::new();

    let unkeyed = |state: &CuratedState| -> BTreeMap<String, Entry> {
        state
            .entries
            .iter()
            .filter(|e| e.memory_key.is_none())
            .map(|e| (e.key.clone(), e.clone()))
            .collect()
    };
    let (mut ours_unkeyed, mut theirs_unkeyed) = (unkeyed(ours), unkeyed(theirs));
    let keys: BTreeSet<String> =
        ours_unkeyed.keys().chain(theirs_unkeyed.keys()).cloned().collect();
    for key in keys {
        entries.push(match (ours_unkeyed.remove(&key), theirs_unkeyed.remove(&key)) {
            (Some(a), Some(b)) => unite(base_entries.get(&key), &a, &b),
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => continue,
        });
    }

    let (mut ours_chains, mut theirs_chains) = (chains(ours), chains(theirs));
    let domains: BTreeSet<String> = ours_chains
        .keys()
        .chain(theirs_chains.keys())
        .chain(ours_contested.keys())
        .chain(theirs_contested.keys())
        .cloned()
        .collect();
    for domain in domains {
        let (chain, diverged) = match (ours_chains.remove(&domain), theirs_chains.remove(&domain)) {
            (Some(a), Some(b)) => merge_chain(&base_entries, &a, &b),
            (Some(one), None) | (None, Some(one)) => (one, Vec::new()),
            (None, None) => (Vec::new(), Vec::new()),
        };
        let under_review = three_way(
            &base_entries,
            base_contested.get(&domain),
            ours_contested.remove(&domain),
            theirs_contested.remove(&domain),
        );
        entries.extend(contest(chain, under_review.into_iter().chain(diverged)));
    }
    let schema_version = ours.schema_version.max(theirs.schema_version);
    let mut state = CuratedState { schema_version, entries };
    state.sort();
    state
}

/// Merges one keyed domain's revision chains: equal or one extending the
/// other, the longer one; diverged, the revisions both share, then each
/// side's last revision, the value that side held (docs/sharing.md,
/// "diverged"). Evidence is united on the shared revisions.
///
/// - Two live values: the last shared revision active again, and each
///   value returned apart for a person to choose from (see [`contest`]).
/// - One value reached by both sides (live or retracted on either): the
///   next revision, with the evidence of both.
/// - Otherwise a side's last revision is retracted: that side holds no
///   value and contests nothing, but its revision is a record (a decision
///   may name it). Both last revisions are kept, one after the other in
///   the order of their evidence (the earlier `last_seen` first): the
///   later one is the domain's value when it is live, and the domain has
///   no value when it is retracted.
fn merge_chain(
    base: &BTreeMap<String, Entry>,
    a: &[Entry],
    b: &[Entry],
) -> (Vec<Entry>, Vec<Entry>) {
    let shared = a.iter().zip(b).take_while(|(x, y)| x.key == y.key).count();
    let (longer, shorter) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let unite_at = |i: usize| unite(base.get(&longer[i].key), &longer[i], &shorter[i]);
    if shared == shorter.len() {
        let chain = (0..longer.len())
            .map(|i| if i < shared { unite_at(i) } else { longer[i].clone() })
            .collect();
        return (chain, Vec::new());
    }
    let mut kept: Vec<Entry> = (0..shared).map(unite_at).collect();
    let (Some(x), Some(y)) = (a.last(), b.last()) else { return (kept, Vec::new()) };
    if signature(x) == signature(y) {
        // Both sides came to one value by different paths: it is the next
        // revision after the shared ones, with the evidence of both (and
        // retracted when neither side has any of it left).
        let mut value = unite(None, x, y);
        value.status = if value.evidence_ids.is_empty() && value.taken_ids().next().is_some() {
            Status::Retracted
        } else {
            Status::Active
        };
        value.superseded_by = None;
        value.key = value.computed_key();
        link_after(&mut kept, &mut value);
        kept.push(value);
        return (kept, Vec::new());
    }
    if !x.is_retracted() && !y.is_retracted() {
        if let Some(last) = kept.last_mut() {
            last.status = Status::Active;
            last.superseded_by = None;
        }
        return (kept, vec![x.clone(), y.clone()]);
    }
    let order = |e: &Entry| (e.last_seen.instant(), e.key.clone());
    let (first, second) = if order(x) <= order(y) { (x, y) } else { (y, x) };
    for entry in [first, second] {
        let mut entry = entry.clone();
        link_after(&mut kept, &mut entry);
        kept.push(entry);
    }
    (kept, Vec::new())
}

/// Makes `entry` the next revision after the last of `chain`: its number,
/// its key (unchanged when its number was already that), and the mutual
/// links. A retracted revision stays retracted once superseded; a live
/// one becomes superseded.
fn link_after(chain: &mut [Entry], entry: &mut Entry) {
    let last = chain.last_mut();
    let number = last.as_ref().map_or(1, |e| e.revision + 1);
    if entry.revision != number {
        entry.revision = number;
        entry.key = entry.computed_key();
    }
    entry.supersedes = last.as_ref().map(|e| e.key.clone());
    if let Some(last) = last {
        last.supersede_by(&entry.key);
    }
}

/// The contested entries of each domain of `state`, by entry key.
fn contested(state: &CuratedState) -> BTreeMap<String, BTreeMap<String, Entry>> {
    let mut out: BTreeMap<String, BTreeMap<String, Entry>> = BTreeMap::new();
    for entry in state.entries.iter().filter(|e| e.is_contested()) {
        if let Some(domain) = &entry.memory_key {
            out.entry(domain.clone()).or_default().insert(entry.key.clone(), entry.clone());
        }
    }
    out
}

/// Merges three versions of one domain's values under review: a side
/// that left them as the base had them takes the other side's (a person
/// decided there, or the values gained evidence); when both changed them,
/// their union, evidence united.
fn three_way(
    base_entries: &BTreeMap<String, Entry>,
    base: Option<&BTreeMap<String, Entry>>,
    ours: Option<BTreeMap<String, Entry>>,
    theirs: Option<BTreeMap<String, Entry>>,
) -> Vec<Entry> {
    let (ours, theirs) = (ours.unwrap_or_default(), theirs.unwrap_or_default());
    let base = base.cloned().unwrap_or_default();
    if ours == base {
        return theirs.into_values().collect();
    }
    if theirs == base {
        return ours.into_values().collect();
    }
    let mut out = ours;
    for (key, entry) in theirs {
        let united = match out.get(&key) {
            Some(mine) => unite(base_entries.get(&key), mine, &entry),
            None => entry,
        };
        out.insert(key, united);
    }
    out.into_values().collect()
}

/// Puts a domain's chain back with the values a person must choose from
/// (docs/sharing.md, "diverged"): each value other than the active one,
/// once (evidence united when two sides hold it), as a contested entry
/// numbered after the chain's last revision. A single value that is not
/// the active one and that no other value disputes is still contested
/// when the chain has an active value to dispute it; with no active value
/// and one value, both sides agreed: it becomes the next revision (after
/// the chain's last, retracted, revision when it has one).
fn contest(mut chain: Vec<Entry>, values: impl Iterator<Item = Entry>) -> Vec<Entry> {
    let active = chain.iter().find(|e| e.is_active()).map(signature);
    let last = chain.iter().map(|e| e.revision).max().unwrap_or(0);
    let mut by_value: BTreeMap<(crate::model::fact::Kind, String), Entry> = BTreeMap::new();
    for value in values {
        let sig = signature(&value);
        if Some(&sig) == active.as_ref() {
            continue;
        }
        let united = match by_value.remove(&sig) {
            Some(held) => unite(None, &held, &value),
            None => value,
        };
        by_value.insert(sig, united);
    }
    let status = if by_value.len() == 1 && active.is_none() {
        // Both sides accepted one value: it is the domain's value.
        Status::Active
    } else {
        Status::Contested
    };
    for (_, mut value) in by_value {
        value.status = status;
        value.revision = last + 1;
        value.supersedes = None;
        value.superseded_by = None;
        value.key = value.computed_key();
        if status == Status::Active {
            // The next revision after a retracted one, when the chain has
            // one.
            link_after(&mut chain, &mut value);
        }
        chain.push(value);
    }
    chain
}

/// A value's kind and normal form: what its candidate id names.
fn signature(entry: &Entry) -> (crate::model::fact::Kind, String) {
    (entry.kind, crate::model::canon::normal_form(&entry.content))
}

/// Merges three versions of the conflict queue (docs/sharing.md,
/// "conflicts.json"): case by case by conflict id, then at most one open
/// case per memory key, then revisions renumbered per memory key.
pub(crate) fn merge_conflicts(
    base: &ConflictQueue,
    ours: &ConflictQueue,
    theirs: &ConflictQueue,
) -> ConflictQueue {
    let index = |queue: &ConflictQueue| -> BTreeMap<String, Case> {
        queue.cases.iter().map(|c| (c.conflict_id.clone(), c.clone())).collect()
    };
    let schema_version = ours.schema_version.max(theirs.schema_version);
    let (base, mut ours, mut theirs) = (index(base), index(ours), index(theirs));
    let ids: BTreeSet<String> = ours.keys().chain(theirs.keys()).cloned().collect();
    let mut by_domain: BTreeMap<String, Vec<Case>> = BTreeMap::new();
    for id in ids {
        let case = match (ours.remove(&id), theirs.remove(&id)) {
            (Some(a), Some(b)) if a == b => a,
            (Some(a), Some(b)) if base.get(&id) == Some(&a) => b,
            (Some(a), Some(b)) if base.get(&id) == Some(&b) => a,
            (Some(a), Some(b)) => combine(&a, &b),
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => continue,
        };
        by_domain.entry(case.memory_key.clone()).or_default().push(case);
    }
    let mut cases = Vec::new();
    for (_, mut domain) in by_domain {
        settle_open(&mut domain);
        domain.sort_by(|x, y| {
            x.revision
                .cmp(&y.revision)
                .then_with(|| stamp_order(&x.detected_at, &y.detected_at))
                .then_with(|| x.conflict_id.cmp(&y.conflict_id))
        });
        for (number, case) in (1u32..).zip(domain.iter_mut()) {
            case.revision = number;
        }
        cases.extend(domain);
    }
    let mut queue = ConflictQueue { cases, schema_version };
    queue.sort();
    queue
}

/// Returns one case for a conflict id both sides changed differently.
fn combine(a: &Case, b: &Case) -> Case {
    let mut out = a.clone();
    out.detected_at = earlier(&a.detected_at, &b.detected_at);
    out.revision = a.revision.max(b.revision);
    reopen(&mut out);
    match (a.status, b.status) {
        (CaseStatus::Resolved, CaseStatus::Resolved)
            if a.selected_candidate_id == b.selected_candidate_id =>
        {
            let first = match stamp_order(
                a.resolved_at.as_ref().unwrap_or(&a.detected_at),
                b.resolved_at.as_ref().unwrap_or(&b.detected_at),
            ) {
                Ordering::Less => a,
                Ordering::Greater => b,
                Ordering::Equal if a.resolution_event_id <= b.resolution_event_id => a,
                Ordering::Equal => b,
            };
            close_like(&mut out, first);
        }
        // Two people chose differently: neither decision is applied.
        (CaseStatus::Resolved, CaseStatus::Resolved) => {}
        (CaseStatus::Resolved, _) => close_like(&mut out, a),
        (_, CaseStatus::Resolved) => close_like(&mut out, b),
        // Both closed it: the side that closed it first says why, with the
        // candidates as it left them (a correction moves evidence to the
        // retracted evidence, and its record is at that instant).
        (CaseStatus::Superseded, CaseStatus::Superseded) => {
            let lists = |c: &Case| c.candidates.iter().any(Candidate::holds_correction);
            let first = match (&a.superseded_at, &b.superseded_at) {
                (Some(x), Some(y)) => match stamp_order(x, y) {
                    Ordering::Less => a,
                    Ordering::Greater => b,
                    Ordering::Equal if lists(b) && !lists(a) => b,
                    Ordering::Equal => a,
                },
                (None, Some(_)) => b,
                _ => a,
            };
            out.candidates.clone_from(&first.candidates);
            close_like(&mut out, first);
        }
        (CaseStatus::Superseded, _) => close_like(&mut out, a),
        (_, CaseStatus::Superseded) => close_like(&mut out, b),
        (CaseStatus::Open, CaseStatus::Open) => {}
    }
    // A decided case keeps its candidates as the person saw them,
    // whichever side merges into which (a correction on the other side
    // does not rewrite a closed case).
    if out.status == CaseStatus::Resolved
        && let Some(decided) = [a, b].into_iter().find(|side| {
            side.status == CaseStatus::Resolved
                && side.resolution_event_id == out.resolution_event_id
        })
    {
        out.candidates.clone_from(&decided.candidates);
    }
    for candidate in &mut out.candidates {
        let sides: Vec<&Candidate> = [a, b]
            .into_iter()
            .flat_map(|side| side.candidates.iter())
            .filter(|c| c.candidate_id == candidate.candidate_id)
            .collect();
        // A fact a side's restore released stays released: that restore
        // found the domain moved on, and the case that moved it is merged
        // too.
        let released: BTreeSet<&str> =
            sides.iter().flat_map(|c| c.released_evidence_ids.iter()).collect();
        let to = &mut candidate.released_evidence_ids;
        candidate.retracted_evidence_ids.move_to(to, |id| released.contains(id));
        // A redaction's marker in its wording wins over the text it
        // replaced.
        if sides.iter().any(|c| c.content == REDACTED) {
            REDACTED.clone_into(&mut candidate.content);
        }
    }
    // A redaction's marker in the copies of the decision's actor and
    // rationale wins over the text it replaced: the decision is the same.
    for side in [a, b] {
        let marked = side.resolution_actor.as_deref() == Some(REDACTED)
            && side.resolution_rationale.as_deref() == Some(REDACTED);
        if marked
            && side.resolution_event_id.is_some()
            && out.resolution_event_id == side.resolution_event_id
        {
            out.resolution_actor.clone_from(&side.resolution_actor);
            out.resolution_rationale.clone_from(&side.resolution_rationale);
        }
    }
    out
}

/// Clears every closure field: the case is open.
fn reopen(case: &mut Case) {
    case.status = CaseStatus::Open;
    case.resolved_at = None;
    case.selected_candidate_id = None;
    case.resolution_event_id = None;
    case.resolution_actor = None;
    case.resolution_rationale = None;
    case.resulting_active_entry_key = None;
    case.superseded_at = None;
}

/// Copies the status and closure fields of `from` into `case`.
fn close_like(case: &mut Case, from: &Case) {
    case.status = from.status;
    case.resolved_at.clone_from(&from.resolved_at);
    case.selected_candidate_id.clone_from(&from.selected_candidate_id);
    case.resolution_event_id.clone_from(&from.resolution_event_id);
    case.resolution_actor.clone_from(&from.resolution_actor);
    case.resolution_rationale.clone_from(&from.resolution_rationale);
    case.resulting_active_entry_key.clone_from(&from.resulting_active_entry_key);
    case.superseded_at.clone_from(&from.superseded_at);
}

/// Leaves at most one open case in one memory key's cases: the one that
/// observed the most facts, then the later detected, then the larger id;
/// the others are superseded at the latest detection among them.
fn settle_open(domain: &mut [Case]) {
    let open: Vec<usize> = (0..domain.len()).filter(|&i| domain[i].is_open()).collect();
    if open.len() < 2 {
        return;
    }
    let keep = *open
        .iter()
        .max_by(|&&x, &&y| {
            let (x, y) = (&domain[x], &domain[y]);
            x.observed_fact_ids
                .len()
                .cmp(&y.observed_fact_ids.len())
                .then_with(|| stamp_order(&x.detected_at, &y.detected_at))
                .then_with(|| x.conflict_id.cmp(&y.conflict_id))
        })
        .expect("two open cases");
    let at = open
        .iter()
        .map(|&i| domain[i].detected_at.clone())
        .reduce(|x, y| later(&x, &y))
        .expect("two open cases");
    for i in open.into_iter().filter(|&i| i != keep) {
        domain[i].status = CaseStatus::Superseded;
        domain[i].superseded_at = Some(at.clone());
    }
}
