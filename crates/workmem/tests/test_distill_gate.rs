//! Acceptance 2: the distill gate promotes exactly what the policy names,
//! with exact report counters (docs/policy.md); a repeated distill writes nothing;
//! evidence is never deleted.
#![allow(clippy::disallowed_methods)]

use workmem::DistillOptions;
use workmem::{Kind, Policy, Report, internals::canon};

use crate::common::{Project, file_state, let_clock_tick};

/// Facts of every kind, importance and age around the default cutoff
/// (as_of 2026-03-01, 30 days: cutoff 2026-01-30T00:00:00Z).
fn seed(p: &Project) {
    // Qualifies by importance.
    p.add("f01", "decision", 5, None, "Use PostgreSQL 16.", "2026-01-01T00:00:00Z");
    // Qualifies by repetition (two facts, same normal form); wording from
    // the highest importance (f02).
    p.add("f02", "convention", 3, None, "Run cargo fmt.", "2026-01-02T00:00:00Z");
    p.add("f03", "convention", 2, None, "run  CARGO\tfmt.", "2026-01-03T00:00:00Z");
    // Stable kind, one fact, low importance: skipped.
    p.add("f04", "pitfall", 3, None, "Flaky test in ci.", "2026-01-04T00:00:00Z");
    // Outcome is not a stable kind: skipped even at importance 5.
    p.add("f05", "outcome", 5, None, "Shipped v1.", "2026-01-05T00:00:00Z");
    // Too young: not even scanned.
    p.add("f06", "decision", 5, None, "Use Redis.", "2026-02-15T00:00:00Z");
    // Exactly at the cutoff is not aged; one second before is.
    p.add("f07", "pitfall", 4, None, "At the cutoff.", "2026-01-30T00:00:00Z");
    p.add("f08", "pitfall", 4, None, "Just before the cutoff.", "2026-01-29T23:59:59Z");
    // Keyed: first value of a domain, qualifies by importance.
    p.add("f09", "decision", 4, Some("db.engine"), "Use SQLite.", "2026-01-06T00:00:00Z");
    // Keyed, does not qualify.
    p.add("f10", "decision", 2, Some("ci.provider"), "Use GitHub Actions.", "2026-01-07T00:00:00Z");
}

#[test]
fn promotes_exactly_what_the_policy_names_with_exact_counters() {
    let p = Project::new();
    seed(&p);
    let r = p.distill();
    assert_eq!(r, Report { scanned: 8, eligible: 5, created: 4, skipped: 3, ..Report::default() });

    let state = p.ws.curated().unwrap();
    let mut got: Vec<(Kind, Option<String>, String, Vec<String>)> = state
        .entries
        .iter()
        .map(|e| (e.kind, e.memory_key.clone(), e.content.clone(), e.evidence_ids.to_vec()))
        .collect();
    got.sort();
    let ids = |v: &[&str]| v.iter().map(std::string::ToString::to_string).collect::<Vec<_>>();
    assert_eq!(
        got,
        vec![
            (Kind::Decision, None, "Use PostgreSQL 16.".to_owned(), ids(&["f01"])),
            (Kind::Decision, Some("db.engine".to_owned()), "Use SQLite.".to_owned(), ids(&["f09"])),
            (Kind::Convention, None, "Run cargo fmt.".to_owned(), ids(&["f02", "f03"])),
            (Kind::Pitfall, None, "Just before the cutoff.".to_owned(), ids(&["f08"])),
        ]
    );
    for entry in &state.entries {
        assert!(entry.is_active());
        assert_eq!(entry.revision, 1);
        assert_eq!(entry.occurrences, entry.evidence_ids.len() as u64);
        let expected_key = match entry.memory_key.as_deref() {
            None => canon::unkeyed_entry_key(entry.kind.as_str(), &entry.content),
            Some(mk) => canon::keyed_entry_key(mk, 1, entry.kind.as_str(), &entry.content),
        };
        assert_eq!(entry.key, expected_key);
    }
    let fmt = state.entries.iter().find(|e| e.content == "Run cargo fmt.").unwrap();
    assert_eq!(fmt.first_seen.as_str(), "2026-01-02T00:00:00Z");
    assert_eq!(fmt.last_seen.as_str(), "2026-01-03T00:00:00Z");
}

#[test]
fn unkeyed_wording_prefers_importance_then_earliest_then_smallest_id() {
    let p = Project::new();
    p.add("b", "decision", 4, None, "USE  tabs.", "2026-01-02T00:00:00Z");
    p.add("a", "decision", 4, None, "use tabs.", "2026-01-02T00:00:00Z");
    p.add("c", "decision", 4, None, "Use Tabs.", "2026-01-01T00:00:00Z");
    p.add("d", "decision", 3, None, "use TABS.", "2025-12-01T00:00:00Z");
    assert_eq!(p.distill(), Report { scanned: 4, eligible: 4, created: 1, ..Report::default() });
    let state = p.ws.curated().unwrap();
    assert_eq!(state.entries.len(), 1);
    assert_eq!(state.entries[0].content, "Use Tabs.");
    assert_eq!(state.entries[0].first_seen.as_str(), "2025-12-01T00:00:00Z");
}

