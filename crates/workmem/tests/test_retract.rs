//! Retracting facts and restoring a retraction through the facade
//! (docs/corrections.md), on a real workspace: a tie on `db.engine` with
//! an active value (fact s1) and an open case (facts p1, p2, m1, m2).
#![allow(clippy::disallowed_methods)] // tests read the files directly

use std::fs;

use workmem::{
    CaseStatus, Error, ErrorKind, Invalid, Restoration, Retraction, Stamp, Status, Workspace,
};

use crate::test_torn_writes::{AS_OF, Tied};

fn retraction(event: &str, facts: &[&str]) -> Retraction {
    Retraction {
        fact_ids: facts.iter().map(|f| (*f).to_owned()).collect(),
        entry_key: None,
        actor: "Ada <ada@example.com>".into(),
        rationale: "recorded against the wrong service".into(),
        event_id: event.into(),
        recorded_at: Some(Stamp::parse("2026-06-01T00:00:00Z").unwrap()),
    }
}

fn restoration(event: &str, restores: &str) -> Restoration {
    Restoration {
        restores: restores.into(),
        actor: "Ada <ada@example.com>".into(),
        rationale: "it was right after all".into(),
        event_id: event.into(),
        recorded_at: Some(Stamp::parse("2026-06-01T00:00:00Z").unwrap()),
    }
}

fn read(tied: &Tied, name: &str) -> String {
    fs::read_to_string(tied.memory().join(name)).unwrap()
}

fn verify_clean(tied: &Tied) {
    let problems = Workspace::builder(&tied.root).open_read_only().unwrap().verify().unwrap();
    assert_eq!(problems, [], "verify");
}

#[test]
fn a_retraction_of_the_active_value_and_its_restore_leave_the_memory_as_it_was() {
    let tied = Tied::new();
    let ws = tied.open();
    let (curated, conflicts, memory) =
        (read(&tied, "curated.json"), read(&tied, "conflicts.json"), read(&tied, "MEMORY.md"));
    assert!(memory.contains("Use SQLite."), "{memory}");
    assert!(!curated.contains("retracted"));
    let case = tied.case();

    let done = ws.retract(retraction("correction:1", &["s1"])).unwrap();
    assert!(!done.already_recorded);
    assert_eq!(done.memory_keys, ["db.engine"]);
    assert_eq!(done.conflict_ids, std::slice::from_ref(&case.conflict_id));
    // The entry is retracted and out of the memory; the case that rested
    // on it superseded at the correction; both files at the new versions.
    let state = ws.curated().unwrap();
    let entry = state.entries.iter().find(|e| e.content == "Use SQLite.").unwrap();
    assert_eq!(entry.status, Status::Retracted);
    assert!(entry.evidence_ids.is_empty());
    assert_eq!(entry.retracted_evidence_ids, ["s1"]);
    assert_eq!(state.schema_version, 3);
    let queue = ws.conflicts().unwrap();
    assert_eq!(queue.schema_version, 2);
    let after = queue.get(&case.conflict_id).unwrap();
    assert_eq!(after.status, CaseStatus::Superseded);
    assert_eq!(after.superseded_at.as_ref().map(Stamp::as_str), Some("2026-06-01T00:00:00Z"));
    assert!(!read(&tied, "MEMORY.md").contains("Use SQLite."));
    assert!(!ws.memory().unwrap().contains("Use SQLite."));
    assert_eq!(ws.corrections().unwrap().len(), 1);
    assert!(ws.retractions().unwrap().is_retracted("s1"));
    verify_clean(&tied);
    // The journal is empty again.
    assert!(ws.journal().unwrap().transactions.is_empty());

    // Restored: every entry and case as before (the files keep their new
    // versions), MEMORY.md byte for byte.
    let undone = ws.restore(restoration("correction:2", "correction:1")).unwrap();
    assert_eq!(undone.correction.restores.as_deref(), Some("correction:1"));
    assert_eq!(read(&tied, "MEMORY.md"), memory);
    let version = |text: &str, from: &str, to: &str| text.replace(from, to);
    assert_eq!(
        read(&tied, "curated.json"),
        version(&curated, "\"schema_version\": 2", "\"schema_version\": 3")
    );
    assert_eq!(
        read(&tied, "conflicts.json"),
        version(&conflicts, "\"schema_version\": 1", "\"schema_version\": 2")
    );
    assert_eq!(tied.case(), case);
    assert!(!ws.retractions().unwrap().is_retracted("s1"));
    verify_clean(&tied);
}

