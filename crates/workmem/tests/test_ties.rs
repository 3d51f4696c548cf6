//! Acceptance 4: ties fail closed into one conflict case; re-running reuses
//! it byte for byte; new tied evidence supersedes it (docs/policy.md).

use serde_json::{Value, json};
use workmem::{CaseStatus, Report, internals::canon};

use crate::common::{Project, file_state, let_clock_tick};

const KEY: &str = "db.engine";

fn tied_project() -> Project {
    let p = Project::new();
    p.add("a1", "decision", 4, Some(KEY), "Use SQLite.", "2026-01-01T00:00:00Z");
    p.distill();
    // Two challengers with equal strength: (importance 4, 2 facts, newest 01-12).
    p.add("p1", "decision", 4, Some(KEY), "Use Postgres.", "2026-01-10T00:00:00Z");
    p.add("p2", "decision", 3, Some(KEY), "use  postgres.", "2026-01-12T00:00:00Z");
    p.add("m1", "decision", 4, Some(KEY), "Use MySQL.", "2026-01-11T00:00:00Z");
    p.add("m2", "decision", 4, Some(KEY), "Use MySQL.", "2026-01-12T00:00:00Z");
    // Facts of the domain that are no candidate: a non-stable kind and a
    // fact too young to be aged. Both still count as observed.
    p.add("o1", "outcome", 5, Some(KEY), "Benchmarked both.", "2026-01-05T00:00:00Z");
    p.add("y1", "decision", 5, Some(KEY), "Use Oracle.", "2026-02-25T00:00:00Z");
    // Another domain's facts are never observed here.
    p.add("z1", "decision", 1, Some("other.key"), "Unrelated.", "2026-01-05T00:00:00Z");
    p
}

/// Recomputes a case's fingerprint from its JSON fields with the canonical
/// JSON of docs/format.md, independently of the library's Candidate type.
fn recomputed_fingerprint(case: &Value) -> String {
    let candidates: Vec<Value> = case["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            json!({
                "candidate_id": c["candidate_id"], "kind": c["kind"], "content": c["content"],
                "evidence_ids": c["evidence_ids"], "occurrences": c["occurrences"],
                "maximum_importance": c["maximum_importance"], "first_seen": c["first_seen"],
                "last_seen": c["last_seen"], "incumbent": c["incumbent"],
            })
        })
        .collect();
    let observation = json!({
        "memory_key": case["memory_key"],
        "active_entry_key": case["active_entry_key"],
        "candidates": candidates,
        "observed_fact_ids": case["observed_fact_ids"],
    });
    canon::sha256_hex(canon::canonical_json(&observation).as_bytes())
}

#[test]
fn equally_strong_challengers_open_one_case() {
    let p = tied_project();
    let memory_before = std::fs::read(p.file("MEMORY.md")).unwrap();
    let curated_before = p.ws.curated().unwrap();
    let r = p.distill();
    let queue = p.ws.conflicts().unwrap();
    assert_eq!(queue.cases.len(), 1);
    let case = &queue.cases[0];
    // Aged: a1 (already evidence), p1, p2, m1, m2, o1 (outcome), z1 (alone
    // and unqualified); y1 is too young.
    let expected = Report {
        scanned: 7,
        skipped: 7,
        conflicts: 1,
        queued_conflicts: 1,
        conflict_case_ids: vec![case.conflict_id.clone()],
        ..Report::default()
    };
    assert_eq!(r, expected);
    // Fail closed: no revision, curated state and MEMORY.md untouched.
    assert_eq!(p.ws.curated().unwrap(), curated_before);
    assert_eq!(std::fs::read(p.file("MEMORY.md")).unwrap(), memory_before);

    let active_key = canon::keyed_entry_key(KEY, 1, "decision", "Use SQLite.");
    assert_eq!(case.status, CaseStatus::Open);
    assert_eq!(case.revision, 1);
    assert_eq!(case.memory_key, KEY);
    assert_eq!(case.active_entry_key.as_deref(), Some(active_key.as_str()));
    assert_eq!(case.detected_at.as_str(), crate::common::AS_OF);
    assert_eq!(case.observed_fact_ids, ["a1", "m1", "m2", "o1", "p1", "p2", "y1"]);

    let ids: Vec<&str> = case.candidates.iter().map(|c| c.candidate_id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "candidates not sorted by candidate_id");
    let by_content = |content: &str| case.candidates.iter().find(|c| c.content == content).unwrap();
    assert_eq!(case.candidates.len(), 3);

    let incumbent = by_content("Use SQLite.");
    assert!(incumbent.incumbent);
    assert_eq!(incumbent.evidence_ids, ["a1"]);
    assert_eq!(incumbent.maximum_importance, 4);
    assert_eq!(incumbent.candidate_id, canon::candidate_id(KEY, "decision", "Use SQLite."));

    // Worded from the most important fact (p1), spanning both facts.
    let postgres = by_content("Use Postgres.");
    assert!(!postgres.incumbent);
    assert_eq!(postgres.evidence_ids, ["p1", "p2"]);
    assert_eq!((postgres.occurrences, postgres.maximum_importance), (2, 4));
    assert_eq!(postgres.first_seen.as_str(), "2026-01-10T00:00:00Z");
    assert_eq!(postgres.last_seen.as_str(), "2026-01-12T00:00:00Z");
    assert_eq!(postgres.candidate_id, canon::candidate_id(KEY, "decision", "use postgres."));

    let mysql = by_content("Use MySQL.");
    assert_eq!(mysql.evidence_ids, ["m1", "m2"]);
    assert_eq!(mysql.first_seen.as_str(), "2026-01-11T00:00:00Z");

    // Fingerprint and ids recompute from the stored JSON with the canon
    // functions.
    let stored = &p.conflicts_json()["cases"][0];
    let fingerprint = recomputed_fingerprint(stored);
    assert_eq!(case.fingerprint, fingerprint);
    assert_eq!(fingerprint.len(), 64);
    assert_eq!(case.conflict_id, canon::conflict_id(p.ws.workspace_id(), KEY, &fingerprint));
    for c in stored["candidates"].as_array().unwrap() {
        assert_eq!(
            c["candidate_id"],
            canon::candidate_id(KEY, c["kind"].as_str().unwrap(), c["content"].as_str().unwrap())
        );
    }
    // Closure fields are null on an open case.
    for field in [
        "resolved_at",
        "selected_candidate_id",
        "resolution_event_id",
        "resolution_actor",
        "resolution_rationale",
        "resulting_active_entry_key",
        "superseded_at",
    ] {
        assert_eq!(stored[field], Value::Null, "{field}");
    }
}

