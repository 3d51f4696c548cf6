//! Whole-process timings and peak memory of the `workmem` binary.
//!
//! ```sh
//! cargo build --release -p workmem --example floor --example rewrite_floor --example generate
//! target/release/examples/generate /tmp/w100k 100000
//! target/release/examples/generate /tmp/w1m 1000000
//! cargo bench -p workmem-cli --bench process -- /tmp/w100k /tmp/w1m
//! ```
//!
//! For each workspace given: start + open (`workmem init -q`), `context`,
//! `distill` (first run on the log alone, then a re-run with nothing new,
//! then runs after 100 new facts each, each followed by the rewrite floor
//! program on copies of curated.json and MEMORY.md), `remember --id` against `remember`
//! (alternating), an import of 100 facts with ids, `status`, `history` of
//! the key with the most evidence, `logs`, `resolve` of freshly made ties,
//! and `verify`, as medians over several runs with their peak RSS
//! (`/usr/bin/time`; the distill runs are timed alone and their peak RSS
//! taken from more runs under it, whose start would add about 1 ms).
//! Without arguments only the append comparison
//! runs: `workmem remember` against the floor program, alternating, in a
//! temporary workspace. The first distill runs delete everything in the
//! memory directory but the daily log first (the caches included). With
//! `WORKMEM_BENCH_ONLY=appends` only `remember --id` against `remember` and
//! the imports run for each workspace (no distill, context, resolve or
//! verify; the id index is built first when missing). With
//! `WORKMEM_BENCH_ONLY=hook` only the session-start hook runs (`workmem
//! context --hook`, what `workmem setup` has Claude Code, Codex and Gemini
//! CLI run), 31 times per workspace, in the project directory as the
//! clients run it, after a first distill when the workspace has no curated
//! memory yet; the bench fails when its median exceeds 50 ms. The full
//! run measures it too, after `context`.
//!
//! With `WORKMEM_BENCH_ONLY=search` only the first distill and `search`
//! run (the first query after a fresh clone, which builds the index,
//! queries with the index up to date, a query after a `remember`); the
//! search figures also close every full run.
//!
//! With `WORKMEM_BENCH_TEACHING=PATH` (the teaching implementation's
//! `s10_workspace_memory/code.py` in a checkout of learn-workbuddy; the
//! interpreter, `WORKMEM_BENCH_PYTHON`, default `python3`, needs the
//! packages its module imports: `anthropic` and `python-dotenv`), the
//! teaching implementation's first distill of the same log with the same
//! `as_of` runs three times after workmem's, on workspaces of at most
//! 200,000 facts (at 1M one run takes minutes). It reads the log through
//! `.learn_workbuddy/memory/daily`, a symlink made for the run to
//! `.workmem/memory/daily` (its `.learn_workbuddy` is removed after), and
//! needs the workspace at the path its facts name: the teaching
//! implementation derives the workspace id from it, so a workspace made
//! by `generate` where it is measured.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "../../workmem/examples/generate.rs"]
#[allow(dead_code)]
mod generate;

const WORKMEM: &str = env!("CARGO_BIN_EXE_workmem");
const AS_OF: &str = "2026-06-01T00:00:00Z";

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Runs a command, returns its wall time in milliseconds.
fn timed(cmd: &mut Command) -> f64 {
    let started = Instant::now();
    let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().expect("spawn");
    let elapsed = started.elapsed().as_secs_f64() * 1e3;
    assert!(status.success(), "{cmd:?} failed");
    elapsed
}

/// Runs `workmem ARGS` under /usr/bin/time; returns (ms, peak RSS in MB).
fn timed_rss(dir: &Path, args: &[&str]) -> (f64, f64) {
    let started = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(WORKMEM)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .output()
        .expect("/usr/bin/time (Debian package `time`)");
    let elapsed = started.elapsed().as_secs_f64() * 1e3;
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kb: f64 = stderr.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or(0.0);
    (elapsed, kb / 1024.0)
}

/// Returns the medians of (ms, MB) pairs.
fn median_rss(runs: Vec<(f64, f64)>) -> (f64, f64) {
    (median(runs.iter().map(|r| r.0).collect()), median(runs.iter().map(|r| r.1).collect()))
}

fn workmem(dir: &Path) -> Command {
    let mut cmd = Command::new(WORKMEM);
    cmd.current_dir(dir);
    cmd
}

