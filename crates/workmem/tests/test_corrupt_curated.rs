//! Acceptance 7: corrupt curated lifecycles are rejected on load with a
//! corruption error naming the entry key (docs/format.md).
#![allow(clippy::disallowed_methods)]

use serde_json::{Value, json};
use workmem::DistillOptions;
use workmem::{Error, internals::canon};

use crate::common::{Project, write_raw};

// Labels of the test entries: each one's wording is `Value <label>.` and
// its key the one docs/format.md computes from that (see `key_of`).
const A1: &str = "aaaaaaaaaaaaaaa1";
const A2: &str = "aaaaaaaaaaaaaaa2";
const A3: &str = "aaaaaaaaaaaaaaa3";
const B1: &str = "bbbbbbbbbbbbbbb1";
const U1: &str = "ccccccccccccccc1";

/// An entry labelled `label` (its wording is `Value <label>.`), with the key
/// docs/format.md gives it: messages name that key, see [`key_of`].
fn entry(label: &str, memory_key: Option<&str>, revision: u32, status: &str) -> Value {
    let content = format!("Value {label}.");
    let key = match memory_key {
        Some(memory_key) => canon::keyed_entry_key(memory_key, revision, "decision", &content),
        None => canon::unkeyed_entry_key("decision", &content),
    };
    json!({
        "key": key, "kind": "decision", "content": content,
        "first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-01-02T00:00:00Z",
        "evidence_ids": [format!("e-{label}")], "occurrences": 1,
        "memory_key": memory_key, "revision": revision, "status": status,
        "supersedes": null, "superseded_by": null,
    })
}

/// Returns the key of the entry labelled `label`.
fn key_of(entries: &[Value], label: &str) -> String {
    let content = format!("Value {label}.");
    let entry = entries.iter().find(|e| e["content"] == content.as_str()).expect("labelled entry");
    entry["key"].as_str().expect("key").to_owned()
}

fn link(entries: &mut [Value], older: usize, newer: usize) {
    let older_key = entries[older]["key"].clone();
    let newer_key = entries[newer]["key"].clone();
    entries[older]["superseded_by"] = newer_key;
    entries[newer]["supersedes"] = older_key;
}

/// A valid state: domain a.key with revisions 1 (superseded) and 2
/// (active), domain b.key with one active revision, one unkeyed entry.
fn valid_entries() -> Vec<Value> {
    let mut entries = vec![
        entry(A1, Some("a.key"), 1, "superseded"),
        entry(A2, Some("a.key"), 2, "active"),
        entry(B1, Some("b.key"), 1, "active"),
        entry(U1, None, 1, "active"),
    ];
    link(&mut entries, 0, 1);
    entries
}

fn write_state(p: &Project, entries: &[Value]) {
    let payload =
        json!({"schema_version": 2, "workspace_id": p.ws.workspace_id(), "entries": entries});
    p.ws.init().unwrap();
    write_raw(&p.file("curated.json"), serde_json::to_string_pretty(&payload).unwrap().as_bytes());
}

/// Asserts every reader of curated.json refuses the state with a message
/// naming `key` (an entry key, or the domain where no entry is at fault).
fn assert_rejected(p: &Project, key: &str, what: &str) {
    let check = |result: Result<String, Error>, via: &str| match result {
        Err(err @ Error::Corrupt { .. }) => {
            let message = err.to_string();
            assert!(
                message.contains(key),
                "{what} via {via}: message does not name {key}: {message}"
            );
            assert!(
                message.contains("curated.json"),
                "{what} via {via}: message does not name the file: {message}"
            );
            assert!(matches!(err, Error::Corrupt { .. }));
        }
        other => panic!("{what} via {via}: expected corruption, got {other:?}"),
    };
    check(p.ws.curated().map(|_| String::new()), "curated()");
    check(p.ws.memory(), "memory()");
    check(p.ws.context(None), "context()");
    check(
        p.ws.distill(&DistillOptions::new()).map(|d| d.report).map(|_| String::new()),
        "distill()",
    );
}

#[test]
fn the_valid_baseline_loads() {
    let p = Project::new();
    write_state(&p, &valid_entries());
    // Its entries cite no fact of the log: only as this clone's own write
    // is it served (one from elsewhere is checked against the log).
    let bytes = std::fs::read(p.file("curated.json")).unwrap();
    let state = workmem::CuratedState::decode(&bytes, &p.file("curated.json"), p.ws.workspace_id())
        .unwrap();
    workmem::internals::save_curated(&p.ws, &state).unwrap();
    let state = p.ws.curated().unwrap();
    assert_eq!(state.entries.len(), 4);
    let memory = p.ws.memory().unwrap();
    assert!(
        memory.contains("Value aaaaaaaaaaaaaaa2.") && !memory.contains("Value aaaaaaaaaaaaaaa1."),
        "{memory}"
    );
}

#[test]
fn two_active_revisions_are_rejected() {
    let p = Project::new();
    let mut entries = valid_entries();
    entries[0]["status"] = json!("active");
    entries[0]["superseded_by"] = Value::Null;
    entries[1]["supersedes"] = Value::Null;
    entries[1]["revision"] = json!(1);
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, A1), "two active revisions");
}

