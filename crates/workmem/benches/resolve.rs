//! `Workspace::resolve` over generated workspaces of different sizes, and
//! what the journal holds.
//!
//! ```sh
//! cargo build --release -p workmem --example generate
//! target/release/examples/generate /tmp/w100k 100000
//! target/release/examples/generate /tmp/w1m 1000000
//! cargo bench -p workmem --bench resolve -- /tmp/w100k /tmp/w1m
//! ```
//!
//! For each workspace: adds fresh ties (two equally strong values for each
//! of `CASES` new memory keys, old enough to be judged), runs one distill to
//! queue them, then resolves every case in process (each decision adds a
//! revision: curated.json, MEMORY.md, conflicts.json and the audit stream
//! change), and prints the median and spread of the resolve times, the size of curated.json, the size of one resolution's `prepared`
//! journal line (the intent), and the size of the journal after every
//! resolution: 0 bytes at rest. The log itself is never changed but for
//! the facts of the ties (each run adds new ones).
#![allow(clippy::disallowed_methods)] // the bench reads file sizes directly

use std::path::Path;
use std::time::Instant;

use workmem::internals::journal::JOURNAL_FILE;
use workmem::{DistillOptions, Stamp, Workspace};

#[path = "common/ties.rs"]
mod ties;

const AS_OF: &str = "2026-06-01T00:00:00Z";
/// Cases resolved per workspace (one more is only prepared, to measure the
/// intent).
const CASES: usize = 21;

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn figures(dir: &Path) {
    let ws = Workspace::open(dir, None).expect("open");
    let facts: usize = ws.log_days().expect("days").iter().map(|d| d.facts).sum();
    println!("== {} ({facts} facts)", dir.display());
    // Fresh keys on every run (a run adds facts to the workspace).
    let run = ws.fresh_event_id().replace(':', "-");
    let keys: Vec<String> = (0..=CASES).map(|n| format!("bench.{run}.k{n}")).collect();
    ties::ties(&ws, &keys);
    let as_of = Stamp::parse(AS_OF).expect("stamp");
    let started = Instant::now();
    let report = ws.distill(&DistillOptions::new().as_of(as_of)).expect("distill").report;
    println!(
        "distill queuing the ties: {:.0} ms ({} queued)",
        started.elapsed().as_secs_f64() * 1e3,
        report.queued_conflicts
    );
    let cases = ties::open_cases(&ws, &keys);
    assert_eq!(cases.len(), keys.len(), "one open case per new key");
    let curated = size(&ws.file("curated.json"));
    let journal = ws.file(JOURNAL_FILE);

    // One resolution stopped after its prepared line: the intent's size.
    let (last, timed) = cases.split_last().expect("cases");
    workmem::internals::prepare_resolution(&ws, ties::resolution(last, 0))
        .expect("prepare")
        .expect("a new decision");
    let intent_bytes = size(&journal);
    Workspace::open(dir, None).expect("recover");

    let mut times = Vec::new();
    let mut largest_journal = 0;
    for (n, case) in timed.iter().enumerate() {
        let started = Instant::now();
        ws.resolve(ties::resolution(case, n)).expect("resolve");
        times.push(started.elapsed().as_secs_f64() * 1e3);
        largest_journal = largest_journal.max(size(&journal));
    }
    let median_ms = median(&mut times);
    println!(
        "resolve: median {median_ms:.1} ms (min {:.1}, max {:.1}) over {} cases; curated.json {:.1} MB",
        times[0],
        times[times.len() - 1],
        times.len(),
        curated as f64 / 1e6
    );
    println!(
        "journal: prepared line {intent_bytes} bytes; {largest_journal} bytes after each of {} resolutions (at rest); {} bytes now; {} adjudications in the audit stream",
        times.len() + 1,
        size(&journal),
        ws.adjudications().expect("audit").len()
    );
}

fn main() {
    let dirs: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if dirs.is_empty() {
        eprintln!("usage: cargo bench -p workmem --bench resolve -- PROJECT_DIR...");
        return;
    }
    for dir in dirs {
        figures(Path::new(&dir));
    }
}
