//! Redacting facts through the facade (docs/corrections.md, "Redact"), on
//! a real workspace: a tie on `db.engine` with an active value (fact s1)
//! and an open case (facts p1, p2 "Use Postgres." and m1, m2 "Use
//! MySQL."). After a redaction no file under the memory directory holds
//! the text, caches and temporary files included; the lines are
//! tombstones; every entry and candidate worded by a redacted fact holds
//! the marker; verify is clean; and the next commands rebuild what they
//! need.
#![allow(clippy::disallowed_methods)] // tests read the files directly

use std::fs;
use std::path::Path;

use workmem::{
    CaseStatus, ContextOptions, DistillOptions, Error, ErrorKind, Invalid, NewFact, REDACTED,
    Redaction, Restoration, Stamp, Status, Workspace,
};

use workmem_testutil::files_holding;

use crate::test_torn_writes::{AS_OF, Tied};

fn redaction(event: &str, facts: &[&str]) -> Redaction {
    Redaction {
        event_ids: Vec::new(),
        fact_ids: facts.iter().map(|f| (*f).to_owned()).collect(),
        actor: "Ada <ada@example.com>".into(),
        rationale: "a credential was pasted into it".into(),
        event_id: event.into(),
        recorded_at: Some(Stamp::parse("2026-06-01T00:00:00Z").unwrap()),
    }
}

fn verify_clean(tied: &Tied) {
    let problems = Workspace::builder(&tied.root).open_read_only().unwrap().verify().unwrap();
    assert_eq!(problems, [], "verify");
}

/// Warms every cache that holds text: context, pending, search, distill.
fn warm(ws: &Workspace) {
    ws.context_with(&ContextOptions::new().recent(50).pending(50)).unwrap();
    ws.search("postgres", &workmem::SearchOptions::default()).unwrap();
    ws.distill(&DistillOptions::new().as_of(Stamp::parse(AS_OF).unwrap())).unwrap();
}

#[test]
fn a_redaction_removes_the_text_from_every_file_and_keeps_the_records() {
    let tied = Tied::new();
    let ws = tied.open();
    warm(&ws);
    let memory = tied.memory();
    assert!(!files_holding(&memory, "Use Postgres.").is_empty());
    let case = tied.case();

    let done = ws.redact(redaction("correction:r1", &["p1", "p2"])).unwrap();
    assert!(!done.already_recorded);
    assert_eq!(done.correction.fact_ids, ["p1", "p2"]);
    let hashes = done.correction.line_sha256.as_ref().unwrap();
    assert_eq!(hashes.keys().collect::<Vec<_>>(), ["p1", "p2"]);

    // The text is nowhere under the memory directory.
    assert_eq!(files_holding(&memory, "Use Postgres."), Vec::<String>::new());
    assert_eq!(files_holding(&memory, "use postgres."), Vec::<String>::new());
    // The lines are tombstones, in place, with the record's event id and
    // the hash of the line each replaced.
    let p1 = ws.facts().unwrap().into_iter().find(|f| f.fact_id() == "p1").unwrap();
    assert_eq!(p1.content(), REDACTED);
    assert_eq!(p1.source(), REDACTED);
    assert_eq!(p1.memory_key(), Some("db.engine"));
    assert!(p1.evidence().is_empty());
    // The candidate keeps its ids and holds the marker; the case that
    // rested on it is superseded.
    let after = ws.conflicts().unwrap();
    let after = after.get(&case.conflict_id).unwrap();
    assert_eq!(after.status, CaseStatus::Superseded);
    let candidate = after.candidates.iter().find(|c| c.content == REDACTED).unwrap();
    assert!(case.candidate(&candidate.candidate_id).is_some());
    assert_eq!(candidate.retracted_evidence_ids, ["p1", "p2"]);
    // The facts are retracted for good: a restore is refused.
    let retracted = ws.retractions().unwrap();
    assert!(retracted.is_redacted("p1") && retracted.is_redacted("p2"));
    let refused = ws
        .restore(Restoration {
            restores: "correction:r1".into(),
            actor: "Ada <ada@example.com>".into(),
            rationale: "undo".into(),
            event_id: "correction:r2".into(),
            recorded_at: None,
        })
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidInput, "{refused}");
    verify_clean(&tied);
    // The other value and the active one are untouched, and every reader
    // works again (rebuilding the caches the redaction removed).
    assert!(ws.memory().unwrap().contains("Use SQLite."));
    warm(&ws);
    assert_eq!(files_holding(&memory, "Use Postgres."), Vec::<String>::new());
    verify_clean(&tied);
    // A retry is idempotent; the same event id for another request is not.
    let again = ws.redact(redaction("correction:r1", &["p1", "p2"])).unwrap();
    assert!(again.already_recorded);
    let other = ws.redact(redaction("correction:r1", &["m1", "m2"])).unwrap_err();
    assert_eq!(other.kind(), ErrorKind::ResolutionRejected, "{other}");
}

