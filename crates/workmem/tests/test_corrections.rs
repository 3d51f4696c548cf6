//! The corrections stream as `verify` reads it (docs/corrections.md,
//! "What `verify` checks"), on a real workspace: a tie on `db.engine` with
//! an active value (fact s1) and an open case (facts p1, p2, m1, m2).
#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::fs;

use serde_json::{Value, json};
use workmem::internals::corrections::CORRECTIONS_FILE;
use workmem::{Problem, Workspace};

use crate::test_torn_writes::Tied;

/// A correction record of `tied`'s workspace: a retraction of `facts`, or
/// with `restores` a restore.
fn record(tied: &Tied, event: &str, facts: &[&str], restores: Option<&str>) -> Value {
    let workspace = tied.open().workspace_id().to_owned();
    json!({
        "action": if restores.is_some() { "restore" } else { "retract" },
        "actor": "Ada <ada@example.com>", "entry_key": null, "event_id": event,
        "fact_ids": facts, "rationale": "recorded against the wrong service",
        "recorded_at": "2026-03-01T09:00:00Z", "restores": restores,
        "schema_version": 1, "workspace_id": workspace,
    })
}

/// Replaces the corrections stream with `lines`, one record each.
fn write_stream(tied: &Tied, lines: &[String]) {
    let text: String = lines.iter().flat_map(|l| [l.as_str(), "\n"]).collect();
    fs::write(tied.memory().join(CORRECTIONS_FILE), text).unwrap();
}

fn verify(tied: &Tied) -> Vec<Problem> {
    Workspace::builder(&tied.root).open_read_only().unwrap().verify().unwrap()
}

/// The messages of the problems about `file`, with their lines.
fn about(problems: &[Problem], file: &str) -> Vec<(Option<usize>, String)> {
    problems
        .iter()
        .filter(|p| p.file.ends_with(file))
        .map(|p| (p.line, p.message.clone()))
        .collect()
}

/// The lines of the records `verify` reports as not applied, with their
/// event ids.
fn waiting(problems: &[Problem]) -> Vec<(Option<usize>, String)> {
    about(problems, CORRECTIONS_FILE)
        .into_iter()
        .filter(|(_, m)| m.contains("is not applied to curated.json and conflicts.json yet"))
        .map(|(line, m)| (line, m.split(' ').nth(1).unwrap().to_owned()))
        .collect()
}

#[test]
fn a_retracted_fact_that_still_counts_is_reported_until_it_is_restored() {
    let tied = Tied::new();
    assert_eq!(verify(&tied), []);
    let retract = record(&tied, "correction:1", &["p1", "s1"], None);
    write_stream(&tied, &[retract.to_string()]);
    let problems = verify(&tied);
    let curated = about(&problems, "curated.json");
    assert!(
        curated.len() == 1
            && curated[0].1.starts_with("active entry ")
            && curated[0].1.ends_with("cites fact s1, which correction correction:1 retracts"),
        "{problems:?}"
    );
    // The case rests on both: p1 is a challenger's evidence, s1 the
    // incumbent's.
    let conflicts = about(&problems, "conflicts.json");
    for fact in ["p1", "s1"] {
        let words = format!("rests on fact {fact}, which correction correction:1 retracts");
        assert!(conflicts.iter().any(|(_, m)| m.ends_with(&words)), "{problems:?}");
    }
    // The cause: the record is not applied to the derived state.
    assert_eq!(waiting(&problems), [(Some(1), "correction:1".to_owned())], "{problems:?}");
    assert_eq!(problems.len(), 4, "{problems:?}");

    // Restored: the facts count again, and nothing is wrong.
    let restore = record(&tied, "correction:2", &["p1", "s1"], Some("correction:1"));
    write_stream(&tied, &[retract.to_string(), restore.to_string()]);
    assert_eq!(verify(&tied), []);
}

