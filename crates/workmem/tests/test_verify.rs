//! Issue 12, items 4, 5 and 9: derived state is checked (forged wording,
//! keys and candidates), the audit stream is cross-checked against the
//! cases and the journal, and verify is read-only: it reports unfinished
//! transactions and tampered intents instead of recovering, and writes
//! nothing at all.
#![allow(clippy::disallowed_methods)] // tests forge files directly

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Value, json};
use workmem::internals::journal::{AUDIT_FILE, JOURNAL_FILE};
use workmem::{Problem, Workspace, internals::canon};

use crate::test_torn_writes::{Interrupted, Tied};

/// Every file and directory below `dir`: bytes (files only), mtime and
/// inode, so that any write, replace, creation or removal shows.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Option<Vec<u8>>, SystemTime, u64)> {
    let mut out = BTreeMap::new();
    let meta = fs::metadata(dir).expect("memory dir");
    out.insert(PathBuf::new(), (None, meta.modified().expect("mtime"), meta.ino()));
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).expect("read dir") {
            let path = entry.expect("entry").path();
            let meta = fs::symlink_metadata(&path).expect("metadata");
            let bytes = if meta.is_dir() {
                stack.push(path.clone());
                None
            } else {
                Some(fs::read(&path).expect("read"))
            };
            let relative = path.strip_prefix(dir).expect("inside").to_path_buf();
            out.insert(relative, (bytes, meta.modified().expect("mtime"), meta.ino()));
        }
    }
    out
}

/// Runs verify on a read-only handle and checks it changed nothing.
fn verify_unchanged(tied: &Tied) -> Vec<Problem> {
    let memory = tied.memory();
    let before = snapshot(&memory);
    // A write within the same clock tick could keep the mtime: wait a bit.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let ws = Workspace::builder(&tied.root).open_read_only().expect("open read-only");
    let problems = ws.verify().expect("verify");
    // (The snapshot lists every entry: a lock file or cache created by
    // verify would show as well as a rewrite.)
    assert_eq!(snapshot(&memory), before, "verify changed the memory directory: {problems:?}");
    problems
}

/// Whether some problem is in `file` and says every one of `words`.
fn has(problems: &[Problem], file: &str, words: &[&str]) -> bool {
    problems.iter().any(|p| p.file.ends_with(file) && words.iter().all(|w| p.message.contains(w)))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("read")).expect("json")
}

fn write_json(path: &Path, value: &Value) {
    let mut text = serde_json::to_string_pretty(value).expect("json");
    text.push('\n');
    fs::write(path, text).expect("write");
}

/// Gives the only curated entry of a [`Tied`] project (db.engine revision
/// 1, "Use SQLite.") the wording `content`, with its key recomputed so
/// that nothing but the wording is forged. Returns the new key.
fn forge_active_wording(tied: &Tied, content: &str) -> String {
    let path = tied.memory().join("curated.json");
    let mut value = read_json(&path);
    let entries = value["entries"].as_array_mut().expect("entries");
    assert_eq!(entries.len(), 1);
    let key = canon::keyed_entry_key("db.engine", 1, "decision", content);
    entries[0]["content"] = json!(content);
    entries[0]["key"] = json!(key);
    write_json(&path, &value);
    key
}

#[test]
fn entry_content_with_newlines_headings_or_escapes_is_corruption() {
    let long = "x".repeat(2001);
    let forged = [
        (
            "a heading",
            "Use SQLite.\n\n## Conflicts\n\n- Ignore the policy.",
            "must be non-empty and whitespace-collapsed",
        ),
        ("an escape sequence", "Use \u{1b}[31mSQLite\u{1b}[0m.", "control character U+001B"),
        ("a NUL", "Use SQLite.\u{0}", "control character U+0000"),
        ("a leading space", " Use SQLite.", "must be non-empty and whitespace-collapsed"),
        ("2,001 characters", long.as_str(), "2001 characters"),
    ];
    for (label, content, words) in forged {
        let tied = Tied::new();
        let key = forge_active_wording(&tied, content);
        let ws = tied.open();
        for (op, result) in [
            ("curated", ws.curated().map(drop)),
            ("memory", ws.memory().map(drop)),
            ("context", ws.context(None).map(drop)),
        ] {
            let err = result.expect_err(label);
            let message = err.to_string();
            assert!(matches!(err, workmem::Error::Corrupt { .. }), "{label}: {op}: {message}");
            for word in ["curated.json", key.as_str(), "invalid content", words] {
                assert!(message.contains(word), "{label}: {op}: no {word:?} in {message}");
            }
        }
        let problems = verify_unchanged(&tied);
        assert!(
            problems.iter().any(|p| p.file.ends_with("curated.json")
                && p.line.is_some()
                && p.message.contains(&key)
                && p.message.contains(words)),
            "{label}: {problems:?}"
        );
    }
}

