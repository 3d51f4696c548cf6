//! Pending keyed facts (docs/policy.md): the context's third part lists the
//! most recent keyed facts that are evidence of no curated entry, oldest
//! first, within what is left of the budget; 0 turns it off and leaves the
//! context exactly as it was. The pending index that keeps it cheap answers
//! exactly what a full reading of the log and curated.json answers, through
//! appends, distills, resolutions and hand edits.
#![allow(clippy::disallowed_methods)]

use std::collections::HashSet;
use std::fs;
use std::io::Write;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use workmem::{Config, ContextOptions, Policy, Resolution, Workspace};

use crate::common::{Project, append_raw, fact, let_clock_tick, open, write_raw};

const HEADING: &str = "# Pending Keyed Facts (recorded, not in the curated memory)";

/// Returns the pending part's lines of `context` (empty when absent).
fn pending_lines(context: &str) -> Vec<String> {
    match context.split_once(&format!("{HEADING}\n\n")) {
        Some((_, rest)) => rest.lines().map(str::to_owned).collect(),
        None => Vec::new(),
    }
}

/// The pending lines a full reading gives: every fact of the log, the
/// evidence ids of every curated entry, the newest `n` keyed facts no
/// entry cites, oldest first.
fn reference(ws: &Workspace, n: usize) -> Vec<String> {
    let state = ws.curated().expect("curated");
    let evidence: HashSet<&str> =
        state.entries.iter().flat_map(|e| e.evidence_ids.iter()).collect();
    let mut facts: Vec<_> = ws
        .facts()
        .expect("facts")
        .into_iter()
        .filter(|f| f.memory_key().is_some() && !evidence.contains(f.fact_id()))
        .collect();
    facts.sort_by(|a, b| {
        (a.recorded_at().instant(), a.fact_id()).cmp(&(b.recorded_at().instant(), b.fact_id()))
    });
    // An open case's candidates say so; a value a human decision rejected
    // is not pending.
    let mut review = std::collections::HashMap::new();
    let mut rejected = HashSet::new();
    for case in ws.conflicts().expect("conflicts").cases {
        for candidate in &case.candidates {
            for id in &candidate.evidence_ids {
                match case.status {
                    workmem::CaseStatus::Open => {
                        review.insert(id.to_owned(), case.conflict_id.clone());
                    }
                    workmem::CaseStatus::Resolved
                        if case.selected_candidate_id.as_deref()
                            != Some(candidate.candidate_id.as_str()) =>
                    {
                        rejected.insert(id.to_owned());
                    }
                    _ => {}
                }
            }
        }
    }
    let start = facts.len().saturating_sub(n);
    facts[start..]
        .iter()
        .filter(|f| review.contains_key(f.fact_id()) || !rejected.contains(f.fact_id()))
        .map(|f| {
            let suffix = review
                .get(f.fact_id())
                .map(|id| format!(" (under review: {id})"))
                .unwrap_or_default();
            format!(
                "- [{}] {}: {} ({}){suffix}",
                f.kind(),
                f.memory_key().unwrap_or_default(),
                f.content(),
                f.recorded_at().utc_day()
            )
        })
        .collect()
}

fn unbounded(n: usize) -> ContextOptions {
    ContextOptions::new().pending(n).budget(0)
}

#[test]
fn a_keyed_fact_is_pending_until_the_policy_makes_it_evidence() {
    let p = Project::new();
    p.add("u1", "decision", 5, None, "Use WAL mode.", "2026-01-01T00:00:00Z");
    p.add("k1", "decision", 4, Some("runtime.python"), "Use Python 3.12.", "2026-01-02T09:00:00Z");
    // Written after the cutoff of the distill below: still pending after it.
    p.add("k2", "pitfall", 3, Some("ci.cache"), "Never cache target/.", "2026-02-20T09:00:00Z");
    let context = p.ws.context(None).unwrap();
    assert_eq!(
        context,
        format!(
            "# Recent Workspace Facts\n\n- [decision] Use WAL mode. (2026-01-01)\n\n{HEADING}\n\n\
             - [decision] runtime.python: Use Python 3.12. (2026-01-02)\n\
             - [pitfall] ci.cache: Never cache target/. (2026-02-20)"
        )
    );
    p.distill();
    let after = p.ws.context(None).unwrap();
    assert!(after.contains("## Decisions\n\n- Use Python 3.12. (seen 1x; evidence: 1)"), "{after}");
    assert_eq!(pending_lines(&after), ["- [pitfall] ci.cache: Never cache target/. (2026-02-20)"]);
    assert_eq!(pending_lines(&after), reference(&p.ws, 6));
}

