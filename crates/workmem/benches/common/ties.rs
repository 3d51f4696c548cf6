//! Ties for the benches that resolve: two equally strong values for each
//! memory key, old enough to be judged, so one distill queues a case per
//! key; the open cases of those keys, and a decision on one.

use workmem::{Case, CaseStatus, NewFact, Resolution, Workspace};

/// Imports the facts of a tie for each of `keys` (ids `<key>-a1` ...).
pub fn ties(ws: &Workspace, keys: &[String]) {
    four_facts(ws, keys, "Value B.");
}

/// Imports the same four facts as [`ties`] for each of `keys`, but with
/// one value: a distill promotes it without a case.
#[allow(dead_code)] // (not every bench that includes this file uses it)
pub fn agreements(ws: &Workspace, keys: &[String]) {
    four_facts(ws, keys, "Value A.");
}

/// Imports four facts for each of `keys`: two of "Value A." and two of
/// `second`.
fn four_facts(ws: &Workspace, keys: &[String], second: &str) {
    let mut facts = Vec::new();
    for key in keys {
        for (id, content, at) in [
            ("a1", "Value A.", "2026-01-01T00:00:00Z"),
            ("a2", "Value A.", "2026-01-02T00:00:00Z"),
            ("b1", second, "2026-01-01T00:00:00Z"),
            ("b2", second, "2026-01-02T00:00:00Z"),
        ] {
            facts.push(NewFact {
                content: content.into(),
                kind: Some("decision".into()),
                importance: Some(4),
                memory_key: Some(key.clone()),
                recorded_at: Some(at.into()),
                fact_id: Some(format!("{key}-{id}")),
                ..NewFact::default()
            });
        }
    }
    ws.import(facts, &mut |_| {}).expect("import");
}

/// The open cases of `keys`, by memory key.
pub fn open_cases(ws: &Workspace, keys: &[String]) -> Vec<Case> {
    let mut cases: Vec<_> = ws
        .conflicts()
        .expect("conflicts")
        .cases
        .into_iter()
        .filter(|c| c.status == CaseStatus::Open && keys.contains(&c.memory_key))
        .collect();
    cases.sort_by(|a, b| a.memory_key.cmp(&b.memory_key));
    cases
}

/// The `n`th decision of a bench on `case`: its candidate `n` (modulo
/// their number), under an event id of its own.
pub fn resolution(case: &Case, n: usize) -> Resolution {
    Resolution {
        conflict_id: case.conflict_id.clone(),
        candidate_id: case.candidates[n % case.candidates.len()].candidate_id.clone(),
        expected_revision: i64::from(case.revision),
        actor: "bench".into(),
        rationale: "benchmark".into(),
        event_id: format!("bench:{}:{n}", case.memory_key),
        resolved_at: None,
    }
}