#[test]
fn a_superseded_revision_may_not_keep_a_retracted_fact_and_a_closed_case_may() {
    let tied = Tied::new();
    // Postgres is chosen: revision 1 (s1) is superseded, the case closed.
    let case = tied.case();
    tied.open().resolve(tied.decision(&case)).unwrap();
    assert_eq!(verify(&tied), []);
    // m1 was a losing candidate's evidence in the closed case: the case
    // keeps what the person saw.
    write_stream(&tied, &[record(&tied, "correction:1", &["m1"], None).to_string()]);
    assert_eq!(verify(&tied), []);
    write_stream(&tied, &[record(&tied, "correction:1", &["m1", "s1"], None).to_string()]);
    let problems = verify(&tied);
    let curated = about(&problems, "curated.json");
    assert!(
        curated.len() == 1
            && curated[0].1.starts_with("superseded entry ")
            && curated[0].1.ends_with("cites fact s1, which correction correction:1 retracts"),
        "{problems:?}"
    );
    assert_eq!(waiting(&problems), [(Some(1), "correction:1".to_owned())], "{problems:?}");
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn the_stream_is_checked_record_by_record() {
    let tied = Tied::new();
    // The facts named here are evidence of nothing that counts: only the
    // stream's own problems are reported.
    let ok = record(&tied, "correction:1", &["m1"], None);
    let restore_ok = record(&tied, "correction:2", &["m1"], Some("correction:1"));
    let twice = record(&tied, "correction:1", &["m2"], Some("correction:2"));
    let unknown_fact = record(&tied, "correction:3", &["f-nowhere"], None);
    let restore_nothing = record(&tied, "correction:4", &["m1"], Some("correction:9"));
    let mut unknown_field = record(&tied, "correction:5", &["m1"], None);
    unknown_field["reason"] = json!("x");
    let mut other_workspace = record(&tied, "correction:6", &["m1"], None);
    other_workspace["workspace_id"] = json!("0000000000000000");
    let mut restored_twice = record(&tied, "correction:7", &["m1"], Some("correction:1"));
    restored_twice["restores"] = json!("correction:1");
    let lines = [
        ok,
        restore_ok,
        twice,
        unknown_fact,
        restore_nothing,
        unknown_field,
        other_workspace,
        restored_twice,
    ]
    .map(|v| v.to_string());
    write_stream(&tied, &lines);
    let problems = about(&verify(&tied), CORRECTIONS_FILE);
    let expected: [(usize, &str); 6] = [
        (3, "event id correction:1 appears twice"),
        (3, "restore correction:1 names correction:2, which is a restore, not a retraction"),
        (4, "retract correction:3 names fact f-nowhere, which is not in the log"),
        (5, "restore correction:4 names correction:9, which is not a correction of the stream"),
        (6, "unknown field `reason`"),
        (7, "belongs to workspace 0000000000000000"),
    ];
    for (line, words) in expected {
        assert!(
            problems.iter().any(|(l, m)| *l == Some(line) && m.contains(words)),
            "line {line}: {words}: {problems:?}"
        );
    }
    assert_eq!(problems.len(), expected.len(), "{problems:?}");
}

#[test]
fn status_counts_the_corrections_and_the_facts_they_retract() {
    let tied = Tied::new();
    // (Opened to write: the records written here arrive as a merge brings
    // them, and the first read applies them.)
    let counts = |tied: &Tied| {
        let ws = tied.open();
        let overview = ws.overview(None).unwrap();
        let c = overview.corrections;
        (c.records, c.retracted_facts, c.redacted_facts)
    };
    assert_eq!(counts(&tied), (0, 0, 0));
    let first = record(&tied, "correction:1", &["m1", "m2"], None);
    let second = record(&tied, "correction:2", &["m2"], None);
    write_stream(&tied, &[first.to_string(), second.to_string()]);
    assert_eq!(counts(&tied), (2, 2, 0));
    // m2 stays retracted by the second record.
    let restore = record(&tied, "correction:3", &["m1", "m2"], Some("correction:1"));
    write_stream(&tied, &[first.to_string(), second.to_string(), restore.to_string()]);
    assert_eq!(counts(&tied), (3, 1, 0));
    let ws = Workspace::builder(&tied.root).open_read_only().unwrap();
    let events: Vec<String> = ws.corrections().unwrap().into_iter().map(|c| c.event_id).collect();
    assert_eq!(events, ["correction:1", "correction:2", "correction:3"]);
}

#[test]
fn history_shows_the_corrections_of_the_key_in_time_order() {
    let tied = Tied::new();
    let ws = tied.open();
    assert!(ws.history("db.engine").unwrap().corrections.is_empty());
    let late = record(&tied, "correction:a", &["m1"], None);
    let mut early = record(&tied, "correction:b", &["p2"], None);
    early["recorded_at"] = json!("2026-02-20T09:00:00Z");
    // A record that names no fact of the key is another key's history.
    let elsewhere = record(&tied, "correction:c", &["f-nowhere"], None);
    write_stream(&tied, &[late.to_string(), early.to_string(), elsewhere.to_string()]);
    let history = ws.history("db.engine").unwrap();
    let events: Vec<&str> = history.corrections.iter().map(|c| c.event_id.as_str()).collect();
    assert_eq!(events, ["correction:b", "correction:a"]);
    assert_eq!(history.corrections[1].rationale, "recorded against the wrong service");
}

/// Whether an entry of `ws`'s curated state cites `fact` as evidence.
fn cited(ws: &Workspace, fact: &str) -> bool {
    ws.curated().unwrap().entries.iter().any(|e| e.evidence_ids.iter().any(|id| id == fact))
}

#[test]
fn a_record_that_arrived_is_applied_by_the_first_command_that_reads_the_state() {
    let tied = Tied::new();
    let curated = || fs::read(tied.memory().join("curated.json")).unwrap();
    let untouched = curated();
    // Written to the stream as a merge writes it: the derived state does
    // not show it, and verify says so.
    // (Recorded after the case was detected: the domain has not moved on
    // when the restore below arrives.)
    let mut retract = record(&tied, "correction:1", &["p1", "s1"], None);
    retract["recorded_at"] = json!("2030-03-01T09:00:00Z");
    write_stream(&tied, &[retract.to_string()]);
    assert_eq!(waiting(&verify(&tied)), [(Some(1), "correction:1".to_owned())]);
    assert_eq!(curated(), untouched);
    // The first read applies it, then serves.
    let ws = tied.open();
    assert!(!cited(&ws, "s1"));
    assert_eq!(verify(&tied), []);
    let applied = curated();
    assert_ne!(applied, untouched);
    assert!(ws.conflicts().unwrap().cases.iter().all(|c| !c.is_open()));
    // The stream unchanged, nothing is applied again.
    assert!(!cited(&tied.open(), "s1"));
    assert_eq!(curated(), applied);

    // A restore that arrives puts the facts back.
    let mut restore = record(&tied, "correction:2", &["p1", "s1"], Some("correction:1"));
    restore["recorded_at"] = json!("2030-03-02T09:00:00Z");
    write_stream(&tied, &[retract.to_string(), restore.to_string()]);
    assert_eq!(waiting(&verify(&tied)), [(Some(2), "correction:2".to_owned())]);
    assert!(cited(&tied.open(), "s1"));
    assert_eq!(verify(&tied), []);

    // A read-only handle applies nothing, and refuses to serve state that
    // does not show a correction in force.
    let again = record(&tied, "correction:3", &["s1"], None);
    write_stream(&tied, &[retract.to_string(), restore.to_string(), again.to_string()]);
    let reader = Workspace::builder(&tied.root).open_read_only().unwrap();
    let err = reader.curated().unwrap_err().to_string();
    assert!(err.contains("retract correction:3 arrived through git"), "{err}");
    assert!(err.contains(&format!("{CORRECTIONS_FILE}:3")), "{err}");
    assert!(!cited(&tied.open(), "s1"));
    assert_eq!(verify(&tied), []);
}
