//! `workmem retract` and `workmem restore`, black-box on the real binary
//! (docs/corrections.md): the files, `memory`, `history` and `verify`
//! before and after; the exit codes of every refusal; and a real abort at
//! every durable boundary of both transactions, after which the next
//! command finishes the whole correction or none of it. Needs
//! `--features failpoints`, like `recovery`.

#![allow(clippy::disallowed_methods)] // tests read the files directly

use std::os::unix::process::ExitStatusExt;

use serde_json::Value;
use workmem_testutil::Project;

use crate::WORKMEM;

const AS_OF: &str = "2026-06-01T00:00:00Z";
const AT: &str = "2026-06-02T00:00:00Z";

/// The failpoints of a correction's transaction, in order.
const FAILPOINTS: [&str; 8] = [
    "after_prepared",
    "after_curated_write",
    "after_curated_applied",
    "after_conflict_write",
    "after_conflict_closed",
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

/// An active "Use SQLite." (s1) challenged by two tied values (p1, p2 and
/// m1, m2) in an open case, and an unkeyed convention (u1, u2).
fn tied() -> Project {
    let project = Project::new(WORKMEM, "workmem-retract-");
    remember(&project, "s1", "Use SQLite.", Some("db.engine"), "2026-01-01T00:00:00Z");
    remember(&project, "u1", "Use UTC.", None, "2026-01-01T00:00:00Z");
    remember(&project, "u2", "Use UTC.", None, "2026-01-02T00:00:00Z");
    project.ok(&["distill", "--as-of", AS_OF]);
    remember(&project, "p1", "Use Postgres.", Some("db.engine"), "2026-02-01T00:00:00Z");
    remember(&project, "p2", "Use Postgres.", Some("db.engine"), "2026-02-10T00:00:00Z");
    remember(&project, "m1", "Use MySQL.", Some("db.engine"), "2026-02-02T00:00:00Z");
    remember(&project, "m2", "Use MySQL.", Some("db.engine"), "2026-02-10T00:00:00Z");
    let report = project.json(&["distill", "--as-of", AS_OF]);
    assert_eq!(report["queued_conflicts"], 1);
    project
}

fn read(project: &Project, name: &str) -> String {
    std::fs::read_to_string(project.memory().join(name)).unwrap_or_default()
}

/// The derived files and the stream, as the transaction leaves them.
fn state(project: &Project) -> [String; 4] {
    ["curated.json", "conflicts.json", "MEMORY.md", "memory-corrections.jsonl"]
        .map(|name| read(project, name))
}

/// `state` with the two files' schema versions raised as the first
/// correction raises them, and the stream of `records` lines.
fn raised(before: &[String; 4]) -> [String; 3] {
    [
        before[0].replace("\"schema_version\": 2", "\"schema_version\": 3"),
        before[1].replace("\"schema_version\": 1", "\"schema_version\": 2"),
        before[2].clone(),
    ]
}

fn entry<'a>(curated: &'a Value, content: &str) -> &'a Value {
    curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["content"] == content)
        .unwrap_or_else(|| panic!("no entry {content}: {curated}"))
}

fn retract_args<'a>(facts: &[&'a str], event: &'a str) -> Vec<&'a str> {
    let mut args = vec!["retract"];
    args.extend(facts);
    args.extend(["--rationale", "recorded against the wrong service", "--event-id", event]);
    args.extend(["--at", AT, "--actor", "Ada <ada@example.com>"]);
    args
}

fn restore_args<'a>(target: &'a str, event: &'a str) -> Vec<&'a str> {
    vec![
        "restore",
        target,
        "--rationale",
        "it was right after all",
        "--event-id",
        event,
        "--at",
        AT,
        "--actor",
        "Ada <ada@example.com>",
    ]
}

