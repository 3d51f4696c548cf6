//! The merge rules of docs/sharing.md, one by one, on state written by
//! real workspaces: a base with a tie, copied (same pinned id) and changed
//! on each side, merged with `merge_memory_file` both ways.
#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use workmem::{FixedClock, MemoryFile, MergeSides, Resolution, Workspace};

use crate::common::{AS_OF, fact, stamp};

const ID: &str = "0123456789abcdef";

/// A project with a pinned id, in its own temporary directory.
struct Side {
    dir: tempfile::TempDir,
    ws: Workspace,
}

impl Side {
    /// A new project whose memory holds a tie on `db.engine` and an
    /// unkeyed decision, distilled.
    fn base() -> Side {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".workmem")).unwrap();
        std::fs::write(dir.path().join(".workmem/workspace.toml"), format!("id = \"{ID}\"\n"))
            .unwrap();
        let side = Side { ws: open(dir.path()), dir };
        let ws = &side.ws;
        ws.remember(fact(
            "f-sqlite",
            "decision",
            4,
            Some("db.engine"),
            "Use SQLite",
            "2026-01-05T09:00:00Z",
        ))
        .unwrap();
        ws.remember(fact(
            "f-postgres",
            "decision",
            4,
            Some("db.engine"),
            "Use Postgres",
            "2026-01-05T09:00:00Z",
        ))
        .unwrap();
        ws.remember(fact(
            "f-pin",
            "convention",
            4,
            None,
            "Pin the toolchain",
            "2026-01-06T09:00:00Z",
        ))
        .unwrap();
        side.distill(AS_OF);
        assert_eq!(ws.conflicts().unwrap().cases.len(), 1);
        side
    }

    /// A copy of this project (same pinned id) at another path.
    fn copy(&self) -> Side {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", self.dir.path().display()))
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(out.success());
        Side { ws: open(dir.path()), dir }
    }

    fn distill(&self, as_of: &str) {
        self.ws.distill(&workmem::DistillOptions::new().as_of(stamp(as_of))).unwrap();
    }

    fn decide(&self, content: &str, event: &str, at: &str) {
        let case =
            self.ws.conflicts().unwrap().cases.into_iter().find(workmem::Case::is_open).unwrap();
        let candidate = case.candidates.iter().find(|c| c.content == content).unwrap();
        self.ws
            .resolve(Resolution {
                conflict_id: case.conflict_id.clone(),
                candidate_id: candidate.candidate_id.clone(),
                expected_revision: i64::from(case.revision),
                actor: format!("{event} person"),
                rationale: "decided".into(),
                event_id: event.into(),
                resolved_at: Some(stamp(at)),
            })
            .unwrap();
    }

    fn bytes(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.ws.file(name)).unwrap_or_default()
    }
}

fn open(project: &Path) -> Workspace {
    Workspace::builder(project).clock(Arc::new(FixedClock::new(stamp(AS_OF)))).open().unwrap()
}

/// Merges `name` of the three sides both ways, checks that both give the
/// same bytes, and returns them.
fn merged(name: &str, base: &Side, ours: &Side, theirs: &Side) -> Vec<u8> {
    let path = PathBuf::from(".workmem/memory").join(name);
    let file = MemoryFile::for_path(&path).unwrap();
    let (b, o, t) = (base.bytes(name), ours.bytes(name), theirs.bytes(name));
    let one = workmem::merge_memory_file(
        file,
        &path,
        MergeSides { base: Some(&b), ours: &o, theirs: &t },
    )
    .unwrap();
    let other = workmem::merge_memory_file(
        file,
        &path,
        MergeSides { base: Some(&b), ours: &t, theirs: &o },
    )
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&one),
        String::from_utf8_lossy(&other),
        "{name} is not symmetric"
    );
    one
}

