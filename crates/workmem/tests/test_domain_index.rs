//! The domain index lets `resolve` find a domain's fact ids without parsing
//! the whole log: daily files that kept their stamp since distill indexed
//! them are not read again, and any file that changed is.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::io::Write;

use workmem::DistillOptions;
use workmem::{CaseStatus, Error, Resolution};

use crate::common::{Project, file_state, snapshot_dir};

const KEY: &str = "db.engine";
const INDEX: &str = ".domain-index";

/// A project whose only open case is a tie between Postgres and MySQL for
/// KEY, next to an unrelated old daily file.
fn tied() -> Project {
    let p = Project::new();
    p.add("n1", "outcome", 3, None, "Nightly build n1 passed.", "2025-12-01T00:00:00Z");
    p.add("p1", "decision", 4, Some(KEY), "Use Postgres.", "2026-01-10T00:00:00Z");
    p.add("p2", "decision", 4, Some(KEY), "Use Postgres.", "2026-01-12T00:00:00Z");
    p.add("m1", "decision", 4, Some(KEY), "Use MySQL.", "2026-01-11T00:00:00Z");
    p.add("m2", "decision", 4, Some(KEY), "Use MySQL.", "2026-01-12T00:00:00Z");
    assert_eq!(p.distill().queued_conflicts, 1);
    p
}

fn decision(p: &Project, event_id: &str) -> Resolution {
    let case =
        p.ws.conflicts()
            .expect("conflicts")
            .cases
            .into_iter()
            .find(|c| c.status == CaseStatus::Open);
    let case = case.expect("an open case");
    Resolution {
        conflict_id: case.conflict_id.clone(),
        candidate_id: case
            .candidates
            .iter()
            .find(|c| !c.incumbent)
            .expect("a challenger")
            .candidate_id
            .clone(),
        expected_revision: i64::from(case.revision),
        actor: "reviewer".into(),
        rationale: "We run Postgres in production.".into(),
        event_id: event_id.into(),
        resolved_at: None,
    }
}

/// Overwrites a file in place with one line of `#`, keeping its inode, size and mtime:
/// whoever parses it afterwards fails.
fn garble_keeping_stamp(path: &std::path::Path) {
    let meta = fs::metadata(path).expect("metadata");
    let mut file = fs::OpenOptions::new().write(true).open(path).expect("open");
    let mut garbage = vec![b'#'; meta.len() as usize];
    garbage[meta.len() as usize - 1] = b'\n';
    file.write_all(&garbage).expect("garble");
    file.set_modified(meta.modified().expect("mtime")).expect("restore mtime");
}

#[test]
fn resolve_does_not_read_daily_files_that_kept_their_stamp() {
    let p = tied();
    assert!(p.file(INDEX).exists(), "distill writes the index");
    // A resolve that parsed the old file would refuse it as corrupt.
    garble_keeping_stamp(&p.day_file("2025-12-01"));
    let adjudication = p.ws.resolve(decision(&p, "ev:1")).expect("resolve through the index");
    assert_eq!(adjudication.evidence_ids.len(), 2);
    // The whole-log readers still see the damage.
    assert!(matches!(p.ws.facts(), Err(Error::Corrupt { .. })));
}

#[test]
fn a_fact_appended_after_distill_is_seen_and_a_refused_resolve_writes_nothing() {
    let p = tied();
    // The newest daily file grows: its stamp changes, so resolve reads it.
    p.add("p3", "decision", 2, Some(KEY), "Use Postgres.", "2026-01-12T06:00:00Z");
    let before = snapshot_dir(p.ws.memory_dir());
    let err = p.ws.resolve(decision(&p, "ev:1")).expect_err("the evidence changed");
    assert!(matches!(err, Error::StaleResolution(_)), "{err}");
    assert!(err.to_string().contains("evidence changed"), "{err}");
    assert_eq!(snapshot_dir(p.ws.memory_dir()), before, "a refused resolve changed a file");
    // A new file, and a corrupt line in it, are seen too.
    fs::write(p.day_file("2026-01-20"), b"{not json}\n").expect("plant");
    let err = p.ws.resolve(decision(&p, "ev:2")).expect_err("a corrupt line");
    assert!(
        matches!(err, Error::Corrupt { .. }) && err.to_string().contains("2026-01-20.jsonl"),
        "{err}"
    );
}