/// The program `name` of workmem's examples, in this bench's target
/// directory.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let release = exe.parent().and_then(Path::parent).expect("target/release");
    release.join("examples").join(name)
}

fn append_comparison() {
    let floor = example("floor");
    if !floor.exists() {
        println!("append: build the floor first: cargo build --release -p workmem --example floor");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    assert!(workmem(dir.path()).args(["init", "-q"]).status().expect("init").success());
    let floor_file = dir.path().join("floor.jsonl");
    let (mut base, mut ours) = (Vec::new(), Vec::new());
    for n in 0..100 {
        let content = format!("Use SQLite in WAL mode for the local cache, note {n}.");
        let mut remember = workmem(dir.path());
        remember.args(["remember", &content, "-k", "decision", "-i", "4", "-q"]);
        let mut floor_cmd = Command::new(&floor);
        floor_cmd.arg(&floor_file);
        if n % 2 == 0 {
            base.push(timed(&mut floor_cmd));
            ours.push(timed(&mut remember));
        } else {
            ours.push(timed(&mut remember));
            base.push(timed(&mut floor_cmd));
        }
    }
    let (base, ours) = (median(base), median(ours));
    println!(
        "append (process): floor median {base:.2} ms; workmem remember median {ours:.2} ms; ratio {:.2}",
        ours / base
    );
}

/// Every file of a memory directory but the log: what a first distill
/// starts without.
const DERIVED: [&str; 17] = [
    "curated.json",
    "conflicts.json",
    "MEMORY.md",
    "conflict-adjudications.jsonl",
    "conflict-resolution-transactions.jsonl",
    ".projection.json",
    ".pending.json",
    ".domain-index",
    ".distill-cache",
    ".distill-cache.units",
    ".distill-cache.ids",
    ".distill-cache.places",
    ".append-trail",
    ".hash-checkpoints",
    ".conflicts-layout",
    // What this clone knows it wrote: a fresh clone has neither, and with
    // them a missing curated.json is refused as damage.
    ".checked-state",
    ".valid-hashes",
];

/// Writes `count` generated facts (fresh ids, recorded over the log's two
/// years) as an import file; returns its path. Distinct seeds give distinct
/// facts (the generator starts from `seed | 1`, so an even seed and the
/// next one would give the same).
fn fact_file(dir: &Path, count: usize, seed: u64) -> PathBuf {
    let path = dir.join(format!("facts-{seed}.jsonl"));
    let mut text = String::new();
    for fact in generate::facts(count, 2 * seed + 1) {
        text.push_str(&fact.canonical_json());
        text.push('\n');
    }
    std::fs::write(&path, text).expect("fact file");
    path
}

/// The memory key of curated.json with the most evidence, if any.
fn busiest_key(dir: &Path) -> Option<String> {
    let data = std::fs::read(dir.join(".workmem/memory/curated.json")).ok()?;
    let curated: serde_json::Value = serde_json::from_slice(&data).ok()?;
    curated["entries"]
        .as_array()?
        .iter()
        .filter(|entry| entry["memory_key"].is_string())
        .max_by_key(|entry| entry["evidence_ids"].as_array().map_or(0, Vec::len))
        .and_then(|entry| entry["memory_key"].as_str().map(str::to_owned))
}

/// Whether only the appends are measured (`WORKMEM_BENCH_ONLY=appends`).
fn appends_only() -> bool {
    std::env::var("WORKMEM_BENCH_ONLY").is_ok_and(|only| only == "appends")
}

/// Whether only the session-start hook is measured
/// (`WORKMEM_BENCH_ONLY=hook`).
fn hook_only() -> bool {
    std::env::var("WORKMEM_BENCH_ONLY").is_ok_and(|only| only == "hook")
}

/// The most the session-start hook may take at 100k facts: a client waits
/// for it before the first prompt.
const HOOK_LIMIT_MS: f64 = 50.0;

/// `workmem context --hook` as a client runs it: median, slowest, peak
/// RSS; fails above [`HOOK_LIMIT_MS`].
fn hook_figures(dir: &Path) {
    let runs: Vec<f64> = (0..31).map(|_| timed(workmem(dir).args(["context", "--hook"]))).collect();
    let slowest = runs.iter().copied().fold(0.0, f64::max);
    let hook = median(runs);
    let (_, hook_rss) = timed_rss(dir, &["context", "--hook"]);
    let out = workmem(dir).args(["context", "--hook"]).output().expect("spawn");
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("hook JSON");
    let chars = printed["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map_or(0, |c| c.chars().count());
    println!(
        "context --hook (session start): median {hook:.2} ms, slowest {slowest:.2} ms, peak {hook_rss:.0} MB, \
         {chars} characters (limit {HOOK_LIMIT_MS} ms)"
    );
    assert!(hook < HOOK_LIMIT_MS, "the session-start hook took {hook:.2} ms (median)");
}

fn search_only() -> bool {
    std::env::var("WORKMEM_BENCH_ONLY").is_ok_and(|only| only == "search")
}

/// `search`: the first query after a fresh clone (no index: it reads the
/// records) and the second (which builds the index), against a first
/// distill of the same log; then queries with the index up to date, and a
/// query after one `remember` (the index catches up).
fn search_figures(dir: &Path) {
    let memory = dir.join(".workmem/memory");
    let index = memory.join(".search-index");
    let search = |query: &str| {
        let mut cmd = workmem(dir);
        cmd.args(["search", query, "--limit", "10", "--json"]);
        timed(&mut cmd)
    };
    let (first, second): (Vec<f64>, Vec<f64>) = (0..5)
        .map(|_| {
            let _ = std::fs::remove_dir_all(&index);
            (search("migrations tests"), search("migrations tests"))
        })
        .unzip();
    let (_, first_rss) = {
        let _ = std::fs::remove_dir_all(&index);
        timed_rss(dir, &["search", "migrations tests", "--json"])
    };
    let (_, second_rss) = timed_rss(dir, &["search", "migrations tests", "--json"]);
    println!(
        "search: first query (no index: the records read) median {:.0} ms, peak {first_rss:.0} MB",
        median(first),
    );
    println!(
        "search: second query (index built) median {:.0} ms, peak {second_rss:.0} MB; index {:.1} MB",
        median(second),
        dir_size(&index) as f64 / 1e6
    );
    // Rare, phrase, prefix, common (half the log), no hit.
    for query in ["protobuf", "\"production database\"", "migra*", "tests passed", "zanzibar"] {
        let runs = median((0..21).map(|_| search(query)).collect());
        println!("search {query:?}: median {runs:.2} ms");
    }
    let remember = |n: usize| {
        workmem(dir)
            .args(["remember", &format!("Searchable bench note {n}"), "-q"])
            .stdout(Stdio::null())
            .status()
            .expect("remember");
    };
    let after: Vec<f64> = (0..11)
        .map(|n| {
            remember(n);
            search("migrations tests")
        })
        .collect();
    println!("search after one remember (catch-up): median {:.2} ms", median(after));
}

/// Bytes of the files in `dir`.
fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries.filter_map(Result::ok).filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum()
    })
}

