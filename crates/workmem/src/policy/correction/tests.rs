//! Every case of the tables of docs/corrections.md, each with the entries
//! and cases before and after.

use super::*;
use crate::model::fact::NewFact;
use crate::model::id_list::IdList;
use crate::store::conflict_queue::{self, ConflictQueue};
use crate::store::corrections::CORRECTION_SCHEMA_VERSION;
use crate::store::curated_state::CuratedState;

const WS: &str = "7cc7b721a32e1a2d";

fn stamp(text: &str) -> Stamp {
    Stamp::parse(text).unwrap()
}

/// A fact `id` stating `content` (of `key`), recorded on day `day` of
/// January with `importance`.
fn fact(id: &str, content: &str, key: Option<&str>, day: u32, importance: u8) -> Fact {
    Fact::from_new(
        NewFact {
            kind: Some("decision".into()),
            importance: Some(i64::from(importance)),
            memory_key: key.map(str::to_owned),
            recorded_at: Some(format!("2026-01-{day:02}T09:00:00Z")),
            fact_id: Some(id.into()),
            ..NewFact::new(content)
        },
        WS,
        stamp("2026-06-01T00:00:00Z"),
        || unreachable!("explicit id"),
    )
    .unwrap()
}

fn facts(list: &[Fact]) -> HashMap<String, Fact> {
    list.iter().map(|f| (f.fact_id.clone(), f.clone())).collect()
}

/// The entry worded as `worded` (a fact of `list`) whose evidence is
/// `ids` (facts of `list`), revision `revision` of `key`.
fn entry(list: &[Fact], worded: &str, ids: &[&str], revision: u32) -> Entry {
    let of: Vec<&Fact> =
        ids.iter().map(|id| list.iter().find(|f| f.fact_id == *id).unwrap()).collect();
    let wording = list.iter().find(|f| f.fact_id == worded).unwrap();
    let mut entry = Entry {
        content: wording.content.clone(),
        evidence_ids: ids.iter().copied().collect(),
        first_seen: of.iter().map(|f| f.recorded_at.clone()).min_by_key(Stamp::instant).unwrap(),
        key: String::new(),
        kind: wording.kind,
        last_seen: of.iter().map(|f| f.recorded_at.clone()).max_by_key(Stamp::instant).unwrap(),
        memory_key: wording.memory_key.clone(),
        occurrences: ids.len() as u64,
        released_evidence_ids: IdList::new(),
        retracted_evidence_ids: IdList::new(),
        revision,
        status: Status::Active,
        superseded_by: None,
        supersedes: None,
    };
    entry.key = entry.computed_key();
    entry
}

/// Links `chain` as revisions 1.. of one domain, the last active.
fn chain(mut chain: Vec<Entry>) -> Vec<Entry> {
    for i in 1..chain.len() {
        let (before, after) = chain.split_at_mut(i);
        before[i - 1].status = Status::Superseded;
        before[i - 1].superseded_by = Some(after[0].key.clone());
        after[0].supersedes = Some(before[i - 1].key.clone());
    }
    chain
}

fn record(
    action: Action,
    event_id: &str,
    ids: &[&str],
    restores: Option<&str>,
    at: &str,
) -> Correction {
    Correction {
        action,
        actor: "Ada <ada@example.com>".into(),
        entry_key: None,
        event_id: event_id.into(),
        event_ids: None,
        fact_ids: ids.iter().copied().collect(),
        line_sha256: None,
        rationale: "recorded against the wrong service".into(),
        recorded_at: stamp(at),
        restores: restores.map(str::to_owned),
        schema_version: CORRECTION_SCHEMA_VERSION,
        workspace_id: WS.into(),
    }
}

fn retract(ids: &[&str]) -> Correction {
    record(Action::Retract, "correction:1", ids, None, "2026-07-02T09:12:00Z")
}