#[test]
fn a_retry_writes_nothing_and_bad_requests_write_nothing() {
    let tied = Tied::new();
    let ws = tied.open();
    let curated = read(&tied, "curated.json");
    // Refused before anything is written.
    let err = ws.retract(retraction("correction:1", &["p1", "nope"])).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("nope"), "{err}");
    let mut entry = retraction("correction:1", &[]);
    entry.entry_key = Some("0000000000000000".into());
    let err = ws.retract(entry).unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput { reason: Invalid::NoSuchEntry { .. }, .. }),
        "{err}"
    );
    let err = ws.restore(restoration("correction:2", "correction:9")).unwrap_err();
    assert!(err.to_string().contains("no correction has event id correction:9"), "{err}");
    let mut secret = retraction("correction:1", &["p1"]);
    secret.rationale = "key AKIAIOSFODNN7EXAMPLE leaked".into();
    assert_eq!(ws.retract(secret).unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(read(&tied, "curated.json"), curated);
    assert!(!tied.memory().join("memory-corrections.jsonl").exists());

    // A challenger's fact: the case is superseded, curated.json changes
    // only its version.
    let first = ws.retract(retraction("correction:1", &["p1"])).unwrap();
    assert_eq!(first.entry_keys, Vec::<String>::new());
    let stream = read(&tied, "memory-corrections.jsonl");
    // The same record again: nothing written.
    let again = ws.retract(retraction("correction:1", &["p1"])).unwrap();
    assert!(again.already_recorded);
    assert_eq!(again.correction, first.correction);
    assert_eq!(read(&tied, "memory-corrections.jsonl"), stream);
    // Another record under the event id, or a decision's event id: refused.
    let err = ws.retract(retraction("correction:1", &["p2"])).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ResolutionRejected);
    // Restoring twice, or a restore: refused.
    ws.restore(restoration("correction:2", "correction:1")).unwrap();
    assert!(ws.restore(restoration("correction:2", "correction:1")).unwrap().already_recorded);
    let err = ws.restore(restoration("correction:3", "correction:1")).unwrap_err();
    assert!(err.to_string().contains("already restored by correction:2"), "{err}");
    let err = ws.restore(restoration("correction:3", "correction:2")).unwrap_err();
    assert!(err.to_string().contains("is a restore, not a retraction"), "{err}");
    verify_clean(&tied);
}

#[test]
fn retracting_an_entry_takes_every_evidence_fact_of_it() {
    let tied = Tied::new();
    let ws = tied.open();
    let key = ws.curated().unwrap().entries[0].key.clone();
    let mut request = retraction("correction:1", &[]);
    request.entry_key = Some(key.clone());
    let done = ws.retract(request).unwrap();
    assert_eq!(done.correction.fact_ids, ["s1"]);
    assert_eq!(done.correction.entry_key.as_deref(), Some(key.as_str()));
    assert_eq!(done.entry_keys, [key]);
    verify_clean(&tied);
}

/// The statuses of `db.engine`'s revisions, oldest first, with their
/// contents.
fn revisions(ws: &Workspace) -> Vec<(String, Status)> {
    ws.curated()
        .unwrap()
        .entries
        .into_iter()
        .filter(|e| e.memory_key.as_deref() == Some("db.engine"))
        .map(|e| (e.content, e.status))
        .collect()
}

fn explain_reason(ws: &Workspace, fact: &str) -> workmem::Reason {
    ws.explain_fact(
        fact,
        &workmem::Policy::default(),
        Some(Stamp::parse("2026-06-01T00:00:00Z").unwrap()),
    )
    .unwrap()
    .reason
}