/// `remember --id` against `remember`, alternating, then imports of 100
/// facts with ids.
fn append_figures(dir: &Path, scratch: &Path, seed: u64) {
    // remember --id against remember, alternating (the first call with an
    // id builds the id index when there is none).
    let tag = std::process::id();
    assert!(
        workmem(dir)
            .args(["remember", "warm up", "--id", &format!("warm-{tag}"), "-q"])
            .stdout(Stdio::null())
            .status()
            .expect("remember")
            .success()
    );
    let (mut with_id, mut without) = (Vec::new(), Vec::new());
    for n in 0..40 {
        let id = format!("bench-{tag}-{n}");
        let mut keyed = workmem(dir);
        keyed.args(["remember", "A note with an id.", "--id", &id, "-q"]);
        let mut plain = workmem(dir);
        plain.args(["remember", "A note without an id.", "-q"]);
        if n % 2 == 0 {
            with_id.push(timed(&mut keyed));
            without.push(timed(&mut plain));
        } else {
            without.push(timed(&mut plain));
            with_id.push(timed(&mut keyed));
        }
    }
    let (with_id, without) = (median(with_id), median(without));
    println!(
        "remember --id: median {with_id:.2} ms; remember: median {without:.2} ms; difference {:.2} ms",
        with_id - without
    );
    let imports: Vec<(f64, f64)> = (0..5)
        .map(|n| {
            let file = fact_file(scratch, 100, seed + 50 + n);
            timed_rss(dir, &["import", file.to_str().expect("path"), "-q"])
        })
        .collect();
    let (import_ms, import_rss) = median_rss(imports);
    println!("import of 100 facts with ids: median {import_ms:.1} ms, peak {import_rss:.0} MB");
}

