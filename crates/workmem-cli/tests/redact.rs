//! `workmem redact`, black-box on the real binary (docs/corrections.md,
//! "Redact"): after a redaction a byte search of every file under the
//! memory directory (caches and temporary files included) finds the text
//! nowhere; the refusals write nothing; without a terminal it needs
//! `--yes`; `--scan` redacts what `scan` reports; and a real abort at
//! every durable boundary of the transaction, then the next command,
//! leaves the text nowhere and `verify` clean. Needs `--features
//! failpoints`, like `recovery`.

#![allow(clippy::disallowed_methods)] // tests read the files directly

use std::io::Write as _;
use std::os::unix::process::ExitStatusExt;

use serde_json::{Value, json};
use workmem_testutil::{Project, credential_corpus, files_holding};

use crate::WORKMEM;

const AS_OF: &str = "2026-06-01T00:00:00Z";
const AT: &str = "2026-06-02T00:00:00Z";

/// The failpoints of a redaction's transaction, in order.
const FAILPOINTS: [&str; 11] = [
    "after_prepared",
    "after_curated_write",
    "after_curated_applied",
    "after_conflict_write",
    "after_conflict_closed",
    "after_file_rewritten",
    "after_files_rewritten",
    "after_caches_removed",
    "after_correction_write",
    "after_correction_appended",
    "after_committed",
];

fn remember(project: &Project, id: &str, content: &str, key: Option<&str>, at: &str) {
    let mut args = vec!["remember", content, "-k", "decision", "-i", "4", "--at", at, "--id", id];
    if let Some(key) = key {
        args.extend(["--key", key]);
    }
    project.ok(&args);
}

/// An active "Use SQLite." (s1) challenged by two tied values ("Use
/// Postgres." p1, p2 on two days, "Use MySQL." m1, m2) in an open case,
/// with every cache that holds text warmed.
fn tied() -> Project {
    let project = Project::new(WORKMEM, "workmem-redact-");
    remember(&project, "s1", "Use SQLite.", Some("db.engine"), "2026-01-01T00:00:00Z");
    project.ok(&["distill", "--as-of", AS_OF]);
    remember(&project, "p1", "Use Postgres.", Some("db.engine"), "2026-02-01T00:00:00Z");
    remember(&project, "p2", "Use Postgres.", Some("db.engine"), "2026-02-10T00:00:00Z");
    remember(&project, "m1", "Use MySQL.", Some("db.engine"), "2026-02-02T00:00:00Z");
    remember(&project, "m2", "Use MySQL.", Some("db.engine"), "2026-02-10T00:00:00Z");
    let report = project.json(&["distill", "--as-of", AS_OF]);
    assert_eq!(report["queued_conflicts"], 1);
    warm(&project);
    project
}

/// Runs the readers whose caches hold text.
fn warm(project: &Project) {
    project.ok(&["context"]);
    project.ok(&["search", "postgres"]);
    project.ok(&["distill", "--as-of", AS_OF]);
    project.ok(&["facts", "--all"]);
}

fn redact_args<'a>(facts: &[&'a str], event: &'a str) -> Vec<&'a str> {
    let mut args = vec!["redact"];
    args.extend(facts);
    args.extend([
        "--rationale",
        "a credential was pasted into it",
        "--event-id",
        event,
        "--actor",
        "Ada <ada@example.com>",
        "--at",
        AT,
        "--yes",
    ]);
    args
}