/// Applies `plan` to `entries` and `cases` (by key and id) and checks the
/// invariants of the result.
fn applied(entries: &[Entry], cases: &[Case], plan: &Plan) -> (Vec<Entry>, Vec<Case>) {
    let mut entries = entries.to_vec();
    for changed in &plan.entries {
        let at = entries.iter().position(|e| e.key == changed.key).expect("a planned entry exists");
        entries[at] = changed.clone();
    }
    let mut cases = cases.to_vec();
    for changed in &plan.cases {
        let at = cases.iter().position(|c| c.conflict_id == changed.conflict_id).unwrap();
        cases[at] = changed.clone();
    }
    let mut state = CuratedState::new();
    state.entries = entries.clone();
    state.sort();
    assert_eq!(state.problems(), vec![], "{entries:#?}");
    let queue = ConflictQueue::of(cases.clone());
    assert_eq!(queue.problems(WS), vec![], "{cases:#?}");
    (entries, cases)
}

/// Entries and cases.
type State = (Vec<Entry>, Vec<Case>);

/// Retracts `ids` then restores that retraction over `entries` and
/// `cases`; returns the state after each.
fn retract_then_restore(
    ids: &[&str],
    entries: &[Entry],
    cases: &[Case],
    known: &HashMap<String, Fact>,
) -> (State, State) {
    let retraction = retract(ids);
    let after = Retractions::from_records([&retraction]);
    let plan1 = plan(&retraction, None, entries, cases, &after, known);
    let (e1, c1) = applied(entries, cases, &plan1);
    let restore =
        record(Action::Restore, "correction:2", ids, Some("correction:1"), "2026-07-03T00:00:00Z");
    let both = [retraction.clone(), restore.clone()];
    let after = Retractions::from_records(&both);
    let plan2 = plan(&restore, Some(&retraction.recorded_at), &e1, &c1, &after, known);
    let (e2, c2) = applied(&e1, &c1, &plan2);
    ((e1, c1), (e2, c2))
}

#[test]
fn unkeyed_some_evidence_retracted_stays_active_on_the_rest_worded_again() {
    let list = [
        fact("f1", "Use UTC.", None, 2, 3),
        fact("f2", "use  utc", None, 5, 4),
        fact("f3", "Use UTC", None, 7, 4),
    ];
    // Worded as f2 (the highest importance, then the earliest).
    let before = vec![entry(&list, "f2", &["f1", "f2", "f3"], 1)];
    let ((after, _), (restored, _)) = retract_then_restore(&["f2"], &before, &[], &facts(&list));
    let e = &after[0];
    assert_eq!(e.status, Status::Active);
    assert_eq!(e.evidence_ids, vec!["f1", "f3"]);
    assert_eq!(e.retracted_evidence_ids, vec!["f2"]);
    assert_eq!(e.occurrences, 2);
    // Worded again by the unkeyed rule: f3 (importance 4) over f1.
    assert_eq!(e.content, "Use UTC");
    assert_eq!(e.key, before[0].key, "the key is the normal form's");
    assert_eq!(
        (e.first_seen.as_str(), e.last_seen.as_str()),
        ("2026-01-02T09:00:00Z", "2026-01-07T09:00:00Z")
    );
    // Restored: the evidence and dates as before; the wording stays the
    // one the retraction gave (nothing records the one it replaced).
    let mut expected = before[0].clone();
    expected.content = "Use UTC".into();
    assert_eq!(restored, vec![expected]);
    // A retraction that leaves a fact with the wording changes no wording,
    // and its restore gives back exactly what was.
    let ((after, _), (restored, _)) = retract_then_restore(&["f3"], &before, &[], &facts(&list));
    assert_eq!(after[0].content, before[0].content);
    assert_eq!(restored, before);
}

#[test]
fn unkeyed_all_evidence_retracted_is_retracted_with_its_dates() {
    let list = [fact("f1", "Use UTC.", None, 2, 3), fact("f2", "Use UTC.", None, 5, 3)];
    let before = vec![entry(&list, "f1", &["f1", "f2"], 1)];
    let ((after, _), (restored, _)) =
        retract_then_restore(&["f1", "f2"], &before, &[], &facts(&list));
    let e = &after[0];
    assert_eq!(e.status, Status::Retracted);
    assert!(e.evidence_ids.is_empty());
    assert_eq!(e.retracted_evidence_ids, vec!["f1", "f2"]);
    assert_eq!(e.occurrences, 0);
    assert_eq!((&e.first_seen, &e.last_seen), (&before[0].first_seen, &before[0].last_seen));
    assert_eq!(restored, before);
}

