//! Issue 12, items 1 to 3: no retried or concurrent write, killed import or
//! moved checkout leaves a log that only hand-editing can repair.
//!
//! - an explicit id is checked and appended under the workspace lock: an
//!   identical retry returns the stored fact, another fact under the id is
//!   invalid input, and concurrent writers store one fact per id;
//! - duplicate ids already on disk never make a read fail: the first in
//!   (file name, line) order counts and verify reports the others;
//! - an append to state of another workspace is a scope error that writes
//!   nothing;
//! - an import gives id-less items deterministic ids, so running it again
//!   appends only what is missing.
#![allow(clippy::disallowed_methods)] // tests plant files directly

use std::sync::{Arc, Barrier};

use workmem::DistillOptions;
use workmem::{Error, Invalid, NewFact, Workspace};

use crate::common::{AS_OF, Project, append_raw, fact, open, stamp, write_raw};

fn keyed(id: &str, content: &str) -> NewFact {
    fact(id, "decision", 4, Some("runtime.python-version"), content, "2026-01-01T10:00:00Z")
}

#[test]
fn an_identical_retry_returns_the_stored_fact_and_writes_nothing() {
    let p = Project::new();
    let stored = p.ws.remember(keyed("retry-1", "Use Python 3.12")).unwrap();
    let before = p.snapshot();
    // The same fact again, with recorded_at left to the clock (a retry of
    // a command that did not say when): still the stored fact.
    let retry = NewFact {
        recorded_at: None,
        content: "  Use   Python 3.12 ".into(),
        ..keyed("retry-1", "")
    };
    assert_eq!(p.ws.remember(retry).unwrap(), stored);
    assert_eq!(p.ws.remember(keyed("retry-1", "Use Python 3.12")).unwrap(), stored);
    assert_eq!(p.snapshot(), before, "a retry wrote");
}

#[test]
fn another_fact_under_a_stored_id_is_invalid_input_and_writes_nothing() {
    let p = Project::new();
    p.ws.remember(keyed("retry-1", "Use Python 3.12")).unwrap();
    let before = p.snapshot();
    let others = [
        keyed("retry-1", "Use Python 3.13"),
        NewFact { importance: Some(5), ..keyed("retry-1", "Use Python 3.12") },
        NewFact { kind: Some("convention".into()), ..keyed("retry-1", "Use Python 3.12") },
        NewFact { memory_key: None, ..keyed("retry-1", "Use Python 3.12") },
        NewFact { source: Some("user".into()), ..keyed("retry-1", "Use Python 3.12") },
        NewFact {
            evidence: [("file".into(), "pyproject.toml".into())].into(),
            ..keyed("retry-1", "Use Python 3.12")
        },
        NewFact {
            recorded_at: Some("2026-01-02T10:00:00Z".into()),
            ..keyed("retry-1", "Use Python 3.12")
        },
    ];
    for other in others {
        match p.ws.remember(other.clone()) {
            Err(Error::InvalidInput { field, item: None, reason: Invalid::IdTaken { id } }) => {
                assert_eq!((field.as_str(), id.as_str()), ("fact_id", "retry-1"));
            }
            result => panic!("{other:?}: expected invalid input, got {result:?}"),
        }
    }
    assert_eq!(p.snapshot(), before);
}

