//! Full-text search (docs/search.md): the hits are exactly the items a
//! brute-force reading of the current state matches, through appends,
//! distills, resolutions, retractions and restores the index has not seen
//! yet; Chinese and
//! Japanese text, phrases, prefixes, every filter, paging, hostile input,
//! and an index that is not what it claims to be.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::fs;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::json;
use workmem::internals::corrections::CORRECTIONS_FILE;
use workmem::{
    Error, HitType, Kind, Policy, ReadOnlyWorkspace, Resolution, SearchOptions, SearchPage,
    SearchScope, Workspace,
};

use crate::common::{Project, fact, let_clock_tick, open, stamp};

/// What a handle that searches does: a writable workspace and a read-only
/// one alike.
trait Search {
    fn search(&self, query: &str, options: &SearchOptions) -> workmem::Result<SearchPage>;
}

impl Search for Workspace {
    fn search(&self, query: &str, options: &SearchOptions) -> workmem::Result<SearchPage> {
        Workspace::search(self, query, options)
    }
}

impl Search for ReadOnlyWorkspace {
    fn search(&self, query: &str, options: &SearchOptions) -> workmem::Result<SearchPage> {
        ReadOnlyWorkspace::search(self, query, options)
    }
}

/// Every hit of `query`, paging with the cursor to the end, as
/// (type, id) in order.
fn all_hits(ws: &impl Search, query: &str, options: &SearchOptions) -> Vec<(HitType, String)> {
    let mut options = options.clone();
    options.limit = Some(3);
    let mut out = Vec::new();
    loop {
        let page = ws.search(query, &options).expect("search");
        assert!(page.hits.len() <= 3);
        out.extend(page.hits.iter().map(|h| (h.hit_type, h.id.clone())));
        match page.next_cursor {
            Some(cursor) => options.cursor = Some(cursor),
            None => break,
        }
    }
    out
}

fn ids(ws: &impl Search, query: &str) -> BTreeSet<String> {
    all_hits(ws, query, &SearchOptions::new()).into_iter().map(|(_, id)| id).collect()
}

/// Appends a correction record to `ws`'s corrections stream, as a person's
/// `retract` (or, with `restores`, `restore`) writes it: `facts` sorted.
fn correct(ws: &Workspace, event: &str, facts: &[&str], restores: Option<&str>) {
    use std::io::Write as _;
    let mut facts = facts.to_vec();
    facts.sort_unstable();
    facts.dedup();
    let record = json!({
        "action": if restores.is_some() { "restore" } else { "retract" },
        "actor": "Ada <ada@example.com>", "entry_key": null, "event_id": event,
        "fact_ids": facts, "rationale": "recorded against the wrong service",
        "recorded_at": "2026-03-01T09:00:00Z", "restores": restores,
        "schema_version": 1, "workspace_id": ws.workspace_id(),
    });
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(ws.memory_dir().join(CORRECTIONS_FILE))
        .unwrap();
    writeln!(file, "{record}").unwrap();
}

#[test]
fn a_retracted_fact_is_never_found_until_it_is_restored() {
    let p = Project::new();
    p.add("a", "decision", 3, None, "Use WAL mode", "2026-01-02T00:00:00Z");
    p.add("b", "decision", 3, None, "WAL keeps readers going", "2026-01-03T00:00:00Z");
    let both = BTreeSet::from(["a".to_owned(), "b".to_owned()]);
    assert_eq!(ids(&p.ws, "wal"), both);
    // Retracted after the index was built: the index does not reflect the
    // stream any more, and the count is exact.
    correct(&p.ws, "correction:1", &["a"], None);
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["b".to_owned()]));
    assert_eq!(p.ws.search("wal", &SearchOptions::new()).unwrap().total, 1);
    assert_eq!(p.ws.search("mode", &SearchOptions::new()).unwrap().total, 0);
    // The index records the stream it reflects: its length, SHA-256 and
    // stamp.
    let stream = fs::read(p.ws.memory_dir().join(CORRECTIONS_FILE)).unwrap();
    let line =
        format!("corrections {} {} ", stream.len(), workmem::internals::canon::sha256_hex(&stream));
    let state = fs::read_to_string(p.ws.memory_dir().join(".search-index/workmem-state")).unwrap();
    assert!(state.lines().any(|l| l.starts_with(&line)), "{state}");
    // A retraction of a fact that arrives later (a merge brings it): the
    // catch-up leaves it out too.
    correct(&p.ws, "correction:2", &["c"], None);
    assert!(ids(&p.ws, "wal").len() == 1);
    p.add("c", "pitfall", 3, Some("db.wal"), "WAL needs shared memory", "2026-01-04T00:00:00Z");
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["b".to_owned()]));
    assert_eq!(ids(&p.ws, "memory"), BTreeSet::new());
    // Restored: found again, by a fresh handle and a read-only one alike.
    correct(&p.ws, "correction:3", &["a"], Some("correction:1"));
    assert_eq!(ids(&p.ws, "wal"), both);
    let reader = Workspace::builder(p.path()).open_read_only().unwrap();
    assert_eq!(ids(&reader, "wal"), both);
    assert_eq!(reader.search("wal", &SearchOptions::new()).unwrap().total, 2);
}

