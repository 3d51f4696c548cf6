//! Writes a realistic workspace for benchmarks and large tests.
//!
//! `cargo run --release -p workmem --example generate -- DIR FACTS [SEED] [--ties N] [--statements N]`
//!
//! About 45% outcomes, 30% keyed decisions over a few hundred memory_keys
//! with 2-4 competing values each, the rest repeated unkeyed statements with
//! cosmetic variants (case, spacing), evidence on 40%, spread over the two
//! years before 2026-06-01, appended through the library's import path
//! (the log itself is `workmem_testutil::workload`). `--ties N` adds N
//! memory keys with two tied values each (open conflict cases once
//! distilled), `--statements N` draws the unkeyed statements from N
//! distinct ones instead of 10 (a larger MEMORY.md).

use std::path::PathBuf;

use workmem::{NewFact, Workspace};
use workmem_testutil::{Workload, workload};

/// Returns the facts of `workload`, ready to import.
pub fn facts_of(options: &Workload) -> Vec<NewFact> {
    workload(options)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a generated fact"))
        .collect()
}

/// Returns the benchmark log of `count` facts from `seed`.
pub fn facts(count: usize, seed: u64) -> Vec<NewFact> {
    facts_of(&Workload { seed, ..Workload::new(count) })
}

fn usage() -> ! {
    eprintln!("usage: generate DIR FACTS [SEED] [--ties N] [--statements N]");
    std::process::exit(2);
}

fn number(text: Option<String>) -> usize {
    text.and_then(|t| t.parse().ok()).unwrap_or_else(|| usage())
}

fn main() {
    let mut positional = Vec::new();
    let mut ties = 0;
    let mut statements = 10;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--ties" => ties = number(args.next()),
            "--statements" => statements = number(args.next()).max(1),
            _ => positional.push(arg),
        }
    }
    let (Some(dir), Some(count)) = (positional.first(), positional.get(1)) else { usage() };
    let count = number(Some(count.clone()));
    let seed = positional.get(2).map_or(42, |s| number(Some(s.clone())) as u64);
    let facts = facts_of(&Workload { count, seed, statements, ties });
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("create project dir");
    let ws = Workspace::open(&dir, None).expect("open");
    let started = std::time::Instant::now();
    let stored = ws.import(facts, &mut |_| {}).expect("import").facts;
    eprintln!(
        "wrote {} facts to {} in {:.2?}",
        stored.len(),
        ws.memory_dir().display(),
        started.elapsed()
    );
}