#[test]
fn a_redacted_active_value_leaves_its_domain_without_a_value_and_its_history_marked() {
    let tied = Tied::new();
    let ws = tied.open();
    ws.redact(redaction("correction:r1", &["s1"])).unwrap();
    let state = ws.curated().unwrap();
    let entry = state.entries.iter().find(|e| e.retracted_evidence_ids.contains("s1")).unwrap();
    assert_eq!(entry.status, Status::Retracted);
    assert_eq!(entry.content, REDACTED);
    assert!(!ws.memory().unwrap().contains("Use SQLite."));
    assert_eq!(files_holding(&tied.memory(), "Use SQLite."), Vec::<String>::new());
    verify_clean(&tied);
    // A later distill judges the domain from the facts that are left.
    ws.distill(&DistillOptions::new().as_of(Stamp::parse(AS_OF).unwrap())).unwrap();
    verify_clean(&tied);
    assert_eq!(files_holding(&tied.memory(), "Use SQLite."), Vec::<String>::new());
}

#[test]
fn a_redaction_that_would_leave_the_text_elsewhere_is_refused_and_writes_nothing() {
    let tied = Tied::new();
    let ws = tied.open();
    let memory = tied.memory();
    let before = snapshot(&memory);
    // p2 holds the same text as p1.
    let err = ws.redact(redaction("correction:r1", &["p1"])).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput { reason, .. } if *reason == Invalid::SameText { ids: vec!["p2".into()] }),
        "{err}"
    );
    // An unknown id.
    let err = ws.redact(redaction("correction:r1", &["nope"])).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput { reason, .. } if *reason == Invalid::UnknownFacts { ids: vec!["nope".into()] }),
        "{err}"
    );
    // A cosmetic variant counts as the same text.
    ws.remember(NewFact {
        memory_key: Some("db.engine".into()),
        kind: Some("decision".into()),
        fact_id: Some("m3".into()),
        recorded_at: Some("2026-02-11T00:00:00Z".into()),
        ..NewFact::new("use   MYSQL.")
    })
    .unwrap();
    let before = Some(before).map(|_| snapshot(&memory)).unwrap();
    let err = ws.redact(redaction("correction:r1", &["m1", "m2"])).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput { reason, .. } if *reason == Invalid::SameText { ids: vec!["m3".into()] }),
        "{err}"
    );
    assert_eq!(snapshot(&memory), before, "a refused redaction wrote something");
    // Named too, it goes.
    ws.redact(redaction("correction:r1", &["m1", "m2", "m3"])).unwrap();
    assert_eq!(files_holding(&memory, "MySQL"), Vec::<String>::new());
    assert_eq!(files_holding(&memory, "MYSQL"), Vec::<String>::new());
    verify_clean(&tied);
    // A fact redacted already.
    let err = ws.redact(redaction("correction:r9", &["m1"])).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput { reason, .. } if *reason == Invalid::AlreadyRedacted { ids: vec!["m1".into()] }),
        "{err}"
    );
}

