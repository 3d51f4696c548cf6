//! The journal holds work in flight, not history: it is empty at rest
//! after any number of resolutions, committed transactions are compacted
//! by the next writer holding the lock, a domain-scoped (schema 2) intent
//! recovers from every crash boundary through its file hashes and refuses a
//! file that matches neither hash, and journals with full-snapshot
//! (schema 1) intents — the teaching implementation's format — still
//! recover, from fixtures written by such a build killed at every boundary.
#![allow(clippy::disallowed_methods)] // tests plant crash states directly

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use workmem::internals::canon;
use workmem::internals::journal::{AUDIT_FILE, JOURNAL_FILE, intent_digest, transactions};
use workmem::{
    CaseStatus, DistillOptions, Error, FixedClock, NewFact, Resolution, Status, Workspace,
};

use crate::test_torn_writes::{AS_OF, Interrupted, Tied, files, restore, stamp};

/// The journal's bytes (empty when absent).
fn journal(memory: &Path) -> Vec<u8> {
    fs::read(memory.join(JOURNAL_FILE)).unwrap_or_default()
}

fn distill(ws: &Workspace) {
    ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).expect("distill");
}

fn keyed(ws: &Workspace, id: &str, content: &str, at: &str) {
    ws.remember(NewFact {
        content: content.into(),
        kind: Some("decision".into()),
        importance: Some(4),
        memory_key: Some("db.engine".into()),
        recorded_at: Some(at.into()),
        fact_id: Some(id.into()),
        ..NewFact::default()
    })
    .expect("remember");
}

/// The decision for the candidate worded `content` of the open case.
fn decide(ws: &Workspace, content: &str, event: &str) -> Resolution {
    let case = ws
        .conflicts()
        .expect("conflicts")
        .cases
        .into_iter()
        .find(|c| c.status == CaseStatus::Open)
        .expect("an open case");
    let candidate = case.candidates.iter().find(|c| c.content == content).expect("candidate");
    Resolution {
        conflict_id: case.conflict_id.clone(),
        candidate_id: candidate.candidate_id.clone(),
        expected_revision: i64::from(case.revision),
        actor: "reviewer@example.com".into(),
        rationale: "Reviewed.".into(),
        event_id: event.into(),
        resolved_at: Some(stamp("2026-06-02T00:00:00Z")),
    }
}

#[test]
fn the_journal_is_empty_at_rest_after_any_number_of_resolutions() {
    let tied = Tied::new();
    let memory = tied.memory();
    let ws = tied.open();
    ws.resolve(decide(&ws, "Use Postgres.", "review:0")).expect("resolve");
    assert_eq!(journal(&memory), b"", "after the first resolution");
    let mut decided = 1;
    for round in 1..=6_u32 {
        // Two new equally strong values, newer than the active one.
        let day = |offset: u32| format!("2026-03-{:02}T00:00:00Z", 4 * round + offset);
        keyed(&ws, &format!("x{round}a"), &format!("Use X{round}."), &day(0));
        keyed(&ws, &format!("x{round}b"), &format!("Use X{round}."), &day(2));
        keyed(&ws, &format!("y{round}a"), &format!("Use Y{round}."), &day(1));
        keyed(&ws, &format!("y{round}b"), &format!("Use Y{round}."), &day(2));
        distill(&ws);
        assert_eq!(journal(&memory), b"", "after the distill of round {round}");
        // Every third round keeps the incumbent: a decision that changes
        // only conflicts.json and the audit stream.
        let active =
            ws.curated().expect("curated").active_for("db.engine").expect("active").clone();
        let content =
            if round % 3 == 0 { active.content.clone() } else { format!("Use X{round}.") };
        let event = format!("review:{round}");
        ws.resolve(decide(&ws, &content, &event)).expect("resolve");
        decided += 1;
        assert_eq!(journal(&memory), b"", "after resolution {decided}");
        // A retry is idempotent and leaves the journal empty too.
        ws.resolve(decide_closed(&ws, &event)).expect("retry");
        assert_eq!(journal(&memory), b"", "after retrying resolution {decided}");
    }
    assert_eq!(ws.adjudications().expect("audit").len(), decided);
    let revisions = ws.history("db.engine").expect("history").revisions.len();
    assert_eq!(revisions, 6, "SQLite, Postgres and four challengers");
    assert!(ws.verify().expect("verify").is_empty());
    assert!(memory.join(JOURNAL_FILE).exists(), "an empty file, not a missing one");
}