#[test]
fn a_resolution_makes_the_chosen_candidate_evidence_and_the_other_no_longer_pending() {
    let p = Project::new();
    p.add("a1", "decision", 4, Some("db.engine"), "Use Postgres.", "2026-01-05T00:00:00Z");
    p.add("b1", "decision", 4, Some("db.engine"), "Use SQLite.", "2026-01-05T00:00:00Z");
    assert_eq!(p.distill().queued_conflicts, 1);
    // Candidates of an open case are claims, not the curated value, and
    // say which case reviews them.
    let case = p.ws.conflicts().unwrap().cases.remove(0);
    let review = format!(" (under review: {})", case.conflict_id);
    assert_eq!(
        pending_lines(&p.ws.context(None).unwrap()),
        [
            format!("- [decision] db.engine: Use Postgres. (2026-01-05){review}"),
            format!("- [decision] db.engine: Use SQLite. (2026-01-05){review}"),
        ]
    );
    let chosen = case.candidates.iter().find(|c| c.content == "Use Postgres.").unwrap();
    p.ws.resolve(Resolution {
        conflict_id: case.conflict_id.clone(),
        candidate_id: chosen.candidate_id.clone(),
        expected_revision: i64::from(case.revision),
        actor: "Ada <ada@example.com>".into(),
        rationale: "production runs Postgres".into(),
        event_id: "review:1".into(),
        resolved_at: None,
    })
    .unwrap();
    let context = p.ws.context(None).unwrap();
    assert!(context.contains("- Use Postgres. (seen 1x; evidence: 1)"), "{context}");
    // The value a human rejected was reviewed: it is no longer pending.
    assert_eq!(pending_lines(&context), Vec::<String>::new());
    assert_eq!(reference(&p.ws, 6), Vec::<String>::new());
}

#[test]
fn zero_turns_the_part_off_and_leaves_the_context_as_it_was() {
    let p = Project::new();
    p.add("u1", "outcome", 3, None, "Shipped v1.", "2026-01-01T00:00:00Z");
    p.add("k1", "decision", 4, Some("runtime.python"), "Use Python 3.12.", "2026-01-02T00:00:00Z");
    let off = Workspace::builder(p.path())
        .config(Config { pending_facts: 0, ..Config::default() })
        .open()
        .unwrap();
    assert_eq!(
        off.context(None).unwrap(),
        "# Recent Workspace Facts\n\n- [outcome] Shipped v1. (2026-01-01)"
    );
    assert_eq!(
        p.ws.context_with(&ContextOptions::new().pending(0)).unwrap(),
        off.context(None).unwrap()
    );
    // Nothing was looked up for a part that is off.
    assert!(!p.file(".pending.json").exists());
    let only_keyed = Project::new();
    only_keyed.add("k1", "decision", 4, Some("a.b"), "Keyed.", "2026-01-02T00:00:00Z");
    assert_eq!(
        only_keyed.ws.context_with(&ContextOptions::new().pending(0)).unwrap(),
        "(no workspace memory yet)"
    );
    assert!(Config { pending_facts: 101, ..Config::default() }.validate().is_err());
    assert!(Config { pending_facts: 100, ..Config::default() }.validate().is_ok());
}