/// A decision chose Postgres (R2 on p1, p2): retracting all of that
/// value's evidence retracts R2 and leaves the domain without a value; the
/// decision and its case stay as they were; a retraction of the
/// superseded R1 (s1) leaves R2 alone; each restore gives back what was.
#[test]
fn a_retraction_of_a_value_a_decision_chose_and_of_a_superseded_revision() {
    let tied = Tied::new();
    let ws = tied.open();
    let case = tied.case();
    ws.resolve(tied.decision(&case)).unwrap();
    let decided =
        (read(&tied, "curated.json"), read(&tied, "conflicts.json"), read(&tied, "MEMORY.md"));
    let active = || {
        vec![
            ("Use SQLite.".to_owned(), Status::Superseded),
            ("Use Postgres.".to_owned(), Status::Active),
        ]
    };
    assert_eq!(revisions(&ws), active());

    // The chosen value's evidence, all of it.
    let done = ws.retract(retraction("correction:1", &["p1", "p2"])).unwrap();
    assert_eq!(done.memory_keys, ["db.engine"]);
    assert_eq!(
        revisions(&ws),
        vec![
            ("Use SQLite.".to_owned(), Status::Superseded),
            ("Use Postgres.".to_owned(), Status::Retracted),
        ]
    );
    // The resolved case is the record of the decision: unchanged.
    assert_eq!(
        read(&tied, "conflicts.json"),
        decided.1.replace("\"schema_version\": 1", "\"schema_version\": 2")
    );
    let memory = ws.memory().unwrap();
    assert!(!memory.contains("Postgres") && !memory.contains("SQLite"), "{memory}");
    let context = ws.context(None).unwrap();
    assert!(!context.contains("Use Postgres."), "{context}");
    let history = ws.history("db.engine").unwrap();
    assert_eq!(history.corrections.len(), 1);
    assert_eq!(history.revisions.len(), 2);
    assert!(
        matches!(explain_reason(&ws, "p1"), workmem::Reason::Retracted { event_ids } if event_ids == ["correction:1"])
    );
    verify_clean(&tied);
    ws.restore(restoration("correction:2", "correction:1")).unwrap();
    assert_eq!(revisions(&ws), active());
    assert_eq!(read(&tied, "MEMORY.md"), decided.2);
    verify_clean(&tied);

    // The superseded revision's evidence: R1 retracted, linked; R2 as it was.
    ws.retract(retraction("correction:3", &["s1"])).unwrap();
    assert_eq!(
        revisions(&ws),
        vec![
            ("Use SQLite.".to_owned(), Status::Retracted),
            ("Use Postgres.".to_owned(), Status::Active),
        ]
    );
    let state = ws.curated().unwrap();
    let r1 = state.entries.iter().find(|e| e.content == "Use SQLite.").unwrap();
    assert!(r1.superseded_by.is_some());
    assert_eq!(read(&tied, "MEMORY.md"), decided.2);
    verify_clean(&tied);
    ws.restore(restoration("correction:4", "correction:3")).unwrap();
    assert_eq!(
        read(&tied, "curated.json"),
        decided.0.replace("\"schema_version\": 2", "\"schema_version\": 3")
    );
    verify_clean(&tied);
}

/// A restore after the domain moved on (a case detected after the
/// retraction): the fact counts again and is released, listed where it
/// was (`released_evidence_ids`) apart from the evidence and from what is
/// retracted; the new case is not touched.
#[test]
fn a_restore_after_the_domain_moved_on_leaves_the_fact_to_the_next_distill() {
    let tied = Tied::new();
    let ws = tied.open();
    ws.retract(retraction("correction:1", &["s1"])).unwrap();
    // The next distill judges the domain again: Postgres and MySQL still
    // tie, so a new case opens, detected after the retraction.
    let later = Stamp::parse("2026-07-01T00:00:00Z").unwrap();
    ws.distill(&workmem::DistillOptions::new().as_of(later)).unwrap();
    let open: Vec<_> = ws
        .conflicts()
        .unwrap()
        .cases
        .into_iter()
        .filter(|c| c.status == CaseStatus::Open)
        .collect();
    assert_eq!(open.len(), 1, "a new case");
    let before = (read(&tied, "curated.json"), read(&tied, "conflicts.json"));
    let cases_before = ws.conflicts().unwrap();
    let done = ws.restore(restoration("correction:2", "correction:1")).unwrap();
    assert!(!ws.retractions().unwrap().is_retracted("s1"));
    let state = ws.curated().unwrap();
    let sqlite = state.entries.iter().find(|e| e.content == "Use SQLite.").unwrap();
    assert_eq!(done.entry_keys, std::slice::from_ref(&sqlite.key));
    assert_eq!(sqlite.status, Status::Retracted);
    assert!(sqlite.evidence_ids.is_empty() && sqlite.retracted_evidence_ids.is_empty());
    assert_eq!(sqlite.released_evidence_ids, ["s1"]);
    // Nothing else changed: the listing moved, in both files.
    let moved =
        |text: &str| text.replace("\"retracted_evidence_ids\"", "\"released_evidence_ids\"");
    assert_eq!(read(&tied, "curated.json"), moved(&before.0));
    assert_eq!(read(&tied, "conflicts.json"), moved(&before.1));
    // The case the retraction superseded lists the fact released too; the
    // new case is as it was.
    let queue = ws.conflicts().unwrap();
    for (case, was) in queue.cases.iter().zip(&cases_before.cases) {
        assert_eq!(case.status, was.status);
        let released = case.candidates.iter().any(|c| !c.released_evidence_ids.is_empty());
        assert_eq!(done.conflict_ids.contains(&case.conflict_id), released);
    }
    assert_eq!(done.conflict_ids.len(), 1, "{done:?}");
    verify_clean(&tied);
}

/// verify finds the correction that superseded a case whose candidates
/// list retracted evidence: at its `superseded_at`, naming one of its
/// facts.
#[test]
fn verify_requires_the_correction_that_superseded_a_case() {
    let tied = Tied::new();
    let ws = tied.open();
    ws.retract(retraction("correction:1", &["p1"])).unwrap();
    verify_clean(&tied);
    let path = tied.memory().join("memory-corrections.jsonl");
    let stream = fs::read_to_string(&path).unwrap();
    fs::write(&path, stream.replace("2026-06-01T00:00:00Z", "2026-06-01T00:00:01Z")).unwrap();
    let problems = Workspace::builder(&tied.root).open_read_only().unwrap().verify().unwrap();
    assert!(
        problems.iter().any(|p| p.message.contains("no correction at its superseded_at")),
        "{problems:?}"
    );
}