/// The files of the memory directory that are not caches, with their
/// bytes.
fn snapshot(memory: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![memory.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.display().to_string(), fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn an_error_names_what_is_wrong() {
    let tied = Tied::new();
    let ws = tied.open();
    let err: Error = ws.redact(redaction("correction:r1", &[])).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
}

/// A tombstone whose record is missing (a forged line) is reported by
/// verify.
#[test]
fn verify_requires_a_tombstone_and_its_record_together() {
    let tied = Tied::new();
    let ws = tied.open();
    ws.redact(redaction("correction:r1", &["p1", "p2"])).unwrap();
    let memory = tied.memory();
    let day = memory.join("daily/2026-02-01.jsonl");
    let text = fs::read_to_string(&day).unwrap();
    // Another event id on the tombstone: no record names it.
    fs::write(&day, text.replace("correction:r1", "correction:forged")).unwrap();
    let problems = Workspace::builder(&tied.root).open_read_only().unwrap().verify().unwrap();
    let messages: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("fact p1 is a tombstone of redaction correction:forged")),
        "{messages:?}"
    );
    // The line is still a tombstone of the same line, which is what the
    // record asks for: only the tombstone's own record is missing.
    assert_eq!(messages.len(), 1, "{messages:?}");
    // The file as the redaction wrote it: clean again.
    fs::write(&day, &text).unwrap();
    verify_clean(&tied);
}

/// Appends to the daily file a redaction rewrites, from other handles at
/// the same time (appends do not take the workspace lock): every fact
/// acknowledged is in the log afterwards, and the text is gone.
#[test]
fn appends_during_a_redaction_are_never_lost() {
    let tied = Tied::new();
    // A large file to rewrite: the rewrite holds it long enough for the
    // writers to meet it.
    let bulk: Vec<NewFact> = (0..20_000)
        .map(|i| NewFact {
            recorded_at: Some("2026-02-01T06:00:00Z".into()),
            ..NewFact::new(format!("Bulk note number {i} about the build."))
        })
        .collect();
    tied.open().import(bulk, &mut |_| {}).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            // The system clock and random ids: the handles' ids never meet.
            let ws = Workspace::builder(&tied.root).open().unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut written = Vec::new();
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && i < 400 || i < 50 {
                    // Without an id: an append that takes no workspace
                    // lock.
                    let fact = ws
                        .remember(NewFact {
                            recorded_at: Some("2026-02-01T12:00:00Z".into()),
                            ..NewFact::new(format!("Writer {w} note {i}"))
                        })
                        .unwrap();
                    written.push(fact.fact_id().to_owned());
                    i += 1;
                }
                written
            })
        })
        .collect();
    let ws = tied.open();
    std::thread::sleep(std::time::Duration::from_millis(20));
    ws.redact(redaction("correction:r1", &["p1", "p2"])).unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written: Vec<String> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    let stored: std::collections::HashSet<String> =
        ws.facts().unwrap().into_iter().map(|f| f.fact_id().to_owned()).collect();
    let lost: Vec<&String> = written.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(lost.is_empty(), "{} of {} appends lost: {lost:?}", lost.len(), written.len());
    assert_eq!(files_holding(&tied.memory(), "Use Postgres."), Vec::<String>::new());
    verify_clean(&tied);
}

/// A GitHub token as the guard knows it.
fn token() -> String {
    workmem_testutil::credential_in("GitHub token", workmem_testutil::Field::Content)
}

/// Replaces `from` by `to` in every file under `memory` holding it, as a
/// hand edit or an older version would have written it.
fn hand_edit(memory: &Path, from: &str, to: &str) {
    for name in files_holding(memory, from) {
        let path = memory.join(&name);
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, text.replace(from, to)).unwrap();
    }
}

fn retraction(event: &str, facts: &[&str], rationale: &str) -> workmem::Retraction {
    workmem::Retraction {
        fact_ids: facts.iter().map(|f| (*f).to_owned()).collect(),
        entry_key: None,
        actor: "Ada <ada@example.com>".into(),
        rationale: rationale.into(),
        event_id: event.into(),
        recorded_at: Some(Stamp::parse("2026-06-03T00:00:00Z").unwrap()),
    }
}