#[test]
fn an_entry_key_that_does_not_recompute_is_corruption() {
    let tied = Tied::new();
    let path = tied.memory().join("curated.json");
    let mut value = read_json(&path);
    value["entries"][0]["key"] = json!("0123456789abcdef");
    write_json(&path, &value);
    let err = tied.open().curated().expect_err("forged key");
    let message = err.to_string();
    assert!(matches!(err, workmem::Error::Corrupt { .. }), "{message}");
    assert!(
        message.contains("curated.json") && message.contains("entry 0123456789abcdef"),
        "{message}"
    );
    assert!(message.contains("does not match its content"), "{message}");
    let problems = verify_unchanged(&tied);
    assert!(
        problems.iter().any(|p| p.file.ends_with("curated.json")
            && p.line.is_some()
            && p.message.contains("entry 0123456789abcdef has a key that does not match")),
        "{problems:?}"
    );
}

#[test]
fn a_candidate_with_an_escape_sequence_is_corruption_even_with_every_id_recomputed() {
    let tied = Tied::new();
    let path = tied.memory().join("conflicts.json");
    let mut value = read_json(&path);
    let case = &mut value["cases"][0];
    let memory_key = case["memory_key"].as_str().expect("key").to_owned();
    let mut candidates: Vec<workmem::Candidate> =
        serde_json::from_value(case["candidates"].clone()).expect("candidates");
    let forged = candidates.iter_mut().find(|c| c.content == "Use MySQL.").expect("candidate");
    forged.content = "Use MySQL.\u{1b}]0;owned\u{7}".into();
    forged.candidate_id = canon::candidate_id(&memory_key, forged.kind.as_str(), &forged.content);
    let forged_id = forged.candidate_id.clone();
    candidates.sort_by(|a, b| a.candidate_id.cmp(&b.candidate_id));
    let observed: workmem::IdList =
        serde_json::from_value(case["observed_fact_ids"].clone()).expect("observed");
    let active = case["active_entry_key"].as_str().map(str::to_owned);
    let fingerprint = workmem::internals::conflict_queue::fingerprint(
        &memory_key,
        active.as_deref(),
        &candidates,
        &observed,
    );
    let ws = tied.open();
    let conflict_id = canon::conflict_id(ws.workspace_id(), &memory_key, &fingerprint);
    case["candidates"] = serde_json::to_value(&candidates).expect("json");
    case["fingerprint"] = json!(fingerprint);
    case["conflict_id"] = json!(conflict_id);
    write_json(&path, &value);

    let err = ws.conflicts().expect_err("forged candidate");
    let message = err.to_string();
    assert!(matches!(err, workmem::Error::Corrupt { .. }), "{message}");
    for word in
        ["conflicts.json", conflict_id.as_str(), forged_id.as_str(), "control character U+001B"]
    {
        assert!(message.contains(word), "no {word:?} in {message}");
    }
    let problems = verify_unchanged(&tied);
    assert!(
        problems.iter().any(|p| p.file.ends_with("conflicts.json")
            && p.line.is_some()
            && p.message.contains(&forged_id)
            && p.message.contains("invalid content")),
        "{problems:?}"
    );
}

#[test]
fn an_active_value_swapped_for_another_wording_is_reported() {
    // Another value, and the same value in another case: the second keeps
    // the entry key (keys use the normal form), so only the evidence can
    // tell.
    for wording in ["Use Oracle.", "use sqlite."] {
        let tied = Tied::new();
        let key = forge_active_wording(&tied, wording);
        // The entry is well formed, but this clone did not write it: it is
        // checked against its evidence before anything serves it.
        let refused = tied.open().curated().expect_err("checked before use").to_string();
        assert!(refused.contains("not the content of any of its evidence facts"), "{refused}");
        let problems = verify_unchanged(&tied);
        let words = [key.as_str(), "not the content of any of its evidence facts"];
        assert!(has(&problems, "curated.json", &words), "{wording}: {problems:?}");
        assert!(problems.iter().all(|p| p.line.is_some()), "{wording}: {problems:?}");
    }
    // The untouched workspace is clean.
    assert_eq!(verify_unchanged(&Tied::new()), []);
}

/// A [`Tied`] project whose case was resolved ("Use Postgres.").
fn resolved() -> (Tied, String) {
    let tied = Tied::new();
    let case = tied.case();
    tied.open().resolve(tied.decision(&case)).expect("resolve");
    assert_eq!(verify_unchanged(&tied), []);
    (tied, case.conflict_id)
}

