//! The id index answers `remember --id` and `import` without reading the
//! log, and gives exactly the answer reading the whole log gives, whatever
//! happened to the log or to the index: appends by other processes that
//! never touch the index, hand edits, removed files, duplicate ids on disk,
//! and a torn, stale, foreign or missing index.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use workmem::{Error, Fact, Invalid, NewFact};

use crate::common::{Project, append_raw, fact, let_clock_tick, open};

const INDEX: &str = ".id-index";

fn day(n: usize) -> String {
    format!("2026-01-0{}", n + 1)
}

fn new_fact(id: &str, variant: usize, day_index: usize) -> NewFact {
    let at = format!("{}T0{}:00:00Z", day(day_index), variant);
    fact(id, "decision", 3 + variant as i64 % 2, None, &format!("Value {variant}."), &at)
}

/// What reading the whole log says `new` must give: the stored fact (a
/// retry), a refusal (the id holds another fact), or an append.
fn expected(p: &Project, new: &NewFact) -> Option<Result<Fact, ()>> {
    let id = new.fact_id.as_deref().expect("explicit id");
    let stored = p.ws.facts().expect("facts").into_iter().find(|f| f.fact_id() == id)?;
    let prepared = p.ws.prepare(new.clone()).expect("valid");
    let same = stored.content() == prepared.content()
        && stored.kind() == prepared.kind()
        && stored.importance() == prepared.importance()
        && stored.memory_key() == prepared.memory_key()
        && stored.source() == prepared.source()
        && stored.evidence() == prepared.evidence()
        && stored.recorded_at().instant() == prepared.recorded_at().instant();
    Some(if same { Ok(stored) } else { Err(()) })
}

fn check_remember(p: &Project, new: NewFact) {
    let want = expected(p, &new);
    let got = p.ws.remember(new.clone());
    match (want, got) {
        (Some(Ok(stored)), Ok(fact)) => assert_eq!(fact, stored, "a retry returns the stored fact"),
        (Some(Err(())), Err(Error::InvalidInput { reason: Invalid::IdTaken { .. }, .. })) => {}
        (None, Ok(fact)) => {
            assert_eq!(fact.fact_id(), new.fact_id.as_deref().unwrap());
            assert!(p.ws.facts().unwrap().contains(&fact), "appended");
        }
        (want, got) => panic!("{new:?}: the log says {want:?}, the index gave {got:?}"),
    }
}

fn shard_files(memory: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(memory.join(INDEX))
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|f| f.file_name().is_some_and(|n| n != "manifest"));
    files.sort();
    files
}

/// Rewrites a daily file with `from` replaced by `to` (a hand edit).
fn edit(path: &Path, from: &str, to: &str) {
    let Ok(text) = fs::read_to_string(path) else { return };
    let_clock_tick();
    fs::write(path, text.replace(from, to)).unwrap();
}

#[test]
fn remember_with_an_id_does_not_read_unchanged_daily_files() {
    let p = Project::new();
    check_remember(&p, new_fact("a-1", 0, 0));
    check_remember(&p, new_fact("b-1", 0, 1));
    // The next check indexes what the last append added; then day 0 is
    // never read again: garbling it keeping its stamp goes unnoticed.
    check_remember(&p, new_fact("c-1", 0, 2));
    garble_keeping_stamp(&p.day_file(&day(0)));
    match p.ws.remember(new_fact("b-1", 1, 1)) {
        Err(Error::InvalidInput { reason: Invalid::IdTaken { .. }, .. }) => {}
        other => panic!("expected the id to be taken, got {other:?}"),
    }
    assert!(p.ws.remember(new_fact("d-1", 0, 1)).is_ok());
    // The whole-log reader still sees the damage.
    assert!(matches!(p.ws.facts(), Err(Error::Corrupt { .. })));
}

use std::os::unix::fs::FileExt;

/// Overwrites `path` with lines of `#` of the same size, keeping its
/// modification time: a change the stamps cannot see, so any later answer
/// that needs the file's lines would fail.
fn garble_keeping_stamp(path: &Path) {
    let meta = fs::metadata(path).unwrap();
    let mut garbage = vec![b'#'; meta.len() as usize];
    garbage[meta.len() as usize - 1] = b'\n';
    fs::OpenOptions::new().write(true).open(path).unwrap().write_all_at(&garbage, 0).unwrap();
    set_mtime(path, meta.modified().unwrap());
}