/// Records "Use MySQL." on `db.engine` as fact `id`, dated `at`.
fn mysql(ws: &Workspace, id: &str, at: &str) {
    ws.remember(workmem::NewFact {
        content: "Use MySQL.".into(),
        kind: Some("decision".into()),
        importance: Some(4),
        memory_key: Some("db.engine".into()),
        recorded_at: Some(at.into()),
        fact_id: Some(id.into()),
        ..workmem::NewFact::default()
    })
    .unwrap();
}

/// The state after a decision for Postgres (p1 Feb 1, p2 Feb 10; MySQL
/// rejected on m1, m2), a MySQL fact m3 recorded after it dated `m3_at`,
/// a retraction of `retracted` and a distill: the revisions of the domain
/// and the reason given for m3.
fn decided_then_backdated(
    m3_at: &str,
    retracted: &[&str],
) -> (Tied, Vec<(String, Status)>, workmem::Reason) {
    let tied = Tied::new();
    let ws = tied.open();
    ws.resolve(tied.decision(&tied.case())).unwrap();
    mysql(&ws, "m3", m3_at);
    ws.retract(retraction("correction:1", retracted)).unwrap();
    ws.distill(&workmem::DistillOptions::new().as_of(Stamp::parse(AS_OF).unwrap())).unwrap();
    let reason = explain_reason(&ws, "m3");
    (tied, revisions(&ws), reason)
}

/// A decision holds until newer evidence: a fact of a rejected value
/// dated before the chosen value's newest fact (as the person saw it) is
/// not newer evidence, also when a retraction took that newest fact since
/// (Postgres active on p1 alone, last seen Feb 1) or all of the chosen
/// value's evidence (no value). A fact dated after it is newer evidence.
#[test]
fn a_backdated_fact_and_a_retraction_keep_the_decision() {
    let postgres_active = vec![
        ("Use SQLite.".to_owned(), Status::Superseded),
        ("Use Postgres.".to_owned(), Status::Active),
    ];
    let feb_10 = Stamp::parse("2026-02-10T00:00:00Z").unwrap();

    // m3 dated Feb 5, p2 (Feb 10) retracted: Postgres holds on p1.
    let (tied, revisions, reason) = decided_then_backdated("2026-02-05T00:00:00Z", &["p2"]);
    assert_eq!(revisions, postgres_active);
    let postgres = tied
        .open()
        .curated()
        .unwrap()
        .entries
        .into_iter()
        .find(|e| e.content == "Use Postgres.")
        .unwrap();
    assert_eq!(postgres.last_seen.as_str(), "2026-02-01T00:00:00Z");
    assert!(
        matches!(&reason, workmem::Reason::Stale { entry_key, active_last_seen }
            if *entry_key == postgres.key && *active_last_seen == feb_10),
        "{reason:?}"
    );
    let memory = tied.open().memory().unwrap();
    assert!(memory.contains("Use Postgres.") && !memory.contains("MySQL"), "{memory}");
    verify_clean(&tied);

    // The same with all of Postgres' evidence retracted: no value.
    let (tied, revisions, reason) = decided_then_backdated("2026-02-05T00:00:00Z", &["p1", "p2"]);
    assert_eq!(
        revisions,
        vec![
            ("Use SQLite.".to_owned(), Status::Superseded),
            ("Use Postgres.".to_owned(), Status::Retracted),
        ]
    );
    assert!(
        matches!(&reason, workmem::Reason::Stale { active_last_seen, .. } if *active_last_seen == feb_10),
        "{reason:?}"
    );
    // m3 waits, as a stale fact does, among the pending facts.
    let memory = tied.open().memory().unwrap();
    assert!(!memory.contains("MySQL") && !memory.contains("Postgres"), "{memory}");
    let context = tied.open().context(None).unwrap();
    let (_, pending) = context.split_once("# Pending Keyed Facts").unwrap();
    assert!(pending.contains("db.engine: Use MySQL. (2026-02-05)"), "{context}");
    verify_clean(&tied);

    // m3 dated Feb 11, after every fact the person saw: MySQL replaces
    // Postgres, in both cases.
    for retracted in [&["p2"][..], &["p1", "p2"]] {
        let (tied, revisions, reason) = decided_then_backdated("2026-02-11T00:00:00Z", retracted);
        assert_eq!(revisions.last().unwrap(), &("Use MySQL.".to_owned(), Status::Active));
        assert!(reason.is_promoted(), "{reason:?}");
        verify_clean(&tied);
    }
}