#[test]
fn keyed_active_revision_partly_or_wholly_retracted() {
    let key = Some("db.engine");
    let list = [
        fact("a1", "Use MySQL.", key, 1, 4),
        fact("b1", "Use Postgres.", key, 3, 4),
        fact("b2", "Use Postgres.", key, 4, 4),
    ];
    let known = facts(&list);
    let before = chain(vec![entry(&list, "a1", &["a1"], 1), entry(&list, "b2", &["b1", "b2"], 2)]);
    // Some evidence of Rn: Rn active on the rest, worded by the keyed rule.
    let ((after, _), (restored, _)) = retract_then_restore(&["b2"], &before, &[], &known);
    assert_eq!(after[1].status, Status::Active);
    assert_eq!(after[1].evidence_ids, vec!["b1"]);
    assert_eq!(after[1].last_seen.as_str(), "2026-01-03T09:00:00Z");
    assert_eq!(after[0], before[0]);
    assert_eq!(restored, before);
    // All of it: Rn retracted, the domain without an active value, R1
    // still superseded and linked.
    let ((after, _), (restored, _)) = retract_then_restore(&["b1", "b2"], &before, &[], &known);
    assert_eq!(after[1].status, Status::Retracted);
    assert_eq!(after[1].supersedes.as_deref(), Some(before[0].key.as_str()));
    assert_eq!(after[0], before[0]);
    assert!(after.iter().all(|e| !e.is_active()));
    assert_eq!(restored, before);
}

#[test]
fn keyed_superseded_revision_retracted_leaves_the_active_one() {
    let key = Some("db.engine");
    let list = [
        fact("a1", "Use MySQL.", key, 1, 4),
        fact("a2", "Use MySQL.", key, 2, 4),
        fact("b1", "Use Postgres.", key, 3, 4),
    ];
    let known = facts(&list);
    let before = chain(vec![entry(&list, "a1", &["a1", "a2"], 1), entry(&list, "b1", &["b1"], 2)]);
    let ((after, _), (restored, _)) = retract_then_restore(&["a1"], &before, &[], &known);
    assert_eq!(after[0].status, Status::Superseded);
    assert_eq!(after[0].evidence_ids, vec!["a2"]);
    assert_eq!(after[1], before[1]);
    assert_eq!(restored, before);
    let ((after, _), (restored, _)) = retract_then_restore(&["a1", "a2"], &before, &[], &known);
    assert_eq!(after[0].status, Status::Retracted);
    assert_eq!(after[0].superseded_by.as_deref(), Some(after[1].key.as_str()));
    assert_eq!(after[1], before[1]);
    // Restored, it is superseded again (a revision follows it).
    assert_eq!(restored, before);
}

/// An open case of `db.engine` between MySQL (incumbent, `active`) and
/// Postgres (b1, b2), observing `observed`.
fn open_case(list: &[Fact], active: &Entry, observed: &[&str]) -> Case {
    let candidate = |content: &str, ids: &[&str], incumbent: bool| {
        let of: Vec<&Fact> =
            ids.iter().map(|id| list.iter().find(|f| f.fact_id == *id).unwrap()).collect();
        Candidate {
            candidate_id: canon::candidate_id("db.engine", "decision", content),
            content: content.into(),
            evidence_ids: ids.iter().copied().collect(),
            first_seen: of
                .iter()
                .map(|f| f.recorded_at.clone())
                .min_by_key(Stamp::instant)
                .unwrap(),
            incumbent,
            kind: crate::model::fact::Kind::Decision,
            last_seen: of.iter().map(|f| f.recorded_at.clone()).max_by_key(Stamp::instant).unwrap(),
            maximum_importance: of.iter().map(|f| f.importance).max().unwrap(),
            occurrences: ids.len() as u64,
            released_evidence_ids: IdList::new(),
            retracted_evidence_ids: IdList::new(),
        }
    };
    let mut candidates = vec![
        candidate(&active.content, &active.evidence_ids.iter().collect::<Vec<_>>(), true),
        candidate("Use Postgres.", &["b1", "b2"], false),
    ];
    candidates.sort_by(|a, b| a.candidate_id.cmp(&b.candidate_id));
    let observed: IdList = observed.iter().copied().collect();
    let fingerprint =
        conflict_queue::fingerprint("db.engine", Some(&active.key), &candidates, &observed);
    Case {
        active_entry_key: Some(active.key.clone()),
        candidates,
        conflict_id: canon::conflict_id(WS, "db.engine", &fingerprint),
        detected_at: stamp("2026-03-01T00:00:00Z"),
        fingerprint,
        memory_key: "db.engine".into(),
        observed_fact_ids: observed,
        resolution_actor: None,
        resolution_event_id: None,
        resolution_rationale: None,
        resolved_at: None,
        resulting_active_entry_key: None,
        revision: 1,
        selected_candidate_id: None,
        status: CaseStatus::Open,
        superseded_at: None,
        workspace_id: WS.into(),
    }
}