fn the_case(conflicts: &[u8]) -> Value {
    let value: Value = serde_json::from_slice(conflicts).unwrap();
    value["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["memory_key"] == "db.engine")
        .unwrap()
        .clone()
}

/// Installs merged versions of every state file into `side` and checks
/// that it verifies clean.
fn install_and_verify(side: &Side, files: &[(&str, Vec<u8>)]) {
    for (name, data) in files {
        side.ws.write_merged(Path::new(name), data).unwrap();
    }
    let problems = side.ws.verify().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
}

fn merge_all(base: &Side, a: &Side, b: &Side) -> Vec<(&'static str, Vec<u8>)> {
    let mut files = vec![];
    for name in ["curated.json", "conflicts.json", "conflict-adjudications.jsonl"] {
        files.push((name, merged(name, base, a, b)));
    }
    let mut days = std::collections::BTreeSet::new();
    for side in [base, a, b] {
        for entry in std::fs::read_dir(side.ws.memory_dir().join("daily")).unwrap() {
            days.insert(entry.unwrap().file_name().to_string_lossy().into_owned());
        }
    }
    for day in days {
        let name: &'static str = Box::leak(format!("daily/{day}").into_boxed_str());
        files.push((name, merged(name, base, a, b)));
    }
    files
}

#[test]
fn two_different_decisions_reopen_the_case_and_leave_the_domain_to_review() {
    let base = Side::base();
    let (a, b) = (base.copy(), base.copy());
    a.decide("Use SQLite", "review:a", "2026-03-02T00:00:00Z");
    b.decide("Use Postgres", "review:b", "2026-03-02T00:00:00Z");
    let files = merge_all(&base, &a, &b);
    let case = the_case(&files[1].1);
    assert_eq!(case["status"], "open", "{case}");
    assert_eq!(case["resolution_event_id"], Value::Null);
    // Each decided value waits beside the reopened case, contested.
    let curated: Value = serde_json::from_slice(&files[0].1).unwrap();
    let mut domain: Vec<(&str, &str)> = curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["memory_key"] == "db.engine")
        .map(|e| (e["content"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    domain.sort_unstable();
    assert_eq!(domain, [("Use Postgres", "contested"), ("Use SQLite", "contested")], "{curated}");
    let audit = String::from_utf8(files[2].1.clone()).unwrap();
    assert!(audit.contains("review:a") && audit.contains("review:b"), "{audit}");
    install_and_verify(&a, &files);
    // The reopened case can be decided again.
    a.decide("Use Postgres", "review:again", "2026-03-03T00:00:00Z");
    assert!(a.ws.verify().unwrap().is_empty());
}

#[test]
fn two_equal_decisions_close_the_case_with_the_earlier_one() {
    let base = Side::base();
    let (a, b) = (base.copy(), base.copy());
    a.decide("Use SQLite", "review:a", "2026-03-05T00:00:00Z");
    b.decide("Use SQLite", "review:b", "2026-03-02T00:00:00Z");
    let files = merge_all(&base, &a, &b);
    let case = the_case(&files[1].1);
    assert_eq!(case["status"], "resolved");
    assert_eq!(case["resolution_event_id"], "review:b");
    install_and_verify(&a, &files);
    assert_eq!(a.ws.curated().unwrap().active_for("db.engine").unwrap().content, "Use SQLite");
}

#[test]
fn a_decision_on_one_side_only_is_taken_with_its_revision() {
    let base = Side::base();
    let (a, b) = (base.copy(), base.copy());
    a.decide("Use SQLite", "review:a", "2026-03-02T00:00:00Z");
    b.ws.remember(fact("f-b", "outcome", 3, None, "Bob's outcome", "2026-02-01T10:00:00Z"))
        .unwrap();
    let files = merge_all(&base, &a, &b);
    assert_eq!(the_case(&files[1].1)["status"], "resolved");
    install_and_verify(&b, &files);
    assert_eq!(b.ws.curated().unwrap().active_for("db.engine").unwrap().content, "Use SQLite");
}

#[test]
fn a_decision_against_a_case_the_other_side_superseded_stays_decided() {
    let base = Side::base();
    let (a, b) = (base.copy(), base.copy());
    a.decide("Use SQLite", "review:a", "2026-03-02T00:00:00Z");
    // New evidence on b: a third value ties too, so b's distill supersedes
    // the case with a new one.
    b.ws.remember(fact(
        "f-mysql",
        "decision",
        4,
        Some("db.engine"),
        "Use MySQL",
        "2026-01-05T09:00:00Z",
    ))
    .unwrap();
    b.distill(AS_OF);
    let cases = b.ws.conflicts().unwrap().cases;
    assert_eq!(cases.len(), 2, "{cases:?}");
    let files = merge_all(&base, &a, &b);
    let conflicts: Value = serde_json::from_slice(&files[1].1).unwrap();
    let cases = conflicts["cases"].as_array().unwrap();
    let statuses: Vec<&str> = cases.iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == "resolved").count(), 1, "{statuses:?}");
    assert!(statuses.iter().filter(|s| **s == "open").count() <= 1, "{statuses:?}");
    let revisions: Vec<u64> = cases.iter().map(|c| c["revision"].as_u64().unwrap()).collect();
    assert_eq!(revisions, [1, 2]);
    install_and_verify(&a, &files);
    // The policy settles what is left: the new case no longer matches the
    // domain, so the next distill replaces it with one that does, or
    // supersedes it.
    a.distill(AS_OF);
    assert!(a.ws.verify().unwrap().is_empty());
}

#[test]
fn diverged_revision_chains_keep_what_both_share_and_send_each_value_to_a_person() {
    let base = Side::base();
    base.decide("Use SQLite", "review:base", "2026-03-02T00:00:00Z");
    let (a, b) = (base.copy(), base.copy());
    // Each side supersedes SQLite with another value, repeated and newer.
    // In the merged log MySQL has more facts: the promotion rules alone
    // would choose it; each side had its own value accepted, so a person
    // chooses.
    let days = |n: usize| ["2026-01-20", "2026-02-01", "2026-02-02"][3 - n..].to_vec();
    for (side, value, count) in [(&a, "Use Postgres", 2), (&b, "Use MySQL", 3)] {
        for (i, day) in days(count).iter().enumerate() {
            let id = format!("f-{value}-{i}").replace(' ', "-");
            let new =
                fact(&id, "decision", 4, Some("db.engine"), value, &format!("{day}T09:00:00Z"));
            side.ws.remember(new).unwrap();
        }
        side.distill("2026-04-01T00:00:00Z");
        assert_eq!(side.ws.curated().unwrap().active_for("db.engine").unwrap().content, value);
    }
    let files = merge_all(&base, &a, &b);
    let curated: Value = serde_json::from_slice(&files[0].1).unwrap();
    let mut chain: Vec<(&str, &str, u64)> = curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["memory_key"] == "db.engine")
        .map(|e| {
            let (content, status) = (e["content"].as_str().unwrap(), e["status"].as_str().unwrap());
            (content, status, e["revision"].as_u64().unwrap())
        })
        .collect();
    chain.sort_unstable();
    assert_eq!(
        chain,
        [
            ("Use MySQL", "contested", 2),
            ("Use Postgres", "contested", 2),
            ("Use SQLite", "active", 1)
        ]
    );
    install_and_verify(&a, &files);
    // The next distill opens the case; the ones after change nothing.
    for _ in 0..2 {
        a.distill("2026-04-01T00:00:00Z");
        assert_eq!(a.ws.curated().unwrap().active_for("db.engine").unwrap().content, "Use SQLite");
        let open: Vec<_> =
            a.ws.conflicts().unwrap().cases.into_iter().filter(workmem::Case::is_open).collect();
        assert_eq!(open.len(), 1);
        let mut contents: Vec<(&str, bool)> =
            open[0].candidates.iter().map(|c| (c.content.as_str(), c.incumbent)).collect();
        contents.sort_unstable();
        assert_eq!(
            contents,
            [("Use MySQL", false), ("Use Postgres", false), ("Use SQLite", true)],
            "{open:?}"
        );
        assert!(a.ws.verify().unwrap().is_empty());
    }
    // A person chooses Postgres: it is the next revision, the contested
    // values leave, and neither the policy nor a later distill brings
    // MySQL back.
    a.decide("Use Postgres", "review:merged", "2026-04-02T00:00:00Z");
    let check = |side: &Side| {
        let curated = side.ws.curated().unwrap();
        let domain = curated.domain("db.engine");
        assert!(domain.iter().all(|e| !e.is_contested()), "{domain:?}");
        let active = curated.active_for("db.engine").unwrap();
        assert_eq!((active.content.as_str(), active.revision), ("Use Postgres", 2));
        assert!(side.ws.verify().unwrap().is_empty());
    };
    check(&a);
    a.distill("2026-05-01T00:00:00Z");
    check(&a);
    assert!(a.ws.conflicts().unwrap().cases.iter().all(|c| !c.is_open()));
}

