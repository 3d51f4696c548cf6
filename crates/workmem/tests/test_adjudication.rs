//! Human adjudication (docs/policy.md), recovery (section 7), verify and
//! history, through the library API on real files.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use workmem::DistillOptions;
use workmem::internals::journal::{AUDIT_FILE, JOURNAL_FILE};
use workmem::{CaseStatus, Error, FixedClock, Kind, NewFact, Resolution, Stamp, Status, Workspace};

const AS_OF: &str = "2026-06-01T00:00:00Z";

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("project");
        fs::create_dir(&root).expect("project dir");
        Project { _dir: dir, root }
    }

    fn open(&self) -> Workspace {
        Workspace::builder(&self.root)
            .clock(Arc::new(FixedClock::new(Stamp::parse(AS_OF).expect("stamp"))))
            .open()
            .expect("open")
    }
}

fn fact(ws: &Workspace, id: &str, content: &str, importance: i64, key: &str, at: &str) {
    ws.remember(NewFact {
        content: content.into(),
        kind: Some("decision".into()),
        importance: Some(importance),
        memory_key: Some(key.into()),
        recorded_at: Some(at.into()),
        fact_id: Some(id.into()),
        ..NewFact::default()
    })
    .expect("remember");
}

fn distill(ws: &Workspace) -> workmem::Report {
    ws.distill(&DistillOptions::new().as_of(Stamp::parse(AS_OF).expect("stamp")))
        .expect("distill")
        .report
}

/// An active "Use SQLite." (revision 1) challenged by two equally strong
/// newer values: one open case with an incumbent and two challengers.
fn tied_workspace(project: &Project) -> Workspace {
    let ws = project.open();
    fact(&ws, "s1", "Use SQLite.", 4, "db.engine", "2026-01-01T00:00:00Z");
    assert_eq!(distill(&ws).created, 1);
    fact(&ws, "p1", "Use Postgres.", 4, "db.engine", "2026-02-01T00:00:00Z");
    fact(&ws, "p2", "Use Postgres.", 4, "db.engine", "2026-02-10T00:00:00Z");
    fact(&ws, "m1", "Use MySQL.", 4, "db.engine", "2026-02-02T00:00:00Z");
    fact(&ws, "m2", "Use MySQL.", 4, "db.engine", "2026-02-10T00:00:00Z");
    let report = distill(&ws);
    assert_eq!((report.conflicts, report.queued_conflicts, report.created), (1, 1, 0));
    ws
}

fn open_case(ws: &Workspace) -> workmem::Case {
    let queue = ws.conflicts().expect("conflicts");
    let open: Vec<_> = queue.cases.into_iter().filter(|c| c.status == CaseStatus::Open).collect();
    assert_eq!(open.len(), 1);
    open.into_iter().next().expect("one open case")
}

fn candidate_id(case: &workmem::Case, content: &str) -> String {
    case.candidates.iter().find(|c| c.content == content).expect("candidate").candidate_id.clone()
}

fn request(case: &workmem::Case, candidate: &str, event: &str) -> Resolution {
    Resolution {
        conflict_id: case.conflict_id.clone(),
        candidate_id: candidate.to_owned(),
        expected_revision: i64::from(case.revision),
        actor: "reviewer@example.com".into(),
        rationale: "Production needs extensions.".into(),
        event_id: event.into(),
        resolved_at: Some(Stamp::parse("2026-06-02T00:00:00Z").expect("stamp")),
    }
}

/// Every file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).expect("read dir") {
            let path = entry.expect("entry").path();
            // The distill cache and the id index are caches, not state.
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if name.starts_with(".distill-cache") || name == ".id-index" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let meta = fs::metadata(&path).expect("metadata");
                out.insert(
                    path.clone(),
                    (fs::read(&path).expect("read"), meta.modified().expect("mtime")),
                );
            }
        }
    }
    out
}