#[test]
fn an_open_case_resting_on_a_retracted_fact_is_superseded_and_reopened_by_restore() {
    let key = Some("db.engine");
    let list = [
        fact("a1", "Use MySQL.", key, 1, 4),
        fact("b1", "Use Postgres.", key, 3, 4),
        fact("b2", "Use Postgres.", key, 4, 4),
        fact("c1", "Use SQLite.", key, 5, 2),
    ];
    let known = facts(&list);
    let entries = vec![entry(&list, "a1", &["a1"], 1)];
    let cases = vec![open_case(&list, &entries[0], &["a1", "b1", "b2", "c1"])];
    // A challenger's fact: the case is superseded at the correction, the
    // fact moved to the candidate's retracted evidence; ids unchanged.
    let ((e1, c1), (e2, c2)) = retract_then_restore(&["b2"], &entries, &cases, &known);
    assert_eq!(e1, entries);
    assert_eq!(c1[0].status, CaseStatus::Superseded);
    assert_eq!(c1[0].superseded_at.as_ref().map(Stamp::as_str), Some("2026-07-02T09:12:00Z"));
    let postgres = c1[0].candidates.iter().find(|c| c.content == "Use Postgres.").unwrap();
    assert_eq!((postgres.evidence_ids.len(), postgres.retracted_evidence_ids.len()), (1, 1));
    assert_eq!(c1[0].conflict_id, cases[0].conflict_id);
    assert_eq!((e2, c2), (entries.clone(), cases.clone()), "restored exactly");
    // A fact it only observed: superseded too, candidates untouched; the
    // restore opens it again.
    let ((_, c1), (_, c2)) = retract_then_restore(&["c1"], &entries, &cases, &known);
    assert_eq!(c1[0].status, CaseStatus::Superseded);
    assert_eq!(c1[0].candidates, cases[0].candidates);
    assert_eq!(c2, cases);
    // The incumbent's only fact: the entry retracted, the case superseded;
    // restored, both as before.
    let ((e1, c1), (e2, c2)) = retract_then_restore(&["a1"], &entries, &cases, &known);
    assert_eq!(e1[0].status, Status::Retracted);
    assert_eq!(c1[0].status, CaseStatus::Superseded);
    assert_eq!((e2, c2), (entries, cases));
}

#[test]
fn a_closed_case_is_not_rewritten() {
    let key = Some("db.engine");
    let list = [
        fact("a1", "Use MySQL.", key, 1, 4),
        fact("b1", "Use Postgres.", key, 3, 4),
        fact("b2", "Use Postgres.", key, 4, 4),
    ];
    let known = facts(&list);
    // A decision chose Postgres: R2, the case resolved.
    let entries = chain(vec![entry(&list, "a1", &["a1"], 1), entry(&list, "b1", &["b1", "b2"], 2)]);
    let mut case = open_case(&list, &entries[0], &["a1", "b1", "b2"]);
    let postgres = case.candidates.iter().find(|c| !c.incumbent).unwrap().candidate_id.clone();
    case.status = CaseStatus::Resolved;
    case.resolved_at = Some(stamp("2026-03-02T00:00:00Z"));
    case.resolution_actor = Some("Ada".into());
    case.resolution_event_id = Some("review:1".into());
    case.resolution_rationale = Some("what CI uses".into());
    case.resulting_active_entry_key = Some(entries[1].key.clone());
    case.selected_candidate_id = Some(postgres);
    let cases = vec![case];
    // Retracting all the chosen value's evidence: the revision the
    // decision made is retracted, the domain has no value, the decision's
    // case stays as it was asked and answered.
    let ((e1, c1), (e2, c2)) = retract_then_restore(&["b1", "b2"], &entries, &cases, &known);
    assert_eq!(e1[1].status, Status::Retracted);
    assert!(e1.iter().all(|e| !e.is_active()));
    assert_eq!(c1, cases);
    assert_eq!((e2, c2), (entries, cases));
}