/// Times a first distill, the derived files forgotten before each run.
fn first_distill_figures(dir: &Path) {
    let memory = dir.join(".workmem/memory");
    let distill = ["distill", "--as-of", AS_OF, "-q"];
    let first: Vec<f64> = (0..5)
        .map(|_| {
            for name in DERIVED {
                let _ = std::fs::remove_file(memory.join(name));
            }
            let _ = std::fs::remove_dir_all(memory.join(".id-index"));
            timed(workmem(dir).args(distill))
        })
        .collect();
    println!("distill: first run median {:.0} ms", median(first));
}

/// Times a first distill and a re-run; returns the first run's median.
fn distill_figures(dir: &Path) -> f64 {
    // Distill runs are timed alone (under /usr/bin/time a figure would
    // include its start, about 1 ms); the peak memory comes from more runs
    // under it.
    let memory = dir.join(".workmem/memory");
    let forget = || {
        for name in DERIVED {
            let _ = std::fs::remove_file(memory.join(name));
        }
        let _ = std::fs::remove_dir_all(memory.join(".id-index"));
    };
    let distill = ["distill", "--as-of", AS_OF, "-q"];
    let (mut first, mut again) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        forget();
        first.push(timed(workmem(dir).args(distill)));
        again.push(timed(workmem(dir).args(distill)));
    }
    let (mut first_rss, mut again_rss) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        forget();
        first_rss.push(timed_rss(dir, &distill).1);
        again_rss.push(timed_rss(dir, &distill).1);
    }
    // (A first run's peak varies by a few MB with how its two threads
    // interleave: the median of three.)
    let (first_rss, again_rss) = (median(first_rss), median(again_rss));
    let cold = median(first);
    println!(
        "distill: first run median {cold:.0} ms, peak {first_rss:.0} MB; re-run median {:.0} ms, peak {again_rss:.0} MB",
        median(again),
    );
    cold
}

/// Times a distill after each of fifteen imports of 100 new facts, beside
/// the rewrite floor, then a distill with nothing new.
fn incremental_figures(dir: &Path, scratch: &Path, seed: u64, cold: f64) {
    let distill = ["distill", "--as-of", AS_OF, "-q"];
    // 100 new facts (ids the log does not hold, recorded over its two
    // years), then a distill, fifteen times (a run in about fifteen also
    // rewrites the cache's units file whole).
    // (Each import must add its 100 facts: a run after an import that
    // added none would have nothing new.)
    let import = |n: u64| {
        let file = fact_file(scratch, 100, seed + n);
        let out = workmem(dir)
            .args(["import", file.to_str().expect("path"), "--json"])
            .output()
            .expect("import");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(report.contains("\"imported\":100"), "import {n}: {report}");
    };
    // The rewrite floor (what replacing curated.json and MEMORY.md durably
    // costs any program) runs after each, on copies of the two files.
    let rewrite_floor = example("rewrite_floor");
    let floor_state = scratch.join("floor-state");
    std::fs::create_dir_all(&floor_state).expect("floor state dir");
    let memory_dir = dir.join(".workmem/memory");
    let mut after = Vec::new();
    let mut floor = Vec::new();
    for n in 0..15 {
        import(n);
        after.push(timed(workmem(dir).args(distill)));
        if rewrite_floor.exists() {
            for name in ["curated.json", "MEMORY.md"] {
                std::fs::copy(memory_dir.join(name), floor_state.join(name)).expect("copy");
            }
            floor.push(timed(
                Command::new(&rewrite_floor).arg(memory_dir.join("daily")).arg(&floor_state),
            ));
        }
    }
    import(15);
    let (_, after_rss) = timed_rss(dir, &distill);
    let incremental = median(after);
    println!(
        "distill after 100 new facts: median {incremental:.1} ms, peak {after_rss:.0} MB ({:.1}% of the first run)",
        100.0 * incremental / cold
    );
    if floor.is_empty() {
        println!(
            "rewrite floor: build it first: cargo build --release -p workmem --example rewrite_floor"
        );
    } else {
        let floor = median(floor);
        println!(
            "rewrite floor (stat the daily files, replace curated.json and MEMORY.md): median {floor:.1} ms ({:.1}% of the first run); the incremental run adds {:.1} ms",
            100.0 * floor / cold,
            incremental - floor
        );
    }
    let nothing = median((0..11).map(|_| timed(workmem(dir).args(distill))).collect());
    let (_, nothing_rss) = timed_rss(dir, &distill);
    println!("distill with nothing new: median {nothing:.2} ms, peak {nothing_rss:.0} MB");
}