/// The request that decided the case `event` closed, for a retry.
fn decide_closed(ws: &Workspace, event: &str) -> Resolution {
    let stored = ws
        .adjudications()
        .expect("audit")
        .into_iter()
        .find(|a| a.event_id == event)
        .expect("event");
    Resolution {
        conflict_id: stored.conflict_id,
        candidate_id: stored.selected_candidate_id,
        expected_revision: i64::from(stored.case_revision),
        actor: stored.actor,
        rationale: stored.rationale,
        event_id: stored.event_id,
        resolved_at: Some(stored.resolved_at),
    }
}

#[test]
fn committed_transactions_left_by_a_crash_are_compacted_by_the_next_writer() {
    // A crash after `committed`, before the compaction.
    for writer in ["distill", "resolve", "recovery"] {
        let tied = Tied::new();
        let memory = tied.memory();
        let request = tied.decision(&tied.case());
        let run = tied.interrupted(&request);
        run.crash_after(&tied, 5);
        let committed = journal(&memory);
        assert_eq!(committed, run.lines.concat());
        // Opening reads only the last line: committed, nothing to finish,
        // no lock, no write. Readers and verify ignore the transaction.
        let ws = tied.open();
        ws.context(None).expect("context");
        assert_eq!(journal(&memory), committed, "{writer}: opening compacted");
        assert!(ws.verify().expect("verify").is_empty(), "{writer}");
        assert_eq!(files(&memory), run.after_phase(5), "{writer}");
        match writer {
            "distill" => distill(&ws),
            // Even a retry that writes nothing else compacts it.
            "resolve" => assert_eq!(ws.resolve(request).expect("retry").event_id, "review:db:1"),
            _ => {
                // A second resolution crashes after its prepared line, and
                // the first one's committed lines are still there: the
                // recovery that finishes the second compacts both.
                keyed(&ws, "c1", "Use CockroachDB.", "2026-03-01T00:00:00Z");
                keyed(&ws, "c2", "Use CockroachDB.", "2026-03-10T00:00:00Z");
                keyed(&ws, "d1", "Use DuckDB.", "2026-03-02T00:00:00Z");
                keyed(&ws, "d2", "Use DuckDB.", "2026-03-10T00:00:00Z");
                distill(&ws);
                workmem::internals::prepare_resolution(
                    &ws,
                    decide(&ws, "Use DuckDB.", "review:db:2"),
                )
                .expect("prepare")
                .expect("a new decision");
                let mut both = committed.clone();
                both.extend(journal(&memory));
                fs::write(memory.join(JOURNAL_FILE), &both).expect("journal");
                let read =
                    transactions(&memory.join(JOURNAL_FILE), ws.workspace_id()).expect("journal");
                assert_eq!(
                    read.iter()
                        .map(workmem::internals::journal::Transaction::committed)
                        .collect::<Vec<_>>(),
                    [true, false]
                );
                let recovered = tied.open();
                assert_eq!(recovered.adjudications().expect("audit").len(), 2);
                let active = recovered.curated().expect("curated");
                assert_eq!(active.active_for("db.engine").expect("active").content, "Use DuckDB.");
            }
        }
        assert_eq!(journal(&memory), b"", "{writer}: not compacted");
        assert!(tied.open().verify().expect("verify").is_empty(), "{writer}");
    }
}

/// Every durable boundary of a resolution, as the state a crash there
/// leaves (built from the lines and states of an [`Interrupted`] run).
fn crash_states(run: &Interrupted) -> Vec<(&'static str, BTreeMap<PathBuf, Vec<u8>>)> {
    let with_after = |phases: usize, names: &[&str]| {
        let mut state = run.after_phase(phases);
        for name in names {
            state.insert(PathBuf::from(name), run.after[Path::new(name)].clone());
        }
        state
    };
    vec![
        ("after_prepared", run.after_phase(1)),
        ("between_curated_and_projection", with_after(1, &["curated.json"])),
        ("after_curated_write", with_after(1, &["curated.json", "MEMORY.md"])),
        ("after_curated_applied", run.after_phase(2)),
        ("after_conflict_write", with_after(2, &["conflicts.json"])),
        ("after_conflict_closed", run.after_phase(3)),
        ("after_audit_write", with_after(3, &[AUDIT_FILE])),
        ("after_audit_appended", run.after_phase(4)),
        ("after_committed", run.after_phase(5)),
    ]
}