#[test]
fn an_entry_a_correction_retracted_is_never_found() {
    let p = Project::new();
    p.add("a", "decision", 3, Some("db.engine"), "Use Postgres", "2026-01-02T00:00:00Z");
    p.add("b", "decision", 3, Some("db.engine"), "Use Postgres", "2026-01-03T00:00:00Z");
    p.distill_with(&Policy { repeat_threshold: 1, ..Policy::default() }, "2026-02-28T00:00:00Z");
    let entry_hits = |ws: &Workspace| {
        let mut options = SearchOptions::new();
        options.scope = SearchScope::Memory;
        all_hits(ws, "postgres", &options).len()
    };
    assert_eq!(entry_hits(&p.ws), 1);
    // The entry as a correction leaves it once its last evidence is
    // retracted.
    let mut state = p.ws.curated().unwrap();
    let entry = state.entries.iter_mut().find(|e| e.is_active()).unwrap();
    entry.status = workmem::Status::Retracted;
    entry.retracted_evidence_ids = std::mem::take(&mut entry.evidence_ids);
    entry.occurrences = 0;
    let_clock_tick();
    workmem::internals::save_curated(&p.ws, &state).unwrap();
    workmem::internals::record_state_as_written(&p.ws);
    correct(&p.ws, "correction:1", &["a", "b"], None);
    assert_eq!(entry_hits(&p.ws), 0);
    assert_eq!(p.ws.search("postgres", &SearchOptions::new()).unwrap().total, 0);
}

#[test]
fn chinese_and_japanese_text_is_found_by_its_characters() {
    let p = Project::new();
    p.add(
        "zh",
        "decision",
        3,
        None,
        "\u{6570}\u{636e}\u{5e93}\u{8fde}\u{63a5}\u{6c60}\u{4f7f}\u{7528} WAL \u{6a21}\u{5f0f}",
        "2026-01-02T00:00:00Z",
    );
    p.add("ja", "pitfall", 3, None, "\u{30c7}\u{30fc}\u{30bf}\u{30d9}\u{30fc}\u{30b9}\u{306e}\u{63a5}\u{7d9a}\u{3092}\u{518d}\u{5229}\u{7528}\u{3059}\u{308b}", "2026-01-02T00:00:00Z");
    p.add("en", "outcome", 3, None, "Pool size is twenty", "2026-01-02T00:00:00Z");
    // A word of the middle of a Chinese run.
    let page = p.ws.search("\u{8fde}\u{63a5}\u{6c60}", &SearchOptions::new()).unwrap();
    assert_eq!(page.hits.len(), 1);
    assert_eq!(page.hits[0].id, "zh");
    assert!(
        page.hits[0].snippet.contains("**\u{8fde}\u{63a5}\u{6c60}**"),
        "{}",
        page.hits[0].snippet
    );
    // One character finds both texts that hold it.
    assert_eq!(ids(&p.ws, "\u{63a5}"), BTreeSet::from(["zh".to_owned(), "ja".to_owned()]));
    assert_eq!(ids(&p.ws, "\u{30c7}\u{30fc}\u{30bf}"), BTreeSet::from(["ja".to_owned()]));
    // Characters that are not next to each other do not make a word.
    assert!(ids(&p.ws, "\u{6570}\u{6c60}").is_empty());
}