#[test]
fn an_append_with_an_id_counts_what_it_wrote_as_read() {
    let p = Project::new();
    check_remember(&p, new_fact("a-1", 0, 1));
    // The appends with ids of day 0 and day 2 are indexed by the appends
    // themselves: no later check reads those files again.
    check_remember(&p, new_fact("b-1", 0, 0));
    check_remember(&p, new_fact("b-2", 1, 0));
    let items = vec![new_fact("c-1", 0, 0), new_fact("c-2", 0, 2), new_fact("c-3", 1, 2)];
    assert_eq!(p.ws.import(items, &mut |_| {}).unwrap().facts.len(), 3);
    garble_keeping_stamp(&p.day_file(&day(0)));
    garble_keeping_stamp(&p.day_file(&day(2)));
    match p.ws.remember(new_fact("a-1", 1, 1)) {
        Err(Error::InvalidInput { reason: Invalid::IdTaken { .. }, .. }) => {}
        other => panic!("expected the id to be taken, got {other:?}"),
    }
    assert!(p.ws.remember(new_fact("d-1", 0, 1)).is_ok());
    assert!(matches!(p.ws.facts(), Err(Error::Corrupt { .. })), "the damage is real");
}

#[test]
fn appends_by_others_during_appends_with_ids_are_all_seen() {
    // Another process appends to the same daily file without the lock
    // while ids are checked and appended: an append extends the index only
    // when nobody wrote between the check and its own write, so every
    // outside record stays visible.
    let p = Project::new();
    p.ws.init().unwrap();
    let path = p.day_file(&day(0));
    let lines: Vec<String> = (0..150)
        .map(|n| p.ws.prepare(new_fact(&format!("raw-{n}"), 0, 0)).unwrap().to_line())
        .collect();
    fs::write(&path, &lines[0]).unwrap();
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for line in &lines[1..] {
                append_raw(&path, line.as_bytes());
                std::thread::yield_now();
            }
        });
        for n in 0..60 {
            p.ws.remember(new_fact(&format!("own-{n}"), 0, 0)).unwrap();
        }
        writer.join().unwrap();
    });
    for n in 0..150 {
        match p.ws.remember(new_fact(&format!("raw-{n}"), 1, 0)) {
            Err(Error::InvalidInput { reason: Invalid::IdTaken { .. }, .. }) => {}
            other => panic!("raw-{n}: expected the id to be taken, got {other:?}"),
        }
    }
    for n in 0..60 {
        check_remember(&p, new_fact(&format!("own-{n}"), 1, 0));
    }
    assert_eq!(p.ws.facts().unwrap().len(), 210);
}

#[test]
fn a_daily_file_created_after_a_settled_listing_is_seen() {
    let p = Project::new();
    check_remember(&p, new_fact("a-1", 0, 0));
    age(&p.file("daily"));
    // This check lists daily/ and keeps its (settled) stamp; the next
    // ones skip the listing until daily/ changes.
    check_remember(&p, new_fact("b-1", 0, 0));
    check_remember(&p, new_fact("b-2", 0, 0));
    let line = p.ws.prepare(new_fact("x-1", 0, 2)).unwrap().to_line();
    fs::write(p.day_file(&day(2)), line).unwrap();
    check_remember(&p, new_fact("x-1", 1, 2));
    age(&p.file("daily"));
    check_remember(&p, new_fact("c-1", 0, 0));
    fs::remove_file(p.day_file(&day(2))).unwrap();
    check_remember(&p, new_fact("x-1", 1, 2));
}

#[test]
fn a_refused_or_repeated_append_writes_no_index() {
    let p = Project::new();
    check_remember(&p, new_fact("a-1", 0, 0));
    assert!(p.file(INDEX).join("manifest").exists(), "an append saves the index it checked");
    // The index is one append behind: a retry and a refusal both bring it
    // up to date in memory, and write nothing.
    let before = crate::common::snapshot_dir(&p.file(INDEX));
    check_remember(&p, new_fact("a-1", 0, 0));
    check_remember(&p, new_fact("a-1", 1, 0));
    assert_eq!(crate::common::snapshot_dir(&p.file(INDEX)), before);
    check_remember(&p, new_fact("b-1", 0, 0));
    assert_ne!(crate::common::snapshot_dir(&p.file(INDEX)), before);
}