fn lines(path: &Path) -> usize {
    fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn choosing_a_challenger_creates_the_next_revision_and_closes_the_case() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let incumbent = case.candidates.iter().find(|c| c.incumbent).expect("incumbent").clone();
    let postgres =
        case.candidates.iter().find(|c| c.content == "Use Postgres.").expect("postgres").clone();
    let event = ws.resolve(request(&case, &postgres.candidate_id, "review:1")).expect("resolve");
    assert_eq!(event.prior_active_entry_key.as_deref(), case.active_entry_key.as_deref());
    assert_eq!(event.evidence_ids, vec!["p1", "p2"]);

    let curated = ws.curated().expect("curated");
    let revisions: Vec<_> =
        curated.entries.iter().filter(|e| e.memory_key.as_deref() == Some("db.engine")).collect();
    assert_eq!(revisions.len(), 2);
    let old = revisions.iter().find(|e| e.revision == 1).expect("rev 1");
    let new = revisions.iter().find(|e| e.revision == 2).expect("rev 2");
    assert_eq!(old.key, incumbent_key(&case, &incumbent));
    assert_eq!(old.status, Status::Superseded);
    assert_eq!(old.superseded_by.as_deref(), Some(new.key.as_str()));
    assert_eq!(new.supersedes.as_deref(), Some(old.key.as_str()));
    assert_eq!(new.status, Status::Active);
    assert_eq!((new.content.as_str(), new.kind), ("Use Postgres.", Kind::Decision));
    assert_eq!(new.evidence_ids, postgres.evidence_ids);
    assert_eq!((&new.first_seen, &new.last_seen), (&postgres.first_seen, &postgres.last_seen));
    assert_eq!(event.resulting_active_entry_key, new.key);

    let closed = ws.conflicts().expect("conflicts").get(&case.conflict_id).cloned().expect("case");
    assert_eq!(closed.status, CaseStatus::Resolved);
    assert_eq!(closed.selected_candidate_id.as_deref(), Some(postgres.candidate_id.as_str()));
    assert_eq!(closed.resolution_event_id.as_deref(), Some("review:1"));
    assert_eq!(closed.resolution_actor.as_deref(), Some("reviewer@example.com"));
    assert_eq!(closed.resolution_rationale.as_deref(), Some("Production needs extensions."));
    assert_eq!(closed.resulting_active_entry_key.as_deref(), Some(new.key.as_str()));
    assert_eq!(closed.resolved_at.as_ref().map(Stamp::as_str), Some("2026-06-02T00:00:00Z"));
    assert_eq!(lines(&ws.file(AUDIT_FILE)), 1);
    assert_eq!(ws.adjudications().expect("audit"), vec![event]);
    assert!(ws.memory().expect("memory").contains("- Use Postgres. (seen 2x; evidence: 2)"));

    // The rejected MySQL value cannot come back from the same evidence.
    let before = snapshot(ws.memory_dir());
    let report = distill(&ws);
    assert_eq!((report.created, report.conflicts, report.queued_conflicts), (0, 0, 0));
    assert_eq!(snapshot(ws.memory_dir()), before);
    assert_eq!(
        ws.curated().expect("curated").active_for("db.engine").expect("active").content,
        "Use Postgres."
    );
    assert!(ws.verify().expect("verify").is_empty());
}

fn incumbent_key(case: &workmem::Case, _incumbent: &workmem::Candidate) -> String {
    case.active_entry_key.clone().expect("active key")
}

#[test]
fn choosing_the_incumbent_records_the_decision_only() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let curated_before = fs::read(ws.file("curated.json")).expect("curated");
    let incumbent =
        case.candidates.iter().find(|c| c.incumbent).expect("incumbent").candidate_id.clone();
    let event = ws.resolve(request(&case, &incumbent, "review:keep")).expect("resolve");
    assert_eq!(event.resulting_active_entry_key, case.active_entry_key.clone().expect("active"));
    assert_eq!(fs::read(ws.file("curated.json")).expect("curated"), curated_before);
    assert_eq!(lines(&ws.file(AUDIT_FILE)), 1);
    for _ in 0..2 {
        let report = distill(&ws);
        assert_eq!((report.created, report.superseded, report.conflicts), (0, 0, 0));
    }
    assert_eq!(
        ws.curated().expect("curated").active_for("db.engine").expect("active").content,
        "Use SQLite."
    );
    assert!(ws.verify().expect("verify").is_empty());
}

