//! Acceptance 8: a schema-1 curated.json is read with lifecycle defaults
//! and rewritten as schema 2 only by a distill that changes state.
#![allow(clippy::disallowed_methods)]

use serde_json::json;
use workmem::{Report, Status, internals::canon};

use crate::common::{Project, file_state, let_clock_tick, write_raw};

fn schema_one(p: &Project) -> Vec<u8> {
    let key = canon::unkeyed_entry_key("convention", "Run cargo fmt.");
    let payload = json!({
        "schema_version": 1,
        "workspace_id": p.ws.workspace_id(),
        "entries": [{
            "key": key, "kind": "convention", "content": "Run cargo fmt.",
            "first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-01-02T00:00:00Z",
            "evidence_ids": ["s1", "s2"], "occurrences": 2,
        }],
    });
    let bytes = serde_json::to_vec_pretty(&payload).unwrap();
    p.ws.init().unwrap();
    // The evidence it cites, in the log: a curated.json that arrives is
    // checked against it.
    p.add("s1", "convention", 3, None, "Run cargo fmt.", "2026-01-01T00:00:00Z");
    p.add("s2", "convention", 3, None, "Run cargo fmt.", "2026-01-02T00:00:00Z");
    write_raw(&p.file("curated.json"), &bytes);
    bytes
}

#[test]
fn schema_one_is_read_with_defaults() {
    let p = Project::new();
    schema_one(&p);
    let state = p.ws.curated().unwrap();
    assert_eq!(state.schema_version, 1);
    assert_eq!(state.entries.len(), 1);
    let entry = &state.entries[0];
    assert_eq!(
        (entry.revision, entry.status, entry.memory_key.as_deref()),
        (1, Status::Active, None)
    );
    assert_eq!((entry.supersedes.as_deref(), entry.superseded_by.as_deref()), (None, None));
    assert!(p.ws.memory().unwrap().contains("- Run cargo fmt. (seen 2x; evidence: 2)"));
}

#[test]
fn distill_without_changes_leaves_schema_one_alone() {
    let p = Project::new();
    p.add("s1", "convention", 3, None, "Run cargo fmt.", "2026-01-01T00:00:00Z");
    p.add("s2", "convention", 3, None, "Run cargo fmt.", "2026-01-02T00:00:00Z");
    p.add("x1", "pitfall", 1, None, "Unqualified.", "2026-01-03T00:00:00Z");
    let bytes = schema_one(&p);
    let before = file_state(&p.file("curated.json")).unwrap();
    let_clock_tick();
    assert_eq!(p.distill(), Report { scanned: 3, skipped: 3, ..Report::default() });
    assert_eq!(file_state(&p.file("curated.json")).unwrap(), before);
    assert_eq!(std::fs::read(p.file("curated.json")).unwrap(), bytes);
    assert_eq!(p.ws.curated().unwrap().schema_version, 1);
}

#[test]
fn distill_that_changes_state_rewrites_as_schema_two() {
    let p = Project::new();
    p.add("s1", "convention", 3, None, "Run cargo fmt.", "2026-01-01T00:00:00Z");
    p.add("s2", "convention", 3, None, "Run cargo fmt.", "2026-01-02T00:00:00Z");
    schema_one(&p);
    p.add("s3", "convention", 1, None, "run cargo fmt.", "2026-01-03T00:00:00Z");
    assert_eq!(
        p.distill(),
        Report { scanned: 3, eligible: 1, updated: 1, skipped: 2, ..Report::default() }
    );
    let written = p.curated_json();
    assert_eq!(written["schema_version"], 2);
    let entry = &written["entries"][0];
    assert_eq!(entry["evidence_ids"], json!(["s1", "s2", "s3"]));
    assert_eq!(entry["occurrences"], 3);
    assert_eq!(entry["revision"], 1);
    assert_eq!(entry["status"], "active");
    for field in ["memory_key", "supersedes", "superseded_by"] {
        assert!(
            entry.get(field).is_some_and(serde_json::Value::is_null),
            "{field} missing or not null: {entry}"
        );
    }
    assert_eq!(p.ws.curated().unwrap().schema_version, 2);
}

#[test]
fn unknown_schema_versions_are_rejected() {
    let p = Project::new();
    schema_one(&p);
    let text = std::fs::read_to_string(p.file("curated.json"))
        .unwrap()
        .replace("\"schema_version\": 1", "\"schema_version\": 4");
    write_raw(&p.file("curated.json"), text.as_bytes());
    let err = p.ws.curated().unwrap_err();
    assert!(
        matches!(err, workmem::Error::UnsupportedVersion { what: "curated", found: 4, .. }),
        "{err}"
    );
}