#[test]
fn restore_keeps_out_what_another_retraction_names_and_a_domain_that_moved_on() {
    let key = Some("db.engine");
    let list = [fact("a1", "Use MySQL.", key, 1, 4), fact("a2", "Use MySQL.", key, 2, 4)];
    let known = facts(&list);
    let entries = vec![entry(&list, "a1", &["a1", "a2"], 1)];
    let first = retract(&["a1", "a2"]);
    let second = record(Action::Retract, "correction:2", &["a2"], None, "2026-07-02T10:00:00Z");
    let both = [first.clone(), second.clone()];
    let after = Retractions::from_records(&both);
    let e1 = applied(&entries, &[], &plan(&first, None, &entries, &[], &after, &known)).0;
    // Retracting a fact already retracted changes nothing.
    assert_eq!(plan(&second, None, &e1, &[], &after, &known), Plan::default());
    let restore = record(
        Action::Restore,
        "correction:3",
        &["a1", "a2"],
        Some("correction:1"),
        "2026-07-03T00:00:00Z",
    );
    let all = [first.clone(), second, restore.clone()];
    let after = Retractions::from_records(&all);
    let (e2, _) =
        applied(&e1, &[], &plan(&restore, Some(&first.recorded_at), &e1, &[], &after, &known));
    assert_eq!(e2[0].evidence_ids, vec!["a1"]);
    assert_eq!(e2[0].retracted_evidence_ids, vec!["a2"]);
    assert_eq!(e2[0].status, Status::Active);
    // A case detected after the retraction: the domain moved on, its
    // facts stay out of the evidence, released (they count again, and a
    // later retraction of them is told apart from this one).
    let list2 = [
        fact("a1", "Use MySQL.", key, 1, 4),
        fact("b1", "Use Postgres.", key, 3, 4),
        fact("b2", "Use Postgres.", key, 4, 4),
    ];
    let entries = vec![entry(&list2, "a1", &["a1"], 1)];
    let mut later = open_case(&list2, &entries[0], &["a1", "b1", "b2"]);
    later.detected_at = stamp("2026-08-01T00:00:00Z");
    let retraction = retract(&["a1"]);
    let only = [retraction.clone()];
    let e1 = applied(
        &entries,
        &[],
        &plan(&retraction, None, &entries, &[], &Retractions::from_records(&only), &known),
    )
    .0;
    let restore = record(
        Action::Restore,
        "correction:3",
        &["a1"],
        Some("correction:1"),
        "2026-09-01T00:00:00Z",
    );
    let all = [retraction.clone(), restore.clone()];
    let planned = plan(
        &restore,
        Some(&retraction.recorded_at),
        &e1,
        std::slice::from_ref(&later),
        &Retractions::from_records(&all),
        &facts(&list2),
    );
    assert_eq!(planned.cases, []);
    let [released] = planned.entries.as_slice() else { panic!("one entry: {planned:?}") };
    assert!(released.evidence_ids.is_empty());
    assert!(released.retracted_evidence_ids.is_empty());
    assert_eq!(released.released_evidence_ids, vec!["a1"]);
    assert_eq!(released.status, Status::Retracted);
    // A second retraction of the fact, and its restore, leave that listing
    // as it is: the fact was evidence of nothing when it was retracted.
    let e2 = applied(&e1, &[], &planned).0;
    let again = record(Action::Retract, "correction:4", &["a1"], None, "2026-09-02T00:00:00Z");
    let back = record(
        Action::Restore,
        "correction:5",
        &["a1"],
        Some("correction:4"),
        "2026-09-03T00:00:00Z",
    );
    let all = [retraction, restore, again.clone()];
    let after = Retractions::from_records(&all);
    assert_eq!(plan(&again, None, &e2, &[], &after, &known), Plan::default());
    let all = [all[0].clone(), all[1].clone(), again.clone(), back.clone()];
    let after = Retractions::from_records(&all);
    assert_eq!(
        plan(&back, Some(&again.recorded_at), &e2, &[], &after, &facts(&list2)),
        Plan::default()
    );
}