/// A value a merge left in dispute waits for a person: a retraction of its
/// evidence is refused, writes nothing, and is accepted once the case is
/// decided.
#[test]
fn a_retraction_of_a_value_in_dispute_waits_for_the_decision() {
    let base = Side::base();
    base.decide("Use SQLite", "review:base", "2026-03-02T00:00:00Z");
    let (a, b) = (base.copy(), base.copy());
    for (side, value) in [(&a, "Use Postgres"), (&b, "Use MySQL")] {
        for (i, day) in ["2026-02-01", "2026-02-02"].iter().enumerate() {
            let id = format!("f-{value}-{i}").replace(' ', "-");
            let new =
                fact(&id, "decision", 4, Some("db.engine"), value, &format!("{day}T09:00:00Z"));
            side.ws.remember(new).unwrap();
        }
        side.distill("2026-04-01T00:00:00Z");
    }
    let files = merge_all(&base, &a, &b);
    install_and_verify(&a, &files);
    let retraction = |event: &str| workmem::Retraction {
        fact_ids: ["f-Use-MySQL-0", "f-Use-MySQL-1"].iter().map(|f| (*f).to_owned()).collect(),
        entry_key: None,
        actor: "Ada <ada@example.com>".into(),
        rationale: "MySQL was a test".into(),
        event_id: event.into(),
        recorded_at: Some(workmem::Stamp::parse("2026-04-03T00:00:00Z").unwrap()),
    };
    let dir = a.ws.memory_dir().to_path_buf();
    let files = || -> Vec<(std::path::PathBuf, Vec<u8>)> {
        std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect()
    };
    for _ in 0..2 {
        let before = files();
        let err = a.ws.retract(retraction("correction:early")).unwrap_err();
        assert!(err.to_string().contains("db.engine is under review"), "{err}");
        for (path, bytes) in &before {
            assert_eq!(&std::fs::read(path).unwrap(), bytes, "{} changed", path.display());
        }
        // The distill that opens the case does not lift the refusal.
        a.distill("2026-04-01T00:00:00Z");
    }
    a.decide("Use Postgres", "review:merged", "2026-04-02T00:00:00Z");
    a.ws.retract(retraction("correction:after")).unwrap();
    assert!(a.ws.verify().unwrap().is_empty());
    let active = a.ws.curated().unwrap().active_for("db.engine").unwrap().content.clone();
    assert_eq!(active, "Use Postgres");
}