#[test]
fn recent_then_pending_facts_fill_what_the_budget_leaves_each_whole_or_not_at_all() {
    let p = Project::new();
    for i in 0..3 {
        p.add(
            &format!("u{i}"),
            "outcome",
            3,
            None,
            &format!("Recent {i}."),
            &format!("2026-01-0{}T00:00:00Z", i + 1),
        );
        p.add(
            &format!("k{i}"),
            "decision",
            3,
            Some("some.key"),
            &format!("Claim {i}."),
            &format!("2026-01-0{}T12:00:00Z", i + 1),
        );
    }
    let full = p.ws.context(None).unwrap();
    let recent = "# Recent Workspace Facts\n\n- [outcome] Recent 0. (2026-01-01)\n- [outcome] Recent 1. (2026-01-02)\n- [outcome] Recent 2. (2026-01-03)";
    let pending_block = |lines: &[&str]| format!("{HEADING}\n\n{}", lines.join("\n"));
    let claims = [
        "- [decision] some.key: Claim 0. (2026-01-01)",
        "- [decision] some.key: Claim 1. (2026-01-02)",
        "- [decision] some.key: Claim 2. (2026-01-03)",
    ];
    assert_eq!(full, format!("{recent}\n\n{}", pending_block(&claims)));
    let chars = |s: &str| s.chars().count();
    let at = |budget: usize| p.ws.context_with(&ContextOptions::new().budget(budget)).unwrap();
    // Exactly the whole text: unchanged.
    assert_eq!(at(chars(&full)), full);
    // Over the budget, both parts are chosen first, newest first, each line
    // whole, within a quarter of the budget (with the blank line and the
    // heading of each part): the newest lines that fit, in log order.
    let recents = [
        "- [outcome] Recent 0. (2026-01-01)",
        "- [outcome] Recent 1. (2026-01-02)",
        "- [outcome] Recent 2. (2026-01-03)",
    ];
    // Newest first: each claim was written after the recent fact of its day.
    let newest_first = [(true, 2), (false, 2), (true, 1), (false, 1), (true, 0), (false, 0)];
    for budget in (200..chars(&full)).step_by(7) {
        let mut room = budget / 4;
        let (mut shown_recent, mut shown_claims) = (Vec::new(), Vec::new());
        for (is_claim, i) in newest_first {
            let (line, title, shown) = if is_claim {
                (claims[i], HEADING, &mut shown_claims)
            } else {
                (recents[i], "# Recent Workspace Facts", &mut shown_recent)
            };
            let cost = if shown.is_empty() { 2 + chars(title) + 1 } else { 0 } + 1 + chars(line);
            if cost > room {
                break;
            }
            room -= cost;
            shown.insert(0, line);
        }
        let mut parts = Vec::new();
        if !shown_recent.is_empty() {
            parts.push(format!("# Recent Workspace Facts\n\n{}", shown_recent.join("\n")));
        }
        if !shown_claims.is_empty() {
            parts.push(pending_block(&shown_claims));
        }
        let expected = if parts.is_empty() {
            "(no workspace memory yet)".to_owned()
        } else {
            parts.join("\n\n")
        };
        assert_eq!(at(budget), expected, "budget {budget}");
    }
    // The newest claim is kept before an older recent fact.
}