#[test]
fn a_retried_event_returns_the_stored_decision_and_writes_nothing() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let postgres = candidate_id(&case, "Use Postgres.");
    let first = ws.resolve(request(&case, &postgres, "review:retry")).expect("resolve");
    let before = snapshot(ws.memory_dir());
    let again = ws.resolve(request(&case, &postgres, "review:retry")).expect("retry");
    assert_eq!(again, first);
    assert_eq!(snapshot(ws.memory_dir()), before);
    let mysql = candidate_id(&case, "Use MySQL.");
    let err = ws.resolve(request(&case, &mysql, "review:retry")).expect_err("reuse");
    assert!(matches!(err, Error::ResolutionRejected(_)), "{err}");
    assert!(matches!(err, Error::ResolutionRejected(_)));
    assert!(err.to_string().contains("already used"), "{err}");
    assert_eq!(snapshot(ws.memory_dir()), before);
}

#[test]
fn stale_reviews_change_nothing() {
    // Revision differs.
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let postgres = candidate_id(&case, "Use Postgres.");
    let before = snapshot(ws.memory_dir());
    let mut wrong = request(&case, &postgres, "review:a");
    wrong.expected_revision += 1;
    assert_stale(ws.resolve(wrong), "revision");
    assert_eq!(snapshot(ws.memory_dir()), before);

    // A new fact with that memory_key appended since detection.
    fact(&ws, "late", "Use CockroachDB.", 2, "db.engine", "2026-05-30T00:00:00Z");
    let before = snapshot(ws.memory_dir());
    assert_stale(ws.resolve(request(&case, &postgres, "review:b")), "evidence");
    assert_eq!(snapshot(ws.memory_dir()), before);

    // Case already resolved.
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let postgres = candidate_id(&case, "Use Postgres.");
    ws.resolve(request(&case, &postgres, "review:c")).expect("resolve");
    let before = snapshot(ws.memory_dir());
    assert_stale(ws.resolve(request(&case, &postgres, "review:d")), "closed:resolved");
    assert_eq!(snapshot(ws.memory_dir()), before);

    // Case superseded by new tied evidence.
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    fact(&ws, "p3", "Use Postgres.", 4, "db.engine", "2026-02-20T00:00:00Z");
    fact(&ws, "m3", "Use MySQL.", 4, "db.engine", "2026-02-20T00:00:00Z");
    assert_eq!(distill(&ws).queued_conflicts, 1);
    let before = snapshot(ws.memory_dir());
    assert_stale(
        ws.resolve(request(&case, &candidate_id(&case, "Use MySQL."), "review:e")),
        "closed:superseded",
    );
    assert_eq!(snapshot(ws.memory_dir()), before);

    // Active entry changed since detection (a hand-made curated state where
    // the domain's active revision is another one).
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let mut curated = ws.curated().expect("curated");
    let active = curated
        .entries
        .iter_mut()
        .find(|e| e.memory_key.as_deref() == Some("db.engine"))
        .expect("entry");
    active.content = "Use SQLite 3.".into();
    active.key = active.computed_key();
    workmem::internals::save_curated(&ws, &curated).expect("save");
    let before = snapshot(ws.memory_dir());
    assert_stale(
        ws.resolve(request(&case, &candidate_id(&case, "Use MySQL."), "review:f")),
        "active",
    );
    assert_eq!(snapshot(ws.memory_dir()), before);
}

/// Asserts `result` is a stale resolution for the reason `expected`
/// names: `revision`, `evidence`, `closed:<status>` or `active`.
fn assert_stale(result: workmem::Result<workmem::Adjudication>, expected: &str) {
    use workmem::Stale;
    match result {
        Err(Error::StaleResolution(reason)) => {
            let matches = match (&reason, expected) {
                (Stale::Revision { .. }, "revision") => true,
                (Stale::EvidenceChanged { .. }, "evidence") => true,
                (Stale::Closed { status, .. }, _) => expected == format!("closed:{status}"),
                (Stale::ActiveChanged { .. }, "active") => true,
                _ => false,
            };
            assert!(matches, "{reason:?} is not the stale reason {expected:?}");
        }
        other => panic!("expected a stale resolution, got {other:?}"),
    }
}

