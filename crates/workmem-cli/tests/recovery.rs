//! Crash recovery and cross-process safety, black-box: the real binary
//! (built with `--features failpoints`) aborts at every durable boundary of
//! docs/cli.md, and the next command of any kind must finish the work exactly
//! once. Also races processes against the workspace lock.
//!
//! Without the `failpoints` feature these tests fail on purpose: the README's
//! test command enables it.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::os::unix::process::ExitStatusExt;

use std::process::{Command, Stdio};

use serde_json::Value;

const AS_OF: &str = "2026-06-01T00:00:00Z";

use workmem_testutil::Project;

use crate::WORKMEM;

/// The helpers of these tests on the shared fixture.
trait RecoveryProject {
    fn crash(&self, args: &[&str], failpoint: &str);
    fn remember(&self, id: &str, content: &str, importance: u8, key: Option<&str>, at: &str);
    fn read(&self, name: &str) -> String;
}

impl RecoveryProject for Project {
    /// Runs `args` with `failpoint` armed and checks the process aborted.
    fn crash(&self, args: &[&str], failpoint: &str) {
        let out = self.cmd(args).env("WORKMEM_FAILPOINT", failpoint).output().expect("spawn");
        assert_eq!(
            out.status.signal(),
            Some(libc_sigabrt()),
            "{args:?} did not abort at {failpoint} (built without --features failpoints?): {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn remember(&self, id: &str, content: &str, importance: u8, key: Option<&str>, at: &str) {
        let imp = importance.to_string();
        let mut args =
            vec!["remember", content, "-k", "decision", "-i", &imp, "--at", at, "--id", id];
        if let Some(key) = key {
            args.extend(["--key", key]);
        }
        self.ok(&args);
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.memory().join(name)).unwrap_or_default()
    }
}

fn libc_sigabrt() -> i32 {
    6
}

/// An active "Use SQLite." challenged by two equally strong newer values.
fn tied(project: &Project) -> (String, String, i64) {
    project.remember("s1", "Use SQLite.", 4, Some("db.engine"), "2026-01-01T00:00:00Z");
    project.ok(&["distill", "--as-of", AS_OF]);
    project.remember("p1", "Use Postgres.", 4, Some("db.engine"), "2026-02-01T00:00:00Z");
    project.remember("p2", "Use Postgres.", 4, Some("db.engine"), "2026-02-10T00:00:00Z");
    project.remember("m1", "Use MySQL.", 4, Some("db.engine"), "2026-02-02T00:00:00Z");
    project.remember("m2", "Use MySQL.", 4, Some("db.engine"), "2026-02-10T00:00:00Z");
    let report = project.json(&["distill", "--as-of", AS_OF]);
    assert_eq!(report["queued_conflicts"], 1);
    let cases = project.json(&["conflicts"]);
    let case = &cases[0];
    let postgres = case["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["content"] == "Use Postgres.")
        .expect("postgres candidate");
    (
        case["conflict_id"].as_str().expect("id").to_owned(),
        postgres["candidate_id"].as_str().expect("id").to_owned(),
        case["revision"].as_i64().expect("revision"),
    )
}

fn resolve_args<'a>(conflict: &'a str, candidate: &'a str, revision: &'a str) -> Vec<&'a str> {
    vec![
        "resolve",
        conflict,
        candidate,
        "--revision",
        revision,
        "--event-id",
        "review:db:1",
        "--rationale",
        "Production needs extensions",
        "--at",
        "2026-06-02T00:00:00Z",
    ]
}

