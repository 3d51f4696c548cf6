//! `Workspace::scan`: credentials already stored are found in every file,
//! valid or not, named by file, line, record and field, never by value;
//! and the scan writes nothing.

use serde_json::json;
use workmem::{NewFact, Workspace};
use workmem_testutil::credential_samples;

use crate::common::{Project, snapshot_dir, write_raw};

/// A bare token of the short list, and its kind.
fn token() -> (String, &'static str) {
    credential_samples()
        .into_iter()
        .find(|(text, kind)| *kind == "GitHub token" && !text.contains(' '))
        .expect("a GitHub token")
}

/// A finding as (line, fact id, record, field, kind).
type Seen<'a> = (Option<usize>, Option<&'a str>, Option<&'a str>, &'a str, &'a str);

fn fact_line(fact_id: &str, content: &str, evidence: serde_json::Value, workspace: &str) -> String {
    format!(
        "{}\n",
        json!({
            "content": content, "evidence": evidence, "fact_id": fact_id, "importance": 3,
            "kind": "decision", "memory_key": null, "recorded_at": "2026-01-05T10:00:00Z",
            "schema_version": 2, "source": "agent", "workspace_id": workspace,
        })
    )
}

#[test]
fn every_field_of_a_planted_fact_is_named_and_no_value_is_kept() {
    let p = Project::new();
    p.ws.remember(NewFact::new("Ordinary fact.")).unwrap();
    let (token, kind) = token();
    let id = p.ws.workspace_id().to_owned();
    let lines = [
        fact_line("f-content", &format!("pushes with {token}"), json!({}), &id),
        // An evidence map whose key is `key` is still evidence, not a record.
        fact_line("f-evidence", "Fine.", json!({"key": token, "file": "a.rs"}), &id),
        fact_line("f-pair", "Fine.", json!({"db_password": "hunter42"}), &id),
        fact_line(&token, "Fine.", json!({}), &id),
        fact_line("f-evkey", "Fine.", json!({token.clone(): "x"}), &id),
    ];
    write_raw(&p.day_file("2026-01-05"), lines.concat().as_bytes());
    let before = snapshot_dir(p.ws.memory_dir());
    let checker = Workspace::builder(p.path()).open_read_only().unwrap();
    let scan = checker.scan().unwrap();
    let seen: Vec<Seen<'_>> = scan
        .findings
        .iter()
        .map(|f| (f.line, f.fact_id.as_deref(), f.record.as_deref(), f.field.as_str(), f.kind))
        .collect();
    assert_eq!(
        seen,
        vec![
            (Some(1), Some("f-content"), Some("fact f-content"), "content", kind),
            (Some(2), Some("f-evidence"), Some("fact f-evidence"), "evidence value", kind),
            (
                Some(3),
                Some("f-pair"),
                Some("fact f-pair"),
                "evidence value",
                "password or secret assignment"
            ),
            (Some(4), None, Some("fact"), "fact_id", kind),
            (Some(5), Some("f-evkey"), Some("fact f-evkey"), "evidence key", kind),
        ]
    );
    assert!(scan.unreadable.is_empty());
    let listed = serde_json::to_string(&scan).unwrap();
    assert!(!listed.contains(&token[4..]) && !listed.contains("hunter42"), "{listed}");
    assert_eq!(snapshot_dir(p.ws.memory_dir()), before, "scan wrote something");
}

#[test]
fn conflict_candidates_and_journal_intents_are_scanned() {
    let p = Project::new();
    p.ws.remember(NewFact::new("Ordinary fact.")).unwrap();
    let (token, kind) = token();
    write_raw(
        &p.file("conflicts.json"),
        format!(
            "{{\n  \"cases\": [\n    {{\n      \"candidates\": [\n        {{\n          \"candidate_id\": \"candidate-1\",\n          \"content\": \"use {token}\"\n        }}\n      ],\n      \"conflict_id\": \"conflict-0123456789abcdef\"\n    }}\n  ]\n}}\n"
        )
        .as_bytes(),
    );
    write_raw(
        &p.file("conflict-resolution-transactions.jsonl"),
        format!(
            "{}\n",
            json!({"transaction_id": "resolution-1", "phase": "prepared",
                   "intent": {"adjudication": {"event_id": "review:1", "rationale": format!("keep {token}")}}})
        )
        .as_bytes(),
    );
    let scan = p.ws.scan().unwrap();
    let seen: Vec<(Option<usize>, Option<&str>, &str, &str)> = scan
        .findings
        .iter()
        .map(|f| (f.line, f.record.as_deref(), f.field.as_str(), f.kind))
        .collect();
    assert_eq!(
        seen,
        vec![
            (Some(1), Some("event review:1"), "rationale", kind),
            (Some(7), Some("conflict conflict-0123456789abcdef"), "candidates.content", kind),
        ]
    );
}

#[test]
fn a_missing_memory_directory_is_an_error_not_a_clean_scan() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::builder(dir.path()).open_read_only().unwrap();
    assert!(matches!(ws.scan(), Err(workmem::Error::Io { .. })));
}