#[test]
fn the_first_record_of_an_id_in_file_and_line_order_counts() {
    let p = Project::new();
    check_remember(&p, new_fact("x-0", 0, 0));
    // Another tool wrote the id twice, the later day first, differently.
    let later = p.ws.prepare(new_fact("dup-1", 1, 2)).unwrap();
    let earlier = p.ws.prepare(new_fact("dup-1", 0, 1)).unwrap();
    fs::write(p.day_file(&day(2)), later.to_line()).unwrap();
    fs::write(p.day_file(&day(1)), earlier.to_line()).unwrap();
    check_remember(&p, new_fact("dup-1", 0, 1));
    check_remember(&p, new_fact("dup-1", 1, 2));
    assert_eq!(p.ws.remember(new_fact("dup-1", 0, 1)).unwrap(), earlier);
}

#[derive(Debug, Clone)]
enum Op {
    Remember {
        id: usize,
        variant: usize,
        day: usize,
    },
    Import {
        ids: Vec<(usize, usize)>,
        day: usize,
    },
    /// Another process appends without the lock or the index.
    RawAppend {
        id: usize,
        variant: usize,
        day: usize,
    },
    /// A hand edit renames an id in one daily file.
    Rename {
        day: usize,
        from: usize,
        to: usize,
    },
    RemoveDay {
        day: usize,
    },
    TruncateManifest {
        keep: usize,
    },
    DropShard,
    GarbleShard,
    RestoreOldShards,
    DropIndex,
    /// Time passes: `daily/` and its files get a modification time an
    /// hour old, so the index may skip listing `daily/` while its stamp
    /// holds (every later creation or removal must still be seen).
    Age,
    /// A rewrite in place that keeps the file's size and modification
    /// time (the one change stamps cannot see) of a file the index has not
    /// read since: only after the next change of its stamp, the index must
    /// see it, like the whole log does.
    SwapLines {
        day: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..8usize, 0..2usize, 0..3usize).prop_map(|(id, variant, day)| Op::Remember { id, variant, day }),
        1 => (proptest::collection::vec((0..8usize, 0..2usize), 1..4), 0..3usize)
            .prop_map(|(ids, day)| Op::Import { ids, day }),
        2 => (0..8usize, 0..2usize, 0..3usize).prop_map(|(id, variant, day)| Op::RawAppend { id, variant, day }),
        1 => (0..3usize, 0..8usize, 0..8usize).prop_map(|(day, from, to)| Op::Rename { day, from, to }),
        1 => (0..3usize).prop_map(|day| Op::RemoveDay { day }),
        1 => (0..400usize).prop_map(|keep| Op::TruncateManifest { keep }),
        1 => Just(Op::DropShard),
        1 => Just(Op::GarbleShard),
        1 => Just(Op::RestoreOldShards),
        1 => Just(Op::DropIndex),
        2 => Just(Op::Age),
        1 => (0..3usize).prop_map(|day| Op::SwapLines { day }),
    ]
}

fn id(n: usize) -> String {
    format!("id-{n}")
}

