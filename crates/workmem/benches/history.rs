//! Whether past resolutions slow anything down: `verify`, `resolve` and
//! `distill` on copies of one workspace that differ only in their history:
//! one with `N` resolutions behind it (default 1,000); one with none, where
//! the same facts of the same `N` keys agree (the same log and the same
//! curated keys, without a case: "agree"); one with the same `N` ties left
//! open; and the workspace without those keys at all ("none").
//!
//! ```sh
//! cargo build --release -p workmem --example generate
//! target/release/examples/generate /tmp/w100k 100000
//! cargo bench -p workmem --bench history -- /tmp/w100k [--resolutions 1000]
//! ```
//!
//! The copies (made next to the workspace given, and removed after) get 31
//! ties (two equally strong values for each of 31 new memory keys, old
//! enough to be judged); the copies "open" and "resolved" get `N` more
//! ties, and "agree" four agreeing facts for each of the same `N` keys;
//! one distill queues them. The copy "resolved" then resolves its `N`
//! cases (each decision adds a revision, an audit record, a closed case).
//! The 31 keys are spread evenly among the `N` (`history.k00016.timed`
//! ...): files are sorted by memory key, and a resolution's cost depends
//! on how many bytes follow its domain.
//! Then, alternating between the copies: the 31 cases are resolved,
//! `verify` runs five times, a whole-log distill five times (the distill
//! cache removed first) and a distill with nothing new eleven times.
//! Medians, in process; the ratios compare "resolved" with "agree" (what
//! the history costs) and with "none". After each timed resolve, the
//! rewrite floor ([`rewrite_floor`]) on copies of the two files it left:
//! what replacing files of those sizes durably costs any program.
#![allow(clippy::disallowed_methods)] // the bench copies workspaces

use std::path::Path;
use std::time::Instant;

use workmem::{DistillOptions, Stamp, Workspace, WorkspaceBuilder};

#[path = "common/ties.rs"]
mod ties;
use ties::{agreements, open_cases, resolution, ties};

const AS_OF: &str = "2026-06-01T00:00:00Z";
/// Cases each copy resolves while it is timed.
const TIMED: usize = 31;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create copy");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A copy of `project` at `to`, adopted (its id pinned) so it opens there.
fn copy_of(project: &Path, to: &Path) -> Workspace {
    copy_dir(&project.join(".workmem"), &to.join(".workmem"));
    WorkspaceBuilder::adopt(Workspace::builder(to)).expect("adopt").0
}

fn distill(ws: &Workspace) -> f64 {
    let started = Instant::now();
    ws.distill(&DistillOptions::new().as_of(Stamp::parse(AS_OF).expect("stamp"))).expect("distill");
    started.elapsed().as_secs_f64() * 1e3
}

fn drop_distill_cache(ws: &Workspace) {
    for name in
        [".distill-cache", ".distill-cache.units", ".distill-cache.ids", ".distill-cache.places"]
    {
        let _ = std::fs::remove_file(ws.file(name));
    }
}

/// The floor of a resolve that changes both state files, in `dir`: each
/// replaced by a copy of itself (written beside it and fsynced, the two on
/// two threads as a resolve stages them), both renamed into place, the
/// directory fsynced. What replacing the files costs any program, with no
/// decoding, encoding or journal.
fn rewrite_floor(dir: &Path) -> f64 {
    let started = Instant::now();
    let names = ["curated.json", "conflicts.json"];
    std::thread::scope(|scope| {
        let staging: Vec<_> = names
            .iter()
            .map(|name| {
                scope.spawn(move || {
                    let temp = dir.join(format!(".{name}.floor.tmp"));
                    let mut to = std::fs::File::create(&temp).expect("temporary");
                    std::io::copy(&mut std::fs::File::open(dir.join(name)).expect("open"), &mut to)
                        .expect("copy");
                    to.sync_all().expect("fsync");
                })
            })
            .collect();
        for thread in staging {
            thread.join().expect("staged");
        }
    });
    for name in names {
        std::fs::rename(dir.join(format!(".{name}.floor.tmp")), dir.join(name)).expect("rename");
    }
    std::fs::File::open(dir).and_then(|d| d.sync_all()).expect("fsync dir");
    started.elapsed().as_secs_f64() * 1e3
}