/// Times the reading commands: context, the hook, status, history, logs.
fn read_figures(dir: &Path) {
    let context = median((0..21).map(|_| timed(workmem(dir).arg("context"))).collect());
    let (_, context_rss) = timed_rss(dir, &["context"]);
    println!("context: median {context:.2} ms, peak {context_rss:.0} MB");
    hook_figures(dir);
    // The facts appended since the last distill (by the appends above)
    // are what `status` reads; `history` of the key with the most
    // evidence; `logs` counts every daily file.
    let status = median((0..11).map(|_| timed(workmem(dir).arg("status"))).collect());
    let (_, status_rss) = timed_rss(dir, &["status"]);
    println!("status: median {status:.2} ms, peak {status_rss:.0} MB");
    if let Some(key) = busiest_key(dir) {
        let history =
            median((0..11).map(|_| timed(workmem(dir).args(["history", &key]))).collect());
        let (_, history_rss) = timed_rss(dir, &["history", &key]);
        println!("history of {key}: median {history:.2} ms, peak {history_rss:.0} MB");
    }
    let logs = median((0..5).map(|_| timed(workmem(dir).arg("logs"))).collect());
    let (_, logs_rss) = timed_rss(dir, &["logs"]);
    println!("logs: median {logs:.1} ms, peak {logs_rss:.0} MB");
}

/// Times the resolution of seven ties made for the purpose.
fn resolve_figures(dir: &Path) {
    // Ties to resolve: two equally strong newer values for fresh keys.
    let mut cases = Vec::new();
    for n in 0..7 {
        let key = format!("bench.tie-{n}-{}", std::process::id());
        for (id, content, at) in [
            ("a1", "Value A.", "2026-01-01T00:00:00Z"),
            ("a2", "Value A.", "2026-01-02T00:00:00Z"),
            ("b1", "Value B.", "2026-01-01T00:00:00Z"),
            ("b2", "Value B.", "2026-01-02T00:00:00Z"),
        ] {
            let fact_id = format!("{key}-{id}");
            let ok = workmem(dir)
                .args([
                    "remember", content, "-k", "decision", "-i", "4", "--key", &key, "--at", at,
                    "--id", &fact_id, "-q",
                ])
                .stdout(Stdio::null())
                .status()
                .expect("remember")
                .success();
            assert!(ok);
        }
    }
    assert!(
        workmem(dir)
            .args(["distill", "--as-of", AS_OF, "-q"])
            .stdout(Stdio::null())
            .status()
            .expect("distill")
            .success()
    );
    let listed = workmem(dir).args(["conflicts", "--json"]).output().expect("conflicts");
    let list: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    for case in list.as_array().expect("cases") {
        cases.push((
            case["conflict_id"].as_str().expect("id").to_owned(),
            case["candidates"][0]["candidate_id"].as_str().expect("id").to_owned(),
            case["revision"].to_string(),
        ));
    }
    let runs: Vec<(f64, f64)> = cases
        .iter()
        .enumerate()
        .map(|(n, (conflict, candidate, revision))| {
            let event = format!("bench:{n}:{}", std::process::id());
            timed_rss(
                dir,
                &[
                    "resolve",
                    conflict,
                    candidate,
                    "--revision",
                    revision,
                    "--event-id",
                    &event,
                    "--rationale",
                    "benchmark",
                    "-q",
                ],
            )
        })
        .collect();
    if !runs.is_empty() {
        println!(
            "resolve: median {:.1} ms, peak {:.0} MB over {} cases",
            median(runs.iter().map(|r| r.0).collect()),
            median(runs.iter().map(|r| r.1).collect()),
            runs.len()
        );
    }
}