#[test]
fn a_domain_without_an_active_revision_is_rejected() {
    let p = Project::new();
    let mut entries = valid_entries();
    entries[2]["status"] = json!("superseded");
    entries[2]["superseded_by"] = json!(key_of(&entries, A2));
    write_state(&p, &entries);
    // The message names the domain that lost its active revision.
    assert_rejected(&p, "memory_key b.key", "superseded without an active successor");
}

#[test]
fn broken_links_are_rejected() {
    // superseded_by pointing at a missing entry.
    let p = Project::new();
    let mut entries = valid_entries();
    entries[0]["superseded_by"] = json!("ffffffffffffffff");
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, A1), "dangling superseded_by");

    // supersedes pointing at a missing entry.
    let p = Project::new();
    let mut entries = valid_entries();
    entries[1]["supersedes"] = json!("ffffffffffffffff");
    write_state(&p, &entries);
    assert_rejected(
        &p,
        &key_of(&entries, A1),
        "dangling supersedes (A1's superseded_by is no longer mutual)",
    );

    // Active entry with superseded_by.
    let p = Project::new();
    let mut entries = valid_entries();
    entries[2]["superseded_by"] = json!(key_of(&entries, A2));
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, B1), "active with superseded_by");

    // Superseded entry with no superseded_by.
    let p = Project::new();
    let mut entries = valid_entries();
    entries[0]["superseded_by"] = Value::Null;
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, A1), "superseded without superseded_by");

    // Revision 2 without supersedes.
    let p = Project::new();
    let mut entries = valid_entries();
    entries[2]["revision"] = json!(2);
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, B1), "revision 2 without supersedes");

    // Revision 1 with supersedes.
    let p = Project::new();
    let mut entries = valid_entries();
    entries.push(entry(A3, Some("a.key"), 1, "superseded"));
    entries[4]["supersedes"] = json!(key_of(&entries, A1));
    entries[4]["superseded_by"] = json!(key_of(&entries, A2));
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, A3), "revision 1 with supersedes");
}

#[test]
fn cross_key_links_are_rejected() {
    // a.key: A1 (rev 1, superseded by B1 of b.key), A2 (rev 1, active);
    // b.key: B1 (rev 2, active, supersedes A1). Each domain has one active
    // revision and the links are mutual, but they cross memory keys.
    let p = Project::new();
    let mut entries = vec![
        entry(A1, Some("a.key"), 1, "superseded"),
        entry(A2, Some("a.key"), 1, "active"),
        entry(B1, Some("b.key"), 2, "active"),
    ];
    link(&mut entries, 0, 2);
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, B1), "cross-key link");

    // A keyed revision superseding an unkeyed entry.
    let p = Project::new();
    let mut entries = vec![entry(U1, None, 1, "superseded"), entry(B1, Some("b.key"), 2, "active")];
    link(&mut entries, 0, 1);
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, U1), "unkeyed entry in a chain");
}

#[test]
fn non_contiguous_revisions_are_rejected() {
    let p = Project::new();
    let mut entries = valid_entries();
    entries[1]["revision"] = json!(3);
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, A2), "revision 3 superseding revision 1");
}

#[test]
fn wrong_occurrences_are_rejected() {
    let p = Project::new();
    let mut entries = valid_entries();
    entries[3]["occurrences"] = json!(2);
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, U1), "occurrences 2 with one evidence id");

    let p = Project::new();
    let mut entries = valid_entries();
    entries[2]["evidence_ids"] = json!(["x", "x"]);
    entries[2]["occurrences"] = json!(2);
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, B1), "duplicate evidence ids");
}

#[test]
fn unkeyed_entry_with_a_lifecycle_is_rejected() {
    let a1 = key_of(&valid_entries(), A1);
    for (field, value) in [
        ("revision", json!(2)),
        ("status", json!("superseded")),
        ("supersedes", json!(a1)),
        ("superseded_by", json!(a1)),
    ] {
        let p = Project::new();
        let mut entries = valid_entries();
        entries[3][field] = value;
        write_state(&p, &entries);
        assert_rejected(&p, &key_of(&entries, U1), &format!("unkeyed entry with {field}"));
    }
}

#[test]
fn duplicate_keys_and_bad_fields_are_rejected() {
    let p = Project::new();
    let mut entries = valid_entries();
    let mut twin = entries[3].clone();
    twin["content"] = json!("Other wording.");
    entries.push(twin);
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, U1), "duplicate key");

    let p = Project::new();
    let mut entries = valid_entries();
    entries[3]["first_seen"] = json!("2026-02-01T00:00:00Z");
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, U1), "first_seen after last_seen");

    let p = Project::new();
    let mut entries = valid_entries();
    entries[2]["memory_key"] = json!("B.Key");
    write_state(&p, &entries);
    assert_rejected(&p, &key_of(&entries, B1), "memory_key not in normal form");
}