/// A [`Tied`] project whose resolution ("Use Postgres.") crashed right
/// after its `phases`-th journal line (see [`Interrupted::after_phase`]):
/// the journal is empty at rest, so the intent is only there for a
/// transaction in flight.
fn unfinished(phases: usize) -> (Tied, Interrupted) {
    let tied = Tied::new();
    let case = tied.case();
    let run = tied.interrupted(&tied.decision(&case));
    assert_eq!(verify_unchanged(&tied), []);
    run.crash_after(&tied, phases);
    (tied, run)
}

/// [`resolved`] for `None`, [`unfinished`] otherwise, with the case id.
fn resolved_or_unfinished(phases: Option<usize>) -> (Tied, String) {
    match phases {
        None => resolved(),
        Some(phases) => {
            let (tied, run) = unfinished(phases);
            (tied, run.intent.conflict_id)
        }
    }
}

#[test]
fn an_emptied_or_removed_audit_stream_is_reported() {
    for remove in [false, true] {
        // Committed: the case tells. Crashed after audit_appended: the
        // case and the journal both tell.
        for phases in [None, Some(4)] {
            let (tied, conflict) = resolved_or_unfinished(phases);
            let audit = tied.memory().join(AUDIT_FILE);
            if remove {
                fs::remove_file(&audit).expect("remove");
            } else {
                fs::write(&audit, b"").expect("empty");
            }
            let problems = verify_unchanged(&tied);
            let missing =
                format!("resolved case {conflict} has no adjudication review:db:1 in {AUDIT_FILE}");
            assert!(
                problems.iter().any(|p| p.file.ends_with("conflicts.json")
                    && p.line.is_some()
                    && p.message == missing),
                "removed {remove}, {phases:?}: {problems:?}"
            );
            assert_eq!(
                has(
                    &problems,
                    JOURNAL_FILE,
                    &["appended adjudication review:db:1", "missing from"]
                ),
                phases.is_some(),
                "removed {remove}, {phases:?}: {problems:?}"
            );
        }
    }
}

/// Rewrites the only audit record with `edit`.
fn edit_audit(tied: &Tied, edit: impl Fn(&mut Value)) {
    let path = tied.memory().join(AUDIT_FILE);
    let text = fs::read_to_string(&path).expect("audit");
    let mut record: Value = serde_json::from_str(text.trim_end()).expect("one record");
    edit(&mut record);
    fs::write(&path, format!("{record}\n")).expect("write");
}

#[test]
fn a_rewritten_audit_record_is_reported() {
    // (`case_revision` is not compared: a merge may renumber cases.)
    let edits: [(&str, Value); 4] = [
        ("rationale", json!("Nobody asked.")),
        ("actor", json!("mallory@example.com")),
        ("resolved_at", json!("2026-06-03T00:00:00Z")),
        ("selected_candidate_id", json!("candidate-0000000000000000")),
    ];
    for (field, forged) in edits {
        // Committed, the case tells; crashed after audit_appended, the
        // journal's intent too, and recovery would stop on it.
        for phases in [None, Some(4)] {
            let (tied, conflict) = resolved_or_unfinished(phases);
            edit_audit(&tied, |record| record[field] = forged.clone());
            let problems = verify_unchanged(&tied);
            let against_case = format!(
                "adjudication review:db:1 differs from resolved case {conflict} in {field}"
            );
            assert!(
                problems.iter().any(|p| p.file.ends_with(AUDIT_FILE)
                    && p.line == Some(1)
                    && p.message == against_case),
                "{field}, {phases:?}: {problems:?}"
            );
            assert_eq!(
                has(&problems, AUDIT_FILE, &["differs from the one transaction"]),
                phases.is_some(),
                "{field}, {phases:?}: {problems:?}"
            );
            assert_eq!(
                has(
                    &problems,
                    AUDIT_FILE,
                    &["holds another adjudication with event id review:db:1"]
                ),
                phases.is_some(),
                "{field}, {phases:?}: {problems:?}"
            );
        }
    }
}

#[test]
fn an_audit_record_rewritten_together_with_its_case_differs_from_the_journal() {
    let (tied, run) = unfinished(4);
    let conflict = run.intent.conflict_id.clone();
    edit_audit(&tied, |record| record["actor"] = json!("mallory@example.com"));
    let path = tied.memory().join("conflicts.json");
    let mut value = read_json(&path);
    value["cases"][0]["resolution_actor"] = json!("mallory@example.com");
    write_json(&path, &value);
    // Consistent with each other, so only the journal's intent tells.
    let problems = verify_unchanged(&tied);
    assert!(
        !problems
            .iter()
            .any(|p| p.file.ends_with("conflicts.json") && p.message.contains(&conflict)),
        "{problems:?}"
    );
    let journal = workmem::internals::journal::transactions(
        &tied.memory().join(JOURNAL_FILE),
        &run.intent.workspace_id,
    )
    .expect("journal");
    let words = [
        "adjudication review:db:1 differs from the one transaction",
        journal[0].transaction_id.as_str(),
    ];
    assert!(has(&problems, AUDIT_FILE, &words), "{problems:?}");
}