fn run(ops: &[Op]) {
    let p = Project::new();
    p.ws.init().unwrap();
    let mut saved: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for op in ops {
        match op {
            Op::Remember { id: n, variant, day } => {
                check_remember(&p, new_fact(&id(*n), *variant, *day));
            }
            Op::Import { ids, day } => {
                let mut items: Vec<NewFact> =
                    ids.iter().map(|(n, v)| new_fact(&id(*n), *v, *day)).collect();
                items.dedup_by(|a, b| a.fact_id == b.fact_id);
                let mut seen = std::collections::HashSet::new();
                items.retain(|i| seen.insert(i.fact_id.clone()));
                let wanted: Vec<_> = items.iter().map(|i| expected(&p, i)).collect();
                let result = p.ws.import(items.clone(), &mut |_| {});
                if wanted.iter().any(|w| matches!(w, Some(Err(())))) {
                    assert!(
                        matches!(
                            result,
                            Err(Error::InvalidInput { reason: Invalid::IdTaken { .. }, .. })
                        ),
                        "{items:?}: expected a refusal, got {result:?}"
                    );
                } else {
                    let imported = result.expect("import");
                    let fresh = wanted.iter().filter(|w| w.is_none()).count();
                    assert_eq!(
                        (imported.facts.len(), imported.already_present),
                        (fresh, items.len() - fresh)
                    );
                }
            }
            Op::RawAppend { id: n, variant, day } => {
                let line = p.ws.prepare(new_fact(&id(*n), *variant, *day)).unwrap().to_line();
                let path = p.day_file(&day_name(*day));
                if path.exists() {
                    append_raw(&path, line.as_bytes());
                } else {
                    fs::write(&path, line).unwrap();
                }
            }
            Op::Rename { day, from, to } => {
                edit(
                    &p.day_file(&day_name(*day)),
                    &format!("\"{}\"", id(*from)),
                    &format!("\"{}\"", id(*to)),
                );
            }
            Op::RemoveDay { day } => {
                let _ = fs::remove_file(p.day_file(&day_name(*day)));
            }
            Op::TruncateManifest { keep } => {
                let path = p.file(INDEX).join("manifest");
                if let Ok(data) = fs::read(&path) {
                    fs::write(&path, &data[..(*keep).min(data.len().saturating_sub(1))]).unwrap();
                }
            }
            Op::DropShard => {
                if let Some(shard) = shard_files(p.ws.memory_dir()).first() {
                    fs::remove_file(shard).unwrap();
                }
            }
            Op::GarbleShard => {
                if let Some(shard) = shard_files(p.ws.memory_dir()).last() {
                    let data = fs::read(shard).unwrap();
                    fs::write(shard, &data[..data.len() / 2]).unwrap();
                }
            }
            Op::RestoreOldShards => {
                // Shards of an earlier generation put back (a crash between
                // a shard and the manifest, or a backup restored).
                for (path, data) in &saved {
                    let _ = fs::write(path, data);
                }
                saved = shard_files(p.ws.memory_dir())
                    .into_iter()
                    .map(|f| (f.clone(), fs::read(&f).unwrap()))
                    .collect();
            }
            Op::DropIndex => {
                let _ = fs::remove_dir_all(p.file(INDEX));
            }
            Op::Age => age(&p.file("daily")),
            Op::SwapLines { day } => {
                // Swapped, then the stamp changes by an append: the index
                // must find the covered bytes changed and rebuild.
                let path = p.day_file(&day_name(*day));
                if let Ok(text) = fs::read_to_string(&path) {
                    let mut lines: Vec<&str> = text.lines().collect();
                    if lines.len() >= 2 {
                        lines.swap(0, 1);
                        let meta = fs::metadata(&path).unwrap();
                        let swapped = lines.join("\n") + "\n";
                        fs::OpenOptions::new()
                            .write(true)
                            .open(&path)
                            .unwrap()
                            .write_all_at(swapped.as_bytes(), 0)
                            .unwrap();
                        set_mtime(&path, meta.modified().unwrap());
                        let line = p.ws.prepare(new_fact("swap-0", 0, *day)).unwrap().to_line();
                        if !p.ws.facts().unwrap().iter().any(|f| f.fact_id() == "swap-0") {
                            append_raw(&path, line.as_bytes());
                        }
                    }
                }
            }
        }
        if saved.is_empty() {
            saved = shard_files(p.ws.memory_dir())
                .into_iter()
                .map(|f| (f.clone(), fs::read(&f).unwrap()))
                .collect();
        }
    }
}

/// Gives `daily/` and every file in it a modification time an hour old.
fn age(daily: &Path) {
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let Ok(entries) = fs::read_dir(daily) else { return };
    for entry in entries {
        set_mtime(&entry.unwrap().path(), past);
    }
    set_mtime(daily, past);
}

fn set_mtime(path: &Path, when: std::time::SystemTime) {
    fs::File::open(path).unwrap().set_modified(when).unwrap();
}

fn day_name(n: usize) -> String {
    day(n)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_index_answers_like_the_whole_log(ops in proptest::collection::vec(op(), 1..30)) {
        run(&ops);
    }
}