#[test]
fn a_crash_at_every_boundary_of_a_domain_scoped_resolution_recovers_once_and_empties_the_journal() {
    let tied = Tied::new();
    let memory = tied.memory();
    let request = tied.decision(&tied.case());
    let run = tied.interrupted(&request);
    assert_eq!(run.intent.schema_version, 2);
    // The intent holds the resolved domain and the four file hashes.
    assert!(run.intent.curated_after.iter().all(|e| e.memory_key.as_deref() == Some("db.engine")));
    for (name, hash) in [
        ("curated.json", run.intent.curated_sha256_after.as_deref()),
        ("conflicts.json", run.intent.conflicts_sha256_after.as_deref()),
    ] {
        assert_eq!(hash, Some(canon::sha256_hex(&run.after[Path::new(name)]).as_str()), "{name}");
    }
    for (name, hash) in [
        ("curated.json", run.intent.curated_sha256_before.as_deref()),
        ("conflicts.json", run.intent.conflicts_sha256_before.as_deref()),
    ] {
        assert_eq!(hash, Some(canon::sha256_hex(&run.before[Path::new(name)]).as_str()), "{name}");
    }
    for (boundary, state) in crash_states(&run) {
        restore(&memory, &state);
        let ws = tied.open();
        if boundary == "after_committed" {
            // Opening finishes nothing and writes nothing; the next writer
            // compacts.
            assert_eq!(files(&memory), state, "{boundary}");
            distill(&ws);
        }
        assert_eq!(files(&memory), run.after, "{boundary}: not the committed state");
        assert_eq!(ws.adjudications().expect("audit").len(), 1, "{boundary}");
        assert!(ws.verify().expect("verify").is_empty(), "{boundary}");
        // Settled: another recovery, a distill and a retry change nothing.
        distill(&tied.open());
        ws.resolve(request.clone()).expect("retry");
        assert_eq!(files(&memory), run.after, "{boundary}: changed after recovery");
    }
}

/// Opens the workspace for work, which must fail with a corruption error
/// saying all of `words`, and checks nothing changed.
fn assert_recovery_stops(tied: &Tied, label: &str, words: &[&str]) {
    let memory = tied.memory();
    let before = files(&memory);
    let err = Workspace::builder(&tied.root)
        .clock(Arc::new(FixedClock::new(stamp(AS_OF))))
        .open()
        .expect_err(label);
    assert!(matches!(err, Error::Corrupt { .. }), "{label}: {err}");
    let message = err.to_string();
    for word in words {
        assert!(message.contains(word), "{label}: {message}");
    }
    assert_eq!(files(&memory), before, "{label}: recovery changed something");
    // Verify reports the same stop, and writes nothing either.
    let checker = Workspace::builder(&tied.root).open_read_only().expect("read-only");
    let problems = checker.verify().expect("verify");
    assert!(
        problems.iter().any(|p| words.iter().all(|w| p.message.contains(w) || p.file.contains(w))),
        "{label}: {problems:?}"
    );
    assert_eq!(files(&memory), before, "{label}: verify changed something");
}

#[test]
fn a_file_matching_neither_hash_of_a_domain_scoped_intent_changes_nothing() {
    let tied = Tied::new();
    let run = tied.interrupted(&tied.decision(&tied.case()));
    // curated.json: before the curated write, and after it (then the
    // conflicts must still match: the curated after state alone is not
    // enough to go on).
    for (phases, file) in [(1, "curated.json"), (1, "conflicts.json"), (2, "conflicts.json")] {
        run.crash_after(&tied, phases);
        let path = tied.memory().join(file);
        let mut value: Value =
            serde_json::from_slice(&fs::read(&path).expect("read")).expect("json");
        // Still a valid file, in another state than either.
        if file == "curated.json" {
            value["entries"][0]["first_seen"] = json!("2025-12-01T00:00:00Z");
        } else {
            value["cases"][0]["detected_at"] = json!("2026-05-31T00:00:00Z");
        }
        let text = serde_json::to_string_pretty(&value).expect("encode") + "\n";
        fs::write(&path, text).expect("write");
        let label = format!("{file} after {phases} phases");
        let tid = run.intent.transaction_id.clone();
        assert_recovery_stops(
            &tied,
            &label,
            &[file, "neither the before nor the after", tid.as_str(), "recovery stopped"],
        );
    }
}