fn figures(project: &Path, resolutions: usize) {
    let parent = project.parent().unwrap_or(Path::new("."));
    let scratch = tempfile::tempdir_in(parent).expect("scratch dir");
    let names = ["none", "agree", "open", "resolved"];
    const RESOLVED: usize = 3;
    let copies: Vec<Workspace> =
        names.iter().map(|name| copy_of(project, &scratch.path().join(name))).collect();
    let history: Vec<String> = (0..resolutions).map(|n| format!("history.k{n:05}")).collect();
    let timed: Vec<String> = (0..TIMED)
        .map(|n| format!("history.k{:05}.timed", (2 * n + 1) * resolutions / (2 * TIMED)))
        .collect();
    for (side, ws) in copies.iter().enumerate() {
        match names[side] {
            "none" => {}
            "agree" => agreements(ws, &history),
            _ => ties(ws, &history),
        }
        ties(ws, &timed);
        distill(ws);
    }
    let started = Instant::now();
    for case in open_cases(&copies[RESOLVED], &history) {
        copies[RESOLVED].resolve(resolution(&case, 0)).expect("resolve");
    }
    let records: Vec<String> =
        copies.iter().map(|ws| ws.adjudications().expect("audit").len().to_string()).collect();
    println!(
        "== {}: {resolutions} resolutions made in {:.1} s; audit stream {} records",
        project.display(),
        started.elapsed().as_secs_f64(),
        records.join(" / "),
    );

    let mut resolve = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    let mut floor = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    let mut pending: Vec<std::vec::IntoIter<workmem::Case>> =
        copies.iter().map(|ws| open_cases(ws, &timed).into_iter()).collect();
    let floor_dir = scratch.path().join("floor");
    std::fs::create_dir_all(&floor_dir).expect("floor dir");
    for _ in 0..TIMED {
        for (side, ws) in copies.iter().enumerate() {
            let case = pending[side].next().expect("a timed case");
            let started = Instant::now();
            ws.resolve(resolution(&case, 0)).expect("resolve");
            resolve[side].push(started.elapsed().as_secs_f64() * 1e3);
            // The floor on copies of the files this resolve left (the
            // workspace keeps its own, and with them its known hashes).
            for name in ["curated.json", "conflicts.json"] {
                std::fs::copy(ws.file(name), floor_dir.join(name)).expect("copy");
            }
            floor[side].push(rewrite_floor(&floor_dir));
        }
    }
    let mut verify = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    let mut cold = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..5 {
        for (side, ws) in copies.iter().enumerate() {
            let started = Instant::now();
            let problems = ws.verify().expect("verify");
            verify[side].push(started.elapsed().as_secs_f64() * 1e3);
            assert!(problems.is_empty(), "{problems:?}");
            drop_distill_cache(ws);
            cold[side].push(distill(ws));
        }
    }
    let mut unchanged = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..11 {
        for (side, ws) in copies.iter().enumerate() {
            unchanged[side].push(distill(ws));
        }
    }
    println!(
        "operation                  none       agree   {resolutions} open  {resolutions} resolved   resolved/agree  resolved/none"
    );
    for (name, [none, agree, open, with]) in [
        ("resolve", resolve),
        ("  its rewrite floor", floor),
        ("verify", verify),
        ("distill, whole log", cold),
        ("distill, nothing new", unchanged),
    ] {
        let [none, agree, open, with] = [none, agree, open, with].map(median);
        println!(
            "{name:<20} {none:>8.1} ms {agree:>8.1} ms {open:>8.1} ms {with:>8.1} ms   {:>14.2}  {:>13.2}",
            with / agree,
            with / none
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let resolutions = args
        .iter()
        .position(|a| a == "--resolutions")
        .and_then(|i| args.get(i + 1))
        .map_or(1000, |n| n.parse().expect("--resolutions N"));
    let dirs: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with('-') && (*i == 0 || args[i - 1] != "--resolutions"))
        .map(|(_, a)| a)
        .collect();
    if dirs.is_empty() {
        eprintln!(
            "usage: cargo bench -p workmem --bench history -- PROJECT_DIR... [--resolutions N]"
        );
        return;
    }
    for dir in dirs {
        figures(Path::new(dir), resolutions);
    }
}