#[test]
fn a_decision_and_a_correction_holding_a_credential_lose_it_and_stand() {
    let tied = Tied::new();
    let ws = tied.open();
    let case = tied.case();
    let decided = ws.resolve(tied.decision(&case)).unwrap();
    ws.retract(retraction("correction:c1", &["m1"], "Recorded twice by mistake.")).unwrap();
    let memory = tied.memory();
    // An older version stored a token in both records' rationale, and the
    // case's copy of the decision's.
    let token = token();
    hand_edit(&memory, "Production needs extensions.", &token);
    hand_edit(&memory, "Recorded twice by mistake.", &token);
    assert_eq!(files_holding(&memory, &token).len(), 3, "audit, corrections, conflicts");
    let checker = Workspace::builder(&tied.root).open_read_only().unwrap();
    let found = checker.scan().unwrap().redaction();
    assert_eq!(found.fact_ids, Vec::<String>::new());
    assert_eq!(found.event_ids, ["correction:c1", "review:db:1"]);
    assert_eq!(found.copies.len(), 1, "{:?}", found.copies);
    assert_eq!(found.elsewhere, []);
    let active_before = ws.memory().unwrap();

    let request =
        Redaction { event_ids: found.event_ids.clone(), ..redaction("correction:r1", &[]) };
    let preview = ws.preview_redaction(&request).unwrap();
    assert_eq!(preview.event_ids, found.event_ids);
    assert_eq!(preview.files.len(), 2, "{:?}", preview.files);
    assert_eq!(preview.conflict_ids, std::slice::from_ref(&case.conflict_id));
    let done = ws.redact(request.clone()).unwrap();
    let record = &done.correction;
    assert_eq!(record.event_ids.as_ref().unwrap(), &found.event_ids);
    let hashes = record.line_sha256.as_ref().unwrap();
    assert_eq!(hashes.keys().collect::<Vec<_>>(), ["correction:c1", "review:db:1"]);

    assert_eq!(files_holding(&memory, &token), Vec::<String>::new());
    // The records keep every other field: the decision and the retraction
    // stand, and the case keeps its outcome.
    let audit = ws.adjudications().unwrap();
    let decision = audit.iter().find(|a| a.event_id == decided.event_id).unwrap();
    assert_eq!((decision.actor.as_str(), decision.rationale.as_str()), (REDACTED, REDACTED));
    assert_eq!(decision.selected_candidate_id, decided.selected_candidate_id);
    let corrections = ws.corrections().unwrap();
    let c1 = corrections.iter().find(|c| c.event_id == "correction:c1").unwrap();
    assert_eq!((c1.actor.as_str(), c1.rationale.as_str()), (REDACTED, REDACTED));
    assert_eq!(c1.fact_ids, ["m1"]);
    assert!(ws.retractions().unwrap().is_retracted("m1"));
    let queue = ws.conflicts().unwrap();
    let closed = queue.get(&case.conflict_id).unwrap();
    assert_eq!(closed.status, CaseStatus::Resolved);
    assert_eq!(closed.resolution_actor.as_deref(), Some(REDACTED));
    assert_eq!(closed.resolution_rationale.as_deref(), Some(REDACTED));
    assert_eq!(ws.memory().unwrap(), active_before);
    verify_clean(&tied);
    assert!(checker.scan().unwrap().is_clean());

    // A retry writes nothing, whatever the order of its ids; the records
    // cannot be redacted twice.
    let mut reordered = request.clone();
    reordered.event_ids.reverse();
    assert!(ws.redact(reordered).unwrap().already_recorded);
    assert!(ws.redact(request).unwrap().already_recorded);
    let twice =
        Redaction { event_ids: vec!["review:db:1".into()], ..redaction("correction:r2", &[]) };
    let err = ws.redact(twice).unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput { reason: Invalid::AlreadyRedacted { .. }, .. }),
        "{err}"
    );
    let unknown =
        Redaction { event_ids: vec!["review:none".into()], ..redaction("correction:r2", &[]) };
    let err = ws.redact(unknown).unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput { reason: Invalid::UnknownEvents { .. }, .. }),
        "{err}"
    );
    verify_clean(&tied);
    // `rebuild` derives the cases again from the records: the decision
    // holds, with its words redacted.
    let rebuilt = ws.rebuild(&DistillOptions::new().as_of(Stamp::parse(AS_OF).unwrap())).unwrap();
    assert_eq!(rebuilt.decisions_set_aside, []);
    assert_eq!(files_holding(&memory, &token), Vec::<String>::new());
    verify_clean(&tied);
}

