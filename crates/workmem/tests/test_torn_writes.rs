//! Issue 4, acceptance 3: a power loss during an append leaves a prefix of
//! the line being written. Truncating the last line of each `.jsonl` file
//! (daily log, audit stream, transaction journal) at every byte offset, in
//! the state the crash would leave, never makes the workspace unreadable,
//! loses only that unacknowledged line, and the next append is clean.
//!
//! Also the crash states of a resolution ([`Tied::interrupted`]): a resolve
//! stopped right after its `prepared` line, with the memory directory before
//! and after it and the five lines its journal goes through (the journal is
//! empty at rest, so tests that need an unfinished transaction build it
//! from these).
//!
//! `WORKMEM_TORTURE_FULL=1` cuts at every offset of every line; the default
//! (CI) run cuts every offset of lines up to 1,024 bytes and, for longer
//! ones (the `prepared` line holds the whole intent), the first and last
//! 256 offsets plus every 7th in between.
#![allow(clippy::disallowed_methods)] // tests write crash states directly

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use workmem::DistillOptions;
use workmem::internals::journal::{AUDIT_FILE, Intent, JOURNAL_FILE, Phase};
use workmem::{Case, CaseStatus, FixedClock, NewFact, Resolution, Stamp, Workspace};

pub const AS_OF: &str = "2026-06-01T00:00:00Z";

/// A project directory whose memory holds one open conflict case on
/// `db.engine` (an active "Use SQLite." challenged by two tied values).
pub struct Tied {
    pub _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Tied {
    pub fn new() -> Tied {
        let dir = scratch_dir();
        let root = dir.path().join("project");
        fs::create_dir(&root).expect("project dir");
        let tied = Tied { _dir: dir, root };
        let ws = tied.open();
        decision(&ws, "s1", "Use SQLite.", "2026-01-01T00:00:00Z");
        ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).expect("distill");
        for (id, content, at) in [
            ("p1", "Use Postgres.", "2026-02-01T00:00:00Z"),
            ("p2", "Use Postgres.", "2026-02-10T00:00:00Z"),
            ("m1", "Use MySQL.", "2026-02-02T00:00:00Z"),
            ("m2", "Use MySQL.", "2026-02-10T00:00:00Z"),
        ] {
            decision(&ws, id, content, at);
        }
        let report =
            ws.distill(&DistillOptions::new().as_of(stamp(AS_OF))).expect("distill").report;
        assert_eq!(report.queued_conflicts, 1);
        tied
    }

    /// Opens the workspace (running recovery) on a clock fixed at AS_OF.
    pub fn open(&self) -> Workspace {
        Workspace::builder(&self.root)
            .clock(Arc::new(FixedClock::new(stamp(AS_OF))))
            .open()
            .expect("open")
    }

    pub fn memory(&self) -> PathBuf {
        self.root.join(".workmem/memory")
    }

    /// The open case.
    pub fn case(&self) -> Case {
        let queue = self.open().conflicts().expect("conflicts");
        queue.cases.into_iter().find(|c| c.status == CaseStatus::Open).expect("an open case")
    }

    /// The decision for "Use Postgres." on the open case.
    pub fn decision(&self, case: &Case) -> Resolution {
        let candidate =
            case.candidates.iter().find(|c| c.content == "Use Postgres.").expect("candidate");
        Resolution {
            conflict_id: case.conflict_id.clone(),
            candidate_id: candidate.candidate_id.clone(),
            expected_revision: i64::from(case.revision),
            actor: "reviewer@example.com".into(),
            rationale: "Production needs extensions.".into(),
            event_id: "review:db:1".into(),
            resolved_at: Some(stamp("2026-06-02T00:00:00Z")),
        }
    }

    /// Runs `request` to its `prepared` line only (a crash right after
    /// it), records the five journal lines the resolution goes through, then
    /// lets recovery (the next open) finish it. The memory directory is
    /// left in the committed state, with an empty journal.
    pub fn interrupted(&self, request: &Resolution) -> Interrupted {
        let memory = self.memory();
        let before = files(&memory);
        let intent = workmem::internals::prepare_resolution(&self.open(), request.clone())
            .expect("prepare")
            .expect("a new decision");
        let prepared = fs::read(memory.join(JOURNAL_FILE)).expect("journal");
        assert_eq!(split_lines(&prepared).len(), 1, "the journal holds the prepared line only");
        let digest = intent.digest();
        let mut lines = vec![prepared];
        for phase in &Phase::ALL[1..] {
            // Recovery writes them with the clock of the workspace: AS_OF.
            lines.push(intent.phase_line(&digest, *phase, &stamp(AS_OF)).into_bytes());
        }
        self.open();
        let after = files(&memory);
        assert_eq!(after.get(Path::new(JOURNAL_FILE)).map(Vec::len), Some(0), "journal at rest");
        Interrupted { before, after, lines, intent }
    }
}

