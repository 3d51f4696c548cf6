//! A realistic, deterministic fact log for benchmarks and large tests, as
//! JSON lines `workmem import` reads (one `NewFact` object per line).
//!
//! About 45% outcomes, 30% keyed decisions over 300 memory_keys with 2-4
//! competing values each, the rest repeated unkeyed statements with
//! cosmetic variants (case, spacing), evidence on 40%, spread over the two
//! years before 2026-06-01. Two options make larger states quickly:
//! `statements`, how many distinct unkeyed statements there are (10 by
//! default: then the log is the one the benchmarks were measured on), and
//! `ties`, memory keys each given two values of exactly equal strength,
//! which distill queues as open conflict cases.

use serde_json::{Map, Value, json};

/// What [`workload`] writes besides its `count` ordinary facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Facts of the ordinary mix.
    pub count: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// Distinct unkeyed statements (at least 1; 10 gives the benchmark log).
    pub statements: usize,
    /// Extra memory keys with two tied values each (4 facts per key).
    pub ties: usize,
}

impl Workload {
    /// The benchmark log of `count` facts (seed 42, 10 statements, no
    /// ties).
    pub fn new(count: usize) -> Workload {
        Workload { count, seed: 42, statements: 10, ties: 0 }
    }
}

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

/// 2024-06-01T00:00:00Z.
const START: i64 = 1_717_200_000;
const SPAN_SECONDS: i64 = 2 * 365 * 86_400;

fn stamp(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .expect("a second within two years of 2024")
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn statement(index: u64) -> String {
    if let Some(text) = STATEMENTS.get(index as usize) {
        return (*text).to_owned();
    }
    let topic = TOPICS[(index % TOPICS.len() as u64) as usize];
    format!("In {topic} module {index}, check every input at the boundary")
}

/// Returns the facts of `workload`, one JSON object per line, the ordinary
/// ones oldest first, then the tied ones (4 per key: two values, each seen
/// twice, with the same importance and the same latest time, spread over
/// the same two years).
pub fn workload(workload: &Workload) -> String {
    let Workload { count, seed, statements, ties } = *workload;
    let mut rng = Rng(seed | 1);
    let keys = 300;
    let mut out = String::with_capacity(count * 260 + ties * 4 * 200);
    for i in 0..count {
        let at = START + (i as i64 * SPAN_SECONDS) / count.max(1) as i64;
        let roll = rng.below(100);
        let mut fact = Map::new();
        if roll < 45 {
            fact.insert("kind".into(), "outcome".into());
            let passed = 100 + rng.below(900);
            fact.insert(
                "content".into(),
                format!("Build {i} finished: {passed} tests passed").into(),
            );
            fact.insert("importance".into(), (1 + rng.below(3)).into());
        } else if roll < 75 {
            let key = rng.below(keys);
            let topic = TOPICS[(key % TOPICS.len() as u64) as usize];
            let values = 2 + key % 3;
            let value = rng.below(values);
            fact.insert(
                "kind".into(),
                ["decision", "convention", "pitfall"][(key % 3) as usize].into(),
            );
            fact.insert("memory_key".into(), format!("{topic}.setting-{key}").into());
            fact.insert(
                "content".into(),
                format!("For {topic} setting {key}, use option {value}.").into(),
            );
            fact.insert("importance".into(), (2 + rng.below(4)).into());
        } else {
            let base = statement(rng.below(statements.max(1) as u64));
            let variant = match rng.below(3) {
                0 => base,
                1 => base.to_uppercase(),
                _ => base.replace(' ', "  "),
            };
            fact.insert(
                "kind".into(),
                ["decision", "convention", "pitfall"][rng.below(3) as usize].into(),
            );
            fact.insert("content".into(), variant.into());
            fact.insert("importance".into(), (1 + rng.below(5)).into());
        }
        if rng.below(100) < 40 {
            let file = format!("src/module_{}.rs", rng.below(200));
            let commit = format!("{:016x}", rng.next());
            fact.insert("evidence".into(), json!({"file": file, "commit": commit}));
        }
        fact.insert("source".into(), ["agent", "user", "model_tool"][rng.below(3) as usize].into());
        fact.insert("recorded_at".into(), stamp(at).into());
        fact.insert("fact_id".into(), format!("{:016x}{:016x}", rng.next(), i).into());
        out.push_str(&Value::Object(fact).to_string());
        out.push('\n');
    }
    for n in 0..ties {
        let at = START + 3_600 * 3 + (n as i64 * SPAN_SECONDS) / ties.max(1) as i64;
        let key = format!("tie.setting-{n}");
        for (value, earlier) in [("A", 3_600), ("B", 7_200)] {
            for (suffix, seconds) in [("1", at - earlier), ("2", at)] {
                let fact = json!({
                    "kind": "decision",
                    "memory_key": key,
                    "content": format!("For tied setting {n}, use value {value}."),
                    "importance": 4,
                    "source": "agent",
                    "recorded_at": stamp(seconds),
                    "fact_id": format!("tie-{n}-{value}{suffix}"),
                });
                out.push_str(&fact.to_string());
                out.push('\n');
            }
        }
    }
    out
}