#[test]
fn the_marker_is_refused_as_words_and_verify_requires_it_with_its_record() {
    let tied = Tied::new();
    let ws = tied.open();
    let err = ws.retract(retraction("correction:c1", &["m1"], REDACTED)).unwrap_err();
    assert!(matches!(err, Error::InvalidInput { reason: Invalid::Marker { .. }, .. }), "{err}");
    let mut decision = tied.decision(&tied.case());
    decision.actor = REDACTED.into();
    let err = ws.resolve(decision).unwrap_err();
    assert!(matches!(err, Error::InvalidInput { reason: Invalid::Marker { .. }, .. }), "{err}");

    // A decision whose words another hand replaced by the marker, with no
    // redact record: verify reports it.
    ws.resolve(tied.decision(&tied.case())).unwrap();
    verify_clean(&tied);
    hand_edit(&tied.memory(), "Production needs extensions.", REDACTED);
    hand_edit(&tied.memory(), "reviewer@example.com", REDACTED);
    let problems = Workspace::builder(&tied.root).open_read_only().unwrap().verify().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.message.contains("holds the redaction marker, but no redact record")),
        "{problems:?}"
    );
}

/// A memory key holding a token (a GitLab runner token, which a key can
/// hold once case-folded), as an older version could have stored it.
fn credential_key() -> String {
    let key = workmem_testutil::credential_in("GitLab token", workmem_testutil::Field::MemoryKey)
        .to_ascii_lowercase();
    assert!(workmem::find_secret(&key).is_some(), "the guard finds the key");
    key
}

#[test]
fn a_credential_in_a_memory_key_leaves_every_file_with_its_domain() {
    let dir = crate::test_torn_writes::scratch_dir();
    let ws = Workspace::open(dir.path(), None).unwrap();
    ws.init().unwrap();
    ws.remember(NewFact::new("Cache the cargo registry.")).unwrap();
    let key = credential_key();
    // Two values of the key, tied, written by hand before the guard knew
    // the form.
    let lines = workmem_testutil::tied_fact_lines(ws.workspace_id(), &key, "2026-01-02");
    let memory = dir.path().join(".workmem/memory");
    fs::write(memory.join("daily/2026-01-02.jsonl"), lines).unwrap();
    let as_of = DistillOptions::new().as_of(Stamp::parse(AS_OF).unwrap());
    ws.distill(&as_of).unwrap();
    assert_eq!(ws.conflicts().unwrap().cases.len(), 1, "a tie of the key's two values");
    warm(&ws);
    assert!(files_holding(&memory, &key).len() >= 3, "{:?}", files_holding(&memory, &key));

    let checker = Workspace::builder(dir.path()).open_read_only().unwrap();
    let found = checker.scan().unwrap().redaction();
    assert_eq!(found.fact_ids, ["k1", "k2", "k3", "k4"]);
    assert_eq!(found.elsewhere, []);
    // One fact of the key alone is refused: the key would stay in the others.
    let one = ws.redact(redaction("correction:r0", &["k1"])).unwrap_err();
    assert!(matches!(one, Error::InvalidInput { reason: Invalid::SameText { .. }, .. }), "{one}");
    let request = Redaction { fact_ids: found.fact_ids.clone(), ..redaction("correction:r1", &[]) };
    ws.redact(request).unwrap();

    assert_eq!(files_holding(&memory, &key), Vec::<String>::new());
    let replaced =
        format!("redacted.{}", &workmem::internals::canon::sha256_hex(key.as_bytes())[..16]);
    let facts = ws.facts().unwrap();
    let k1 = facts.iter().find(|f| f.fact_id() == "k1").unwrap();
    assert_eq!(k1.memory_key(), Some(replaced.as_str()));
    assert_eq!(k1.content(), REDACTED);
    let queue = ws.conflicts().unwrap();
    assert_eq!(queue.cases.len(), 1);
    assert_eq!(queue.cases[0].memory_key, replaced);
    assert_eq!(queue.cases[0].status, CaseStatus::Superseded);
    let state = ws.curated().unwrap();
    assert!(state.entries.iter().all(|e| e.memory_key.as_deref() != Some(key.as_str())));
    assert!(checker.scan().unwrap().is_clean());
    assert_eq!(checker.verify().unwrap(), []);
    // Every reader and the next distill work on, and bring nothing back.
    warm(&ws);
    ws.distill(&as_of).unwrap();
    assert_eq!(files_holding(&memory, &key), Vec::<String>::new());
    assert_eq!(checker.verify().unwrap(), []);
    assert!(ws.facts().unwrap().iter().any(|f| f.content() == "Cache the cargo registry."));
    // `rebuild` derives the state again from the records: the key stays
    // out of it.
    ws.rebuild(&as_of).unwrap();
    assert_eq!(files_holding(&memory, &key), Vec::<String>::new());
    assert_eq!(checker.verify().unwrap(), []);
}