#[test]
fn unknown_ids_are_rejected_and_malformed_input_is_invalid() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let postgres = candidate_id(&case, "Use Postgres.");
    let before = snapshot(ws.memory_dir());

    let mut unknown = request(&case, &postgres, "review:x");
    unknown.conflict_id = "conflict-0000000000000000".into();
    assert!(matches!(
        ws.resolve(unknown).expect_err("unknown conflict"),
        Error::ResolutionRejected(workmem::Rejected::UnknownConflict)
    ));
    let unknown = request(&case, "candidate-0000000000000000", "review:x");
    assert!(matches!(
        ws.resolve(unknown).expect_err("unknown candidate"),
        Error::ResolutionRejected(_)
    ));

    let cases: Vec<(Resolution, &str)> = vec![
        (Resolution { event_id: " bad id".into(), ..request(&case, &postgres, "x") }, "event_id"),
        (Resolution { actor: "  ".into(), ..request(&case, &postgres, "x") }, "actor"),
        (Resolution { rationale: String::new(), ..request(&case, &postgres, "x") }, "rationale"),
        (Resolution { rationale: "r".repeat(1001), ..request(&case, &postgres, "x") }, "rationale"),
        (Resolution { expected_revision: 0, ..request(&case, &postgres, "x") }, "revision"),
    ];
    for (bad, field) in cases {
        match ws.resolve(bad) {
            Err(Error::InvalidInput { field: got, .. }) => assert_eq!(got, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    assert_eq!(snapshot(ws.memory_dir()), before);
}

#[test]
fn a_tampered_intent_stops_recovery_and_changes_nothing() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    // Stop the resolution right after its prepared line, as a crash would:
    // the canonical files hold their before state.
    let request = request(&case, &candidate_id(&case, "Use Postgres."), "review:t");
    let intent = workmem::internals::prepare_resolution(&ws, request)
        .expect("prepare")
        .expect("a new decision");
    assert_eq!(intent.schema_version, 2, "new resolutions write domain-scoped intents");
    let journal = ws.file(JOURNAL_FILE);
    let text = fs::read_to_string(&journal).expect("journal");
    let prepared = text.lines().next().expect("prepared line").to_owned();
    assert_eq!(text, format!("{prepared}\n"));
    let value: serde_json::Value = serde_json::from_str(&prepared).expect("json");
    let intent = value["intent"].clone();

    for field in [
        "conflict_id",
        "event_id",
        "prepared_at",
        "curated_after",
        "curated_sha256_after",
        "conflicts_sha256_before",
        "adjudication",
    ] {
        let mut edited = value.clone();
        edited["intent"][field] = match field {
            "curated_after" => serde_json::json!([]),
            "adjudication" => {
                let mut a = intent["adjudication"].clone();
                a["rationale"] = "edited".into();
                a
            }
            "curated_sha256_after" | "conflicts_sha256_before" => {
                serde_json::json!("0".repeat(64))
            }
            _ => serde_json::json!("edited-value"),
        };
        fs::write(&journal, format!("{edited}\n")).expect("write journal");
        let before = snapshot(ws.memory_dir());
        let err = Workspace::open(&project.root, None).expect_err("tampered intent");
        assert!(matches!(err, Error::Corrupt { .. }), "{field}: {err}");
        assert!(err.to_string().contains("intent was modified"), "{field}: {err}");
        assert_eq!(snapshot(ws.memory_dir()), before, "{field}");
    }

    // An untampered prepared line recovers to the committed decision and
    // leaves an empty journal.
    fs::write(&journal, format!("{prepared}\n")).expect("write journal");
    let reopened = Workspace::open(&project.root, None).expect("recovered");
    assert_eq!(lines(&reopened.file(AUDIT_FILE)), 1);
    assert_eq!(fs::read(&journal).expect("journal"), b"");
    assert!(reopened.verify().expect("verify").is_empty());
    let settled = snapshot(reopened.memory_dir());
    Workspace::open(&project.root, None).expect("reopen");
    assert_eq!(snapshot(reopened.memory_dir()), settled);
}

#[test]
fn the_journal_is_read_line_by_line_and_only_uncommitted_intents_are_kept() {
    use workmem::internals::journal::{Phase, transactions};
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let request = request(&case, &candidate_id(&case, "Use Postgres."), "review:j");
    let intent = workmem::internals::prepare_resolution(&ws, request)
        .expect("prepare")
        .expect("a new decision");
    let journal = ws.file(JOURNAL_FILE);
    let prepared = fs::read_to_string(&journal).expect("journal");
    // The prepared line alone, then a torn fragment: the intent is kept for
    // recovery.
    fs::write(&journal, format!("{prepared}{{\"torn")).expect("write journal");
    let pending = transactions(&journal, ws.workspace_id()).expect("transactions");
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].done, [Phase::Prepared]);
    assert_eq!(pending[0].lines, [1]);
    assert_eq!(pending[0].intent.as_ref().map(|i| i.event_id.as_str()), Some("review:j"));
    // Every phase line: the committed transaction drops its intent.
    let digest = intent.digest();
    let mut text = prepared.clone();
    for phase in &Phase::ALL[1..] {
        text.push_str(&intent.phase_line(&digest, *phase, &Stamp::parse(AS_OF).expect("stamp")));
    }
    fs::write(&journal, &text).expect("write journal");
    let committed = transactions(&journal, ws.workspace_id()).expect("transactions");
    assert_eq!(committed.len(), 1);
    assert!(
        committed[0].committed() && committed[0].intent.is_none(),
        "a committed intent was kept"
    );
    assert_eq!(committed[0].lines, [1, 2, 3, 4, 5]);
}

