//! In-process append and import throughput, each against the durable-append
//! floor measured in the same run.
//!
//! Run: `cargo bench -p workmem --bench append`. Prints the median of 300
//! floor appends (open `O_APPEND`, one write, fsync, close) and of 300
//! `Workspace::remember` calls, their ratio, and the throughput of importing
//! 100,000 generated facts (one fsync per batch and daily file).
#![allow(clippy::disallowed_methods)] // the floor writes its file directly

use std::io::Write;
use std::time::Instant;

use workmem::{NewFact, Workspace};

#[path = "../examples/generate.rs"]
#[allow(dead_code)]
mod generate;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn floor_append(path: &std::path::Path, line: &[u8]) -> f64 {
    let started = Instant::now();
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path).expect("open");
    file.write_all(line).expect("write");
    file.sync_all().expect("fsync");
    drop(file);
    started.elapsed().as_secs_f64() * 1e6
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::open(dir.path(), None).expect("open");
    ws.init().expect("init");
    let floor_file = dir.path().join("floor.jsonl");
    let sample =
        ws.prepare(NewFact::new("Use SQLite in WAL mode for the local cache.")).expect("fact");
    let line = sample.to_line();
    // Interleave the two, alternating which goes first, so that both see
    // the same machine and journal conditions.
    let (mut floor, mut library) = (Vec::new(), Vec::new());
    let remember = |n: usize| {
        let started = Instant::now();
        let mut new =
            NewFact::new(format!("Use SQLite in WAL mode for the local cache, note {n}."));
        new.kind = Some("decision".into());
        new.importance = Some(4);
        ws.remember(new).expect("remember");
        started.elapsed().as_secs_f64() * 1e6
    };
    for n in 0..300 {
        if n % 2 == 0 {
            floor.push(floor_append(&floor_file, line.as_bytes()));
            library.push(remember(n));
        } else {
            library.push(remember(n));
            floor.push(floor_append(&floor_file, line.as_bytes()));
        }
    }
    let (floor, library) = (median(floor), median(library));
    println!(
        "append: floor median {floor:.0} us; Workspace::remember median {library:.0} us; ratio {:.2}",
        library / floor
    );

    let import_dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::open(import_dir.path(), None).expect("open");
    let facts = generate::facts(100_000, 7);
    let started = Instant::now();
    let stored = ws.import(facts, &mut |_| {}).expect("import").facts;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "import: {} facts over {} daily files in {seconds:.2} s = {:.0} facts/s",
        stored.len(),
        ws.log_days().expect("days").len(),
        stored.len() as f64 / seconds
    );
}