#[test]
fn a_domain_both_sides_moved_to_one_value_takes_it_with_both_sides_evidence() {
    let base = Side::base();
    base.decide("Use SQLite", "review:base", "2026-03-02T00:00:00Z");
    let (a, b) = (base.copy(), base.copy());
    // Both sides move to Postgres, on different days: two different
    // revision-2 entries (their evidence differs) that state one value.
    for (side, days) in [(&a, ["2026-01-20", "2026-02-01"]), (&b, ["2026-01-21", "2026-02-02"])] {
        for day in days {
            let id = format!("f-pg-{day}");
            let new = fact(
                &id,
                "decision",
                4,
                Some("db.engine"),
                "Use Postgres",
                &format!("{day}T09:00:00Z"),
            );
            side.ws.remember(new).unwrap();
        }
        side.distill("2026-04-01T00:00:00Z");
    }
    let files = merge_all(&base, &a, &b);
    install_and_verify(&a, &files);
    let curated = a.ws.curated().unwrap();
    let active = curated.active_for("db.engine").unwrap();
    assert_eq!((active.content.as_str(), active.revision), ("Use Postgres", 2));
    assert!(curated.domain("db.engine").iter().all(|e| !e.is_contested()));
    let mut evidence: Vec<&str> = active.evidence_ids.iter().collect();
    evidence.retain(|id| id.starts_with("f-pg-"));
    assert_eq!(evidence.len(), 4, "{active:?}");
}

#[test]
fn logs_merge_as_a_union_and_refuse_what_is_not_a_record() {
    let base = Side::base();
    let (a, b) = (base.copy(), base.copy());
    a.ws.remember(fact("f-a", "outcome", 3, None, "From a", "2026-02-01T11:00:00Z")).unwrap();
    b.ws.remember(fact("f-b", "outcome", 3, None, "From b", "2026-02-01T10:00:00Z")).unwrap();
    let both =
        a.ws.remember(fact("f-both", "outcome", 3, None, "Same on both", "2026-02-01T12:00:00Z"))
            .unwrap();
    b.ws.remember(fact("f-both", "outcome", 3, None, "Same on both", "2026-02-01T12:00:00Z"))
        .unwrap();
    assert_eq!(both.fact_id(), "f-both");
    let log = String::from_utf8(merged("daily/2026-02-01.jsonl", &base, &a, &b)).unwrap();
    let ids: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["fact_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["f-b", "f-a", "f-both"]);

    let path = PathBuf::from(".workmem/memory/daily/2026-02-01.jsonl");
    let marked = format!("<<<<<<< ours\n{log}=======\n>>>>>>> theirs\n");
    let err = workmem::merge_memory_file(
        MemoryFile::DailyLog,
        &path,
        MergeSides { base: None, ours: marked.as_bytes(), theirs: b"" },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("(ours):1") && err.to_string().contains("conflict markers"),
        "{err}"
    );
    // Typed, so that a caller can name its way out.
    assert!(
        matches!(
            err,
            workmem::Error::Corrupt {
                damage: workmem::Damage::MergeRecord { markers: true, .. },
                ..
            }
        ),
        "{err:?}"
    );
    // A torn final fragment is ignored, as readers ignore it.
    let torn = format!("{log}{{\"content\": \"half");
    let out = workmem::merge_memory_file(
        MemoryFile::DailyLog,
        &path,
        MergeSides { base: None, ours: torn.as_bytes(), theirs: b"" },
    )
    .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), log);
    // Another workspace's records are never joined.
    let other = log.replace(ID, "fedcba9876543210");
    let err = workmem::merge_memory_file(
        MemoryFile::DailyLog,
        &path,
        MergeSides { base: None, ours: log.as_bytes(), theirs: other.as_bytes() },
    )
    .unwrap_err();
    assert!(err.to_string().contains("several workspaces"), "{err}");
    // A journal with work in flight is refused.
    let journal = PathBuf::from(".workmem/memory/conflict-resolution-transactions.jsonl");
    let err = workmem::merge_memory_file(
        MemoryFile::Journal,
        &journal,
        MergeSides { base: None, ours: b"{}\n", theirs: b"" },
    )
    .unwrap_err();
    assert!(err.to_string().contains("in flight"), "{err}");
    assert_eq!(MemoryFile::for_path(Path::new("a/daily/notes.jsonl")), None);
}