/// A resolution of a [`Tied`] project and the states a crash leaves.
pub struct Interrupted {
    /// The memory directory before the resolution.
    pub before: BTreeMap<PathBuf, Vec<u8>>,
    /// The memory directory once it committed (the journal empty).
    pub after: BTreeMap<PathBuf, Vec<u8>>,
    /// The journal lines, newline included: prepared, curated_applied,
    /// conflict_closed, audit_appended, committed.
    pub lines: Vec<Vec<u8>>,
    /// The intent of the `prepared` line.
    pub intent: Intent,
}

impl Interrupted {
    /// The memory directory a crash leaves right after the journal's
    /// `phases`-th line (1 = `prepared` to 5 = `committed`, before the
    /// compaction): each target holds its after state once its phase line
    /// is durable, and its before state otherwise.
    pub fn after_phase(&self, phases: usize) -> BTreeMap<PathBuf, Vec<u8>> {
        assert!((1..=5).contains(&phases));
        let mut state = self.after.clone();
        let mut take_before = |name: &str| match self.before.get(Path::new(name)) {
            Some(bytes) => {
                state.insert(PathBuf::from(name), bytes.clone());
            }
            None => {
                state.remove(Path::new(name));
            }
        };
        if phases < 2 {
            take_before("curated.json");
            take_before("MEMORY.md");
        }
        if phases < 3 {
            take_before("conflicts.json");
        }
        if phases < 4 {
            take_before(AUDIT_FILE);
        }
        state.insert(PathBuf::from(JOURNAL_FILE), self.lines[..phases].concat());
        state
    }

    /// Makes the memory directory of `tied` hold [`Interrupted::after_phase`].
    pub fn crash_after(&self, tied: &Tied, phases: usize) {
        restore(&tied.memory(), &self.after_phase(phases));
    }
}

/// A temporary directory, in RAM when `/dev/shm` is available: the cuts
/// test thousands of crash states and fsync on a disk would dominate its
/// time. The protocol under test is the same on any filesystem.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new().prefix("workmem-torture-").tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("temp dir")
}

pub fn stamp(text: &str) -> Stamp {
    Stamp::parse(text).expect("valid stamp")
}

fn decision(ws: &Workspace, id: &str, content: &str, at: &str) {
    ws.remember(NewFact {
        content: content.into(),
        kind: Some("decision".into()),
        importance: Some(4),
        memory_key: Some("db.engine".into()),
        recorded_at: Some(at.into()),
        fact_id: Some(id.into()),
        ..NewFact::default()
    })
    .expect("remember");
}

/// Every file of a memory directory (relative path -> bytes), without the
/// lock file, whose existence is not state.
pub fn files(memory: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![memory.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != ".id-index") {
                    stack.push(path);
                }
            } else if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n != ".lock"
                    && n != ".projection.json"
                    && n != ".pending.json"
                    && n != ".domain-index"
                    && n != ".valid-hashes"
                    && n != ".checked-state"
                    && n != ".append-trail"
                    && n != ".hash-checkpoints"
                    && n != ".conflicts-layout"
                    && n != ".journal-owner"
                    && n != ".distill-owner"
                    && !n.starts_with(".distill-cache")
            }) {
                // (The lock file and the caches, whose contents name inodes,
                // are not state.)
                let relative = path.strip_prefix(memory).expect("inside memory").to_path_buf();
                out.insert(relative, fs::read(&path).expect("read file"));
            }
        }
    }
    out
}

/// Makes the memory directory hold exactly `state` (plus the lock file).
pub fn restore(memory: &Path, state: &BTreeMap<PathBuf, Vec<u8>>) {
    for path in files(memory).keys() {
        fs::remove_file(memory.join(path)).expect("remove");
    }
    for (path, bytes) in state {
        let full = memory.join(path);
        fs::create_dir_all(full.parent().expect("parent")).expect("dirs");
        fs::write(full, bytes).expect("write");
    }
    // The state a crash of this clone left: its journal is its own.
    workmem::internals::own_journal(memory).expect("own the journal");
}

/// Splits a JSONL text into its lines, each with its newline.
fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