#[test]
fn appended_facts_are_seen_from_the_index_without_parsing_curated_json() {
    let p = Project::new();
    p.add("u1", "decision", 5, None, "Use WAL mode.", "2026-01-01T00:00:00Z");
    p.add("k1", "decision", 4, Some("runtime.python"), "Use Python 3.12.", "2026-01-02T00:00:00Z");
    p.add("k2", "decision", 4, Some("runtime.python"), "Use Python 3.13.", "2026-02-20T00:00:00Z");
    p.distill();
    let first = p.ws.context(None).unwrap();
    assert_eq!(
        pending_lines(&first),
        ["- [decision] runtime.python: Use Python 3.13. (2026-02-20)"]
    );
    assert!(p.file(".pending.json").exists());

    // Garble curated.json in place, keeping its inode, size and mtime: a
    // context that parsed it would fail.
    let path = p.file("curated.json");
    let meta = fs::metadata(&path).unwrap();
    let mut file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all(&vec![b'#'; meta.len() as usize]).unwrap();
    file.set_modified(meta.modified().unwrap()).unwrap();
    drop(file);
    assert_eq!(p.ws.context(None).unwrap(), first);

    // An append to a listed file (it grows) and a file of a new day.
    p.add("k3", "pitfall", 3, Some("ci.cache"), "Never cache target/.", "2026-02-20T10:00:00Z");
    p.add("k4", "decision", 3, Some("db.engine"), "Use SQLite.", "2026-02-21T00:00:00Z");
    p.add("u2", "outcome", 3, None, "Unkeyed.", "2026-02-21T01:00:00Z");
    assert_eq!(
        pending_lines(&p.ws.context(None).unwrap()),
        [
            "- [decision] runtime.python: Use Python 3.13. (2026-02-20)",
            "- [pitfall] ci.cache: Never cache target/. (2026-02-20)",
            "- [decision] db.engine: Use SQLite. (2026-02-21)",
        ]
    );
    // A file of an older day that did not exist when the index was written.
    p.add("k5", "decision", 3, Some("db.pool"), "Pool 10.", "2026-01-03T00:00:00Z");
    let lines = pending_lines(&p.ws.context_with(&unbounded(6)).unwrap());
    assert_eq!(lines[0], "- [decision] db.pool: Pool 10. (2026-01-03)");
    assert_eq!(lines.len(), 4);

    // Rebuilding the index needs no evidence ids while every keyed fact
    // read is newer than its key's latest evidence ...
    fs::remove_file(p.file(".pending.json")).unwrap();
    assert_eq!(
        pending_lines(&p.ws.context_with(&unbounded(3)).unwrap()),
        [
            "- [decision] runtime.python: Use Python 3.13. (2026-02-20)",
            "- [pitfall] ci.cache: Never cache target/. (2026-02-20)",
            "- [decision] db.engine: Use SQLite. (2026-02-21)",
        ]
    );
    // ... and reads them, here from the damaged file, for an older one.
    fs::remove_file(p.file(".pending.json")).unwrap();
    assert!(p.ws.context_with(&unbounded(6)).is_err());
}

#[test]
fn a_changed_file_a_damaged_index_or_a_larger_count_is_read_again() {
    let p = Project::new();
    for i in 0..4 {
        p.add(
            &format!("k{i}"),
            "decision",
            3,
            Some("some.key"),
            &format!("Claim {i}."),
            &format!("2026-02-1{i}T00:00:00Z"),
        );
    }
    assert_eq!(pending_lines(&p.ws.context_with(&unbounded(2)).unwrap()).len(), 2);
    // More than the index was built for: read again, and right.
    assert_eq!(pending_lines(&p.ws.context_with(&unbounded(4)).unwrap()), reference(&p.ws, 4));
    // A listed file replaced by hand (a new inode): its facts are read again.
    let newest = p.day_file("2026-02-13");
    write_raw(&newest, b"");
    assert_eq!(pending_lines(&p.ws.context_with(&unbounded(4)).unwrap()), reference(&p.ws, 4));
    assert_eq!(reference(&p.ws, 4).len(), 3);
    // A listed file removed.
    fs::remove_file(p.day_file("2026-02-12")).unwrap();
    assert_eq!(pending_lines(&p.ws.context_with(&unbounded(4)).unwrap()), reference(&p.ws, 4));
    // An index that does not parse is a miss, never an error.
    for garbage in [&b""[..], b"{", b"[1,2]", b"\xff"] {
        write_raw(&p.file(".pending.json"), garbage);
        assert_eq!(pending_lines(&p.ws.context_with(&unbounded(4)).unwrap()), reference(&p.ws, 4));
    }
    // A raw append bypassing the library is seen too.
    let line = fs::read_to_string(p.day_file("2026-02-11")).unwrap();
    append_raw(
        &p.day_file("2026-02-11"),
        line.replace("\"k1\"", "\"k9\"").replace("Claim 1.", "Claim 9.").as_bytes(),
    );
    assert_eq!(pending_lines(&p.ws.context_with(&unbounded(4)).unwrap()), reference(&p.ws, 4));
    assert_eq!(reference(&p.ws, 4).len(), 3);
}