#[test]
fn concurrent_writers_of_one_id_store_one_fact() {
    const WRITERS: usize = 8;
    let p = Project::new();
    p.ws.init().unwrap();
    // Half the writers send one fact, half another, all under one id.
    let barrier = Arc::new(Barrier::new(WRITERS));
    let results: Vec<Result<workmem::Fact, Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|i| {
                let (barrier, path) = (Arc::clone(&barrier), p.path().to_path_buf());
                scope.spawn(move || {
                    let ws = open(&path);
                    barrier.wait();
                    ws.remember(keyed(
                        "race-1",
                        if i % 2 == 0 { "Use Python 3.12" } else { "Use Python 3.13" },
                    ))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners: Vec<&workmem::Fact> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    let losers = results.iter().filter(|r| matches!(r, Err(Error::InvalidInput { .. }))).count();
    assert_eq!(winners.len() + losers, WRITERS, "{results:?}");
    // Every writer that succeeded got the one stored fact.
    assert!(winners.windows(2).all(|w| w[0] == w[1]), "{winners:?}");
    assert_eq!(winners.len(), WRITERS / 2);
    let facts = p.ws.facts().unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(&facts[0], winners[0]);
    assert!(p.ws.verify().unwrap().is_empty());
}

#[test]
fn duplicate_ids_on_disk_never_fail_a_read_and_the_first_counts() {
    let p = Project::new();
    let first = p.ws.remember(keyed("dup-1", "Use Python 3.12")).unwrap();
    p.ws.remember(fact("other", "outcome", 3, None, "Built.", "2026-01-01T11:00:00Z")).unwrap();
    // Written by another tool: the same id with other content, in a later
    // file, and in the same file on an earlier instant (after it in line
    // order, before it in time order); plus an identical copy.
    let later = first.to_line().replace("3.12", "3.13").replace("2026-01-01T", "2026-01-02T");
    write_raw(&p.day_file("2026-01-02"), later.as_bytes());
    let earlier_in_time = first.to_line().replace("3.12", "2.7").replace("T10:00", "T09:00");
    append_raw(&p.day_file("2026-01-01"), earlier_in_time.as_bytes());
    append_raw(&p.day_file("2026-01-01"), first.to_line().as_bytes());

    let facts = p.ws.facts().unwrap();
    assert_eq!(facts.iter().filter(|f| f.fact_id() == "dup-1").collect::<Vec<_>>(), [&first]);
    assert_eq!(p.ws.facts_on("2026-01-01").unwrap().len(), 2);
    p.ws.distill(&DistillOptions::new().as_of(stamp("2026-06-01T00:00:00Z"))).unwrap();
    assert!(p.ws.memory().unwrap().contains("Use Python 3.12"));
    assert!(p.ws.context(None).is_ok());
    // A retry of the first still returns it; another fact is still refused.
    assert_eq!(p.ws.remember(keyed("dup-1", "Use Python 3.12")).unwrap(), first);
    assert!(matches!(
        p.ws.remember(keyed("dup-1", "Use Python 3.9")),
        Err(Error::InvalidInput { .. })
    ));
    // Verify reports the two that differ, not the identical copy.
    let problems = p.ws.verify().unwrap();
    let duplicates: Vec<_> =
        problems.iter().filter(|p| p.message.contains("dup-1 is used twice")).collect();
    assert_eq!(duplicates.len(), 2, "{problems:?}");
}

#[test]
fn an_append_to_a_moved_checkout_is_a_scope_error_and_writes_nothing() {
    let outer = tempfile::tempdir().unwrap();
    let old = outer.path().join("proj");
    std::fs::create_dir(&old).unwrap();
    let before_move = Workspace::open(&old, None).unwrap();
    let old_id = before_move.workspace_id().to_owned();
    before_move.remember(NewFact::new("First fact.")).unwrap();
    let new = outer.path().join("proj2");
    std::fs::rename(&old, &new).unwrap();

    let moved = Workspace::open(&new, None).unwrap();
    let snapshot = crate::common::snapshot_dir(moved.memory_dir());
    // Today's file (the target), another day's file (the newest), and a
    // keyed fact with an explicit id: every path of an append is checked.
    let attempts = [
        NewFact::new("Second fact."),
        NewFact { recorded_at: Some("2030-01-01T00:00:00Z".into()), ..NewFact::new("Later.") },
        keyed("moved-1", "Use Python 3.12"),
    ];
    for attempt in attempts {
        match moved.remember(attempt) {
            Err(Error::Scope { found, expected, location }) => {
                assert_eq!(found, old_id);
                assert_eq!(expected, moved.workspace_id());
                assert!(location.path.starts_with(moved.memory_dir().join("daily")), "{location}");
            }
            other => panic!("expected a scope error, got {other:?}"),
        }
    }
    let err = moved.import(vec![NewFact::new("Imported.")], &mut |_| {}).unwrap_err();
    assert!(matches!(err, Error::Scope { .. }), "{err:?}");
    assert_eq!(crate::common::snapshot_dir(moved.memory_dir()), snapshot, "a refused append wrote");
    // Moving it back, it is whole and writable again.
    std::fs::rename(&new, &old).unwrap();
    let back = Workspace::open(&old, None).unwrap();
    assert_eq!(back.facts().unwrap().len(), 1);
    back.remember(NewFact::new("Back home.")).unwrap();
}

#[test]
fn an_append_checks_curated_json_when_there_is_no_log() {
    let outer = tempfile::tempdir().unwrap();
    let (a, b) = (outer.path().join("a"), outer.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let pa = open(&a);
    pa.remember(fact("d1", "decision", 5, None, "Use WAL mode.", "2025-01-01T00:00:00Z")).unwrap();
    pa.distill(&DistillOptions::new().as_of(stamp(AS_OF))).unwrap();
    // b gets a's curated state only (a copied memory without its log).
    let mb = b.join(".workmem/memory");
    std::fs::create_dir_all(&mb).unwrap();
    std::fs::copy(pa.file("curated.json"), mb.join("curated.json")).unwrap();
    let pb = open(&b);
    assert!(matches!(pb.remember(NewFact::new("Hello.")), Err(Error::Scope { .. })));
    assert!(!mb.join("daily").exists());
}

fn item(content: &str, at: &str) -> NewFact {
    NewFact { content: content.into(), recorded_at: Some(at.into()), ..NewFact::default() }
}

#[test]
fn an_import_run_again_appends_only_what_is_missing() {
    let p = Project::new();
    // Identical items count separately (their occurrence is part of the id).
    let items: Vec<NewFact> = (0..40)
        .map(|i| {
            item(
                &format!("Imported fact {}.", i % 30),
                &format!("2026-01-{:02}T00:00:00Z", 1 + i % 3),
            )
        })
        .chain([NewFact::new("No date: the clock decides.")])
        .collect();
    // A prefix, as a killed import leaves it.
    let first = p.ws.import(items[..17].to_vec(), &mut |_| {}).unwrap();
    assert_eq!((first.facts.len(), first.already_present), (17, 0));
    assert!(
        first.facts.iter().all(|f| f.fact_id().starts_with("import-") && f.fact_id().len() == 39)
    );
    let again = p.ws.import(items.clone(), &mut |_| {}).unwrap();
    assert_eq!((again.facts.len(), again.already_present), (24, 17));
    assert_eq!(p.ws.facts().unwrap().len(), 41);
    // Once more, later (the id-less, date-less item gets another time now).
    let later = Workspace::open(p.path(), None).unwrap();
    let third = later.import(items, &mut |_| {}).unwrap();
    assert_eq!((third.facts.len(), third.already_present), (0, 41));
    assert_eq!(p.ws.facts().unwrap().len(), 41);
    // The ids depend on the workspace: another project gets other ones.
    let q = Project::new();
    let other =
        q.ws.import(vec![item("Imported fact 0.", "2026-01-01T00:00:00Z")], &mut |_| {}).unwrap();
    assert_ne!(other.facts[0].fact_id(), first.facts[0].fact_id());
}