fn full_run() -> bool {
    std::env::var_os("WORKMEM_TORTURE_FULL").is_some_and(|v| v == "1")
}

/// The lengths at which a line of `len` bytes (newline included) is cut:
/// 0 (nothing of it reached the disk) to `len - 1` (all but the newline).
fn cuts(len: usize) -> Vec<usize> {
    if full_run() || len <= 1_024 {
        return (0..len).collect();
    }
    (0..len).filter(|&cut| cut < 256 || cut + 256 >= len || cut % 7 == 0).collect()
}

fn assert_every_line_valid(memory: &Path) {
    for (path, bytes) in files(memory) {
        if path.extension().is_some_and(|e| e == "jsonl") {
            assert!(
                bytes.is_empty() || bytes.ends_with(b"\n"),
                "{} has a torn tail",
                path.display()
            );
            for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let value: serde_json::Value = serde_json::from_slice(line)
                    .unwrap_or_else(|err| panic!("{}: invalid line {err}", path.display()));
                assert!(value.is_object());
            }
        }
    }
}

#[test]
fn a_torn_journal_or_audit_line_recovers_to_exactly_one_committed_decision() {
    let tied = Tied::new();
    let memory = tied.memory();
    let case = tied.case();
    let request = tied.decision(&case);
    let run = tied.interrupted(&request);
    let (before, after, journal) = (&run.before, &run.after, &run.lines);
    assert_eq!(
        journal.len(),
        5,
        "prepared, curated_applied, conflict_closed, audit_appended, committed"
    );
    let audit = after[Path::new(AUDIT_FILE)].clone();

    // (file being appended, lines of the journal complete before it, index
    // of the torn line in that file's lines)
    let mut cases_run = 0;
    for phase in 0..=5 {
        // phase 0..=4: the journal line of that phase is torn; 5: the audit
        // line is torn (it is written between conflict_closed and
        // audit_appended).
        let (torn, kept) =
            if phase < 5 { (journal[phase].clone(), phase) } else { (audit.clone(), 3) };
        for cut in cuts(torn.len()) {
            // The files as the last complete phase line left them.
            let mut state = if kept == 0 { before.clone() } else { run.after_phase(kept) };
            let mut journal_bytes: Vec<u8> = journal[..kept].concat();
            if phase < 5 {
                journal_bytes.extend_from_slice(&torn[..cut]);
            }
            state.insert(PathBuf::from(JOURNAL_FILE), journal_bytes);
            match phase {
                // The target of the torn phase line is durable already.
                1 => {
                    state.insert(
                        PathBuf::from("curated.json"),
                        after[Path::new("curated.json")].clone(),
                    );
                    state.insert(PathBuf::from("MEMORY.md"), after[Path::new("MEMORY.md")].clone());
                }
                2 => {
                    state.insert(
                        PathBuf::from("conflicts.json"),
                        after[Path::new("conflicts.json")].clone(),
                    );
                }
                3 => {
                    state.insert(PathBuf::from(AUDIT_FILE), audit.clone());
                }
                5 => {
                    state.insert(PathBuf::from(AUDIT_FILE), torn[..cut].to_vec());
                }
                _ => {}
            }
            restore(&memory, &state);
            let label = format!("phase {phase}, cut {cut} of {}", torn.len());

            // Opening recovers; the workspace is readable.
            let ws = Workspace::builder(&tied.root)
                .clock(Arc::new(FixedClock::new(stamp(AS_OF))))
                .open()
                .unwrap_or_else(|err| panic!("{label}: open failed: {err}"));
            assert_eq!(ws.facts().expect("facts").len(), 5, "{label}");
            ws.context(None).unwrap_or_else(|err| panic!("{label}: context failed: {err}"));
            let adjudications = ws.adjudications().unwrap_or_else(|err| panic!("{label}: {err}"));
            if phase == 0 {
                // The decision was never acknowledged: it may be lost (or,
                // when the whole record but its newline survived, kept).
                assert!(adjudications.is_empty(), "{label}");
                assert!(ws.curated().expect("curated") == tied_curated(before, &ws), "{label}");
            } else {
                // Once `prepared` is durable the decision commits exactly
                // once, and the journal is compacted: empty. (A `committed`
                // line torn before its newline is not the last complete
                // line, so opening takes the lock, repairs it, and
                // compacts.)
                assert_same(
                    &files(&memory),
                    after,
                    &format!("{label}: recovery did not reach the committed state"),
                );
            }
            // The next append is clean: a retry of the same decision is
            // either the first commit or an idempotent no-op, and compacts
            // the journal.
            let stored = ws
                .resolve(request.clone())
                .unwrap_or_else(|err| panic!("{label}: resolve failed: {err}"));
            assert_eq!(stored.event_id, request.event_id);
            assert_same(&files(&memory), after, &format!("{label}: state after the retry"));
            assert_every_line_valid(&memory);
            let problems = ws.verify().expect("verify");
            assert!(problems.is_empty(), "{label}: {problems:?}");
            cases_run += 1;
        }
    }
    assert!(cases_run > 1_000, "only {cases_run} cuts were tried");
}

