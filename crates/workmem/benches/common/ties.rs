//! Ties for the benches that resolve: two equally strong values for each
//! memory key, old enough to be judged, so one distill queues a case per
//! key.

use workmem::{NewFact, Workspace};

/// Imports the facts of a tie for each of `keys` (ids `<key>-a1` ...).
pub fn ties(ws: &Workspace, keys: &[String]) {
    let mut facts = Vec::new();
    for key in keys {
        for (id, content, at) in [
            ("a1", "Value A.", "2026-01-01T00:00:00Z"),
            ("a2", "Value A.", "2026-01-02T00:00:00Z"),
            ("b1", "Value B.", "2026-01-01T00:00:00Z"),
            ("b2", "Value B.", "2026-01-02T00:00:00Z"),
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