/// Appends a correction record to `side`'s corrections stream.
fn correct(side: &Side, event: &str, restores: Option<&str>, facts: &[&str], rationale: &str) {
    use workmem::internals::corrections::{self, Action, CORRECTIONS_FILE, Correction};
    let mut fact_ids = workmem::IdList::new();
    for fact in facts {
        fact_ids.push(fact);
    }
    let record = Correction {
        action: if restores.is_some() { Action::Restore } else { Action::Retract },
        actor: "Ada <ada@example.com>".to_owned(),
        entry_key: None,
        event_id: event.to_owned(),
        event_ids: None,
        fact_ids,
        line_sha256: None,
        rationale: rationale.to_owned(),
        recorded_at: stamp("2026-02-02T09:00:00Z"),
        restores: restores.map(str::to_owned),
        schema_version: 1,
        workspace_id: ID.to_owned(),
    };
    corrections::append(&side.ws.file(CORRECTIONS_FILE), &record).unwrap();
}

#[test]
fn corrections_merge_as_a_union_by_event_id() {
    use workmem::internals::corrections::CORRECTIONS_FILE;
    use workmem::internals::retractions::Retractions;
    let base = Side::base();
    correct(&base, "c-base", None, &["f-1"], "wrong service");
    let (a, b) = (base.copy(), base.copy());
    correct(&a, "c-a", None, &["f-2", "f-3"], "recorded by mistake");
    correct(&b, "c-b", Some("c-base"), &["f-1"], "it was right after all");
    // Two clones that used one event id for two different records: both
    // are kept, for verify to report; the merge never chooses.
    correct(&b, "c-a", None, &["f-4"], "another reason");
    correct(&b, "c-same", None, &["f-5"], "made on both sides");
    correct(&a, "c-same", None, &["f-5"], "made on both sides");
    assert_eq!(
        MemoryFile::for_path(Path::new(".workmem/memory/memory-corrections.jsonl")),
        Some(MemoryFile::Corrections)
    );
    let merged_bytes = merged(CORRECTIONS_FILE, &base, &a, &b);
    let text = String::from_utf8(merged_bytes.clone()).unwrap();
    let events: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(events, ["c-base", "c-a", "c-a", "c-b", "c-same"], "{text}");

    // What the merged stream retracts is the union of both sides' acts.
    let target = base.copy();
    std::fs::write(target.ws.file(CORRECTIONS_FILE), &merged_bytes).unwrap();
    let records: Vec<_> =
        workmem::internals::corrections::read(&target.ws.file(CORRECTIONS_FILE), ID)
            .unwrap()
            .into_iter()
            .map(|numbered| numbered.record)
            .collect();
    let set = Retractions::from_records(&records);
    assert_eq!(set.facts().collect::<Vec<_>>(), ["f-2", "f-3", "f-4", "f-5"]);

    // A line that is not a correction fails the merge, naming its side.
    let path = PathBuf::from(".workmem/memory").join(CORRECTIONS_FILE);
    let bad = text.replace("\"retract\"", "\"forget\"");
    let err = workmem::merge_memory_file(
        MemoryFile::Corrections,
        &path,
        MergeSides { base: None, ours: text.as_bytes(), theirs: bad.as_bytes() },
    )
    .unwrap_err();
    assert!(err.to_string().contains("(theirs):1"), "{err}");
    // What git left with conflict markers keeps its records.
    let marked = format!("<<<<<<< ours\n{text}=======\n>>>>>>> theirs\n");
    assert_eq!(workmem::salvage_records(MemoryFile::Corrections, marked.as_bytes()), merged_bytes);
}