/// Asserts two memory states are byte-identical, naming the files that
/// differ (and showing them as text) instead of dumping every byte.
fn assert_same(got: &BTreeMap<PathBuf, Vec<u8>>, want: &BTreeMap<PathBuf, Vec<u8>>, label: &str) {
    let names: std::collections::BTreeSet<&PathBuf> = got.keys().chain(want.keys()).collect();
    let differing: Vec<String> = names
        .into_iter()
        .filter(|name| got.get(*name) != want.get(*name))
        .map(|name| {
            let show = |state: &BTreeMap<PathBuf, Vec<u8>>| {
                state
                    .get(name)
                    .map_or("<missing>".to_owned(), |b| String::from_utf8_lossy(b).into_owned())
            };
            format!("{}:\n--- got\n{}\n--- want\n{}", name.display(), show(got), show(want))
        })
        .collect();
    assert!(differing.is_empty(), "{label}: files differ:\n{}", differing.join("\n"));
}

fn tied_curated(before: &BTreeMap<PathBuf, Vec<u8>>, ws: &Workspace) -> workmem::CuratedState {
    workmem::CuratedState::decode(
        &before[Path::new("curated.json")],
        Path::new("curated.json"),
        ws.workspace_id(),
    )
    .expect("before state decodes")
}

#[test]
fn a_torn_daily_line_is_ignored_and_the_next_append_is_clean() {
    let tied = Tied::new();
    let memory = tied.memory();
    let ws = tied.open();
    for i in 0..3 {
        ws.remember(NewFact {
            content: format!(
                "Outcome number {i} of the nightly build, with \u{e9}l\u{e8}ve and \u{1f980}."
            ),
            evidence: BTreeMap::from([("run".to_owned(), format!("build-{i}"))]),
            recorded_at: Some(format!("2026-05-01T0{i}:00:00Z")),
            fact_id: Some(format!("o{i}")),
            ..NewFact::default()
        })
        .expect("remember");
    }
    let day = PathBuf::from("daily/2026-05-01.jsonl");
    let whole = files(&memory);
    let lines = split_lines(&whole[&day]);
    assert_eq!(lines.len(), 3);
    let last = lines[2].clone();
    let next = NewFact {
        content: "The fact appended after the crash.".into(),
        recorded_at: Some("2026-05-01T09:00:00Z".into()),
        fact_id: Some("after-crash".into()),
        ..NewFact::default()
    };
    let next_line = ws.prepare(next.clone()).expect("valid").to_line();
    for cut in cuts(last.len()) {
        let mut state = whole.clone();
        let mut torn = lines[..2].concat();
        torn.extend_from_slice(&last[..cut]);
        state.insert(day.clone(), torn);
        restore(&memory, &state);
        let label = format!("cut {cut} of {}", last.len());
        let complete = cut == last.len() - 1;

        let ws = tied.open();
        let ids: Vec<String> =
            ws.facts().expect("facts").iter().map(|f| f.fact_id().to_owned()).collect();
        assert_eq!(ids.contains(&"o2".to_owned()), complete, "{label}: {ids:?}");
        assert!(ids.contains(&"o1".to_owned()) && ids.contains(&"o0".to_owned()), "{label}");
        assert_eq!(
            ws.facts_on("2026-05-01").expect("day").len(),
            if complete { 3 } else { 2 },
            "{label}"
        );
        assert!(ws.verify().expect("verify").is_empty(), "{label}");
        ws.distill(&DistillOptions::new().as_of(stamp(AS_OF)).dry_run()).expect("distill reads");

        ws.remember(next.clone()).expect("append after the crash");
        let mut expected = lines[..2].concat();
        if complete {
            expected.extend_from_slice(&last);
        }
        expected.extend_from_slice(next_line.as_bytes());
        assert_eq!(fs::read(memory.join(&day)).expect("read"), expected, "{label}");
        assert_every_line_valid(&memory);
        assert!(ws.verify().expect("verify").is_empty(), "{label}");
    }
}