#[test]
fn rerun_reuses_the_case_byte_for_byte() {
    let p = tied_project();
    let first = p.distill();
    let before = file_state(&p.file("conflicts.json")).unwrap();
    let curated = file_state(&p.file("curated.json")).unwrap();
    let_clock_tick();
    let second = p.distill();
    assert_eq!(second.conflict_case_ids, first.conflict_case_ids);
    assert_eq!((second.conflicts, second.queued_conflicts, second.created), (1, 0, 0));
    assert_eq!(file_state(&p.file("conflicts.json")).unwrap(), before);
    assert_eq!(file_state(&p.file("curated.json")).unwrap(), curated);
    // A later as_of with no new aged evidence still reuses the same case
    // (detected_at stays the first detection).
    let third = p.distill_with(&Default::default(), "2026-03-02T00:00:00Z");
    assert_eq!(third.conflict_case_ids, first.conflict_case_ids);
    assert_eq!(third.queued_conflicts, 0);
    assert_eq!(file_state(&p.file("conflicts.json")).unwrap(), before);
}

#[test]
fn new_tied_evidence_supersedes_the_case_with_revision_two() {
    let p = tied_project();
    let first = p.distill();
    let old_id = first.conflict_case_ids[0].clone();
    p.add("p3", "decision", 4, Some(KEY), "Use Postgres.", "2026-01-13T00:00:00Z");
    p.add("m3", "decision", 4, Some(KEY), "Use MySQL.", "2026-01-13T00:00:00Z");
    let as_of = "2026-03-05T00:00:00Z";
    let r = p.distill_with(&Default::default(), as_of);
    assert_eq!((r.conflicts, r.queued_conflicts, r.created, r.superseded), (1, 1, 0, 0));
    let queue = p.ws.conflicts().unwrap();
    assert_eq!(queue.cases.len(), 2);
    let old = queue.get(&old_id).unwrap();
    assert_eq!(old.status, CaseStatus::Superseded);
    assert_eq!(old.superseded_at.as_ref().map(workmem::Stamp::as_str), Some(as_of));
    assert_eq!(old.revision, 1);
    let new = queue.cases.iter().find(|c| c.conflict_id != old_id).unwrap();
    assert_eq!(r.conflict_case_ids, std::slice::from_ref(&new.conflict_id));
    assert_eq!(new.status, CaseStatus::Open);
    assert_eq!(new.revision, 2);
    assert_eq!(new.detected_at.as_str(), as_of);
    assert_eq!(new.superseded_at, None);
    assert_eq!(new.observed_fact_ids, ["a1", "m1", "m2", "m3", "o1", "p1", "p2", "p3", "y1"]);
    // Cases are stored sorted by (memory_key, revision).
    let stored = p.conflicts_json();
    let revisions: Vec<i64> = stored["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["revision"].as_i64().unwrap())
        .collect();
    assert_eq!(revisions, [1, 2]);
    assert_eq!(stored["cases"][0]["superseded_at"], as_of);
}

#[test]
fn a_settled_domain_supersedes_its_open_case() {
    let p = tied_project();
    let first = p.distill();
    // A third Postgres fact breaks the tie: revision 2, case superseded.
    p.add("p3", "decision", 2, Some(KEY), "Use Postgres.", "2026-01-14T00:00:00Z");
    let r = p.distill();
    assert_eq!((r.created, r.superseded, r.conflicts, r.queued_conflicts), (1, 1, 0, 0));
    let active = p.ws.curated().unwrap().active_for(KEY).unwrap().clone();
    assert_eq!((active.revision, active.content.as_str()), (2, "Use Postgres."));
    let case = p.ws.conflicts().unwrap().get(&first.conflict_case_ids[0]).unwrap().clone();
    assert_eq!(case.status, CaseStatus::Superseded);
}

#[test]
fn tie_without_an_active_value_has_no_incumbent() {
    let p = Project::new();
    p.add("x1", "convention", 5, Some("style.indent"), "Indent with tabs.", "2026-01-01T00:00:00Z");
    p.add(
        "x2",
        "convention",
        5,
        Some("style.indent"),
        "Indent with spaces.",
        "2026-01-01T00:00:00Z",
    );
    let r = p.distill();
    assert_eq!((r.conflicts, r.queued_conflicts, r.created, r.skipped), (1, 1, 0, 2));
    assert!(!p.file("curated.json").exists() || p.ws.curated().unwrap().entries.is_empty());
    let case = p.ws.conflicts().unwrap().cases[0].clone();
    assert_eq!(case.active_entry_key, None);
    assert!(case.candidates.iter().all(|c| !c.incumbent));
    assert_eq!(case.fingerprint, recomputed_fingerprint(&p.conflicts_json()["cases"][0]));
}