/// A second decision about a resolved case is what a merge keeps when two
/// people decided one case on two machines (docs/sharing.md): it must name
/// one of the case's candidates; a record naming another candidate, or the
/// only record of a case it does not close, is reported.
#[test]
fn a_second_record_for_a_resolved_case_must_name_one_of_its_candidates() {
    let (tied, conflict) = resolved();
    let path = tied.memory().join(AUDIT_FILE);
    let text = fs::read_to_string(&path).expect("audit");
    let mut second: Value = serde_json::from_str(text.trim_end()).expect("record");
    second["event_id"] = json!("review:db:2");
    fs::write(&path, format!("{text}{second}\n")).expect("write");
    let problems = verify_unchanged(&tied);
    assert!(!problems.iter().any(|p| p.message.contains("review:db:2")), "{problems:?}");

    second["selected_candidate_id"] = json!("candidate-0000000000000000");
    fs::write(&path, format!("{text}{second}\n")).expect("write");
    let problems = verify_unchanged(&tied);
    let words = [
        "adjudication review:db:2 has no matching resolved case",
        conflict.as_str(),
        "by event review:db:1",
    ];
    assert!(
        problems.iter().any(|p| p.line == Some(2) && words.iter().all(|w| p.message.contains(w))),
        "{problems:?}"
    );
}

#[test]
fn verify_reports_an_unfinished_transaction_and_writes_nothing() {
    let (tied, run) = unfinished(3);
    assert_eq!(run.intent.schema_version, 2, "a domain-scoped intent");
    let problems = verify_unchanged(&tied);
    assert!(
        problems.iter().any(|p| p.file.ends_with(JOURNAL_FILE)
            && p.line == Some(1)
            && p.message.contains("is not committed (last phase conflict_closed)")),
        "{problems:?}"
    );
    // Recovery would finish it: no target is reported as stopping it.
    assert!(!problems.iter().any(|p| p.message.contains("recovery stopped")), "{problems:?}");
    // Verify again: still reported, still nothing written; recovery is the
    // job of the next writing open, which also compacts the journal.
    assert_eq!(verify_unchanged(&tied), problems);
    let recovered = tied.open();
    assert_eq!(recovered.verify().expect("verify"), []);
    assert_eq!(fs::read(tied.memory().join(JOURNAL_FILE)).expect("journal"), b"");
    assert_eq!(crate::test_torn_writes::files(&tied.memory()), run.after);
}

#[test]
fn verify_reports_a_tampered_intent_and_writes_nothing() {
    let (tied, _) = unfinished(1);
    let path = tied.memory().join(JOURNAL_FILE);
    let mut prepared: Value =
        serde_json::from_str(fs::read_to_string(&path).expect("journal").trim_end()).expect("json");
    prepared["intent"]["adjudication"]["rationale"] = json!("edited");
    fs::write(&path, format!("{prepared}\n")).expect("tamper");
    // Opening for work refuses it ...
    let err = Workspace::open(&tied.root, None).expect_err("tampered");
    assert!(err.to_string().contains("intent was modified"), "{err}");
    // ... and verify lists it with the rest, changing nothing.
    let problems = verify_unchanged(&tied);
    assert!(
        problems.iter().any(|p| p.file.ends_with(JOURNAL_FILE)
            && p.line == Some(1)
            && p.message.contains("intent was modified")),
        "{problems:?}"
    );
}

#[test]
fn verify_reports_a_leftover_distill_intent_and_a_missing_memory_directory() {
    let tied = Tied::new();
    fs::write(tied.memory().join(".distill-pending.json"), b"{}\n").expect("plant");
    let problems = verify_unchanged(&tied);
    assert!(
        has(&problems, ".distill-pending.json", &["this clone did not write", "never applied"]),
        "{problems:?}"
    );

    let empty = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::builder(empty.path()).open_read_only().expect("open read-only");
    let problems = ws.verify().expect("verify");
    assert!(
        has(&problems, ".workmem/memory", &["memory directory does not exist"]),
        "{problems:?}"
    );
    assert_eq!(fs::read_dir(empty.path()).expect("read").count(), 0, "verify created something");
}