/// Rewrites the intent of the journal's `prepared` line with `edit` and
/// gives the line the digest of the edited intent, as a forger who knows
/// the format would: only the checks against the files can tell.
fn forge_intent(tied: &Tied, edit: impl Fn(&mut Value)) {
    let path = tied.memory().join(JOURNAL_FILE);
    let text = fs::read_to_string(&path).expect("journal");
    let mut lines: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    edit(&mut lines[0]["intent"]);
    let digest = intent_digest(&lines[0]["intent"]);
    for line in &mut lines {
        line["intent_sha256"] = json!(digest);
    }
    let out: String = lines.iter().flat_map(|l| [l.to_string(), "\n".to_owned()]).collect();
    fs::write(&path, out).expect("forge");
    // Modified in this clone's own journal (a file a transaction of this
    // clone wrote): recovery must stop on the intent itself.
    workmem::internals::own_journal(&tied.memory()).expect("own the journal");
}

#[test]
fn a_domain_scoped_intent_whose_snapshots_disagree_with_its_hashes_changes_nothing() {
    let tied = Tied::new();
    let run = tied.interrupted(&tied.decision(&tied.case()));
    let forged = canon::sha256_hex(b"forged");
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, usize, &str, Edit)> = vec![
        (
            "curated after hash",
            1,
            "curated.json",
            Box::new(move |intent| intent["curated_sha256_after"] = json!(forged.clone())),
        ),
        (
            "curated before snapshot",
            1,
            "curated.json",
            Box::new(|intent| {
                intent["curated_before"][0]["first_seen"] = json!("2025-12-01T00:00:00Z");
            }),
        ),
        (
            "curated after snapshot",
            1,
            "curated.json",
            Box::new(|intent| {
                let last = intent["curated_after"].as_array().expect("entries").len() - 1;
                intent["curated_after"][last]["first_seen"] = json!("2026-01-15T00:00:00Z");
            }),
        ),
        (
            "conflicts after snapshot",
            2,
            "conflicts.json",
            Box::new(|intent| {
                intent["conflicts_after"][0]["resolution_rationale"] = json!("Forged.");
            }),
        ),
    ];
    for (label, phases, file, edit) in edits {
        run.crash_after(&tied, phases);
        forge_intent(&tied, edit);
        assert_recovery_stops(&tied, label, &[file, "intent was modified", "file hashes"]);
    }
    // A schema-2 intent that reaches outside its domain is refused when the
    // journal is read, whatever the files hold.
    run.crash_after(&tied, 1);
    forge_intent(&tied, |intent| {
        let mut other = intent["curated_after"][0].clone();
        other["memory_key"] = json!("other.domain");
        intent["curated_after"].as_array_mut().expect("entries").push(other);
    });
    assert_recovery_stops(&tied, "outside the domain", &["outside domain db.engine"]);
    // ... and so is one without its hashes.
    run.crash_after(&tied, 1);
    forge_intent(&tied, |intent| {
        intent.as_object_mut().expect("intent").remove("conflicts_sha256_before");
    });
    assert_recovery_stops(&tied, "without a hash", &["needs the four file hashes"]);
    // The untouched crash state still recovers.
    run.crash_after(&tied, 1);
    tied.open();
    assert_eq!(files(&tied.memory()), run.after);
}

/// The fixtures written by a build whose intents are schema 1, killed at
/// each boundary (tests/fixtures/v1-journal/generate.sh), with the
/// decision the unfinished transaction records.
const V1_FIXTURES: [(&str, &str); 11] = [
    ("append_after_write", "Use DuckDB."),
    ("after_prepared", "Use DuckDB."),
    ("between_curated_and_projection", "Use DuckDB."),
    ("after_curated_write", "Use DuckDB."),
    ("after_curated_applied", "Use DuckDB."),
    ("after_conflict_write", "Use DuckDB."),
    ("after_conflict_closed", "Use DuckDB."),
    ("after_audit_write", "Use DuckDB."),
    ("after_audit_appended", "Use DuckDB."),
    ("after_committed", "Use DuckDB."),
    ("after_prepared-incumbent", "Use Postgres."),
];

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-journal").join(name)
}