#[test]
fn policy_thresholds_are_honoured() {
    let p = Project::new();
    p.add("o1", "outcome", 2, None, "Deployed.", "2026-01-01T00:00:00Z");
    p.add("o2", "outcome", 2, None, "Deployed.", "2026-01-02T00:00:00Z");
    p.add("d1", "decision", 3, None, "Three is enough.", "2026-02-20T00:00:00Z");
    let mut policy = Policy {
        minimum_age_days: 5,
        minimum_importance: 3,
        repeat_threshold: 3,
        ..Policy::default()
    };
    policy.stable_kinds.insert(Kind::Outcome);
    // Outcomes now stable but only 2 < repeat_threshold 3 and importance 2 < 3.
    let r = p.distill_with(&policy, "2026-03-01T00:00:00Z");
    assert_eq!(r, Report { scanned: 3, eligible: 1, created: 1, skipped: 2, ..Report::default() });
    policy.repeat_threshold = 2;
    let r = p.distill_with(&policy, "2026-03-01T00:00:00Z");
    assert_eq!(r, Report { scanned: 3, eligible: 2, created: 1, skipped: 1, ..Report::default() });
    let contents: Vec<String> =
        p.ws.curated().unwrap().entries.into_iter().map(|e| e.content).collect();
    assert_eq!(contents, ["Three is enough.", "Deployed."]);
    // Out-of-range policies are invalid input and write nothing.
    for bad in [
        Policy { minimum_importance: 0, ..Policy::default() },
        Policy { minimum_importance: 6, ..Policy::default() },
        Policy { repeat_threshold: 0, ..Policy::default() },
        Policy { supersession_repeat_threshold: 1, ..Policy::default() },
    ] {
        let err =
            p.ws.distill(&DistillOptions::new().policy(bad.clone())).map(|d| d.report).unwrap_err();
        assert!(matches!(err, workmem::Error::InvalidInput { .. }), "{err}");
    }
}

#[test]
fn second_identical_distill_changes_nothing_and_writes_nothing() {
    let p = Project::new();
    seed(&p);
    // A tie too, so conflicts.json exists.
    for (id, content, at) in [
        ("t1", "Use Postgres.", "2026-01-10T00:00:00Z"),
        ("t2", "Use MySQL.", "2026-01-10T00:00:00Z"),
    ] {
        p.add(id, "decision", 5, Some("db.replica"), content, at);
    }
    let daily_before = crate::common::snapshot_dir(&p.ws.memory_dir().join("daily"));
    let first = p.distill();
    assert_eq!((first.created, first.conflicts, first.queued_conflicts), (4, 1, 1));
    let names = ["curated.json", "conflicts.json", "MEMORY.md"];
    let before: Vec<_> = names.iter().map(|n| file_state(&p.file(n)).expect(n)).collect();
    let_clock_tick();

    let second = p.distill();
    let expected = Report {
        scanned: 10,
        skipped: 10,
        conflicts: 1,
        conflict_case_ids: first.conflict_case_ids.clone(),
        ..Report::default()
    };
    assert_eq!(second, expected);
    let after: Vec<_> = names.iter().map(|n| file_state(&p.file(n)).expect(n)).collect();
    for ((name, b), a) in names.iter().zip(&before).zip(&after) {
        assert_eq!(b.bytes, a.bytes, "{name} bytes changed");
        assert_eq!(b.modified, a.modified, "{name} was rewritten (mtime)");
        assert_eq!(b.inode, a.inode, "{name} was replaced (inode)");
    }
    // Evidence is never deleted or rewritten: the daily files are untouched.
    assert_eq!(crate::common::snapshot_dir(&p.ws.memory_dir().join("daily")), daily_before);
}

#[test]
fn new_evidence_for_an_existing_entry_is_an_update_and_logs_stay_intact() {
    let p = Project::new();
    seed(&p);
    p.distill();
    p.add("f11", "convention", 1, None, "Run cargo fmt.", "2026-01-20T00:00:00Z");
    p.add("f12", "decision", 1, Some("db.engine"), "use sqlite.", "2026-01-21T00:00:00Z");
    let daily_before = crate::common::snapshot_dir(&p.ws.memory_dir().join("daily"));
    let r = p.distill();
    // Aged: f01-f05, f08-f12 = 10; candidates f04, f10, f11, f12; skipped
    // starts at 6, f04 and f10 stay skipped.
    assert_eq!(r, Report { scanned: 10, eligible: 2, updated: 2, skipped: 8, ..Report::default() });
    let state = p.ws.curated().unwrap();
    let fmt = state.entries.iter().find(|e| e.content == "Run cargo fmt.").unwrap();
    assert_eq!(fmt.evidence_ids, ["f02", "f03", "f11"]);
    assert_eq!(fmt.occurrences, 3);
    assert_eq!(fmt.last_seen.as_str(), "2026-01-20T00:00:00Z");
    let db = state.active_for("db.engine").unwrap();
    assert_eq!(
        (db.revision, db.evidence_ids.to_vec()),
        (1, vec!["f09".to_owned(), "f12".to_owned()])
    );
    assert_eq!(crate::common::snapshot_dir(&p.ws.memory_dir().join("daily")), daily_before);
    assert_eq!(p.ws.facts().unwrap().len(), 12);
}

#[test]
fn dry_run_reports_but_writes_nothing() {
    let p = Project::new();
    seed(&p);
    let before = p.snapshot();
    let r = p
        .ws
        .distill(&DistillOptions::new().as_of(crate::common::stamp(crate::common::AS_OF)).dry_run())
        .unwrap()
        .report;
    assert_eq!(r, Report { scanned: 8, eligible: 5, created: 4, skipped: 3, ..Report::default() });
    assert_eq!(p.snapshot(), before);
    assert!(!p.file("curated.json").exists());
}