/// A correction's words redacted in a memory with no decision (no audit
/// stream): the next reader, which plans the rewritten stream's records
/// again, finds no stream to rewrite and works.
#[test]
fn a_correction_redacted_without_an_audit_stream_leaves_every_reader_working() {
    let tied = Tied::new();
    let ws = tied.open();
    ws.retract(retraction("correction:c1", &["m1"], "Recorded twice by mistake.")).unwrap();
    assert!(!tied.memory().join("conflict-adjudications.jsonl").exists());
    let request =
        Redaction { event_ids: vec!["correction:c1".into()], ..redaction("correction:r1", &[]) };
    ws.redact(request).unwrap();
    let ws = tied.open();
    ws.curated().unwrap();
    warm(&ws);
    assert_eq!(files_holding(&tied.memory(), "Recorded twice"), Vec::<String>::new());
    verify_clean(&tied);
}

#[test]
fn a_key_of_the_form_a_redaction_writes_is_refused_as_input() {
    let dir = crate::test_torn_writes::scratch_dir();
    let ws = Workspace::open(dir.path(), None).unwrap();
    ws.init().unwrap();
    let keyed =
        |key: &str| NewFact { memory_key: Some(key.to_owned()), ..NewFact::new("Use 8 runners.") };
    let err = ws.remember(keyed("redacted.0123456789abcdef")).unwrap_err();
    assert!(matches!(err, Error::InvalidInput { reason: Invalid::Malformed { .. }, .. }), "{err}");
    assert!(err.to_string().contains("only by `redact`"), "{err}");
    // A key that merely starts like one is a key.
    ws.remember(keyed("redacted.notes")).unwrap();
}

/// The minimal history the single-clone property found: an unkeyed entry
/// redacted, the same statement recorded again (dated earlier) and
/// promoted, then that entry retracted. The entry lists the redacted
/// fact and the one retracted; the latter, not redacted, words it, so it
/// keeps its wording, and verify is clean.
#[test]
fn an_entry_worded_again_after_a_redaction_keeps_its_wording_once_retracted() {
    let dir = crate::test_torn_writes::scratch_dir();
    let ws = Workspace::builder(dir.path())
        .clock(std::sync::Arc::new(workmem::FixedClock::new(Stamp::parse(AS_OF).unwrap())))
        .open()
        .unwrap();
    ws.init().unwrap();
    let pitfall = |id: &str, at: &str| NewFact {
        kind: Some("pitfall".into()),
        importance: Some(5),
        recorded_at: Some(at.into()),
        fact_id: Some(id.into()),
        ..NewFact::new("Never force-push the main branch.")
    };
    let as_of = DistillOptions::new().as_of(Stamp::parse(AS_OF).unwrap());
    ws.remember(pitfall("f0", "2026-03-01T00:00:00Z")).unwrap();
    ws.distill(&as_of).unwrap();
    ws.redact(redaction("correction:r1", &["f0"])).unwrap();
    ws.remember(pitfall("f1", "2026-02-01T00:00:00Z")).unwrap();
    ws.distill(&as_of).unwrap();
    let entry = ws.curated().unwrap().entries.into_iter().find(|e| e.memory_key.is_none()).unwrap();
    assert_eq!(entry.evidence_ids, ["f1"], "{entry:?}");
    ws.retract(workmem::Retraction {
        entry_key: Some(entry.key.clone()),
        ..retraction("correction:c1", &[], "recorded by mistake")
    })
    .unwrap();
    let after = ws.curated().unwrap().entries.into_iter().find(|e| e.key == entry.key).unwrap();
    assert_eq!(after.status, Status::Retracted);
    assert_eq!(after.content, "Never force-push the main branch.");
    let checker = Workspace::builder(dir.path()).open_read_only().unwrap();
    assert_eq!(checker.verify().unwrap(), []);
}
