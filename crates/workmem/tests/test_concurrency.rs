//! Issue 4, acceptance 1 (library half): ten threads append through
//! `Workspace::remember` into one workspace while two more loop `distill`
//! and `context`. Afterwards every fact is there exactly once, every log
//! line is a valid fact, and `verify` is clean.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use workmem::DistillOptions;
use workmem::{NewFact, Workspace};

use crate::test_torn_writes::{files, scratch_dir, stamp};

const THREADS: usize = 10;
const PER_THREAD: usize = 200;

#[test]
fn ten_threads_append_while_distill_and_context_loop() {
    let dir = scratch_dir();
    let ws = Arc::new(Workspace::open(dir.path(), None).expect("open"));
    ws.init().expect("init");
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|reader| {
            let (ws, done) = (Arc::clone(&ws), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut runs = 0;
                while !done.load(Ordering::Acquire) || runs == 0 {
                    if reader == 0 {
                        ws.distill(&DistillOptions::new().as_of(stamp("2026-06-01T00:00:00Z")))
                            .expect("distill during appends");
                    } else {
                        ws.context(None).expect("context during appends");
                    }
                    runs += 1;
                }
                runs
            })
        })
        .collect();
    let writers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let ws = Arc::clone(&ws);
            std::thread::spawn(move || {
                let mut ids = Vec::with_capacity(PER_THREAD);
                for i in 0..PER_THREAD {
                    // Half are aged, important decisions that distill
                    // promotes while the others are still being written.
                    let aged = i % 2 == 0;
                    let fact = ws
                        .remember(NewFact {
                            content: format!("Writer {thread} records fact {i}."),
                            kind: Some(if aged { "decision" } else { "outcome" }.into()),
                            importance: Some(if aged { 5 } else { 3 }),
                            recorded_at: aged
                                .then(|| format!("2026-01-{:02}T00:00:00Z", 1 + (i % 28))),
                            ..NewFact::default()
                        })
                        .expect("remember");
                    ids.push(fact.fact_id().to_owned());
                }
                ids
            })
        })
        .collect();
    let acknowledged: Vec<String> =
        writers.into_iter().flat_map(|w| w.join().expect("writer")).collect();
    done.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.join().expect("reader") >= 1);
    }

    let total = THREADS * PER_THREAD;
    assert_eq!(acknowledged.len(), total);
    let facts = ws.facts().expect("facts");
    assert_eq!(facts.len(), total, "exactly one fact per remember");
    let ids: BTreeSet<&str> = facts.iter().map(workmem::Fact::fact_id).collect();
    assert_eq!(ids.len(), total, "fact ids are distinct");
    assert_eq!(
        ids,
        acknowledged.iter().map(String::as_str).collect(),
        "every acknowledged id is stored"
    );
    let contents: BTreeSet<&str> = facts.iter().map(workmem::Fact::content).collect();
    assert_eq!(contents.len(), total, "contents are distinct");

    let mut lines = 0;
    for (path, bytes) in files(ws.memory_dir()) {
        if path.starts_with("daily") {
            assert!(bytes.ends_with(b"\n"), "{} has a torn tail", path.display());
            for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                workmem::internals::parse_fact_line(line)
                    .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
                lines += 1;
            }
        }
    }
    assert_eq!(lines, total, "one line per fact");
    let final_report = ws
        .distill(&DistillOptions::new().as_of(stamp("2026-06-01T00:00:00Z")))
        .expect("distill")
        .report;
    assert_eq!(final_report.scanned, total / 2, "{final_report:?}");
    let again = ws
        .distill(&DistillOptions::new().as_of(stamp("2026-06-01T00:00:00Z")))
        .expect("distill")
        .report;
    assert_eq!(
        (again.created, again.updated),
        (0, 0),
        "a second distill changes nothing: {again:?}"
    );
    assert_eq!(ws.curated().expect("curated").entries.len(), total / 2);
    let problems = ws.verify().expect("verify");
    assert!(problems.is_empty(), "{problems:?}");
}