fn workspace_figures(dir: &Path) {
    let facts: usize = std::fs::read_dir(dir.join(".workmem/memory/daily")).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| {
                std::fs::read(e.path()).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
            })
            .sum()
    });
    println!("== {} ({facts} facts)", dir.display());
    let scratch = tempfile::tempdir().expect("temp dir");
    let seed = u64::from(std::process::id()) * 100;
    if appends_only() {
        append_figures(dir, scratch.path(), seed);
        return;
    }
    if hook_only() {
        // The hook of a project with a curated memory: distill first when
        // the workspace has none yet (untimed).
        if !dir.join(".workmem/memory/curated.json").exists() {
            timed(workmem(dir).args(["distill", "--as-of", AS_OF, "-q"]));
        }
        hook_figures(dir);
        return;
    }
    if search_only() {
        first_distill_figures(dir);
        search_figures(dir);
        return;
    }
    let open = median((0..21).map(|_| timed(workmem(dir).args(["init", "-q"]))).collect());
    println!("start + open (workmem init -q): median {open:.2} ms");

    let cold = distill_figures(dir);
    if let Ok(code) = std::env::var("WORKMEM_BENCH_TEACHING") {
        teaching_comparison(dir, Path::new(&code), facts, cold);
    }
    incremental_figures(dir, scratch.path(), seed, cold);

    append_figures(dir, scratch.path(), seed);

    read_figures(dir);
    resolve_figures(dir);
    let (verify, verify_rss) = timed_rss(dir, &["verify", "-q"]);
    println!("verify (reads everything): {verify:.0} ms, peak {verify_rss:.0} MB");
    search_figures(dir);
}

/// Run by the teaching implementation's interpreter: imports its module
/// (argument 1), then times one `distill` of the workspace (argument 2)
/// with `as_of` (argument 3) and prints the milliseconds it took.
const TEACHING_DRIVER: &str = r#"
import importlib.util, pathlib, sys, time
from datetime import datetime
code, workspace, as_of = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("s10_workspace_memory", code)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
sys.argv = [code]
spec.loader.exec_module(module)
as_of = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
started = time.perf_counter()
module.WorkspaceMemory(pathlib.Path(workspace)).distill(as_of=as_of)
print((time.perf_counter() - started) * 1e3)
"#;

/// The teaching implementation's first distill of the same log, three
/// times, against workmem's first run (`cold`, its median in ms).
fn teaching_comparison(dir: &Path, code: &Path, facts: usize, cold: f64) {
    if facts > 200_000 {
        println!("teaching implementation: not run at {facts} facts (one run takes minutes)");
        return;
    }
    let python = std::env::var("WORKMEM_BENCH_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let state = dir.join(".learn_workbuddy");
    let memory = state.join("memory");
    std::fs::create_dir_all(&memory).expect("teaching memory directory");
    let daily = memory.join("daily");
    if std::fs::symlink_metadata(&daily).is_err() {
        std::os::unix::fs::symlink("../../.workmem/memory/daily", &daily).expect("symlink");
    }
    let (mut whole, mut call) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for entry in std::fs::read_dir(&memory).expect("teaching memory directory") {
            let path = entry.expect("entry").path();
            if path != daily {
                std::fs::remove_file(&path).expect("teaching state");
            }
        }
        let started = Instant::now();
        let out = Command::new(&python)
            .args(["-c", TEACHING_DRIVER])
            .arg(code)
            .arg(dir)
            .arg(AS_OF)
            .current_dir(dir)
            .output()
            .expect("the teaching implementation's interpreter");
        whole.push(started.elapsed().as_secs_f64() * 1e3);
        let stdout = String::from_utf8_lossy(&out.stdout);
        match stdout.lines().last().and_then(|line| line.trim().parse::<f64>().ok()) {
            Some(ms) if out.status.success() => call.push(ms),
            _ => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                println!(
                    "teaching implementation: failed: {}",
                    stderr.lines().last().unwrap_or("no output")
                );
                let _ = std::fs::remove_dir_all(&state);
                return;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&state);
    let (whole, call) = (median(whole), median(call));
    println!(
        "teaching implementation: first run median {whole:.0} ms as a process, \
         {call:.0} ms in its distill call alone; workmem's first run (a whole process) \
         is {:.1}x faster than the call, {:.1}x than the process",
        call / cold,
        whole / cold
    );
}

fn main() {
    append_comparison();
    for dir in std::env::args().skip(1).filter(|a| !a.starts_with('-')) {
        workspace_figures(Path::new(&dir));
    }
}