fn exit(project: &Project, args: &[&str]) -> (i32, String) {
    let out = project.run(args);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The state after retracting s1 (the active value's only fact): its
/// entry retracted and out of MEMORY.md, the case superseded, one record.
fn assert_retracted(project: &Project) {
    let curated: Value = serde_json::from_str(&read(project, "curated.json")).unwrap();
    assert_eq!(curated["schema_version"], 3);
    let sqlite = entry(&curated, "Use SQLite.");
    assert_eq!(sqlite["status"], "retracted");
    assert_eq!(sqlite["evidence_ids"], serde_json::json!([]));
    assert_eq!(sqlite["retracted_evidence_ids"], serde_json::json!(["s1"]));
    assert_eq!(sqlite["occurrences"], 0);
    let conflicts: Value = serde_json::from_str(&read(project, "conflicts.json")).unwrap();
    assert_eq!(conflicts["schema_version"], 2);
    assert_eq!(conflicts["cases"][0]["status"], "superseded");
    assert_eq!(conflicts["cases"][0]["superseded_at"], AT);
    let memory = String::from_utf8(project.ok(&["memory"]).stdout).unwrap();
    assert!(!memory.contains("SQLite") && memory.contains("Use UTC."), "{memory}");
    assert_eq!(read(project, "memory-corrections.jsonl").lines().count(), 1);
    assert_nothing_unfinished(project);
    project.ok(&["verify"]);
}

/// Nothing unfinished in the journal (a committed transaction a crash left
/// uncompacted is compacted by the next writer).
fn assert_nothing_unfinished(project: &Project) {
    let journal = project.json(&["journal"]);
    let transactions = journal["transactions"].as_array().unwrap();
    assert!(transactions.iter().all(|t| t["committed"] == true), "{journal}");
}

#[test]
fn retract_and_restore_change_the_memory_and_give_it_back() {
    let project = tied();
    let before = state(&project);
    assert!(before[2].contains("Use SQLite.") && before[2].contains("Use UTC."));

    let out = project.json(&retract_args(&["s1"], "correction:1"));
    assert_eq!(out["action"], "retract");
    assert_eq!(out["fact_ids"], serde_json::json!(["s1"]));
    assert_eq!(out["event_id"], "correction:1");
    assert_eq!(out["actor"], "Ada <ada@example.com>");
    assert_eq!(out["recorded_at"], AT);
    let stream: Value =
        serde_json::from_str(read(&project, "memory-corrections.jsonl").trim_end()).unwrap();
    assert_eq!(out, stream);
    assert_retracted(&project);
    // `history` shows the correction beside the key's entries.
    let history = String::from_utf8(project.ok(&["history", "db.engine"]).stdout).unwrap();
    assert!(history.contains("correction:1"), "{history}");
    // The plain output names what changed and the distill that re-judges.
    let out = project.ok(&retract_args(&["m1"], "correction:3"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("retracted 1 fact: m1"));
    assert!(stderr.contains("run `workmem distill` to judge db.engine again"), "{stderr}");
    // Each restore undoes its retraction; with nothing in between, the
    // memory is as it was (the files keep their raised versions).
    project.json(&restore_args("correction:3", "correction:4"));
    let out = project.json(&restore_args("correction:1", "correction:2"));
    assert_eq!(out["action"], "restore");
    assert_eq!(out["restores"], "correction:1");
    let after = state(&project);
    assert_eq!(after[..3], raised(&before));
    assert_eq!(after[3].lines().count(), 4);
    project.ok(&["verify"]);

    // An unkeyed entry, by its key: retracted and gone from the memory.
    let curated: Value = serde_json::from_str(&after[0]).unwrap();
    let utc = entry(&curated, "Use UTC.")["key"].as_str().unwrap().to_owned();
    let out = project.json(&[
        "retract",
        "--entry",
        &utc,
        "--rationale",
        "never agreed",
        "--event-id",
        "correction:5",
    ]);
    assert_eq!(out["fact_ids"], serde_json::json!(["u1", "u2"]));
    assert_eq!(out["entry_key"], utc.as_str());
    let memory = String::from_utf8(project.ok(&["memory"]).stdout).unwrap();
    assert!(!memory.contains("Use UTC."), "{memory}");
    project.ok(&["verify"]);
}

#[test]
fn refusals_exit_with_their_codes_and_write_nothing() {
    let project = tied();
    let before = state(&project);
    for (args, code, words) in [
        (retract_args(&["nope"], "c:1"), 2, "no fact of this workspace has the id nope"),
        (retract_args(&["FACT_ID"], "c:1"), 2, "placeholder"),
        (vec!["retract", "s1"], 2, "--rationale"),
        (vec!["retract", "--rationale", "x"], 2, "FACT_ID"),
        (
            vec!["retract", "--entry", "0000000000000000", "--rationale", "x"],
            2,
            "no entry has the key 0000000000000000",
        ),
        (restore_args("c:9", "c:2"), 2, "no correction has event id c:9"),
    ] {
        let (got, stderr) = exit(&project, &args);
        assert_eq!(got, code, "{args:?}: {stderr}");
        assert!(stderr.contains(words), "{args:?}: {stderr}");
        assert_eq!(state(&project), before, "{args:?} wrote");
    }
    project.ok(&retract_args(&["p1"], "c:1"));
    let after = state(&project);
    // The same event id: the same record writes nothing (exit 0); another
    // record is refused (exit 6).
    project.ok(&retract_args(&["p1"], "c:1"));
    assert_eq!(state(&project), after);
    let (code, stderr) = exit(&project, &retract_args(&["p2"], "c:1"));
    assert_eq!(code, 6, "{stderr}");
    // A restore of a restore, of a restored retraction: exit 2.
    project.ok(&restore_args("c:1", "c:2"));
    let (code, stderr) = exit(&project, &restore_args("c:1", "c:3"));
    assert_eq!((code, stderr.contains("already restored by c:2")), (2, true), "{stderr}");
    let (code, stderr) = exit(&project, &restore_args("c:2", "c:3"));
    assert_eq!((code, stderr.contains("is a restore, not a retraction")), (2, true), "{stderr}");
    // --json errors are JSON.
    let out = project.run(&[&retract_args(&["nope"], "c:4")[..], &["--json"]].concat());
    let error: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(error["error"]["kind"], "invalid_input");
}

/// Runs `args` with `failpoint` armed and checks the process aborted.
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
fn a_crash_at_every_boundary_ends_in_the_whole_correction() {
    for failpoint in FAILPOINTS {
        let project = tied();
        let before = state(&project);
        crash(&project, &retract_args(&["s1"], "correction:1"), failpoint);
        if failpoint == "after_prepared" {
            // The same journal as another clone's (a copy: not the file
            // this clone prepared it in) is never rolled forward: the
            // journal shows the correction, a writing command refuses,
            // and discarding it leaves the memory as it was.
            let path = project.memory().join("conflict-resolution-transactions.jsonl");
            // (A new file renamed over it: another inode, as a checkout
            // makes.)
            let copy = project.memory().join("journal-copy");
            std::fs::copy(&path, &copy).unwrap();
            std::fs::rename(&copy, &path).unwrap();
            let journal = project.json(&["journal"]);
            let t = &journal["transactions"][0];
            assert!(t["transaction_id"].as_str().unwrap().starts_with("correction-"), "{journal}");
            assert_eq!(t["phases"], serde_json::json!(["prepared"]));
            assert_eq!(t["prepared_here"], false);
            assert_eq!(t["correction"]["event_id"], "correction:1");
            let text = String::from_utf8(project.ok(&["journal"]).stdout).unwrap();
            assert!(text.contains("correction: a retraction by Ada"), "{text}");
            let (code, stderr) = exit(&project, &retract_args(&["p1"], "correction:9"));
            assert_eq!(code, 4, "{stderr}");
            assert!(stderr.contains("workmem journal"), "{stderr}");
            project.ok(&["journal", "--discard"]);
            assert_eq!(state(&project), before);
            project.ok(&retract_args(&["s1"], "correction:1"));
        }
        // The next command that opens the memory for writing (any but the
        // read-only ones) finishes it: exactly once.
        project.ok(&["conflicts"]);
        assert_retracted(&project);
        // The retry of the same correction writes nothing.
        project.ok(&retract_args(&["s1"], "correction:1"));
        assert_retracted(&project);

        crash(&project, &restore_args("correction:1", "correction:2"), failpoint);
        project.ok(&["memory"]);
        let after = state(&project);
        assert_eq!(after[..3], raised(&before), "restore crashed at {failpoint}");
        assert_eq!(after[3].lines().count(), 2, "{failpoint}");
        assert_nothing_unfinished(&project);
        project.ok(&["verify"]);
    }
}
