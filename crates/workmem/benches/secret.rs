//! The cost of the secret guard per fact, in process.
//!
//! Run: `cargo bench -p workmem --bench secret`. For every ordinary fact of
//! the test corpus (agent facts and code-like facts,
//! `tests/fixtures/secret/ordinary-*.txt`), screens the fields an append
//! screens (content, kind, source, a memory_key on every third fact, one
//! evidence pair) 100 times, five times over, and keeps the best time per
//! screening (the machine is shared: a preempted run is noise); prints the
//! median, the 95th percentile and the mean over the facts, the same for
//! the generated credential corpus (which the guard refuses, usually at
//! the first detector), the guard's time over the 100,000 generated facts
//! that the `append` bench imports, and, for scale, the whole validation of
//! a fact (`Fact::from_new`, guard included). First, the cost of the
//! process's first three screenings (a path and a long key, a link, the
//! words "password" and "login"): what the guard builds and compiles on
//! first use, which a one-shot process such as `workmem remember` pays.

use std::hint::black_box;
use std::time::Instant;

use workmem::internals::secret;
use workmem::{NewFact, Stamp, internals};

#[path = "../examples/generate.rs"]
#[allow(dead_code)]
mod generate;

const PROSE: &str = include_str!("../tests/fixtures/secret/ordinary-prose.txt");
const CODE: &str = include_str!("../tests/fixtures/secret/ordinary-code.txt");
const ROUNDS: u32 = 100;
const REPEATS: usize = 5;

fn screen(content: &str, memory_key: Option<&str>) -> bool {
    secret::check("content", content).is_ok()
        && secret::check("kind", "decision").is_ok()
        && secret::check("source", "agent").is_ok()
        && memory_key.is_none_or(|key| secret::check("memory_key", key).is_ok())
        && secret::check_pair("evidence", "file", "src/storage/cache.rs").is_ok()
}

/// Screens every field of `new` as an append does.
fn screen_new(new: &NewFact) -> bool {
    let mut ok = secret::check("content", &new.content).is_ok();
    for (field, value) in [
        ("kind", &new.kind),
        ("memory_key", &new.memory_key),
        ("source", &new.source),
        ("fact_id", &new.fact_id),
        ("recorded_at", &new.recorded_at),
    ] {
        ok &= value.as_deref().is_none_or(|v| secret::check(field, v).is_ok());
    }
    for (key, value) in &new.evidence {
        ok &= secret::check_pair("evidence", key, value).is_ok();
    }
    ok
}

/// Returns the time per call of `f`, in microseconds: the best of
/// [`REPEATS`] runs of [`ROUNDS`] calls, so that a run the shared machine
/// preempted does not count as the guard's cost.
fn per_call(mut f: impl FnMut()) -> f64 {
    (0..REPEATS)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..ROUNDS {
                f();
            }
            started.elapsed().as_secs_f64() * 1e6 / f64::from(ROUNDS)
        })
        .fold(f64::INFINITY, f64::min)
}

fn summary(label: &str, mut samples: Vec<f64>) {
    samples.sort_by(f64::total_cmp);
    let median = samples[samples.len() / 2];
    let p95 = samples[samples.len() * 95 / 100];
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    println!(
        "{label:<44} n={:>4}  median {median:>6.2} us  p95 {p95:>6.2} us  mean {mean:>6.2} us",
        samples.len()
    );
}

fn main() {
    // What a process pays for its first screenings: the guard builds its
    // automata and compiles a pattern only when a text calls for it. A
    // path, a long key, a link and a password word are the common ones.
    let first = [
        ("Use SQLite in WAL mode for the local cache, note 1.", None),
        ("Moved the cache to src/store/fact_log.rs", Some("runtime.python-version")),
        ("Docs live at https://docs.example.com/guide, see the setup page", None),
        ("Use password hashing with argon2 for the login form", None),
    ];
    for (content, key) in first {
        let started = Instant::now();
        black_box(screen(black_box(content), key));
        println!(
            "first screening in the process, {content:?}: {:.0} us",
            started.elapsed().as_secs_f64() * 1e6
        );
    }
    let facts: Vec<&str> =
        PROSE.lines().chain(CODE.lines()).filter(|l| !l.trim().is_empty()).collect();
    // Warm up: compile the detectors and fill the regex caches.
    for fact in &facts {
        black_box(screen(fact, None));
    }
    let keys = ["runtime.python-version", "db.engine", "ci.cache-strategy"];
    let guard: Vec<f64> = facts
        .iter()
        .enumerate()
        .map(|(i, fact)| {
            let key = (i % 3 == 0).then(|| keys[i % keys.len()]);
            per_call(|| {
                black_box(screen(black_box(fact), key));
            })
        })
        .collect();
    summary("guard, ordinary fact (all fields)", guard);

    let content_only: Vec<f64> = facts
        .iter()
        .map(|fact| {
            per_call(|| {
                black_box(secret::find(black_box(fact)));
            })
        })
        .collect();
    summary("guard, content alone", content_only);

    let corpus = workmem_testutil::credential_corpus();
    let refused: Vec<f64> = corpus
        .iter()
        .map(|sample| {
            per_call(|| {
                black_box(secret::find(black_box(&sample.text)));
            })
        })
        .collect();
    summary("guard, credential sample (refused)", refused);

    // The facts the import benchmark appends: the guard's share of an
    // import of 100,000 facts.
    let generated = generate::facts(100_000, 7);
    let seconds = (0..REPEATS)
        .map(|_| {
            let started = Instant::now();
            for new in &generated {
                black_box(screen_new(new));
            }
            started.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    println!(
        "guard over the 100,000 generated facts of the import bench (best of {REPEATS}): {:.0} ms ({:.2} us per fact)",
        seconds * 1e3,
        seconds * 1e6 / generated.len() as f64
    );

    let now = Stamp::parse("2026-03-01T00:00:00Z").expect("stamp");
    let validation: Vec<f64> = facts
        .iter()
        .map(|fact| {
            let new = NewFact {
                kind: Some("decision".into()),
                importance: Some(4),
                evidence: [("file".to_owned(), "src/storage/cache.rs".to_owned())].into(),
                ..NewFact::new(*fact)
            };
            per_call(|| {
                let fact =
                    internals::fact_from_new(new.clone(), "0123456789abcdef", now.clone(), || {
                        "f1".to_owned()
                    });
                black_box(fact.ok());
            })
        })
        .collect();
    summary("whole validation of a fact (guard included)", validation);
}