#[test]
fn a_missing_torn_or_foreign_index_is_rebuilt_with_the_same_answer() {
    for damage in ["missing", "torn", "garbage"] {
        let p = tied();
        let index = p.file(INDEX);
        let full = fs::read(&index).expect("index");
        match damage {
            "missing" => fs::remove_file(&index).expect("remove"),
            "torn" => fs::write(&index, &full[..full.len() - 2]).expect("cut"),
            _ => fs::write(&index, b"workmem-domain-index 1 0000000000000000\nend\n")
                .expect("foreign"),
        }
        p.ws.resolve(decision(&p, "ev:1")).unwrap_or_else(|err| panic!("{damage}: {err}"));
        assert_eq!(
            p.ws.conflicts().expect("conflicts").cases[0].status,
            CaseStatus::Resolved,
            "{damage}"
        );
        let rebuilt = fs::read_to_string(&index).expect("rebuilt index");
        assert!(
            rebuilt.contains("key db.engine") && rebuilt.ends_with("\nend\n"),
            "{damage}: {rebuilt}"
        );
    }
}

#[test]
fn distill_rewrites_the_index_only_when_the_log_changed() {
    let p = tied();
    let index = p.file(INDEX);
    let first = file_state(&index).expect("index");
    crate::common::let_clock_tick();
    p.distill();
    assert_eq!(file_state(&index), Some(first), "a re-run rewrote the index");
    p.add(
        "x1",
        "decision",
        4,
        Some("ci.runner"),
        "Use self-hosted runners.",
        "2026-01-05T00:00:00Z",
    );
    p.distill();
    // A distill from the distill cache reads only the appended bytes and
    // leaves the index to resolve (which reads the files that changed); a
    // distill over the whole log rewrites it.
    assert!(!fs::read_to_string(&index).expect("index").contains("key ci.runner x1"));
    fs::remove_file(p.file(".distill-cache")).expect("remove the distill cache");
    p.distill();
    assert!(fs::read_to_string(&index).expect("index").contains("key ci.runner x1"));
    // A dry run writes nothing, the index included.
    fs::remove_file(&index).expect("remove");
    p.ws.distill(&DistillOptions::new().dry_run()).expect("dry run");
    assert!(!index.exists());
}

/// The cache a whole-log run leaves is one the next run starts from: its
/// units hold the pending candidates of memory keys and of unkeyed groups,
/// and an append is read from it (the domain index, which only a
/// whole-log run rewrites, does not gain the new fact).
#[test]
fn a_whole_log_run_leaves_a_cache_the_next_run_starts_from() {
    let p = tied();
    p.add("u1", "pitfall", 1, None, "Flaky   test  in CI.", "2026-01-03T00:00:00Z");
    p.add("u2", "convention", 5, None, "Tabs, not spaces.", "2026-01-04T00:00:00Z");
    fs::remove_file(p.file(".distill-cache")).expect("remove the distill cache");
    let whole = p.distill();
    let units = fs::read_to_string(p.file(".distill-cache.units")).expect("units");
    assert!(units.contains("\nd db.engine ") && units.contains("\nu "), "{units}");
    assert!(units.contains("\tFlaky test in CI.\n") && units.contains("\tUse MySQL.\n"), "{units}");
    assert!(!units.contains("Tabs, not spaces."), "a promoted fact is not pending: {units}");
    p.add(
        "x1",
        "decision",
        4,
        Some("ci.runner"),
        "Use self-hosted runners.",
        "2026-01-05T00:00:00Z",
    );
    let next = p.distill();
    assert!(!fs::read_to_string(p.file(INDEX)).expect("index").contains("key ci.runner x1"));
    assert_eq!(next.scanned, whole.scanned + 1);
    // The same report as a run over the whole log.
    fs::remove_file(p.file(".distill-cache")).expect("remove the distill cache");
    let again = p.distill();
    assert_eq!(again.conflict_case_ids, next.conflict_case_ids);
    assert_eq!(
        (again.scanned, again.stale, again.conflicts),
        (next.scanned, next.stale, next.conflicts)
    );
}