#[test]
fn a_curated_state_matching_neither_snapshot_stops_recovery() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    let request = request(&case, &candidate_id(&case, "Use Postgres."), "review:n");
    workmem::internals::prepare_resolution(&ws, request).expect("prepare").expect("new");
    // A third state: the curated entries of neither the before nor the after
    // state.
    let mut other = ws.curated().expect("curated");
    for entry in &mut other.entries {
        entry.first_seen = workmem::Stamp::parse("2025-12-01T00:00:00Z").expect("stamp");
    }
    workmem::internals::save_curated(&ws, &other).expect("save");
    let before = snapshot(ws.memory_dir());
    let err = Workspace::open(&project.root, None).expect_err("neither snapshot");
    assert!(matches!(err, Error::Corrupt { .. }));
    assert!(err.to_string().contains("neither the before nor the after"), "{err}");
    assert!(err.to_string().contains("curated.json"), "{err}");
    assert_eq!(snapshot(ws.memory_dir()), before);
    // Verify, which never recovers, says so too.
    let checker = Workspace::builder(&project.root).open_read_only().expect("read-only");
    let problems = checker.verify().expect("verify");
    assert!(
        problems.iter().any(|p| p.file.ends_with("curated.json")
            && p.message.contains("neither the before nor the after")),
        "{problems:?}"
    );
    assert_eq!(snapshot(ws.memory_dir()), before);
}