#[test]
fn share_routes_every_committed_memory_file_by_its_pattern() {
    let side = Side::base();
    let shared = side.ws.share().unwrap();
    let attributes = std::fs::read_to_string(shared.attributes.join(".gitattributes")).unwrap();
    let routed = side.ws.routed_files();
    let kinds: Vec<MemoryFile> = routed.iter().map(|(kind, _)| *kind).collect();
    // No correction was recorded yet: the stream is routed once it exists.
    assert_eq!(
        kinds,
        [
            MemoryFile::DailyLog,
            MemoryFile::Curated,
            MemoryFile::Conflicts,
            MemoryFile::Audit,
            MemoryFile::Pin
        ]
    );
    for (kind, path) in &routed {
        assert_eq!(MemoryFile::for_path(path), Some(*kind), "{}", path.display());
        let line = format!("{} merge={}", kind.pattern(), workmem::MERGE_DRIVER);
        assert!(attributes.lines().any(|l| l.ends_with(&line)), "{line} not in {attributes}");
    }
    assert_eq!(routed.last().unwrap().1, workmem::pin_file(side.ws.project()));
    assert!(side.ws.has_sharing_files());
    correct(&side, "e-1", None, &["f-sqlite"], "wrong");
    let kinds: Vec<MemoryFile> = side.ws.routed_files().iter().map(|(kind, _)| *kind).collect();
    assert!(kinds.contains(&MemoryFile::Corrections), "{kinds:?}");
    // The files never committed are routed too (a merge of them is
    // refused or keeps ours), but never asked about.
    for kind in [MemoryFile::Journal, MemoryFile::View] {
        assert!(attributes.contains(kind.pattern()), "{kind:?}");
        assert!(!kinds.contains(&kind), "{kind:?}");
    }
}

#[test]
fn an_entry_one_side_retracted_merges_without_the_fact_and_keeps_the_others_evidence() {
    let base = Side::base();
    let (a, b) = (base.copy(), base.copy());
    a.ws.retract(workmem::Retraction {
        fact_ids: vec!["f-pin".to_owned()],
        entry_key: None,
        actor: "Ada <ada@example.com>".to_owned(),
        rationale: "recorded by mistake".to_owned(),
        event_id: "correction:a".to_owned(),
        recorded_at: Some(stamp("2026-02-02T09:00:00Z")),
    })
    .unwrap();
    // The other side reinforced the same convention meanwhile.
    b.ws.remember(fact(
        "f-pin-2",
        "convention",
        4,
        None,
        "Pin the toolchain",
        "2026-01-07T09:00:00Z",
    ))
    .unwrap();
    b.distill(AS_OF);
    let held = b.ws.curated().unwrap();
    let held = held.entries.iter().find(|e| e.content == "Pin the toolchain").unwrap();
    assert_eq!(held.evidence_ids.iter().collect::<Vec<_>>(), ["f-pin", "f-pin-2"]);
    // The evidence left (f-pin-2) is covered by no side that lost none of
    // it, and the file holds no fact dates: the driver keeps f-pin as
    // evidence, under b's span, which is exact for it.
    let curated: Value = serde_json::from_slice(&merged("curated.json", &base, &a, &b)).unwrap();
    let pin = curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["content"] == "Pin the toolchain")
        .unwrap()
        .clone();
    assert_eq!(pin["evidence_ids"], serde_json::json!(["f-pin", "f-pin-2"]), "{pin}");
    assert_eq!(pin["first_seen"], "2026-01-06T09:00:00Z", "{pin}");
    // The first command after the merge applies the retraction, which
    // arrived with it, and dates the entry from the log.
    let mut files = merge_all(&base, &a, &b);
    let stream = workmem::internals::corrections::CORRECTIONS_FILE;
    files.push((stream, merged(stream, &base, &a, &b)));
    for (name, data) in &files {
        b.ws.write_merged(Path::new(name), data).unwrap();
    }
    let applied = b.ws.curated().unwrap();
    let pin = applied.entries.iter().find(|e| e.content == "Pin the toolchain").unwrap();
    assert_eq!(pin.evidence_ids.iter().collect::<Vec<_>>(), ["f-pin-2"]);
    assert_eq!(pin.retracted_evidence_ids.iter().collect::<Vec<_>>(), ["f-pin"]);
    assert_eq!(pin.status, workmem::Status::Active);
    assert_eq!(
        (pin.first_seen.as_str(), pin.last_seen.as_str()),
        ("2026-01-07T09:00:00Z", "2026-01-07T09:00:00Z")
    );
    assert!(b.ws.verify().unwrap().is_empty());

    // Untouched on the other side: the retraction is taken whole.
    let c = base.copy();
    let curated: Value = serde_json::from_slice(&merged("curated.json", &base, &a, &c)).unwrap();
    let pin = curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["content"] == "Pin the toolchain")
        .unwrap()
        .clone();
    assert_eq!(pin["evidence_ids"], serde_json::json!([]), "{pin}");
    assert_eq!(pin["status"], "retracted", "{pin}");
}