fn exit(project: &Project, args: &[&str]) -> (i32, String) {
    let out = project.run(args);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Every file of the memory directory that is not a cache, with its bytes.
fn records(project: &Project) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let mut stack = vec![project.memory()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().unwrap().to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The state after redacting p1 and p2: the text nowhere, tombstones in
/// place, the candidate marked, the case superseded, verify clean.
fn assert_redacted(project: &Project) {
    assert_eq!(files_holding(&project.memory(), "Postgres"), Vec::<String>::new());
    assert_eq!(files_holding(&project.memory(), "postgres"), Vec::<String>::new());
    let facts = project.json(&["facts", "--all"]);
    let p1 = facts.as_array().unwrap().iter().find(|f| f["fact_id"] == "p1").unwrap();
    assert_eq!(p1["content"], "[redacted]", "{p1}");
    let conflicts: Value = serde_json::from_str(
        &std::fs::read_to_string(project.memory().join("conflicts.json")).unwrap(),
    )
    .unwrap();
    let case = &conflicts["cases"][0];
    assert_eq!(case["status"], "superseded");
    assert!(case["candidates"].as_array().unwrap().iter().any(|c| c["content"] == "[redacted]"));
    let journal = project.json(&["journal"]);
    let transactions = journal["transactions"].as_array().unwrap();
    assert!(transactions.iter().all(|t| t["committed"] == true), "{journal}");
    project.ok(&["verify"]);
    // Every reader works again, and rebuilds no text.
    warm(project);
    assert_eq!(files_holding(&project.memory(), "Postgres"), Vec::<String>::new());
    project.ok(&["verify"]);
}

#[test]
fn redact_removes_the_text_from_every_file_and_cannot_be_restored() {
    let project = tied();
    assert!(files_holding(&project.memory(), "Postgres").len() > 3, "the caches hold the text");
    let out = project.json(&redact_args(&["p1", "p2"], "correction:r1"));
    assert_eq!(out["action"], "redact");
    assert_eq!(out["fact_ids"], json!(["p1", "p2"]));
    assert_eq!(out["line_sha256"].as_object().unwrap().len(), 2);
    assert_redacted(&project);
    // The plain output names what it did and what it cannot reach.
    let again = project.ok(&redact_args(&["p1", "p2"], "correction:r1"));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already recorded"), "{stderr}");
    // A redaction is not a retraction: restore refuses it.
    let (code, stderr) = exit(
        &project,
        &["restore", "correction:r1", "--rationale", "undo", "--event-id", "correction:r2"],
    );
    assert_eq!(code, 2, "{stderr}");
    // history and explain show the facts redacted.
    let history = String::from_utf8(project.ok(&["history", "db.engine"]).stdout).unwrap();
    assert!(history.contains("correction:r1"), "{history}");
    // status counts them.
    let status = project.json(&["status"]);
    assert_eq!(status["corrections"]["redacted_facts"], 2, "{status}");
}

#[test]
fn refusals_write_nothing() {
    let project = tied();
    let before = records(&project);
    // Without a terminal and without --yes.
    let (code, stderr) =
        exit(&project, &["redact", "p1", "p2", "--rationale", "a credential was pasted into it"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    // p2 holds the same text.
    let (code, stderr) = exit(&project, &redact_args(&["p1"], "correction:r1"));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("p2") && stderr.contains("same text"), "{stderr}");
    // An unknown id; no rationale.
    let (code, stderr) = exit(&project, &redact_args(&["nope"], "correction:r1"));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("nope"), "{stderr}");
    let (code, stderr) = exit(&project, &["redact", "p1", "--yes"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--rationale"), "{stderr}");
    assert_eq!(records(&project), before, "a refused redaction wrote something");
}

/// A credential in a field a redaction keeps (here a fact id) is refused
/// by `--scan`, naming the place, and nothing is written.
#[test]
fn redact_scan_refuses_a_credential_it_does_not_remove_and_writes_nothing() {
    let project = tied();
    let workspace = project.json(&["status"])["workspace_id"].as_str().unwrap().to_owned();
    let id = workmem_testutil::credential_in("GitHub token", workmem_testutil::Field::FactId);
    let line = workmem_testutil::stored_fact_line(
        &workspace,
        &id,
        "convention",
        3,
        None,
        "Keep the runners warm",
        "2026-02-01T12:00:00Z",
    );
    let path = project.memory().join("daily/2026-02-01.jsonl");
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
    drop(file);
    let before = records(&project);
    let (code, stderr) = exit(&project, &["redact", "--scan", "--rationale", "a token", "--yes"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("does not remove") && stderr.contains("fact_id"), "{stderr}");
    assert!(!stderr.contains(&id), "the credential is never quoted: {stderr}");
    assert_eq!(records(&project), before, "a refused redaction wrote something");
}

#[test]
fn redact_scan_removes_every_credential_scan_reports() {
    let project = tied();
    let workspace = project.json(&["init"])["workspace_id"].as_str().unwrap().to_owned();
    let token = credential_corpus()
        .into_iter()
        .find(|s| s.kind == "GitHub token")
        .expect("a GitHub token sample")
        .text;
    // A fact written by hand, before the guard knew the form.
    let line = json!({
        "content": format!("The deploy token is {token}"),
        "evidence": {},
        "fact_id": "leak-1",
        "importance": 3,
        "kind": "decision",
        "memory_key": null,
        "recorded_at": "2026-01-05T10:00:00Z",
        "schema_version": 2,
        "source": "agent",
        "workspace_id": workspace,
    })
    .to_string();
    let path = project.memory().join("daily/2026-01-05.jsonl");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
    drop(file);
    project.ok(&["distill", "--as-of", AS_OF]);
    let (code, stderr) = exit(&project, &["scan"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("workmem redact --scan"), "{stderr}");
    project.ok(&[
        "redact",
        "--scan",
        "--rationale",
        "a deploy token was pasted into a fact",
        "--yes",
    ]);
    assert_eq!(files_holding(&project.memory(), &token), Vec::<String>::new());
    project.ok(&["scan"]);
    project.ok(&["verify"]);
    // Nothing left to redact.
    let out = project.ok(&["redact", "--scan", "--rationale", "again", "--yes"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no record holds a credential"));
}

fn crash(project: &Project, args: &[&str], failpoint: &str) {
    let out = project.cmd(args).env("WORKMEM_FAILPOINT", failpoint).output().expect("spawn");
    assert_eq!(
        out.status.signal(),
        Some(6),
        "{args:?} did not abort at {failpoint} (built without --features failpoints?): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_crash_at_every_boundary_ends_with_the_text_nowhere() {
    for failpoint in FAILPOINTS {
        let project = tied();
        let memory = project.memory();
        let places = files_holding(&memory, "Postgres");
        crash(&project, &redact_args(&["p1", "p2"], "correction:r1"), failpoint);
        // Right after the abort the text is where it was or gone, never
        // somewhere new (a temporary file holds only redacted bytes).
        for file in files_holding(&memory, "Postgres") {
            assert!(places.contains(&file), "{failpoint}: the text appeared in {file}");
        }
        // The next command that opens the memory for writing finishes the
        // redaction.
        project.ok(&["conflicts"]);
        assert_redacted(&project);
        assert_eq!(
            std::fs::read_to_string(memory.join("memory-corrections.jsonl"))
                .unwrap()
                .lines()
                .count(),
            1,
            "{failpoint}"
        );
    }
}

/// A GitHub token as the guard knows it.
fn token() -> String {
    workmem_testutil::credential_in("GitHub token", workmem_testutil::Field::Content)
}

/// The tied project with its case decided and m1 retracted, both records'
/// rationale (and the case's copy of the decision's) holding a token, as
/// an older version could have written them.
fn records_with_a_token(token: &str) -> Project {
    let project = tied();
    let conflicts = project.json(&["conflicts"]);
    let case = &conflicts[0];
    let candidate = case["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["content"] == "Use Postgres.")
        .unwrap();
    let revision = case["revision"].to_string();
    project.ok(&[
        "resolve",
        case["conflict_id"].as_str().unwrap(),
        candidate["candidate_id"].as_str().unwrap(),
        "--revision",
        &revision,
        "--event-id",
        "review:db",
        "--rationale",
        "Production needs extensions.",
        "--at",
        AT,
    ]);
    project.ok(&[
        "retract",
        "m1",
        "--rationale",
        "Recorded twice by mistake.",
        "--event-id",
        "correction:m1",
        "--at",
        AT,
    ]);
    let memory = project.memory();
    for from in ["Production needs extensions.", "Recorded twice by mistake."] {
        for name in files_holding(&memory, from) {
            let path = memory.join(&name);
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, text.replace(from, token)).unwrap();
        }
    }
    assert_eq!(files_holding(&memory, token).len(), 3);
    project
}

/// A redaction of a decision's and a correction's words, aborted for real
/// at each boundary: the token is where it was or nowhere, and after the
/// next command nowhere, with both records standing.
#[test]
fn a_crash_while_redacting_records_ends_with_the_text_nowhere() {
    let token = token();
    for failpoint in FAILPOINTS {
        let project = records_with_a_token(&token);
        let memory = project.memory();
        let places = files_holding(&memory, &token);
        let args = [
            "redact",
            "--event",
            "review:db",
            "--event",
            "correction:m1",
            "--rationale",
            "a token in the records",
            "--event-id",
            "correction:r1",
            "--yes",
        ];
        crash(&project, &args, failpoint);
        for file in files_holding(&memory, &token) {
            assert!(places.contains(&file), "{failpoint}: the token appeared in {file}");
        }
        project.ok(&["conflicts"]);
        assert_eq!(files_holding(&memory, &token), Vec::<String>::new(), "{failpoint}");
        project.ok(&["verify"]);
        project.ok(&["scan"]);
        let audit = project.json(&["adjudications"]);
        assert_eq!(audit[0]["rationale"], "[redacted]", "{failpoint}: {audit}");
        assert_eq!(audit[0]["event_id"], "review:db");
        let memory_md = std::fs::read_to_string(memory.join("MEMORY.md")).unwrap();
        assert!(memory_md.contains("Use Postgres."), "{failpoint}: the decision stands");
        let status = project.json(&["status"]);
        assert_eq!(status["corrections"]["redacted_records"], 2, "{failpoint}: {status}");
    }
}

/// At a real terminal the command lists what it rewrites and asks: `n`
/// writes nothing, `y` redacts.
#[test]
fn at_a_terminal_it_shows_what_it_rewrites_and_asks_first() {
    let project = tied();
    let before = records(&project);
    let ask = |answer: &str| {
        let args = [
            "redact",
            "p1",
            "p2",
            "--rationale",
            "a credential was pasted into it",
            "--event-id",
            "correction:r1",
        ];
        let mut cmd = std::process::Command::new(WORKMEM);
        cmd.env_clear()
            .env("HOME", &project.root)
            .env("USER", "reviewer")
            .env("TERM", "xterm")
            .current_dir(&project.root)
            .args(args);
        let mut session = rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn");
        session.exp_string("remove the text of 2 fact(s): p1 p2").unwrap();
        session.exp_string("daily/2026-02-01.jsonl").unwrap();
        session.exp_string("daily/2026-02-10.jsonl").unwrap();
        session.exp_string("cannot be restored").unwrap();
        session.exp_string("redact? [y/N]").unwrap();
        session.send_line(answer).unwrap();
        session.exp_eof().unwrap();
    };
    ask("n");
    assert_eq!(records(&project), before, "a declined redaction wrote something");
    assert!(!files_holding(&project.memory(), "Postgres").is_empty());
    ask("y");
    assert_redacted(&project);
}