#[test]
fn torn_tails_of_the_journal_and_audit_are_ignored_then_repaired() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    ws.resolve(request(&case, &candidate_id(&case, "Use Postgres."), "review:torn"))
        .expect("resolve");
    fact(&ws, "c1", "Use CockroachDB.", 4, "db.engine", "2026-03-01T00:00:00Z");
    fact(&ws, "c2", "Use CockroachDB.", 4, "db.engine", "2026-03-10T00:00:00Z");
    fact(&ws, "d1", "Use DuckDB.", 4, "db.engine", "2026-03-02T00:00:00Z");
    fact(&ws, "d2", "Use DuckDB.", 4, "db.engine", "2026-03-10T00:00:00Z");
    assert_eq!(distill(&ws).queued_conflicts, 1);
    for name in [JOURNAL_FILE, AUDIT_FILE] {
        let mut file = fs::OpenOptions::new().append(true).open(ws.file(name)).expect("open");
        std::io::Write::write_all(&mut file, b"{\"schema_version\": 1, \"torn").expect("tear");
    }
    let ws = project.open();
    assert_eq!(ws.adjudications().expect("audit").len(), 1);
    assert!(ws.verify().expect("verify").is_empty());
    // The next resolution repairs both tails before appending: its
    // prepared line starts a line of its own.
    let case = open_case(&ws);
    let request = request(&case, &candidate_id(&case, "Use DuckDB."), "review:torn-2");
    workmem::internals::prepare_resolution(&ws, request).expect("prepare").expect("new");
    let check = |name: &str, count: usize| {
        let text = fs::read_to_string(ws.file(name)).expect("read");
        assert!(text.ends_with('\n'), "{name} not repaired");
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line).expect("every line is JSON");
        }
        assert_eq!(text.lines().count(), count, "{name}");
    };
    check(JOURNAL_FILE, 1);
    let ws = project.open();
    check(AUDIT_FILE, 2);
    assert_eq!(ws.adjudications().expect("audit").len(), 2);
    assert_eq!(fs::read(ws.file(JOURNAL_FILE)).expect("journal"), b"");
    assert!(ws.verify().expect("verify").is_empty());
}

#[test]
fn verify_reports_every_problem_with_file_and_line() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    assert!(ws.verify().expect("verify").is_empty());
    let day = workmem::internals::day_file(&ws, "2026-02-10");
    let mut text = fs::read_to_string(&day).expect("log");
    text.insert_str(0, "garbage\n");
    fs::write(&day, text).expect("write");
    let mut curated = fs::read_to_string(ws.file("curated.json")).expect("curated");
    curated = curated.replacen("\"occurrences\": 1", "\"occurrences\": 7", 1);
    fs::write(ws.file("curated.json"), curated).expect("write");
    let problems = ws.verify().expect("verify");
    assert!(
        problems.iter().any(|p| p.file.ends_with("2026-02-10.jsonl") && p.line == Some(1)),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.file.ends_with("curated.json")
            && p.message.contains("occurrences 7")
            && p.line.is_some()),
        "{problems:?}"
    );
}

#[test]
fn history_shows_every_revision_with_evidence_and_cases() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    ws.resolve(request(&case, &candidate_id(&case, "Use Postgres."), "review:h")).expect("resolve");
    let history = ws.history(" DB.Engine ").expect("history");
    assert_eq!(history.memory_key, "db.engine");
    let revisions: Vec<(u32, &str, Vec<&str>)> = history
        .revisions
        .iter()
        .map(|r| {
            (
                r.entry.revision,
                r.entry.content.as_str(),
                r.facts.iter().map(workmem::Fact::fact_id).collect(),
            )
        })
        .collect();
    assert_eq!(
        revisions,
        vec![(1, "Use SQLite.", vec!["s1"]), (2, "Use Postgres.", vec!["p1", "p2"])]
    );
    assert_eq!(history.cases.len(), 1);
    assert_eq!(history.cases[0].status, CaseStatus::Resolved);
}

/// `history` reads the key's evidence facts where the id index places
/// them, not the whole log, and says what the whole log says: the first
/// record of an id counts.
#[test]
fn history_reads_its_evidence_where_the_id_index_places_it() {
    let project = Project::new();
    let ws = tied_workspace(&project);
    let case = open_case(&ws);
    ws.resolve(request(&case, &candidate_id(&case, "Use Postgres."), "review:h")).expect("resolve");
    let memory = project.root.join(".workmem/memory");
    // Another writer repeats p1's id in a later file: the first record
    // counts.
    let repeat = ws
        .prepare(NewFact {
            content: "Use Oracle.".into(),
            memory_key: Some("db.engine".into()),
            recorded_at: Some("2026-02-20T00:00:00Z".into()),
            fact_id: Some("p1".into()),
            ..NewFact::default()
        })
        .expect("prepare")
        .to_line();
    fs::write(memory.join("daily/2026-02-20.jsonl"), repeat).expect("write");
    // Another key's fact, in a file of its own (the id index reads the
    // repeat while it checks this id).
    fact(&ws, "x1", "Use tabs.", 4, "style.indent", "2026-03-01T00:00:00Z");
    let indexed = serde_json::to_string(&ws.history("db.engine").expect("history")).expect("json");
    let index_dir = memory.join(".id-index");
    let moved = project.root.join("id-index-aside");
    fs::rename(&index_dir, &moved).expect("move");
    let whole = serde_json::to_string(&ws.history("db.engine").expect("history")).expect("json");
    fs::rename(&moved, &index_dir).expect("move back");
    assert_eq!(indexed, whole);
    assert!(indexed.contains("Use Postgres.") && !indexed.contains("Use Oracle."), "{indexed}");
    // The other key's line damaged in place, the file's stamp kept: the
    // whole log no longer reads, the key's history still does.
    let path = memory.join("daily/2026-03-01.jsonl");
    let modified = fs::metadata(&path).and_then(|m| m.modified()).expect("mtime");
    let mut line = fs::read(&path).expect("read");
    line[0] = b'[';
    fs::write(&path, &line).expect("write");
    fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(modified))
        .expect("mtime");
    assert!(ws.facts().is_err());
    let after = serde_json::to_string(&ws.history("db.engine").expect("history")).expect("json");
    assert_eq!(after, indexed);
}