#[test]
fn phrases_prefixes_and_words_match_as_documented() {
    let p = Project::new();
    p.add(
        "a",
        "decision",
        3,
        None,
        "The parser rejects tabs in YAML files",
        "2026-01-02T00:00:00Z",
    );
    p.add(
        "b",
        "decision",
        3,
        None,
        "Tabs are rejected; YAML files use spaces",
        "2026-01-03T00:00:00Z",
    );
    p.add(
        "c",
        "decision",
        3,
        Some("build.parsing"),
        "Use the streaming reader",
        "2026-01-04T00:00:00Z",
    );
    assert_eq!(ids(&p.ws, "\"yaml files\""), BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    assert_eq!(ids(&p.ws, "\"tabs in yaml\""), BTreeSet::from(["a".to_owned()]));
    assert_eq!(ids(&p.ws, "\"yaml tabs\""), BTreeSet::new());
    // A prefix matches the content and the memory key.
    assert_eq!(ids(&p.ws, "pars*"), BTreeSet::from(["a".to_owned(), "c".to_owned()]));
    assert_eq!(ids(&p.ws, "TABS yaml"), BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    assert!(ids(&p.ws, "tabs streaming").is_empty());
    let hit = &p.ws.search("rejects", &SearchOptions::new()).unwrap().hits[0];
    assert_eq!(hit.snippet, "The parser **rejects** tabs in YAML files");
    assert_eq!((hit.hit_type, hit.status, hit.kind), (HitType::Fact, "recorded", Kind::Decision));
    // No hit is a page, not an error.
    let none = p.ws.search("kubernetes", &SearchOptions::new()).unwrap();
    assert_eq!((none.hits.len(), none.next_cursor, none.total), (0, None, 0));
}

#[test]
fn every_filter_narrows_the_hits() {
    let p = Project::new();
    p.add("d1", "decision", 3, Some("db.engine"), "Cache in SQLite", "2026-01-02T00:00:00Z");
    p.add("d2", "pitfall", 3, Some("db.pool"), "Cache misses hurt", "2026-01-10T00:00:00Z");
    p.add("d3", "decision", 3, Some("ci.cache"), "Cache target dir", "2026-01-20T00:00:00Z");
    p.add("d4", "decision", 3, None, "Cache warmup", "2026-01-25T00:00:00Z");
    // Promote d1 (the only fact old enough); the others stay facts.
    p.distill_with(&Policy { repeat_threshold: 1, ..Policy::default() }, "2026-02-05T00:00:00Z");
    let search = |options: SearchOptions| -> BTreeSet<(HitType, String)> {
        all_hits(&p.ws, "cache", &options).into_iter().collect()
    };
    let entry =
        p.ws.curated().unwrap().entries.into_iter().find(workmem::Entry::is_active).unwrap();
    let mut o = SearchOptions::new();
    o.kind = Some(Kind::Pitfall);
    assert_eq!(search(o), BTreeSet::from([(HitType::Fact, "d2".to_owned())]));
    let mut o = SearchOptions::new();
    o.key_prefix = Some("db.".into());
    let expected = BTreeSet::from([
        (HitType::Entry, entry.key.clone()),
        (HitType::Fact, "d1".to_owned()),
        (HitType::Fact, "d2".to_owned()),
    ]);
    assert_eq!(search(o), expected);
    let mut o = SearchOptions::new();
    o.since = Some(stamp("2026-01-10T00:00:00Z"));
    o.until = Some(stamp("2026-01-20T00:00:00Z"));
    assert_eq!(
        search(o),
        BTreeSet::from([(HitType::Fact, "d2".to_owned()), (HitType::Fact, "d3".to_owned())])
    );
    let mut o = SearchOptions::new();
    o.scope = SearchScope::Memory;
    assert_eq!(search(o), BTreeSet::from([(HitType::Entry, entry.key.clone())]));
    let mut o = SearchOptions::new();
    o.scope = SearchScope::Facts;
    assert_eq!(search(o).len(), 4);
    // Active entries come first, then the facts; the evidence says so.
    let all = all_hits(&p.ws, "cache", &SearchOptions::new());
    assert_eq!(all[0], (HitType::Entry, entry.key.clone()));
    let page = p.ws.search("sqlite", &SearchOptions::new()).unwrap();
    assert_eq!(page.hits[0].status, "active");
    assert_eq!(page.hits[0].revision, Some(1));
    assert_eq!(page.hits[1].status, "curated");
    assert_eq!(page.hits[1].entry_key.as_deref(), Some(entry.key.as_str()));
}

#[test]
fn paging_reaches_the_end_and_a_forged_cursor_is_refused() {
    let p = Project::new();
    for n in 0..23 {
        p.add(
            &format!("f{n:02}"),
            "outcome",
            3,
            None,
            &format!("Build step {n} ran"),
            "2026-01-02T00:00:00Z",
        );
    }
    let hits = all_hits(&p.ws, "build", &SearchOptions::new());
    assert_eq!(hits.len(), 23);
    assert_eq!(hits.iter().map(|(_, id)| id.clone()).collect::<BTreeSet<_>>().len(), 23);
    let mut o = SearchOptions::new();
    o.limit = Some(10);
    let first = p.ws.search("build", &o).unwrap();
    let cursor = first.next_cursor.clone().unwrap();
    // The cursor of another search, an edited one, garbage.
    let mut edited = cursor.clone();
    edited.replace_range(1..2, if &cursor[1..2] == "0" { "1" } else { "0" });
    for bad in [edited, "c".into(), "\u{0}".repeat(40), "cffffffffffffffffffffffffffffffff".into()]
    {
        let mut o = o.clone();
        o.cursor = Some(bad.clone());
        let err = p.ws.search("build", &o).unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput { ref field, .. } if field == "cursor"),
            "{bad:?}: {err}"
        );
    }
    let mut other = o.clone();
    other.cursor = Some(cursor);
    assert!(p.ws.search("step", &other).is_err());
    other.kind = Some(Kind::Outcome);
    assert!(p.ws.search("build", &other).is_err());
    // Limits.
    for limit in [0, 51] {
        let mut o = SearchOptions::new();
        o.limit = Some(limit);
        assert!(p.ws.search("build", &o).is_err());
    }
    // Within a character budget the page is cut, and the cursor goes on.
    let mut o = SearchOptions::new();
    o.limit = Some(50);
    o.max_chars = 600;
    let page = p.ws.search("build", &o).unwrap();
    assert!(page.hits.len() < 23 && !page.hits.is_empty());
    assert!(serde_json::to_string(&page.hits).unwrap().len() <= 600);
    o.cursor = page.next_cursor.clone();
    let next = p.ws.search("build", &o).unwrap();
    assert!(next.hits.iter().all(|h| page.hits.iter().all(|g| g.id != h.id)));
}

