//! Writes a realistic workspace for benchmarks.
//!
//! `cargo run --release -p workmem --example generate -- DIR FACTS [SEED]`
//!
//! About 45% outcomes, 30% keyed decisions over a few hundred memory_keys
//! with 2-4 competing values each, the rest repeated unkeyed statements with
//! cosmetic variants (case, spacing), evidence on 40%, spread over the two
//! years before 2026-06-01, appended through the library's import path.

use std::path::PathBuf;

use workmem::{NewFact, Workspace};

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const TOPICS: [&str; 12] = [
    "storage", "runtime", "ci", "api", "auth", "build", "deploy", "logging", "cache", "queue",
    "frontend", "tests",
];
const STATEMENTS: [&str; 10] = [
    "Run the migrations before the integration tests",
    "Never commit generated protobuf files",
    "Use UTC timestamps in every log line",
    "The staging cluster shares the production database replica",
    "Feature flags live in config/flags.toml",
    "Pin every GitHub Action to a commit SHA",
    "Benchmarks must run on an idle machine",
    "The CLI must exit 2 on invalid input",
    "Keep public API changes in the changelog",
    "Vendor nothing that a package manager can fetch",
];

/// Returns facts with recorded_at spread over two years, oldest first.
pub fn facts(count: usize, seed: u64) -> Vec<NewFact> {
    let mut rng = Rng(seed | 1);
    let start = jiff::Timestamp::from_second(1_717_200_000).expect("start"); // 2024-06-01
    let span_seconds = 2 * 365 * 86_400;
    let keys = 300;
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let at = start
            + jiff::SignedDuration::from_secs((i as i64 * span_seconds) / count.max(1) as i64);
        let roll = rng.below(100);
        let mut fact = NewFact::default();
        if roll < 45 {
            fact.kind = Some("outcome".into());
            fact.content = format!("Build {} finished: {} tests passed", i, 100 + rng.below(900));
            fact.importance = Some(1 + rng.below(3) as i64);
        } else if roll < 75 {
            let key = rng.below(keys);
            let topic = TOPICS[(key % TOPICS.len() as u64) as usize];
            let values = 2 + key % 3;
            let value = rng.below(values);
            fact.kind = Some(["decision", "convention", "pitfall"][(key % 3) as usize].into());
            fact.memory_key = Some(format!("{topic}.setting-{key}"));
            fact.content = format!("For {topic} setting {key}, use option {value}.");
            fact.importance = Some(2 + rng.below(4) as i64);
        } else {
            let base = STATEMENTS[rng.below(STATEMENTS.len() as u64) as usize];
            let variant = match rng.below(3) {
                0 => base.to_owned(),
                1 => base.to_uppercase(),
                _ => base.replace(' ', "  "),
            };
            fact.kind = Some(["decision", "convention", "pitfall"][rng.below(3) as usize].into());
            fact.content = variant;
            fact.importance = Some(1 + rng.below(5) as i64);
        }
        if rng.below(100) < 40 {
            fact.evidence.insert("file".into(), format!("src/module_{}.rs", rng.below(200)));
            fact.evidence.insert("commit".into(), format!("{:016x}", rng.next()));
        }
        fact.source = Some(["agent", "user", "model_tool"][rng.below(3) as usize].into());
        fact.recorded_at = Some(workmem::Stamp::from_timestamp(at).as_str().to_owned());
        fact.fact_id = Some(format!("{:016x}{:016x}", rng.next(), i));
        out.push(fact);
    }
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(count)) = (args.next(), args.next()) else {
        eprintln!("usage: generate DIR FACTS [SEED]");
        std::process::exit(2);
    };
    let count: usize = count.parse().expect("FACTS is a number");
    let seed: u64 = args.next().map_or(42, |s| s.parse().expect("SEED is a number"));
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("create project dir");
    let ws = Workspace::open(&dir, None).expect("open");
    let started = std::time::Instant::now();
    let stored = ws.import(facts(count, seed), &mut |_| {}).expect("import").facts;
    eprintln!(
        "wrote {} facts to {} in {:.2?}",
        stored.len(),
        ws.memory_dir().display(),
        started.elapsed()
    );
}
