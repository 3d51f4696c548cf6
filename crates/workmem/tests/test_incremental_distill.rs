//! A distill that starts from the distill cache gives exactly what a
//! distill over the whole log gives: after random appends (through the
//! library and by other writers), moves of `as_of` (forward, backward,
//! standing still), policy changes, resolutions and damaged caches, every
//! file a cold run writes is byte-identical, and so is the report.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use workmem::internals;
use workmem::{
    CaseStatus, DistillOptions, Distilled, FixedClock, NewFact, Policy, Resolution, SourcePolicy,
    Stamp, Workspace,
};

use crate::common::{append_raw, stamp};

const CACHES: [&str; 4] =
    [".distill-cache", ".distill-cache.units", ".distill-cache.ids", ".distill-cache.places"];

fn open_at(project: &Path, memory: &Path) -> Workspace {
    Workspace::builder(project)
        .memory_dir(memory)
        .clock(Arc::new(FixedClock::new(stamp("2026-06-01T00:00:00Z"))))
        .open()
        .expect("open")
}

/// The files of a memory directory that are not caches.
fn state_files(memory: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for name in ["curated.json", "conflicts.json", "MEMORY.md"] {
        if let Ok(bytes) = fs::read(memory.join(name)) {
            out.insert(PathBuf::from(name), bytes);
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Facts through the library (explicit ids).
    Remember(Vec<FactSpec>),
    /// A fact appended by another writer, straight to its daily file.
    Raw(FactSpec),
    /// A line repeating an id the log holds (another tool's duplicate).
    Duplicate { of: usize, day: u32 },
    /// Distill with `as_of` moved by `step` days (mostly forward), under
    /// another policy when `policy` is set.
    Distill { step: i32, policy: Option<usize> },
    /// Decide the first open case for its first challenger.
    Resolve,
    /// A damaged cache: cut to `keep`/200 of its length, or, from 200 on,
    /// with up to `keep - 200` bytes of a stray section appended.
    Damage { which: usize, keep: usize },
    /// Another tool edits a keyed fact in place (same file, same length):
    /// its value changes, a distill must not keep what it read before.
    Edit { of: usize },
    /// Time passes: `daily/` and its files get an old modification time,
    /// so that a distill may keep the stamp of its listing (and skip the
    /// next listing while the stamp holds).
    Settle,
    /// A person retracts a fact that is evidence of nothing (a record of
    /// the corrections stream, written as the retract command writes it).
    Retract { of: usize },
    /// A person restores the oldest retraction of a fact that was
    /// evidence of nothing still in force.
    Restore,
    /// A person retracts every evidence fact of an entry that no open
    /// case rests on: the entry becomes `retracted` (the state the retract
    /// command leaves), and its domain, when it was the active value, is
    /// judged again by the next distill.
    RetractEntry { of: usize },
}

#[derive(Debug, Clone)]
struct FactSpec {
    key: Option<usize>,
    value: usize,
    kind: usize,
    importance: i64,
    source: usize,
    day: u32,
    hour: u32,
}

fn fact_spec() -> impl Strategy<Value = FactSpec> {
    (
        prop_oneof![Just(None), (0..3usize).prop_map(Some)],
        0..3usize,
        0..4usize,
        1..=5i64,
        0..2usize,
        0..120u32,
        0..24u32,
    )
        .prop_map(|(key, value, kind, importance, source, day, hour)| FactSpec {
            key,
            value,
            kind,
            importance,
            source,
            day,
            hour,
        })
}

fn op(duplicates: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => proptest::collection::vec(fact_spec(), 1..6).prop_map(Op::Remember),
        // Two values of a key, equally strong: a tie once they age.
        2 => (0..3usize, 0..118u32, 1..=5i64).prop_map(|(key, day, importance)| {
            let fact = |value, day| FactSpec {
                key: Some(key),
                value,
                kind: 0,
                importance,
                source: 0,
                day,
                hour: 1,
            };
            Op::Remember(vec![fact(0, day), fact(0, day + 1), fact(1, day), fact(1, day + 1)])
        }),
        2 => fact_spec().prop_map(Op::Raw),
        duplicates => (0..50usize, 0..120u32).prop_map(|(of, day)| Op::Duplicate { of, day }),
        8 => (prop_oneof![6 => 0..4i32, 2 => 4..20i32, 1 => -20..0i32], prop_oneof![9 => Just(None), 1 => (0..3usize).prop_map(Some)])
            .prop_map(|(step, policy)| Op::Distill { step, policy }),
        1 => Just(Op::Resolve),
        1 => (0..CACHES.len(), 0..260usize).prop_map(|(which, keep)| Op::Damage { which, keep }),
        2 => Just(Op::Settle),
        1 => (0..50usize).prop_map(|of| Op::Edit { of }),
        4 => prop_oneof![
            2 => (0..50usize).prop_map(|of| Op::Retract { of }),
            1 => Just(Op::Restore),
            2 => (0..50usize).prop_map(|of| Op::RetractEntry { of }),
        ],
    ]
}

fn day_stamp(day: u32, hour: u32) -> String {
    let at = jiff::Timestamp::from_second(1_767_225_600).unwrap() // 2026-01-01
        + jiff::SignedDuration::from_hours(i64::from(day) * 24 + i64::from(hour));
    Stamp::from_timestamp(at).as_str().to_owned()
}

fn new_fact(spec: &FactSpec, id: &str) -> NewFact {
    let kinds = ["decision", "convention", "pitfall", "outcome"];
    let (memory_key, content) = workmem_testutil::history_fact(spec.key, spec.value);
    NewFact {
        content,
        kind: Some(kinds[spec.kind].to_owned()),
        importance: Some(spec.importance),
        memory_key,
        source: Some(["agent", "user"][spec.source].to_owned()),
        evidence: BTreeMap::new(),
        recorded_at: Some(day_stamp(spec.day, spec.hour)),
        fact_id: Some(id.to_owned()),
    }
}

fn policy(n: usize) -> Policy {
    let mut policy = Policy::default();
    match n {
        1 => {
            policy.sources.insert(
                "user".into(),
                SourcePolicy { minimum_age_days: Some(7), minimum_importance: Some(3) },
            );
        }
        2 => policy.repeat_threshold = 3,
        _ => {}
    }
    policy
}

fn distilled(ws: &Workspace, as_of: &str, policy: &Policy) -> Distilled {
    ws.distill(&DistillOptions::new().policy(policy.clone()).as_of(stamp(as_of))).expect("distill")
}

fn run(ops: &[Op]) {
    let project = tempfile::tempdir().unwrap();
    let memory = project.path().join(".workmem/memory");
    let ws = open_at(project.path(), &memory);
    ws.init().unwrap();
    let mut next_id = 0;
    let mut ids: Vec<(String, FactSpec)> = Vec::new();
    let mut event = 0;
    let mut as_of_day: i32 = 40;
    let mut policy_in_use = 0;
    // Retractions in force, oldest first: (event id, fact id).
    let mut retracted: Vec<(String, String)> = Vec::new();
    let mut corrections = 0;
    let correct = |facts: &[&str], restores: Option<&str>, event: &str| {
        let record = serde_json::json!({
            "action": if restores.is_some() { "restore" } else { "retract" },
            "actor": "Ada", "entry_key": null, "event_id": event, "fact_ids": facts,
            "rationale": "wrong", "recorded_at": "2026-01-01T00:00:00Z", "restores": restores,
            "schema_version": 1, "workspace_id": ws.workspace_id(),
        });
        let mut stream = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(memory.join("memory-corrections.jsonl"))
            .unwrap();
        stream.write_all(format!("{record}\n").as_bytes()).unwrap();
    };
    for op in ops {
        match op {
            Op::Remember(specs) => {
                for spec in specs {
                    let id = format!("f{next_id}");
                    next_id += 1;
                    ws.remember(new_fact(spec, &id)).expect("remember");
                    ids.push((id, spec.clone()));
                }
            }
            Op::Raw(spec) => {
                let id = format!("f{next_id}");
                next_id += 1;
                let line = ws.prepare(new_fact(spec, &id)).unwrap().to_line();
                let path =
                    memory.join("daily").join(format!("{}.jsonl", &day_stamp(spec.day, 0)[..10]));
                if path.exists() {
                    append_raw(&path, line.as_bytes());
                } else {
                    fs::write(&path, line).unwrap();
                }
                ids.push((id, spec.clone()));
            }
            Op::Duplicate { of, day } => {
                if ids.is_empty() {
                    continue;
                }
                let (id, spec) = &ids[of % ids.len()];
                let spec = FactSpec { day: *day, value: (spec.value + 1) % 3, ..spec.clone() };
                let line = ws.prepare(new_fact(&spec, id)).unwrap().to_line();
                let path =
                    memory.join("daily").join(format!("{}.jsonl", &day_stamp(*day, 0)[..10]));
                if path.exists() {
                    append_raw(&path, line.as_bytes());
                } else {
                    fs::write(&path, line).unwrap();
                }
            }
            Op::Distill { step, policy: n } => {
                as_of_day = (as_of_day + step).clamp(0, 150);
                policy_in_use = n.unwrap_or(policy_in_use);
                let as_of = day_stamp(as_of_day as u32, 0);
                let policy = policy(policy_in_use);
                // The same state, without any cache: the whole log.
                let cold_dir = tempfile::tempdir().unwrap();
                let cold_memory = cold_dir.path().join("memory");
                copy_dir(&memory, &cold_memory);
                for name in CACHES {
                    let _ = fs::remove_file(cold_memory.join(name));
                }
                let _ = fs::remove_dir_all(cold_memory.join(".id-index"));
                let cold_ws = open_at(project.path(), &cold_memory);
                // The copy stands for this clone's own state (which a hand
                // edit of the log may have made inconsistent), not for one
                // that arrived from elsewhere and is checked before use.
                internals::record_state_as_written(&cold_ws);
                // What `status` counts, from the cache the last run left
                // (when it can answer) and from the whole log.
                let at = stamp(&as_of);
                if let Some(counts) = internals::fact_counts_from_cache(&ws, &policy, &at).unwrap()
                {
                    let whole = internals::fact_counts_from_log(&cold_ws, &policy, &at).unwrap();
                    assert_eq!(counts, whole, "fact counts at {as_of} after {ops:?}");
                }
                // What `logs` counts per daily file, likewise.
                if let Some(days) = internals::day_counts_from_cache(&ws).unwrap() {
                    assert_eq!(days, cold_ws.log_days().unwrap(), "daily counts after {ops:?}");
                }
                let cold = distilled(&cold_ws, &as_of, &policy);
                let warm = distilled(&ws, &as_of, &policy);
                assert_eq!(warm, cold, "report at {as_of} after {ops:?}");
                assert_eq!(
                    state_files(&memory),
                    state_files(&cold_memory),
                    "files at {as_of} after {ops:?}"
                );
            }
            Op::Resolve => {
                let queue = ws.conflicts().unwrap();
                let Some(case) = queue.cases.iter().find(|c| c.status == CaseStatus::Open) else {
                    continue;
                };
                let candidate = case.candidates.iter().find(|c| !c.incumbent).unwrap();
                event += 1;
                let decided = ws.resolve(Resolution {
                    conflict_id: case.conflict_id.clone(),
                    candidate_id: candidate.candidate_id.clone(),
                    expected_revision: i64::from(case.revision),
                    actor: "reviewer".into(),
                    rationale: "test".into(),
                    event_id: format!("ev-{event}"),
                    resolved_at: None,
                });
                match decided {
                    // A case whose key gained facts since it was queued is
                    // refused until a distill brings it up to date.
                    Err(workmem::Error::StaleResolution(_)) => {}
                    other => {
                        other.expect("resolve");
                    }
                }
            }
            Op::Damage { which, keep } => {
                let path = memory.join(CACHES[*which]);
                if let Ok(mut data) = fs::read(&path) {
                    if *keep < 200 {
                        // Cut short.
                        data.truncate((*keep * data.len() / 200).min(data.len().saturating_sub(1)));
                    } else {
                        // A section a crash left half written, or one
                        // with a token no header names.
                        let junk = b"append 7\nu 0123456789abcdef 0\nend\nd k.x 0 - 9\ni a:";
                        data.extend_from_slice(&junk[..(*keep - 200).min(junk.len())]);
                    }
                    fs::write(&path, &data).unwrap();
                }
            }
            Op::Edit { of } => {
                let keyed: Vec<usize> =
                    (0..ids.len()).filter(|&n| ids[n].1.key.is_some()).collect();
                let Some(&n) = keyed.get(of % keyed.len().max(1)) else { continue };
                let (id, spec) = &mut ids[n];
                let path =
                    memory.join("daily").join(format!("{}.jsonl", &day_stamp(spec.day, 0)[..10]));
                let text = fs::read_to_string(&path).unwrap();
                let old = format!("uses value {}.", spec.value);
                spec.value = (spec.value + 1) % 3;
                let new = format!("uses value {}.", spec.value);
                let quoted = format!("\"{id}\"");
                let edited: String = text
                    .split_inclusive('\n')
                    .map(|line| {
                        if line.contains(&quoted) {
                            line.replace(&old, &new)
                        } else {
                            line.to_owned()
                        }
                    })
                    .collect();
                assert_eq!(edited.len(), text.len());
                // In place: the same file, rewritten from its start.
                fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .write_all(edited.as_bytes())
                    .unwrap();
            }
            Op::Retract { of } => {
                // Only a fact that no entry and no case rests on: the
                // derived files then stay as the command leaves them.
                let cited: std::collections::HashSet<String> = ws
                    .curated()
                    .unwrap()
                    .entries
                    .iter()
                    .flat_map(|e| e.evidence_ids.iter().map(str::to_owned))
                    .chain(ws.conflicts().unwrap().cases.iter().flat_map(|c| {
                        c.candidates.iter().flat_map(|k| k.evidence_ids.iter().map(str::to_owned))
                    }))
                    .collect();
                let open_keys: std::collections::HashSet<String> = ws
                    .conflicts()
                    .unwrap()
                    .cases
                    .iter()
                    .filter(|c| c.status == CaseStatus::Open)
                    .map(|c| c.memory_key.clone())
                    .collect();
                let free: Vec<&String> = ids
                    .iter()
                    .filter(|(id, spec)| {
                        !cited.contains(id)
                            && spec.key.is_none_or(|k| {
                                !open_keys.contains(&workmem_testutil::history_key(k))
                            })
                            && !retracted.iter().any(|(_, f)| f == id)
                    })
                    .map(|(id, _)| id)
                    .collect();
                let Some(id) = free.get(of % free.len().max(1)) else { continue };
                corrections += 1;
                let event = format!("correction:{corrections}");
                correct(&[id.as_str()], None, &event);
                retracted.push((event, (*id).clone()));
            }
            Op::Restore => {
                if retracted.is_empty() {
                    continue;
                }
                let (target, fact) = retracted.remove(0);
                corrections += 1;
                correct(&[fact.as_str()], Some(&target), &format!("correction:{corrections}"));
            }
            Op::RetractEntry { of } => {
                let queue = ws.conflicts().unwrap();
                let open: Vec<&workmem::Case> =
                    queue.cases.iter().filter(|c| c.status == CaseStatus::Open).collect();
                let mut state = ws.curated().unwrap();
                let eligible: Vec<usize> = (0..state.entries.len())
                    .filter(|&i| {
                        let entry = &state.entries[i];
                        !entry.evidence_ids.is_empty()
                            && !entry.is_contested()
                            && state.entries.iter().enumerate().all(|(j, other)| {
                                j == i
                                    || !other
                                        .evidence_ids
                                        .iter()
                                        .any(|id| entry.evidence_ids.contains(id))
                            })
                            && !open.iter().any(|c| {
                                Some(&c.memory_key) == entry.memory_key.as_ref()
                                    || c.candidates.iter().any(|k| {
                                        k.evidence_ids
                                            .iter()
                                            .any(|id| entry.evidence_ids.contains(id))
                                    })
                            })
                    })
                    .collect();
                let Some(&i) = eligible.get(of % eligible.len().max(1)) else { continue };
                let facts: Vec<String> =
                    state.entries[i].evidence_ids.iter().map(str::to_owned).collect();
                let named: Vec<&str> = facts.iter().map(String::as_str).collect();
                // Every entry that cites one of them loses it.
                for entry in &mut state.entries {
                    let taken: Vec<&str> =
                        entry.evidence_ids.iter().filter(|id| named.contains(id)).collect();
                    if taken.is_empty() {
                        continue;
                    }
                    let kept: workmem::IdList =
                        entry.evidence_ids.iter().filter(|id| !named.contains(id)).collect();
                    assert!(kept.is_empty(), "the entry's facts are cited by it alone");
                    entry.retracted_evidence_ids =
                        workmem::IdList::union(&entry.retracted_evidence_ids, taken);
                    entry.occurrences = 0;
                    entry.evidence_ids = kept;
                    entry.status = workmem::Status::Retracted;
                }
                state.schema_version = 3;
                internals::save_curated(&ws, &state).unwrap();
                corrections += 1;
                correct(&named, None, &format!("correction:{corrections}"));
            }
            Op::Settle => {
                let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
                let daily = memory.join("daily");
                if let Ok(entries) = fs::read_dir(&daily) {
                    for entry in entries {
                        let file = fs::File::open(entry.unwrap().path()).unwrap();
                        file.set_modified(past).unwrap();
                    }
                    fs::File::open(&daily).unwrap().set_modified(past).unwrap();
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn an_incremental_distill_equals_a_distill_of_the_whole_log(
        ops in prop_oneof![
            4 => proptest::collection::vec(op(0), 1..40),
            1 => proptest::collection::vec(op(1), 1..40),
        ]
    ) {
        run(&ops);
    }
}

/// A decision of key 0 with `value`, recorded on `day`.
fn spec(value: usize, day: u32) -> FactSpec {
    FactSpec { key: Some(0), value, kind: 0, importance: 4, source: 0, day, hour: 1 }
}

#[test]
fn a_fact_edited_in_place_is_read_again() {
    // Two values of one key, the second ahead (and promoted); then the
    // first value's fact, which is evidence of nothing, is edited to the
    // second value in place: it counts for it now.
    run(&[
        Op::Remember(vec![spec(0, 0), spec(1, 0), spec(1, 1)]),
        Op::Distill { step: 0, policy: None },
        Op::Edit { of: 0 },
        Op::Distill { step: 0, policy: None },
    ]);
}

#[test]
fn a_tie_an_incremental_run_finds_is_queued() {
    // Two values of one key, equally strong, too young at the first run;
    // the second run finds them aged, and tied: its queue changes (a case
    // opens), and so does conflicts.json, spliced.
    run(&[
        Op::Remember(vec![spec(0, 30), spec(0, 31), spec(1, 30), spec(1, 31)]),
        Op::Distill { step: 0, policy: None },
        Op::Remember(vec![spec(2, 32)]),
        Op::Distill { step: 25, policy: None },
    ]);
}

#[test]
fn a_distill_with_nothing_new_reads_no_daily_file_and_writes_nothing() {
    let project = tempfile::tempdir().unwrap();
    let memory = project.path().join(".workmem/memory");
    let ws = open_at(project.path(), &memory);
    for n in 0..40u32 {
        let spec = FactSpec {
            key: Some((n % 3) as usize),
            value: (n % 2) as usize,
            kind: 0,
            importance: 4,
            source: 0,
            day: n,
            hour: 1,
        };
        ws.remember(new_fact(&spec, &format!("f{n}"))).unwrap();
    }
    let policy = Policy::default();
    let first = distilled(&ws, "2026-03-15T00:00:00Z", &policy);
    assert!(memory.join(".distill-cache").exists());
    // Every daily file garbled in place, keeping its stamp: a run that
    // read one would fail.
    for entry in fs::read_dir(memory.join("daily")).unwrap() {
        let path = entry.unwrap().path();
        let meta = fs::metadata(&path).unwrap();
        let mut garbage = vec![b'#'; meta.len() as usize];
        garbage[meta.len() as usize - 1] = b'\n';
        use std::os::unix::fs::FileExt;
        fs::OpenOptions::new().write(true).open(&path).unwrap().write_all_at(&garbage, 0).unwrap();
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(meta.modified().unwrap())
            .unwrap();
    }
    let before = crate::common::snapshot_dir(&memory);
    let again = distilled(&ws, "2026-03-15T00:00:00Z", &policy);
    assert_eq!(again.report.scanned, first.report.scanned);
    assert_eq!((again.report.created, again.report.skipped), (0, first.report.scanned));
    assert_eq!(crate::common::snapshot_dir(&memory), before, "a run with nothing new wrote");
}

/// The library's own appends go on the append trail: a distill after
/// them reads what was appended and the bytes after the last whole block it
/// had hashed, not the file again (garbling the blocks before, keeping the
/// stamp, goes unnoticed). Without the trail it hashes the file again,
/// finds it changed, and distills the whole log, which it refuses.
#[test]
fn a_distill_after_the_librarys_appends_reads_only_what_they_added() {
    let policy = Policy::default();
    for trail in [true, false] {
        let project = tempfile::tempdir().unwrap();
        let memory = project.path().join(".workmem/memory");
        let ws = open_at(project.path(), &memory);
        for n in 0..40u32 {
            ws.remember(new_fact(&spec((n % 2) as usize, 0), &format!("f{n}"))).unwrap();
        }
        let first = distilled(&ws, "2026-03-15T00:00:00Z", &policy);
        let path = memory.join("daily").join(format!("{}.jsonl", &day_stamp(0, 0)[..10]));
        let read = fs::metadata(&path).unwrap().len() as usize;
        assert!(read > 8192, "the file spans whole blocks");
        ws.remember(new_fact(&spec(1, 0), "g0")).unwrap();
        crate::common::garble_start_keeping_stamp(&path, read - read % 4096);
        if !trail {
            fs::remove_file(memory.join(".append-trail")).unwrap();
        }
        let options =
            DistillOptions::new().policy(policy.clone()).as_of(stamp("2026-03-15T00:00:00Z"));
        match ws.distill(&options) {
            Ok(again) if trail => assert_eq!(again.report.scanned, first.report.scanned + 1),
            Err(workmem::Error::Corrupt { .. }) if !trail => {}
            other => panic!("trail {trail}: {other:?}"),
        }
    }
}

/// Sets every bit of the distill cache's id filter: it then says that
/// every id may be in the log.
fn saturate_id_filter(memory: &Path) {
    let ids_file = memory.join(".distill-cache.ids");
    let mut filter = fs::read(&ids_file).unwrap();
    let body = filter.iter().position(|b| *b == b'\n').unwrap() + 1;
    let end = filter.windows(4).position(|w| w == b"end\n").unwrap();
    filter[body..end].fill(0xff);
    fs::write(&ids_file, &filter).unwrap();
}

#[test]
fn status_counts_the_facts_from_the_cache_and_what_was_appended_since() {
    let project = tempfile::tempdir().unwrap();
    let memory = project.path().join(".workmem/memory");
    let ws = open_at(project.path(), &memory);
    let fact = |n: u32, day: u32| FactSpec {
        key: (n % 4 != 3).then_some((n % 3) as usize),
        value: (n % 2) as usize,
        kind: (n % 4) as usize,
        importance: 4,
        source: (n % 2) as usize,
        day,
        hour: n % 24,
    };
    for n in 0..40u32 {
        ws.remember(new_fact(&fact(n, n), &format!("f{n}"))).unwrap();
    }
    let policy = policy(1);
    distilled(&ws, &day_stamp(20, 0), &policy);
    // Appended since: through the library and by another writer, into old
    // and new daily files.
    for n in 40..60u32 {
        ws.remember(new_fact(&fact(n, n - 30), &format!("f{n}"))).unwrap();
    }
    let raw = ws.prepare(new_fact(&fact(60, 44), "f60")).unwrap().to_line();
    fs::write(memory.join("daily").join(format!("{}.jsonl", &day_stamp(44, 0)[..10])), raw)
        .unwrap();
    for day in [0, 25, 40, 70] {
        let at = stamp(&day_stamp(day, 0));
        let counts = internals::fact_counts_from_cache(&ws, &policy, &at).unwrap();
        let whole = internals::fact_counts_from_log(&ws, &policy, &at).unwrap();
        assert_eq!(counts, Some(whole.clone()), "as of day {day}");
        assert_eq!(whole.0, 61);
        if day == 25 {
            assert!(whole.1 > 0 && whole.2.is_some(), "{whole:?}");
        }
    }
    // What `logs` counts, from the cache and the appended lines: every
    // line of these files is a fact of its own.
    let mut lines = BTreeMap::new();
    for entry in fs::read_dir(memory.join("daily")).unwrap() {
        let path = entry.unwrap().path();
        let day = path.file_stem().unwrap().to_string_lossy().into_owned();
        lines.insert(day, fs::read_to_string(&path).unwrap().lines().count());
    }
    let days = internals::day_counts_from_cache(&ws).unwrap().expect("counted from the cache");
    let days: BTreeMap<String, usize> = days.into_iter().map(|d| (d.day, d.facts)).collect();
    assert_eq!(days, lines);
    // A filter that says every id may be in the log: each appended id is
    // looked up in the id index instead.
    saturate_id_filter(&memory);
    let at = stamp(&day_stamp(25, 0));
    let whole = internals::fact_counts_from_log(&ws, &policy, &at).unwrap();
    assert_eq!(internals::fact_counts_from_cache(&ws, &policy, &at).unwrap(), Some(whole));
    // An id written twice: only the whole log says which record counts.
    let again = ws.prepare(new_fact(&fact(0, 50), "f3")).unwrap().to_line();
    append_raw(
        &memory.join("daily").join(format!("{}.jsonl", &day_stamp(44, 0)[..10])),
        again.as_bytes(),
    );
    assert_eq!(internals::fact_counts_from_cache(&ws, &policy, &at).unwrap(), None);
    assert_eq!(internals::day_counts_from_cache(&ws).unwrap(), None);
    assert_eq!(internals::fact_counts_from_log(&ws, &policy, &at).unwrap().0, 61);
}

#[test]
fn an_id_the_filter_may_hold_is_looked_up_in_the_id_index() {
    let project = tempfile::tempdir().unwrap();
    let memory = project.path().join(".workmem/memory");
    let ws = open_at(project.path(), &memory);
    for n in 0..30u32 {
        ws.remember(new_fact(&spec((n % 2) as usize, n), &format!("f{n}"))).unwrap();
    }
    let policy = Policy::default();
    distilled(&ws, &day_stamp(60, 0), &policy);
    // A filter that says every id may be in the log.
    saturate_id_filter(&memory);
    for n in 30..34u32 {
        ws.remember(new_fact(&spec(1, n), &format!("f{n}"))).unwrap();
    }
    let units = memory.join(".distill-cache.units");
    let first_section = fs::read(&units).unwrap()[..40].to_vec();
    let cold_dir = tempfile::tempdir().unwrap();
    let cold_memory = cold_dir.path().join("memory");
    copy_dir(&memory, &cold_memory);
    for name in CACHES {
        let _ = fs::remove_file(cold_memory.join(name));
    }
    let cold = distilled(&open_at(project.path(), &cold_memory), &day_stamp(61, 0), &policy);
    let warm = distilled(&ws, &day_stamp(61, 0), &policy);
    assert_eq!(warm, cold);
    assert_eq!(state_files(&memory), state_files(&cold_memory));
    // The run went on from the cache: it appended to the units file
    // rather than writing it anew (a new token) after reading the log.
    assert_eq!(fs::read(&units).unwrap()[..40], first_section[..]);
}