/// Each resolve records the audit stream it checked and the record it
/// appended (their length and SHA-256, hashed in one pass with the prefix
/// recorded before, with the stream's identity right after its own append
/// and the hash state there), so the next one neither parses nor hashes
/// what it finds unchanged.
#[test]
fn each_resolve_records_the_audit_stream_it_checked() {
    use std::os::unix::fs::MetadataExt;
    let project = Project::new();
    let ws = project.open();
    let audit = project.root.join(".workmem/memory").join(AUDIT_FILE);
    let mut lengths = Vec::new();
    for (n, key) in ["db.engine", "ci.runner", "docs.tool"].iter().enumerate() {
        for (id, content) in [("a", "Use the first."), ("b", "Use the second.")] {
            fact(&ws, &format!("{id}{n}"), content, 4, key, "2026-01-01T00:00:00Z");
        }
        assert_eq!(distill(&ws).queued_conflicts, 1);
        let case = open_case(&ws);
        let chosen = candidate_id(&case, "Use the second.");
        ws.resolve(request(&case, &chosen, &format!("review:{n}"))).expect("resolve");
        lengths.push(fs::metadata(&audit).expect("audit").len());
    }
    let stream = fs::read(&audit).expect("audit");
    let recorded = fs::read_to_string(project.root.join(".workmem/memory/.valid-hashes"))
        .expect("valid hashes")
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{AUDIT_FILE} ")).map(str::to_owned))
        .expect("the audit stream's checked prefix");
    // The third resolve checked the stream the second one left, and
    // hashed on over its own record.
    assert_eq!(stream.len() as u64, lengths[2]);
    let expected = workmem::internals::canon::sha256_hex(&stream);
    let meta = fs::metadata(&audit).expect("audit");
    let identity = format!("{} {} {} {}", meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec());
    let fields: Vec<&str> = recorded.split(' ').collect();
    assert_eq!(
        fields[..6].join(" "),
        format!("{expected} {} {identity}", stream.len()),
        "{recorded}"
    );
    assert_eq!(fields.len(), 7, "{recorded}");
    // Another writer's append (the teaching implementation's, say) changes
    // the identity: the next resolve hashes the stream again and still
    // finds every event id in it: a retry of the foreign decision returns
    // it and writes nothing.
    let mut foreign =
        fs::read_to_string(&audit).expect("audit").lines().last().expect("a record").to_owned();
    foreign = foreign.replace("review:2", "review:foreign");
    fs::OpenOptions::new()
        .append(true)
        .open(&audit)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{foreign}\n").as_bytes()))
        .expect("append");
    let case = ws.conflicts().expect("conflicts").cases.pop().expect("a case");
    let chosen = candidate_id(&case, "Use the second.");
    let before = fs::read(&audit).expect("audit");
    let stored = ws.resolve(request(&case, &chosen, "review:foreign")).expect("a retry");
    assert_eq!(stored.event_id, "review:foreign");
    assert_eq!(fs::read(&audit).expect("audit"), before);
}