#[test]
fn an_index_copied_from_another_checkout_is_not_used() {
    let p = Project::new();
    check_remember(&p, new_fact("a-1", 0, 0));
    check_remember(&p, new_fact("b-1", 0, 0));
    check_remember(&p, new_fact("c-1", 0, 0));
    let copy = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(p.path().join(".workmem"))
        .arg(copy.path())
        .status()
        .unwrap();
    assert!(status.success());
    fs::write(
        copy.path().join(".workmem/workspace.toml"),
        format!("id = \"{}\"\n", p.ws.workspace_id()),
    )
    .unwrap();
    let other = open(copy.path());
    assert_eq!(other.workspace_id(), p.ws.workspace_id());
    // A planted index that leaves an id out (its shards are consistent
    // with its manifest): the copy must not trust it.
    for shard in shard_files(other.memory_dir()) {
        let text = fs::read_to_string(&shard).unwrap();
        let kept: String = text.split_inclusive('\n').filter(|l| !l.starts_with("b-1 ")).collect();
        fs::write(&shard, kept).unwrap();
    }
    match other.remember(new_fact("b-1", 1, 0)) {
        Err(Error::InvalidInput { reason: Invalid::IdTaken { .. }, .. }) => {}
        result => panic!("expected the id to be taken, got {result:?}"),
    }
}

#[test]
fn a_log_of_many_daily_files_is_checked_whole() {
    // Enough daily files for the stamps to be checked by two threads.
    let p = Project::new();
    p.ws.init().unwrap();
    let start = jiff::civil::date(2025, 1, 1);
    let days: Vec<String> =
        (0..400).map(|n| (start + jiff::Span::new().days(n)).to_string()).collect();
    let at = |n: usize| format!("{}T08:00:00Z", days[n]);
    let note = |id: &str, n: usize, content: &str| fact(id, "outcome", 3, None, content, &at(n));
    for (n, day) in days.iter().enumerate() {
        let line = p.ws.prepare(note(&format!("old-{n}"), n, "Old.")).unwrap().to_line();
        fs::write(p.day_file(day), line).unwrap();
    }
    check_remember(&p, note("new-1", 10, "New."));
    check_remember(&p, note("old-399", 399, "Another."));
    // Outside appends to files on either side of the split.
    for n in [3, 250, 398] {
        let line = p.ws.prepare(note(&format!("raw-{n}"), n, "Raw.")).unwrap().to_line();
        append_raw(&p.day_file(&days[n]), line.as_bytes());
    }
    for n in [3, 250, 398] {
        check_remember(&p, note(&format!("raw-{n}"), n, "Other."));
    }
    age(&p.file("daily"));
    check_remember(&p, note("new-2", 300, "New."));
    fs::remove_file(p.day_file(&days[350])).unwrap();
    check_remember(&p, note("old-350", 350, "Back."));
    check_remember(&p, note("old-351", 351, "Other."));
}

/// The generation in the manifest's header: it changes only when the index
/// is rebuilt from the whole log.
fn generation(p: &Project) -> String {
    let data = fs::read(p.file(INDEX).join("manifest")).unwrap();
    let header = data.split(|b| *b == b'\n').next().unwrap();
    String::from_utf8_lossy(header).split(' ').nth(4).unwrap().to_owned()
}

#[test]
fn the_hash_an_append_continues_matches_the_file() {
    // An append with an id continues the hash of its file; after an outside
    // append the next check verifies that hash over the file and reads only
    // the new line: the index is not rebuilt (a wrong hash would rebuild).
    let p = Project::new();
    check_remember(&p, new_fact("a-0", 0, 0));
    let before = generation(&p);
    for n in 1..60 {
        // Lines of many lengths: the covered bytes end anywhere in a block,
        // and cross many blocks.
        let content = format!("Value {}.", "x".repeat(n * 37 % 601));
        let at = format!("{}T0{}:00:00Z", day(0), n % 10);
        check_remember(&p, fact(&format!("a-{n}"), "decision", 3, None, &content, &at));
        if n % 5 == 0 {
            let line = p.ws.prepare(new_fact(&format!("raw-{n}"), 0, 0)).unwrap().to_line();
            append_raw(&p.day_file(&day(0)), line.as_bytes());
            check_remember(&p, new_fact(&format!("raw-{n}"), 1, 0));
        }
    }
    assert_eq!(generation(&p), before, "the index was never rebuilt");
}