/// A fact whose retraction one side restored after its domain moved on
/// (a case detected since) is released there, and stays listed as
/// retracted evidence on the other side, which did not see the restore:
/// the merge keeps it released, whichever side merges into which, and the
/// merged state verifies clean with the restore that arrived.
#[test]
fn a_fact_one_side_released_stays_released_in_the_merge() {
    let base = Side::base();
    base.decide("Use SQLite", "decision:1", "2026-02-01T09:00:00Z");
    base.ws
        .retract(workmem::Retraction {
            fact_ids: vec!["f-sqlite".to_owned()],
            entry_key: None,
            actor: "Ada <ada@example.com>".to_owned(),
            rationale: "recorded by mistake".to_owned(),
            event_id: "correction:r".to_owned(),
            recorded_at: Some(stamp("2026-02-02T09:00:00Z")),
        })
        .unwrap();
    let (a, b) = (base.copy(), base.copy());
    // On one side, newer facts tie and a case is detected after the
    // retraction; the restore then finds the domain moved on.
    for (id, value) in [("f-mysql", "Use MySQL"), ("f-maria", "Use MariaDB")] {
        a.ws.remember(fact(id, "decision", 4, Some("db.engine"), value, "2026-02-10T09:00:00Z"))
            .unwrap();
    }
    a.distill("2026-03-20T00:00:00Z");
    assert!(a.ws.conflicts().unwrap().cases.iter().any(workmem::Case::is_open));
    a.ws.restore(workmem::Restoration {
        restores: "correction:r".to_owned(),
        actor: "Ada <ada@example.com>".to_owned(),
        rationale: "it was right".to_owned(),
        event_id: "correction:s".to_owned(),
        recorded_at: Some(stamp("2026-03-21T00:00:00Z")),
    })
    .unwrap();
    let released = |state: &workmem::CuratedState| {
        let entry = state.entries.iter().find(|e| e.content == "Use SQLite").unwrap();
        (
            entry.retracted_evidence_ids.iter().map(str::to_owned).collect::<Vec<_>>(),
            entry.released_evidence_ids.iter().map(str::to_owned).collect::<Vec<_>>(),
        )
    };
    assert_eq!(released(&a.ws.curated().unwrap()), (vec![], vec!["f-sqlite".to_owned()]));
    assert_eq!(released(&b.ws.curated().unwrap()), (vec!["f-sqlite".to_owned()], vec![]));
    let mut files = merge_all(&base, &a, &b);
    let stream = workmem::internals::corrections::CORRECTIONS_FILE;
    files.push((stream, merged(stream, &base, &a, &b)));
    let curated: Value = serde_json::from_slice(&files[0].1).unwrap();
    let sqlite = curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["content"] == "Use SQLite")
        .unwrap()
        .clone();
    assert_eq!(sqlite["released_evidence_ids"], serde_json::json!(["f-sqlite"]), "{sqlite}");
    assert_eq!(sqlite.get("retracted_evidence_ids"), None, "{sqlite}");
    assert_eq!(sqlite["status"], "retracted", "{sqlite}");
    install_and_verify(&b, &files);
    assert_eq!(released(&b.ws.curated().unwrap()), (vec![], vec!["f-sqlite".to_owned()]));
}