#[test]
fn a_read_only_handle_answers_without_writing_the_index() {
    let p = Project::new();
    p.add("k1", "decision", 4, Some("runtime.python"), "Use Python 3.12.", "2026-01-02T00:00:00Z");
    p.distill();
    fs::remove_file(p.file(".pending.json")).ok();
    let reader = Workspace::builder(p.path()).open_read_only().unwrap();
    let before = crate::common::snapshot_dir(p.ws.memory_dir());
    assert_eq!(pending_lines(&reader.context(None).unwrap()), reference(&p.ws, 6));
    assert_eq!(crate::common::snapshot_dir(p.ws.memory_dir()), before);
}

/// One step of a workspace's life, for the property test.
#[derive(Debug, Clone)]
enum Step {
    /// Append a fact: key (0..3 keyed, 3 unkeyed), day, value.
    Append { key: u8, day: u8, value: u8 },
    /// Distill at 2026-01-`day`T00:00:00Z plus 30 days (facts up to `day`
    /// are old enough), with a repeat threshold of 1.
    Distill { day: u8 },
    /// Compare the context's pending part with a full reading.
    Check { n: u8 },
    /// Rewrite the daily file of `day` with the same bytes (a new inode).
    Rewrite { day: u8 },
    /// Delete the pending index.
    DropIndex,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => (0u8..4, 1u8..12, 0u8..3).prop_map(|(key, day, value)| Step::Append { key, day, value }),
        1 => (1u8..12).prop_map(|day| Step::Distill { day }),
        3 => (0u8..8).prop_map(|n| Step::Check { n }),
        1 => (1u8..12).prop_map(|day| Step::Rewrite { day }),
        1 => Just(Step::DropIndex),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/test_pending.txt"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_pending_part_is_what_a_full_reading_gives(steps in prop::collection::vec(step(), 1..40)) {
        let p = Project::new();
        let ws = open(p.path());
        let policy = Policy { repeat_threshold: 1, ..Policy::default() };
        for (i, step) in steps.iter().enumerate() {
            match *step {
                Step::Append { key, day, value } => {
                    let memory_key = (key < 3).then(|| format!("key.k{key}"));
                    let new = fact(
                        &format!("f{i:03}"),
                        "decision",
                        3,
                        memory_key.as_deref(),
                        &format!("Value {value}."),
                        &format!("2026-01-{day:02}T{:02}:00:00Z", i % 24),
                    );
                    ws.remember(new).unwrap();
                }
                Step::Distill { day } => {
                    let as_of = format!("2026-02-{:02}T00:00:00Z", day.min(28));
                    p.distill_with(&policy, &as_of);
                }
                Step::Check { n } => {
                    let got = pending_lines(&ws.context_with(&unbounded(usize::from(n))).unwrap());
                    prop_assert_eq!(got, reference(&ws, usize::from(n)), "after {:?}", &steps[..=i]);
                }
                Step::Rewrite { day } => {
                    let path = p.day_file(&format!("2026-01-{day:02}"));
                    if let Ok(bytes) = fs::read(&path) {
                        let_clock_tick();
                        fs::remove_file(&path).unwrap();
                        write_raw(&path, &bytes);
                    }
                }
                Step::DropIndex => {
                    let _ = fs::remove_file(p.file(".pending.json"));
                }
            }
        }
        for n in [0, 1, 6, 100] {
            let got = pending_lines(&ws.context_with(&unbounded(n)).unwrap());
            prop_assert_eq!(got, reference(&ws, n));
        }
    }
}
