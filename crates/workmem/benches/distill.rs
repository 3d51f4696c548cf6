//! Distill over a generated workspace.
//!
//! Run: `cargo run --release -p workmem --example generate -- /tmp/w100k 100000`
//! then `cargo bench -p workmem --bench distill -- /tmp/w100k`. Prints the
//! time to read the log and the time of the policy, first run and re-run,
//! each the median of several runs. It deletes the workspace's curated.json,
//! conflicts.json, MEMORY.md and the distill cache before each run (never
//! the log).
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::time::Instant;

use workmem::DistillOptions;
use workmem::{Stamp, Workspace};

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let Some(source) = std::env::args().skip(1).find(|a| !a.starts_with('-')) else {
        eprintln!("usage: cargo bench -p workmem --bench distill -- PROJECT_DIR");
        return;
    };
    let as_of = Stamp::parse("2026-06-01T00:00:00Z").expect("stamp");
    let (mut read, mut first, mut rerun) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..5 {
        let ws = Workspace::open(Path::new(&source), None).expect("open");
        // Start each run from the log alone; the log itself is never touched.
        for name in [
            "curated.json",
            "conflicts.json",
            "MEMORY.md",
            ".distill-cache",
            ".distill-cache.units",
            ".distill-cache.ids",
            ".distill-cache.places",
        ] {
            let _ = std::fs::remove_file(ws.file(name));
        }
        let started = Instant::now();
        let facts = ws.facts().expect("facts");
        read.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let report =
            ws.distill(&DistillOptions::new().as_of(as_of.clone())).expect("distill").report;
        first.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let again =
            ws.distill(&DistillOptions::new().as_of(as_of.clone())).expect("distill").report;
        rerun.push(started.elapsed().as_secs_f64() * 1e3);
        if run == 0 {
            println!("{} facts; first run: {report:?}", facts.len());
            println!(
                "re-run: created={} updated={} queued={}",
                again.created, again.updated, again.queued_conflicts
            );
        }
    }
    println!(
        "read_all median {:.1} ms; distill (read + policy + save) median {:.1} ms; re-run median {:.1} ms",
        median(read),
        median(first),
        median(rerun)
    );
}