/// A daily file whose line one side redacted: the merge keeps the
/// tombstone in the line's place (its hash is the line's), whichever side
/// merges into which, and keeps the other side's new line; a tombstone
/// whose hash is not the line's (a line changed by other hands) leaves
/// both, for verify to report.
#[test]
fn a_tombstone_takes_the_place_of_the_line_it_replaced() {
    let path = PathBuf::from(".workmem/memory/daily/2026-01-05.jsonl");
    let workspace = "0123456789abcdef";
    let line = |id: &str, content: &str, at: &str| {
        format!(
            "{{\"content\": \"{content}\", \"evidence\": {{}}, \"fact_id\": \"{id}\", \"importance\": 3, \
             \"kind\": \"decision\", \"memory_key\": null, \"recorded_at\": \"{at}\", \
             \"schema_version\": 2, \"source\": \"agent\", \"workspace_id\": \"{workspace}\"}}"
        )
    };
    let secret = line("f1", "The token is hunter2", "2026-01-05T08:00:00Z");
    let kept = line("f0", "Use tokio", "2026-01-05T07:00:00Z");
    let hash = workmem::internals::canon::sha256_hex(secret.as_bytes());
    let tombstone = format!(
        "{{\"content\": \"[redacted]\", \"evidence\": {{}}, \"fact_id\": \"f1\", \"importance\": 3, \
         \"kind\": \"decision\", \"line_sha256\": \"{hash}\", \"memory_key\": null, \
         \"recorded_at\": \"2026-01-05T08:00:00Z\", \"redacted_by\": \"correction:r1\", \
         \"schema_version\": 2, \"source\": \"[redacted]\", \"workspace_id\": \"{workspace}\"}}"
    );
    let added = line("f2", "Use tokio-console", "2026-01-05T09:00:00Z");
    let base = format!("{kept}\n{secret}\n");
    let redacted = format!("{kept}\n{tombstone}\n");
    let extended = format!("{kept}\n{secret}\n{added}\n");
    let merge = |ours: &str, theirs: &str| {
        let sides = MergeSides {
            base: Some(base.as_bytes()),
            ours: ours.as_bytes(),
            theirs: theirs.as_bytes(),
        };
        String::from_utf8(workmem::merge_memory_file(MemoryFile::DailyLog, &path, sides).unwrap())
            .unwrap()
    };
    let expected = format!("{kept}\n{tombstone}\n{added}\n");
    assert_eq!(merge(&redacted, &extended), expected);
    assert_eq!(merge(&extended, &redacted), expected);
    assert!(!expected.contains("hunter2"));
    // A tombstone of another line: both are kept.
    let forged = tombstone.replace(&hash, &"0".repeat(64));
    let both = merge(&format!("{kept}\n{forged}\n"), &extended);
    assert!(both.contains("hunter2") && both.contains(&forged), "{both}");
}

#[test]
fn a_record_with_its_words_redacted_takes_the_place_of_the_record_that_held_them() {
    let path = PathBuf::from(".workmem/memory/memory-corrections.jsonl");
    let workspace = "0123456789abcdef";
    let record = |event: &str, actor: &str, rationale: &str, at: &str| {
        format!(
            "{{\"action\": \"retract\", \"actor\": \"{actor}\", \"entry_key\": null, \
             \"event_id\": \"{event}\", \"fact_ids\": [\"f1\"], \"rationale\": \"{rationale}\", \
             \"recorded_at\": \"{at}\", \"restores\": null, \"schema_version\": 1, \
             \"workspace_id\": \"{workspace}\"}}"
        )
    };
    let secret = record("c1", "Ada", "the token is hunter2", "2026-01-05T08:00:00Z");
    let marked = record("c1", "[redacted]", "[redacted]", "2026-01-05T08:00:00Z");
    let added = record("c2", "Bob", "obsolete", "2026-01-05T09:00:00Z");
    let base = format!("{secret}\n");
    let redacted = format!("{marked}\n");
    let extended = format!("{secret}\n{added}\n");
    let merge = |ours: &str, theirs: &str| {
        let sides = MergeSides {
            base: Some(base.as_bytes()),
            ours: ours.as_bytes(),
            theirs: theirs.as_bytes(),
        };
        let merged = workmem::merge_memory_file(MemoryFile::Corrections, &path, sides).unwrap();
        String::from_utf8(merged).unwrap()
    };
    let expected = format!("{marked}\n{added}\n");
    assert_eq!(merge(&redacted, &extended), expected);
    assert_eq!(merge(&extended, &redacted), expected);
    // A record that differs in another field is another record: both stay
    // (and verify reports the event id twice).
    let other = record("c1", "[redacted]", "[redacted]", "2026-01-05T08:30:00Z");
    let both = merge(&format!("{other}\n"), &extended);
    assert!(both.contains("hunter2") && both.contains(&other), "{both}");
}