/// Every file of a fixture, by path relative to it.
fn fixture_files(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).expect("fixture dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("inside").to_path_buf();
                out.insert(relative, fs::read_to_string(&path).expect("UTF-8 fixture"));
            }
        }
    }
    out
}

/// Installs fixture `name` as the memory directory of the workspace
/// `workspace_id`. The fixture was written in a project at another path,
/// so every id derived from the workspace id is derived again: the
/// workspace id itself, conflict ids, transaction ids and intent digests
/// (the bytes are otherwise the ones the old build wrote).
fn install_fixture(name: &str, memory: &Path, workspace_id: &str) {
    let mut files = fixture_files(&fixture_dir(name));
    let curated: Value = serde_json::from_str(&files[Path::new("curated.json")]).expect("curated");
    let old = curated["workspace_id"].as_str().expect("workspace id").to_owned();
    let mut renames = vec![(old.clone(), workspace_id.to_owned())];
    let conflicts: Value =
        serde_json::from_str(&files[Path::new("conflicts.json")]).expect("conflicts");
    for case in conflicts["cases"].as_array().expect("cases") {
        let key = case["memory_key"].as_str().expect("key");
        let fingerprint = case["fingerprint"].as_str().expect("fingerprint");
        renames.push((
            case["conflict_id"].as_str().expect("id").to_owned(),
            canon::conflict_id(workspace_id, key, fingerprint),
        ));
    }
    for line in files[Path::new(JOURNAL_FILE)].lines() {
        let record: Value = serde_json::from_str(line).expect("journal line");
        if let Some(event) = record["intent"]["event_id"].as_str() {
            renames.push((
                record["transaction_id"].as_str().expect("id").to_owned(),
                canon::transaction_id(workspace_id, event),
            ));
        }
    }
    for text in files.values_mut() {
        for (from, to) in &renames {
            *text = text.replace(from.as_str(), to);
        }
    }
    let journal = files.get_mut(Path::new(JOURNAL_FILE)).expect("journal");
    let mut digests = Vec::new();
    for line in journal.lines() {
        let record: Value = serde_json::from_str(line).expect("journal line");
        if record.get("intent").is_some() {
            let old = record["intent_sha256"].as_str().expect("digest").to_owned();
            digests.push((old, intent_digest(&record["intent"])));
        }
    }
    for (from, to) in digests {
        *journal = journal.replace(&from, &to);
    }
    let _ = fs::remove_dir_all(memory);
    for (path, text) in files {
        let target = memory.join(path);
        fs::create_dir_all(target.parent().expect("parent")).expect("dirs");
        fs::write(target, text).expect("install");
    }
    // Left by a crash of this clone: its journal is its own.
    workmem::internals::own_journal(memory).expect("own the journal");
}

/// The canonical state of a memory directory: what one committed decision
/// must leave, whatever the crash.
fn canonical(memory: &Path) -> Vec<(String, Vec<u8>)> {
    ["curated.json", "conflicts.json", "MEMORY.md", AUDIT_FILE, JOURNAL_FILE]
        .iter()
        .map(|name| ((*name).to_owned(), fs::read(memory.join(name)).unwrap_or_default()))
        .collect()
}