#[test]
fn hostile_queries_get_a_clear_error_or_no_hit() {
    let p = Project::new();
    p.add("a", "decision", 3, None, "Use WAL mode", "2026-01-02T00:00:00Z");
    for query in [
        "AND OR NOT",
        "content:wal^10 OR *",
        "((((wal",
        "\"wal",
        "wal -mode +x ~2 [a TO z] {b}",
        "' OR 1=1; DROP TABLE facts; --",
        "\u{fffd}\u{fffd}",
        "a*",
    ] {
        match p.ws.search(query, &SearchOptions::new()) {
            Ok(page) => assert!(page.hits.len() <= 1, "{query:?}"),
            Err(err) => assert!(matches!(err, Error::InvalidInput { .. }), "{query:?}: {err}"),
        }
    }
    for query in [
        "x".repeat(10_240),
        "wal\u{7}".into(),
        "wal\u{202e}".into(),
        String::new(),
        "*** ()".into(),
    ] {
        let err = p.ws.search(&query, &SearchOptions::new()).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { ref field, .. } if field == "query"), "{err}");
    }
    let many = (0..100).map(|n| format!("w{n}")).collect::<Vec<_>>().join(" ");
    assert!(p.ws.search(&many, &SearchOptions::new()).is_err());
}

#[test]
fn a_forged_or_foreign_index_is_rebuilt_not_trusted() {
    let p = Project::new();
    p.add("a", "decision", 3, None, "Use WAL mode", "2026-01-02T00:00:00Z");
    p.add("b", "decision", 3, None, "Use journal mode", "2026-01-02T00:00:00Z");
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["a".to_owned()]));
    // A copy of the memory directory (as a clone brings one): the index
    // there is bound to other files and is rebuilt.
    let other = tempfile::tempdir().unwrap();
    let copy = other.path().join(".workmem/memory");
    fs::create_dir_all(&copy).unwrap();
    let status = std::process::Command::new("cp")
        .args(["-a", &format!("{}/.", p.ws.memory_dir().display()), copy.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    fs::write(
        other.path().join(".workmem/workspace.toml"),
        format!("id = \"{}\"\n", p.ws.workspace_id()),
    )
    .unwrap();
    let ws2 = Workspace::builder(other.path()).memory_dir(&copy).open().unwrap();
    // Rewrite b's line in the copy to hold "wal" too: an index trusted from
    // the copy would not find it.
    let day = copy.join("daily/2026-01-02.jsonl");
    let text = fs::read_to_string(&day).unwrap().replace("Use journal mode", "Use wal journal");
    let_clock_tick();
    fs::remove_file(&day).unwrap();
    fs::write(&day, text).unwrap();
    assert_eq!(ids(&ws2, "wal"), BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    // An index file replaced behind the state's back.
    let index = p.ws.memory_dir().join(".search-index");
    fs::write(index.join("meta.json"), b"{}").unwrap();
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["a".to_owned()]));
    // Garbage in place of the whole index.
    fs::remove_dir_all(&index).unwrap();
    fs::write(&index, b"not an index").unwrap();
    assert_eq!(ids(&p.ws, "journal"), BTreeSet::from(["b".to_owned()]));
    // A read-only handle answers without writing anything.
    fs::remove_dir_all(&index).unwrap();
    let before = crate::common::snapshot_dir(p.ws.memory_dir());
    let reader = Workspace::builder(p.path()).open_read_only().unwrap();
    assert_eq!(ids(&reader, "mode"), BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    assert_eq!(crate::common::snapshot_dir(p.ws.memory_dir()), before);
}

/// The stamps (inode, size, modification time) of the index's files, as
/// its state file records them: a rebuild writes new files.
fn index_files(ws: &Workspace) -> Vec<String> {
    let state = fs::read_to_string(ws.memory_dir().join(".search-index/workmem-state")).unwrap();
    state.lines().filter(|line| line.starts_with("index ")).map(str::to_owned).collect()
}

/// A search without an index reads the records and builds nothing; the
/// next one builds the index, and both give the same page.
#[test]
fn a_lone_search_reads_the_records_and_a_repeated_one_builds_the_index() {
    let p = Project::new();
    p.add("a", "decision", 3, None, "Use WAL mode", "2026-01-02T00:00:00Z");
    p.add("b", "decision", 3, None, "WAL mode keeps readers going", "2026-01-03T00:00:00Z");
    let index = p.ws.memory_dir().join(".search-index");
    let first = p.ws.search("wal mode", &SearchOptions::new()).unwrap();
    assert_eq!(first.total, 2);
    let names: BTreeSet<String> = fs::read_dir(&index)
        .unwrap()
        .map(|item| item.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, BTreeSet::from(["workmem-scanned".to_owned()]));
    let second = p.ws.search("wal mode", &SearchOptions::new()).unwrap();
    assert!(index.join("workmem-state").exists());
    assert!(!index.join("workmem-scanned").exists());
    assert_eq!(second, first);
    // Appending pays nothing: the index is caught up by the next search.
    let built = index_files(&p.ws);
    p.add("c", "decision", 3, None, "Keep WAL mode on", "2026-01-04T00:00:00Z");
    assert_eq!(index_files(&p.ws), built);
    assert_eq!(p.ws.search("wal mode", &SearchOptions::new()).unwrap().total, 3);
}

/// A retraction and a restore change what a search finds without a
/// rebuild: the index's files keep their stamps, totals and paging stay
/// exact, and the ranking is the one of the records read without it.
#[test]
fn a_correction_does_not_rebuild_the_index() {
    let p = Project::new();
    for n in 0..7 {
        let content = format!("Deploy step {n} ran{}", " again".repeat(n));
        p.add(&format!("f{n}"), "outcome", 3, None, &content, "2026-01-02T00:00:00Z");
    }
    let all: BTreeSet<String> = (0..7).map(|n| format!("f{n}")).collect();
    assert_eq!(ids(&p.ws, "deploy"), all);
    assert_eq!(ids(&p.ws, "deploy"), all);
    let built = index_files(&p.ws);
    let state_path = p.ws.memory_dir().join(".search-index/workmem-state");
    let hidden = || {
        let state = fs::read_to_string(&state_path).unwrap();
        state.lines().filter(|line| line.starts_with("hidden ")).count()
    };
    assert_eq!(hidden(), 0);
    correct(&p.ws, "correction:1", &["f1", "f4"], None);
    let hits = all_hits(&p.ws, "deploy", &SearchOptions::new());
    let left: BTreeSet<String> =
        all.iter().filter(|id| !["f1", "f4"].contains(&id.as_str())).cloned().collect();
    assert_eq!(hits.iter().map(|(_, id)| id.clone()).collect::<BTreeSet<_>>(), left);
    assert_eq!(hits.len(), 5);
    assert_eq!(p.ws.search("deploy", &SearchOptions::new()).unwrap().total, 5);
    assert_eq!(p.ws.search("again", &SearchOptions::new()).unwrap().total, 4);
    assert_eq!(index_files(&p.ws), built, "a retraction rebuilt the index");
    assert_eq!(hidden(), 2);
    same_by_index_and_by_records(&p.ws, "deploy again").unwrap();
    correct(&p.ws, "correction:2", &["f1", "f4"], Some("correction:1"));
    assert_eq!(ids(&p.ws, "deploy"), all);
    assert_eq!(p.ws.search("deploy", &SearchOptions::new()).unwrap().total, 7);
    assert_eq!(index_files(&p.ws), built, "a restore rebuilt the index");
    assert_eq!(hidden(), 0);
    same_by_index_and_by_records(&p.ws, "deploy again").unwrap();
}

/// The index is written without fsync: one written before the current
/// boot (as one a system crash may have torn) is rebuilt, not used.
#[cfg(target_os = "linux")]
#[test]
fn an_index_of_another_boot_is_rebuilt() {
    let p = Project::new();
    p.add("a", "decision", 3, None, "Use WAL mode", "2026-01-02T00:00:00Z");
    let state_path = p.ws.memory_dir().join(".search-index/workmem-state");
    // The first search reads the records, the next builds the index.
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["a".to_owned()]));
    assert!(!state_path.exists());
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["a".to_owned()]));
    // The stamps (inode, size, modification time) of the index's files, as
    // the state file records them: a rebuild writes new files.
    let files = || -> Vec<String> {
        let state = fs::read_to_string(&state_path).unwrap();
        state.lines().filter(|line| line.starts_with("index ")).map(str::to_owned).collect()
    };
    let built = files();
    assert!(!built.is_empty());
    // Of this boot: used as it is.
    let_clock_tick();
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["a".to_owned()]));
    assert_eq!(files(), built);
    let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let boot_line = format!("boot {}", boot.trim());
    let state = fs::read_to_string(&state_path).unwrap();
    assert!(state.lines().any(|line| line == boot_line), "{state}");
    let other = state.replace(&boot_line, "boot 00000000-0000-0000-0000-000000000000");
    fs::write(&state_path, other).unwrap();
    // Not used: the search reads the records instead, and the next one
    // builds the index again.
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["a".to_owned()]));
    assert!(!state_path.exists(), "an index of another boot was kept");
    assert_eq!(ids(&p.ws, "wal"), BTreeSet::from(["a".to_owned()]));
    assert_ne!(files(), built, "an index of another boot was used");
    let state = fs::read_to_string(&state_path).unwrap();
    assert!(state.lines().any(|line| line == boot_line), "{state}");
}