/// Checks the one committed decision: one audit line, revision 2 active,
/// the case resolved, MEMORY.md current, no unfinished transaction.
fn assert_one_committed_decision(project: &Project, conflict: &str) {
    let audit = project.read("conflict-adjudications.jsonl");
    assert_eq!(audit.lines().count(), 1, "audit: {audit}");
    let curated: Value = serde_json::from_str(&project.read("curated.json")).expect("curated");
    let revisions: Vec<(i64, String, String)> = curated["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["memory_key"] == "db.engine")
        .map(|e| {
            (
                e["revision"].as_i64().expect("revision"),
                e["status"].as_str().expect("status").to_owned(),
                e["content"].as_str().expect("content").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        revisions,
        vec![
            (1, "superseded".to_owned(), "Use SQLite.".to_owned()),
            (2, "active".to_owned(), "Use Postgres.".to_owned())
        ]
    );
    let conflicts: Value =
        serde_json::from_str(&project.read("conflicts.json")).expect("conflicts");
    let case = conflicts["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["conflict_id"] == conflict)
        .expect("case");
    assert_eq!(case["status"], "resolved");
    let memory = project.read("MEMORY.md");
    assert!(
        memory.contains("- Use Postgres. (seen 2x; evidence: 2)") && !memory.contains("SQLite"),
        "{memory}"
    );
    // The journal holds work in flight only: nothing at all, or (after a
    // crash between `committed` and the compaction, followed by commands
    // that do not write) that one committed transaction, which the next
    // writer compacts.
    let phases = journal_phases(project);
    let names: Vec<&str> = phases.iter().map(|(_, p)| p.as_str()).collect();
    assert!(
        names.is_empty()
            || names
                == [
                    "prepared",
                    "curated_applied",
                    "conflict_closed",
                    "audit_appended",
                    "committed"
                ],
        "{names:?}"
    );
    assert!(phases.iter().all(|(t, _)| *t == phases[0].0));
    assert!(!project.memory().join(".distill-pending.json").exists());
}

/// The (transaction id, phase) of every journal line.
fn journal_phases(project: &Project) -> Vec<(String, String)> {
    project
        .read("conflict-resolution-transactions.jsonl")
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("journal line");
            (
                v["transaction_id"].as_str().expect("tid").to_owned(),
                v["phase"].as_str().expect("phase").to_owned(),
            )
        })
        .collect()
}

/// Asserts the journal is an empty file: its state at rest.
fn assert_journal_empty(project: &Project, label: &str) {
    let path = project.memory().join("conflict-resolution-transactions.jsonl");
    assert_eq!(std::fs::read(&path).map(|b| b.len()).ok(), Some(0), "{label}: journal not empty");
}

/// Checks that the crashed resolution's `prepared` line holds a
/// domain-scoped (schema 2) intent: the db.engine entries and cases only,
/// and the hashes of both files.
fn assert_domain_scoped_intent(project: &Project, label: &str) {
    let text = project.read("conflict-resolution-transactions.jsonl");
    let prepared: Value =
        serde_json::from_str(text.lines().next().expect("a prepared line")).expect("json");
    let intent = &prepared["intent"];
    assert_eq!(intent["schema_version"], 2, "{label}");
    for field in [
        "curated_sha256_before",
        "curated_sha256_after",
        "conflicts_sha256_before",
        "conflicts_sha256_after",
    ] {
        assert_eq!(intent[field].as_str().map(str::len), Some(64), "{label}: {field}");
    }
    for field in ["curated_before", "curated_after", "conflicts_before", "conflicts_after"] {
        let items = intent[field].as_array().expect("a snapshot");
        assert!(items.iter().all(|i| i["memory_key"] == "db.engine"), "{label}: {field}");
    }
}

const RESOLVE_FAILPOINTS: [&str; 10] = [
    "append_after_write",
    "after_prepared",
    "between_curated_and_projection",
    "after_curated_write",
    "after_curated_applied",
    "after_conflict_write",
    "after_conflict_closed",
    "after_audit_write",
    "after_audit_appended",
    "after_committed",
];

/// The next command "of any kind": each failpoint is followed by another.
const NEXT_COMMANDS: [&[&str]; 5] = [
    &["facts", "--all"],
    &["context"],
    &["conflicts"],
    &["remember", "unrelated outcome", "--at", AS_OF],
    &["logs"],
];

#[test]
fn every_resolve_failpoint_recovers_to_exactly_one_committed_decision() {
    for (index, failpoint) in RESOLVE_FAILPOINTS.iter().enumerate() {
        let project = Project::new(WORKMEM, "workmem-recovery-");
        let (conflict, candidate, revision) = tied(&project);
        let revision = revision.to_string();
        project.crash(&resolve_args(&conflict, &candidate, &revision), failpoint);
        assert_domain_scoped_intent(&project, failpoint);
        let next = NEXT_COMMANDS[index % NEXT_COMMANDS.len()];
        project.ok(next);
        assert_one_committed_decision(&project, &conflict);
        if *failpoint == "after_committed" {
            // Nothing to finish: the next writer compacts.
            assert_eq!(journal_phases(&project).len(), 5, "{failpoint}");
            project.ok(&["distill", "--as-of", AS_OF]);
        }
        assert_journal_empty(&project, failpoint);
        // Settled: any command again, and even a retry, changes no byte.
        let settled = project.files();
        project.ok(&["verify"]);
        project.ok(&["facts", "--all"]);
        project.ok(&resolve_args(&conflict, &candidate, &revision));
        assert_eq!(project.files(), settled, "{failpoint}: bytes changed after recovery");
    }
}

#[test]
fn every_distill_failpoint_is_finished_by_the_next_command() {
    for (index, failpoint) in
        ["between_curated_and_projection", "distill_after_curated"].iter().enumerate()
    {
        // Reference: the same scenario without a crash, in the same path.
        let reference = {
            let project = Project::new(WORKMEM, "workmem-recovery-");
            distill_scenario(&project);
            project.ok(&["distill", "--as-of", AS_OF]);
            canonical(&project)
        };
        let project = Project::new(WORKMEM, "workmem-recovery-");
        distill_scenario(&project);
        project.crash(&["distill", "--as-of", AS_OF], failpoint);
        if *failpoint == "between_curated_and_projection" {
            // The next MEMORY.md was staged beside it, not yet in place.
            assert_eq!(temporaries(&project).len(), 1, "{failpoint}");
        }
        project.ok(NEXT_COMMANDS[index]);
        assert_eq!(temporaries(&project), Vec::<String>::new(), "{failpoint}: left behind");
        let recovered = canonical(&project);
        assert_eq!(shape(&recovered), shape(&reference), "{failpoint}");
        assert!(!project.memory().join(".distill-pending.json").exists());
        let settled = project.files();
        project.ok(&["distill", "--as-of", AS_OF]);
        project.ok(&["verify"]);
        assert_eq!(project.files(), settled, "{failpoint}: a later distill changed bytes");
    }
}

/// A crash after the distill intent is claimed, before or after it is in
/// place, and before curated.json is: nothing of the distill happened (what
/// it was about to write is staged beside its place), and the next distill
/// runs, never refusing the intent as another clone's.
#[test]
fn a_crash_around_the_distill_intent_leaves_nothing_to_refuse() {
    for (failpoint, in_place) in
        [("distill_intent_claimed", false), ("distill_intent_written", true)]
    {
        let project = Project::new(WORKMEM, "workmem-recovery-");
        distill_scenario(&project);
        let before = project.files();
        project.crash(&["distill", "--as-of", AS_OF], failpoint);
        let intent = project.memory().join(".distill-pending.json");
        assert_eq!(intent.exists(), in_place, "{failpoint}");
        assert!(!temporaries(&project).is_empty(), "{failpoint}: nothing staged");
        project.ok(&["distill", "--as-of", AS_OF]);
        assert_eq!(temporaries(&project), Vec::<String>::new(), "{failpoint}");
        assert!(!intent.exists(), "{failpoint}");
        assert_ne!(project.files(), before, "{failpoint}: the distill did not run");
        project.ok(&["verify"]);
    }
}

/// The temporary files in the memory directory (a replacement staged but
/// not yet renamed into place).
fn temporaries(project: &Project) -> Vec<String> {
    std::fs::read_dir(project.memory())
        .expect("memory dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "tmp"))
        .map(|path| path.display().to_string())
        .collect()
}

/// Facts whose distill both promotes a value (curated.json) and opens a
/// case (conflicts.json).
fn distill_scenario(project: &Project) {
    project.remember("w1", "Use WAL mode.", 5, None, "2026-01-01T00:00:00Z");
    project.remember("a1", "Use tabs.", 4, Some("style.indent"), "2026-01-02T00:00:00Z");
    project.remember("b1", "Use spaces.", 4, Some("style.indent"), "2026-01-02T00:00:00Z");
}

/// curated.json, conflicts.json and MEMORY.md of a project.
fn canonical(project: &Project) -> [String; 3] {
    [project.read("curated.json"), project.read("conflicts.json"), project.read("MEMORY.md")]
}

/// The canonical files with workspace-specific ids blanked (each project
/// has its own path, hence its own workspace id and conflict ids).
fn shape(files: &[String; 3]) -> Vec<Value> {
    files
        .iter()
        .map(|text| {
            let mut value: Value =
                serde_json::from_str(text).unwrap_or(Value::String(text.clone()));
            blank(&mut value);
            value
        })
        .collect()
}

fn blank(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if matches!(key.as_str(), "workspace_id" | "conflict_id" | "fingerprint") {
                    *inner = Value::Null;
                } else {
                    blank(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(blank),
        _ => {}
    }
}

#[test]
fn racing_resolutions_and_distills_are_serialised_by_the_lock() {
    let project = Project::new(WORKMEM, "workmem-recovery-");
    let (conflict, candidate, revision) = tied(&project);
    let revision = revision.to_string();
    let mut children = Vec::new();
    for n in 0..8 {
        let event = format!("review:race:{n}");
        let args: Vec<String> = if n % 2 == 0 {
            vec!["distill".into(), "--as-of".into(), AS_OF.into()]
        } else {
            [
                "resolve",
                &conflict,
                &candidate,
                "--revision",
                &revision,
                "--event-id",
                &event,
                "--rationale",
                "race",
                "--at",
                "2026-06-02T00:00:00Z",
            ]
            .iter()
            .map(std::string::ToString::to_string)
            .collect()
        };
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        children.push(
            project.cmd(&refs).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn"),
        );
    }
    let codes: Vec<i32> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait").status.code().unwrap_or(-1))
        .collect();
    // Exactly one resolution wins; the others see a closed case (stale).
    let resolves: Vec<i32> = codes.iter().skip(1).step_by(2).copied().collect();
    assert_eq!(resolves.iter().filter(|c| **c == 0).count(), 1, "{codes:?}");
    assert!(resolves.iter().all(|c| *c == 0 || *c == 3), "{codes:?}");
    assert!(codes.iter().step_by(2).all(|c| *c == 0), "{codes:?}");
    assert_eq!(project.read("conflict-adjudications.jsonl").lines().count(), 1);
    assert_journal_empty(&project, "after the race");
    project.ok(&["verify"]);
}

#[test]
fn appends_and_reads_do_not_wait_for_the_lock_but_distill_does() {
    let project = Project::new(WORKMEM, "workmem-recovery-");
    project.remember("x1", "Use WAL mode.", 5, None, "2026-01-01T00:00:00Z");
    let lock_path = project.memory().join(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .expect("lock");
    lock.lock().expect("hold the workspace lock");
    // Appends and reads finish while the lock is held.
    project.ok(&["remember", "appended while locked"]);
    project.ok(&["context"]);
    project.ok(&["facts", "--all"]);
    // A distill waits for it.
    let mut distill = project
        .cmd(&["distill", "--as-of", AS_OF])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(distill.try_wait().expect("poll").is_none(), "distill ran while the lock was held");
    lock.unlock().expect("unlock");
    assert!(distill.wait().expect("wait").success());
    assert!(project.read("curated.json").contains("Use WAL mode."));
}

#[test]
fn readers_never_see_a_half_written_canonical_file() {
    let project = Project::new(WORKMEM, "workmem-recovery-");
    for n in 0..40 {
        project.remember(
            &format!("f{n}"),
            &format!("Convention number {n}."),
            4,
            None,
            "2026-01-01T00:00:00Z",
        );
    }
    let root = project.root.clone();
    let writer = std::thread::spawn(move || {
        for day in 0..15 {
            let as_of = format!("2026-02-{:02}T00:00:00Z", day + 1);
            let status = Command::new(env!("CARGO_BIN_EXE_workmem"))
                .current_dir(&root)
                .args(["distill", "--as-of", &as_of, "--min-age-days", "0"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("distill");
            assert!(status.success());
        }
    });
    let path = project.memory().join("curated.json");
    let mut reads = 0;
    while !writer.is_finished() || reads == 0 {
        if let Ok(bytes) = std::fs::read(&path) {
            serde_json::from_slice::<Value>(&bytes).expect("a reader saw a partial curated.json");
            reads += 1;
        }
    }
    writer.join().expect("writer");
    assert!(reads > 0);
}

#[test]
fn resolve_exit_codes_follow_the_contract() {
    let project = Project::new(WORKMEM, "workmem-recovery-");
    let (conflict, candidate, revision) = tied(&project);
    let rev = revision.to_string();
    let code = |args: &[&str]| project.run(args).status.code();
    let before = project.files();
    // Malformed input: exit 2.
    assert_eq!(
        code(&[
            "resolve",
            &conflict,
            &candidate,
            "--revision",
            "0",
            "--event-id",
            "e1",
            "--rationale",
            "r"
        ]),
        Some(2)
    );
    assert_eq!(
        code(&[
            "resolve",
            &conflict,
            &candidate,
            "--revision",
            &rev,
            "--event-id",
            "bad id",
            "--rationale",
            "r"
        ]),
        Some(2)
    );
    assert_eq!(
        code(&["resolve", &conflict, &candidate, "--revision", &rev, "--event-id", "e1"]),
        Some(2)
    );
    assert_eq!(
        code(&[
            "resolve",
            &conflict,
            &candidate,
            "--revision",
            &rev,
            "--event-id",
            "e1",
            "--rationale",
            " "
        ]),
        Some(2)
    );
    // Unknown conflict or candidate: exit 6.
    assert_eq!(
        code(&[
            "resolve",
            "conflict-0000000000000000",
            &candidate,
            "--revision",
            &rev,
            "--event-id",
            "e1",
            "--rationale",
            "r"
        ]),
        Some(6)
    );
    assert_eq!(
        code(&[
            "resolve",
            &conflict,
            "candidate-0000000000000000",
            "--revision",
            &rev,
            "--event-id",
            "e1",
            "--rationale",
            "r"
        ]),
        Some(6)
    );
    // Stale revision: exit 3.
    let stale = (revision + 1).to_string();
    assert_eq!(
        code(&[
            "resolve",
            &conflict,
            &candidate,
            "--revision",
            &stale,
            "--event-id",
            "e1",
            "--rationale",
            "r"
        ]),
        Some(3)
    );
    assert_eq!(project.files(), before, "a refused resolution wrote something");
    // Success, then the same event id for another choice: exit 6.
    let event = project.json(&[
        "resolve",
        &conflict,
        &candidate,
        "--revision",
        &rev,
        "--event-id",
        "e1",
        "--rationale",
        "r",
    ]);
    assert_eq!(event["selected_candidate_id"], candidate.as_str());
    assert_eq!(event["actor"], "reviewer");
    let cases = project.json(&["conflicts", "--status", "all"]);
    let other = cases[0]["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["candidate_id"] != candidate.as_str())
        .expect("other")["candidate_id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(
        code(&[
            "resolve",
            &conflict,
            &other,
            "--revision",
            &rev,
            "--event-id",
            "e1",
            "--rationale",
            "r"
        ]),
        Some(6)
    );
    // The audit stream, history and verify reflect the decision.
    assert_eq!(project.json(&["adjudications"]).as_array().expect("list").len(), 1);
    let history = project.json(&["history", "db.engine"]);
    assert_eq!(history["revisions"].as_array().expect("revisions").len(), 2);
    assert_eq!(history["revisions"][1]["facts"].as_array().expect("facts").len(), 2);
    assert_eq!(history["cases"].as_array().expect("cases").len(), 1);
    let verify = project.json(&["verify"]);
    assert_eq!(verify["ok"], true);
    // verify exits 4 and lists a problem with file and line.
    let day = project.memory().join("daily/2026-02-10.jsonl");
    let text = std::fs::read_to_string(&day).expect("log");
    std::fs::write(&day, format!("not json\n{text}")).expect("write");
    let out = project.run(&["verify", "--json"]);
    assert_eq!(out.status.code(), Some(4));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["ok"], false);
    assert!(
        report["problems"].as_array().expect("problems").iter().any(|p| p["line"] == 1
            && p["file"].as_str().is_some_and(|f| f.ends_with("2026-02-10.jsonl")))
    );
}

/// Every file and directory of the memory directory with its bytes (files)
/// and mtime: a rewrite, a replacement, a lock file or a new directory all
/// show.
fn stamped_files(
    project: &Project,
) -> std::collections::BTreeMap<std::path::PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![project.memory()];
    while let Some(dir) = stack.pop() {
        let meta = std::fs::metadata(&dir).expect("dir");
        out.insert(dir.clone(), (Vec::new(), meta.modified().expect("mtime")));
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let modified = std::fs::metadata(&path).expect("meta").modified().expect("mtime");
                out.insert(path.clone(), (std::fs::read(&path).expect("read"), modified));
            }
        }
    }
    out
}

/// Runs `verify --json` after a crash: it must exit 4 with `file` among
/// its problems and write nothing.
fn assert_verify_reports_unchanged(project: &Project, file: &str, label: &str) {
    let before = stamped_files(project);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = project.run(&["verify", "--json"]);
    assert_eq!(out.status.code(), Some(4), "{label}: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stamped_files(project), before, "{label}: verify changed the memory directory");
    let report: Value = serde_json::from_slice(&out.stdout).expect("a problem list");
    assert_eq!(report["ok"], false);
    assert!(
        report["problems"]
            .as_array()
            .expect("problems")
            .iter()
            .any(|p| p["file"].as_str().is_some_and(|f| f.ends_with(file))),
        "{label}: {report}"
    );
}

#[test]
fn verify_after_a_crash_reports_the_unfinished_work_and_writes_nothing() {
    for failpoint in
        ["after_prepared", "after_curated_write", "after_conflict_closed", "after_audit_appended"]
    {
        let project = Project::new(WORKMEM, "workmem-recovery-");
        let (conflict, candidate, revision) = tied(&project);
        let revision = revision.to_string();
        project.crash(&resolve_args(&conflict, &candidate, &revision), failpoint);
        assert_verify_reports_unchanged(
            &project,
            "conflict-resolution-transactions.jsonl",
            failpoint,
        );
        // The next ordinary command finishes it and compacts the journal;
        // then verify is clean.
        project.ok(&["facts", "--all"]);
        assert_one_committed_decision(&project, &conflict);
        assert_journal_empty(&project, failpoint);
        // The files the crashed resolve staged are gone with it.
        let staged: Vec<_> = std::fs::read_dir(project.memory())
            .expect("memory dir")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|name| {
                name.starts_with('.')
                    && std::path::Path::new(name).extension().is_some_and(|ext| ext == "tmp")
            })
            .collect();
        assert!(staged.is_empty(), "{failpoint}: {staged:?}");
        project.ok(&["verify"]);
    }
    let project = Project::new(WORKMEM, "workmem-recovery-");
    distill_scenario(&project);
    project.crash(&["distill", "--as-of", AS_OF], "distill_after_curated");
    assert_verify_reports_unchanged(&project, ".distill-pending.json", "distill_after_curated");
    project.ok(&["logs"]);
    project.ok(&["verify"]);
}