#[test]
fn v1_journals_left_at_every_boundary_recover_to_one_committed_decision_and_are_compacted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("project");
    fs::create_dir_all(root.join(".git")).expect("project");
    let memory = root.join(".workmem/memory");
    let workspace_id =
        Workspace::builder(&root).open_read_only().expect("open").workspace_id().to_owned();
    let open = || {
        Workspace::builder(&root)
            .clock(Arc::new(FixedClock::new(stamp(AS_OF))))
            .open()
            .unwrap_or_else(|err| panic!("open: {err}"))
    };
    let mut settled: BTreeMap<&str, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for (name, chosen) in V1_FIXTURES {
        install_fixture(name, &memory, &workspace_id);
        // The fixture as installed is consistent: one committed transaction
        // and, but for `after_committed`, one that is not.
        let read = transactions(&memory.join(JOURNAL_FILE), &workspace_id).expect("v1 journal");
        assert_eq!(read.len(), 2, "{name}");
        assert!(read[0].committed(), "{name}");
        assert_eq!(read[1].committed(), name == "after_committed", "{name}");
        assert_eq!(read[1].intent.as_ref().map_or(1, |i| i.schema_version), 1, "{name}");
        let checker = Workspace::builder(&root).open_read_only().expect("read-only");
        let problems = checker.verify().expect("verify");
        assert_eq!(problems.is_empty(), name == "after_committed", "{name}: {problems:?}");

        let ws = open();
        if name == "after_committed" {
            // Nothing to finish: opening leaves the committed history to
            // the next writer.
            assert_eq!(read.len(), 2);
            assert!(!journal(&memory).is_empty(), "{name}");
            distill(&ws);
        }
        assert_eq!(journal(&memory), b"", "{name}: the journal was not compacted");
        let audit = ws.adjudications().expect("audit");
        let events: Vec<&str> = audit.iter().map(|a| a.event_id.as_str()).collect();
        let second = if chosen == "Use Postgres." { "review:db:keep" } else { "review:db:2" };
        assert_eq!(events, ["review:db:1", second], "{name}");
        let curated = ws.curated().expect("curated");
        let revisions: Vec<(u32, &str, Status)> = curated
            .entries
            .iter()
            .filter(|e| e.memory_key.as_deref() == Some("db.engine"))
            .map(|e| (e.revision, e.content.as_str(), e.status))
            .collect();
        let mut want =
            vec![(1, "Use SQLite.", Status::Superseded), (2, "Use Postgres.", Status::Active)];
        if chosen == "Use DuckDB." {
            want[1].2 = Status::Superseded;
            want.push((3, "Use DuckDB.", Status::Active));
        }
        assert_eq!(revisions, want, "{name}");
        // The entries outside the domain are untouched.
        assert!(curated.active_for("style.indent").is_some(), "{name}");
        assert_eq!(curated.active_entries().count(), 3, "{name}");
        let queue = ws.conflicts().expect("conflicts");
        assert!(queue.cases.iter().all(|c| c.status == CaseStatus::Resolved), "{name}");
        assert!(ws.memory().expect("memory").contains(&format!("- {chosen} ")), "{name}");
        assert!(ws.verify().expect("verify").is_empty(), "{name}");
        // Settled: a distill and another open change nothing.
        let state = canonical(&memory);
        distill(&open());
        assert_eq!(canonical(&memory), state, "{name}: changed after recovery");
        settled.insert(name, state);
    }
    // Every crash of the same decision ends in the same bytes.
    let reference = &settled["after_committed"];
    for (name, state) in &settled {
        if *name != "after_prepared-incumbent" {
            assert_eq!(state, reference, "{name}");
        }
    }
}

#[test]
fn a_v1_intent_whose_state_matches_neither_snapshot_changes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("project");
    fs::create_dir_all(root.join(".git")).expect("project");
    let memory = root.join(".workmem/memory");
    let workspace_id =
        Workspace::builder(&root).open_read_only().expect("open").workspace_id().to_owned();
    let tied = Tied { _dir: dir, root };
    for (fixture, file) in
        [("after_prepared", "curated.json"), ("after_curated_applied", "conflicts.json")]
    {
        install_fixture(fixture, &memory, &workspace_id);
        let path = memory.join(file);
        let text = fs::read_to_string(&path).expect("read");
        let edited = if file == "curated.json" {
            text.replacen(
                "\"first_seen\": \"2026-01-01T08:00:00Z\"",
                "\"first_seen\": \"2025-12-01T08:00:00Z\"",
                1,
            )
        } else {
            text.replacen(
                "\"detected_at\": \"2026-06-01T00:00:00Z\"",
                "\"detected_at\": \"2026-05-31T00:00:00Z\"",
                1,
            )
        };
        assert_ne!(edited, text, "{fixture}: the edit applies");
        fs::write(&path, edited).expect("write");
        assert_recovery_stops(
            &tied,
            fixture,
            &[file, "neither the before nor the after", "recovery stopped"],
        );
    }
}