// ---- the property: search equals a brute-force reading ----

const WORDS: [&str; 8] =
    ["alpha", "alpine", "beta", "betamax", "gamma", "parse", "parser", "delta"];
const CJK: [&str; 3] =
    ["\u{6570}\u{636e}\u{5e93}", "\u{8fde}\u{63a5}\u{6c60}", "\u{30c7}\u{30fc}\u{30bf}"];

/// The words of a generated content (space-separated, lowercase).
fn content_of(words: &[u8]) -> String {
    words
        .iter()
        .map(|&w| {
            let w = usize::from(w);
            if w < WORDS.len() { WORDS[w].to_owned() } else { CJK[w % CJK.len()].to_owned() }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A query of the property test and its brute-force rule over a
/// generated content.
#[derive(Debug, Clone)]
enum Q {
    Word(usize),
    Prefix(usize),
    Phrase(usize, usize),
    Cjk(usize, usize),
    Unique(u32),
    /// A word of the memory keys (`key.k0`, `key.k1`): found in the key,
    /// never in a content.
    KeyWord(u8),
}

impl Q {
    fn text(&self) -> String {
        match self {
            Q::Word(w) => WORDS[*w].to_uppercase(),
            Q::Prefix(w) => format!("{}*", &WORDS[*w][..3]),
            Q::Phrase(a, b) => format!("\"{} {}\"", WORDS[*a], WORDS[*b]),
            Q::Cjk(w, start) => {
                let chars: Vec<char> = CJK[*w].chars().collect();
                let start = start % chars.len();
                chars[start..(start + 2).min(chars.len())].iter().collect()
            }
            Q::Unique(n) => format!("zeta{n}"),
            Q::KeyWord(k) => format!("K{k}"),
        }
    }

    fn matches(&self, content: &str, memory_key: Option<&str>) -> bool {
        let words: Vec<&str> = content.split(' ').collect();
        match self {
            Q::Word(w) => words.contains(&WORDS[*w]),
            Q::Prefix(w) => words.iter().any(|x| x.starts_with(&WORDS[*w][..3])),
            Q::Phrase(a, b) => words.windows(2).any(|p| p[0] == WORDS[*a] && p[1] == WORDS[*b]),
            Q::Cjk(..) => words.iter().any(|x| x.contains(&self.text())),
            Q::Unique(n) => words.contains(&format!("zeta{n}").as_str()),
            Q::KeyWord(k) => memory_key == Some(format!("key.k{k}").as_str()),
        }
    }
}

fn q() -> impl Strategy<Value = Q> {
    prop_oneof![
        (0..WORDS.len()).prop_map(Q::Word),
        (0..WORDS.len()).prop_map(Q::Prefix),
        (0..WORDS.len(), 0..WORDS.len()).prop_map(|(a, b)| Q::Phrase(a, b)),
        (0..CJK.len(), 0..3usize).prop_map(|(w, s)| Q::Cjk(w, s)),
        (0u8..2).prop_map(Q::KeyWord),
    ]
}

#[derive(Debug, Clone)]
enum Step {
    /// Append a fact: key (0..2 keyed, else unkeyed), day, words.
    Append {
        key: u8,
        day: u8,
        words: Vec<u8>,
    },
    /// Append a fact with a word no other item has, and search it.
    Unique {
        day: u8,
    },
    /// Append two values of a new key at the same time and distill: tied,
    /// they wait in an open conflict case.
    Tie {
        day: u8,
        words: Vec<u8>,
    },
    Distill {
        day: u8,
    },
    /// Resolve the first open conflict case for its first candidate.
    Resolve,
    /// Retract one or two facts recorded so far (some distilled, some
    /// not), picked by these numbers.
    Retract(u16, u16, bool),
    /// Restore a retraction in force, picked by this number.
    Restore(u16),
    Search(Q),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u8..4, 1u8..12, prop::collection::vec(0u8..11, 1..5))
            .prop_map(|(key, day, words)| Step::Append { key, day, words }),
        1 => (1u8..12).prop_map(|day| Step::Unique { day }),
        1 => (1u8..12, prop::collection::vec(0u8..11, 1..4))
            .prop_map(|(day, words)| Step::Tie { day, words }),
        2 => (1u8..12).prop_map(|day| Step::Distill { day }),
        2 => Just(Step::Resolve),
        2 => (any::<u16>(), any::<u16>(), any::<bool>())
            .prop_map(|(a, b, two)| Step::Retract(a, b, two)),
        1 => any::<u16>().prop_map(Step::Restore),
        4 => q().prop_map(Step::Search),
    ]
}

/// The hits a brute-force reading of the current state gives: the active
/// entries and every fact not retracted whose content or memory key
/// matches.
fn reference(ws: &Workspace, query: &Q) -> BTreeSet<(HitType, String)> {
    let mut out = BTreeSet::new();
    for entry in ws.curated().unwrap().entries.iter().filter(|e| e.is_active()) {
        if query.matches(&entry.content, entry.memory_key.as_deref()) {
            out.insert((HitType::Entry, entry.key.clone()));
        }
    }
    let retractions = ws.retractions().unwrap();
    for fact in ws.facts().unwrap() {
        if retractions.is_retracted(fact.fact_id()) {
            continue;
        }
        if query.matches(fact.content(), fact.memory_key()) {
            out.insert((HitType::Fact, fact.fact_id().to_owned()));
        }
    }
    out
}

fn check(ws: &Workspace, query: &Q) -> Result<(), TestCaseError> {
    let hits = all_hits(ws, &query.text(), &SearchOptions::new());
    let entries_first =
        hits.windows(2).all(|p| !(p[0].0 == HitType::Fact && p[1].0 == HitType::Entry));
    prop_assert!(entries_first, "{:?}", hits);
    let got: BTreeSet<(HitType, String)> = hits.iter().cloned().collect();
    prop_assert_eq!(got.len(), hits.len(), "a hit repeated");
    prop_assert_eq!(got, reference(ws, query), "query {:?}", query.text());
    same_by_index_and_by_records(ws, &query.text())
}

/// One hit as a ranked page shows it: type, id and the score's bits.
type Ranked = (HitType, String, u32);

/// Every hit of `query` in order with its score, and each page's total,
/// paging with the cursor to the end: `handles` answer the pages in turn.
fn ranked(
    handles: &[&dyn Search],
    query: &str,
    options: &SearchOptions,
) -> (Vec<Ranked>, Vec<usize>) {
    let mut options = options.clone();
    options.limit = Some(2);
    let (mut hits, mut totals) = (Vec::new(), Vec::new());
    for turn in 0.. {
        let page = handles[turn % handles.len()].search(query, &options).expect("search");
        hits.extend(page.hits.iter().map(|h| (h.hit_type, h.id.clone(), h.score.to_bits())));
        totals.push(page.total);
        match page.next_cursor {
            Some(cursor) => options.cursor = Some(cursor),
            None => break,
        }
    }
    (hits, totals)
}

/// The index (of a writable handle, built by a repeated search) and the
/// records read without it (a read-only handle never has an index) give
/// the same hits, scores, order and totals, and a cursor of either pages
/// on in the other.
fn same_by_index_and_by_records(ws: &Workspace, query: &str) -> Result<(), TestCaseError> {
    let reader = Workspace::builder(ws.project()).open_read_only().unwrap();
    for options in [SearchOptions::new(), {
        let mut facts = SearchOptions::new();
        facts.scope = SearchScope::Facts;
        facts.kind = Some(Kind::Decision);
        facts
    }] {
        // Twice: a search without a usable index reads the records and
        // the next one builds it.
        ws.search(query, &options).unwrap();
        ws.search(query, &options).unwrap();
        let built = ws.memory_dir().join(".search-index/workmem-state").exists();
        prop_assert!(built || !ws.memory_dir().is_dir());
        let by_index = ranked(&[ws], query, &options);
        let by_records = ranked(&[&reader], query, &options);
        prop_assert_eq!(&by_index, &by_records, "query {:?}", query);
        prop_assert_eq!(&ranked(&[&reader, ws], query, &options), &by_records);
        prop_assert_eq!(&ranked(&[ws, &reader], query, &options), &by_records);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/test_search.txt"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn search_finds_exactly_what_a_brute_force_reading_finds(steps in prop::collection::vec(step(), 1..30)) {
        let p = Project::new();
        let ws = open(p.path());
        let policy = Policy { repeat_threshold: 1, ..Policy::default() };
        // The retractions in force, by event id, with the facts they name.
        let mut in_force: Vec<(String, Vec<String>)> = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Append { key, day, words } => {
                    let memory_key = (*key < 2).then(|| format!("key.k{key}"));
                    ws.remember(fact(
                        &format!("f{i:03}"), "decision", 3, memory_key.as_deref(),
                        &content_of(words), &format!("2026-01-{day:02}T{:02}:00:00Z", i % 24),
                    )).unwrap();
                }
                Step::Unique { day } => {
                    ws.remember(fact(
                        &format!("u{i:03}"), "outcome", 3, None,
                        &format!("gamma zeta{i} delta"), &format!("2026-01-{day:02}T00:00:00Z"),
                    )).unwrap();
                    let page = ws.search(&format!("zeta{i}"), &SearchOptions::new()).unwrap();
                    prop_assert_eq!(page.hits.first().map(|h| h.id.clone()), Some(format!("u{i:03}")));
                    check(&ws, &Q::Unique(i as u32))?;
                }
                Step::Tie { day, words } => {
                    for (n, value) in ["one", "two"].into_iter().enumerate() {
                        ws.remember(fact(
                            &format!("t{i:03}{n}"), "decision", 3, Some(&format!("key.t{i}")),
                            &format!("{} {value}", content_of(words)),
                            &format!("2026-01-{day:02}T00:00:00Z"),
                        )).unwrap();
                    }
                    p.distill_with(&policy, "2026-02-28T00:00:00Z");
                }
                Step::Distill { day } => {
                    p.distill_with(&policy, &format!("2026-02-{:02}T00:00:00Z", (*day).min(28)));
                }
                Step::Resolve => {
                    let queue = ws.conflicts().unwrap();
                    if let Some(case) = queue.cases.iter().find(|c| c.status == workmem::CaseStatus::Open) {
                        ws.resolve(Resolution {
                            conflict_id: case.conflict_id.clone(),
                            candidate_id: case.candidates[0].candidate_id.clone(),
                            expected_revision: i64::from(case.revision),
                            actor: "Ada <ada@example.com>".into(),
                            rationale: "chosen".into(),
                            event_id: format!("review:{i}"),
                            resolved_at: None,
                        }).unwrap();
                    }
                }
                Step::Retract(a, b, two) => {
                    let recorded: Vec<String> =
                        ws.facts().unwrap().iter().map(|f| f.fact_id().to_owned()).collect();
                    if recorded.is_empty() {
                        continue;
                    }
                    let mut named = vec![recorded[usize::from(*a) % recorded.len()].clone()];
                    if *two {
                        named.push(recorded[usize::from(*b) % recorded.len()].clone());
                    }
                    let event = format!("correction:{i}");
                    let refs: Vec<&str> = named.iter().map(String::as_str).collect();
                    correct(&ws, &event, &refs, None);
                    in_force.push((event, named));
                }
                Step::Restore(pick) => {
                    if in_force.is_empty() {
                        continue;
                    }
                    let (target, named) = in_force.remove(usize::from(*pick) % in_force.len());
                    let refs: Vec<&str> = named.iter().map(String::as_str).collect();
                    correct(&ws, &format!("correction:{i}"), &refs, Some(&target));
                }
                Step::Search(query) => check(&ws, query)?,
            }
        }
        for query in [Q::Word(0), Q::Prefix(2), Q::Cjk(0, 1), Q::Phrase(0, 2)] {
            check(&ws, &query)?;
        }
    }
}

/// A page's JSON holds what each hit is.
#[test]
fn a_hit_says_what_it_is() {
    let p = Project::new();
    p.add("k1", "decision", 4, Some("db.engine"), "Use Postgres", "2026-01-02T00:00:00Z");
    let page: SearchPage = p.ws.search("postgres", &SearchOptions::new()).unwrap();
    let json = serde_json::to_value(&page).unwrap();
    let hit = &json["hits"][0];
    assert_eq!(hit["type"], "fact");
    assert_eq!(hit["id"], "k1");
    assert_eq!(hit["kind"], "decision");
    assert_eq!(hit["memory_key"], "db.engine");
    assert_eq!(hit["status"], "pending");
    assert_eq!(hit["recorded_at"], "2026-01-02T00:00:00Z");
    assert_eq!(hit["snippet"], "Use **Postgres**");
    assert!(hit["score"].as_f64().unwrap() > 0.0);
    assert_eq!(json["next_cursor"], serde_json::Value::Null);
}
