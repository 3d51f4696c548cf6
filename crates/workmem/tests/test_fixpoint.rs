//! Acceptance 12: the fixpoint of docs/policy.md. One distill reaches the state
//! repeated runs would converge to, so a second distill with the same
//! as_of changes nothing and writes nothing.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use workmem::DistillOptions;
use workmem::{Kind, NewFact, Policy, Report, Status};

use crate::common::{AS_OF, Project, fact, let_clock_tick};

const KEYS: [&str; 3] = ["db.engine", "runtime.node", "ci.provider"];
const VARIANTS: [&str; 4] = ["Use alpha.", "Use beta.", "Use gamma.", "Use delta."];
const KINDS: [&str; 4] = ["decision", "convention", "pitfall", "outcome"];

/// One generated fact: kind, importance, age in hours, memory key (or
/// none), content variant, and whether it exactly repeats the previous
/// fact (same kind, key and content, a different id and time).
type Gen = (usize, i64, u32, Option<usize>, usize, bool);

fn gen_fact() -> impl Strategy<Value = Gen> {
    (
        0..4usize,
        1..=5i64,
        0..(90 * 24u32),
        prop::option::weighted(0.7, 0..3usize),
        0..4usize,
        prop::bool::weighted(0.25),
    )
}

fn gen_policy() -> impl Strategy<Value = Policy> {
    (
        0..60u32,
        1..=5u8,
        1..=4u32,
        2..=4u32,
        prop::collection::btree_set(prop::sample::select(Kind::ALL.to_vec()), 0..=4),
    )
        .prop_map(|(age, importance, repeat, supersession, kinds)| Policy {
            minimum_age_days: age,
            minimum_importance: importance,
            repeat_threshold: repeat,
            supersession_repeat_threshold: supersession,
            stable_kinds: kinds,
            sources: Default::default(),
        })
}

fn build(gens: &[Gen]) -> Vec<NewFact> {
    let as_of = jiff::Timestamp::from_second(1_772_323_200).unwrap(); // 2026-03-01T00:00:00Z
    assert_eq!(as_of.to_string(), AS_OF);
    let mut out: Vec<NewFact> = Vec::new();
    for (i, &(kind, importance, hours, key, variant, repeat)) in gens.iter().enumerate() {
        let at = (as_of - jiff::SignedDuration::from_hours(i64::from(hours))).to_string();
        let new = if let (true, Some(previous)) = (repeat, out.last()) {
            NewFact {
                fact_id: Some(format!("g{i:03}")),
                recorded_at: Some(at),
                importance: Some(importance),
                ..previous.clone()
            }
        } else {
            let key = key.map(|k| KEYS[k]);
            let content = if key.is_some() {
                VARIANTS[variant].to_owned()
            } else {
                format!("Note {variant}.")
            };
            fact(&format!("g{i:03}"), KINDS[kind], importance, key, &content, &at)
        };
        out.push(new);
    }
    out
}

proptest! {
    // Failures are persisted in the crate's proptest-regressions/ (the
    // default looks for a src/ sibling, which integration tests lack).
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/test_fixpoint.txt"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn second_distill_with_the_same_as_of_changes_nothing(
        gens in prop::collection::vec(gen_fact(), 0..40),
        policy in gen_policy(),
    ) {
        let p = Project::new();
        p.ws.import(build(&gens), &mut |_| {}).unwrap();
        let first = p.ws.distill(&DistillOptions::new().policy(policy.clone()).as_of(crate::common::stamp(AS_OF))).unwrap().report;
        let before = p.snapshot();
        let curated = p.ws.curated().unwrap();
        let_clock_tick();
        let second = p.ws.distill(&DistillOptions::new().policy(policy.clone()).as_of(crate::common::stamp(AS_OF))).unwrap().report;
        prop_assert_eq!(
            (second.created, second.updated, second.superseded, second.queued_conflicts, second.eligible),
            (0, 0, 0, 0, 0),
            "first {:?} second {:?}", first, second
        );
        prop_assert_eq!(second.scanned, first.scanned);
        prop_assert_eq!(second.skipped, second.scanned);
        prop_assert_eq!(&second.conflict_case_ids, &first.conflict_case_ids);
        prop_assert_eq!(p.snapshot(), before);
        prop_assert_eq!(p.ws.curated().unwrap(), curated);
        // Each candidate fact is counted once.
        prop_assert_eq!(first.eligible + first.skipped, first.scanned);
    }

    #[test]
    fn equal_logs_in_any_order_give_equal_states(
        gens in prop::collection::vec(gen_fact(), 0..30),
        policy in gen_policy(),
    ) {
        let facts = build(&gens);
        let forward = Project::new();
        forward.ws.import(facts.clone(), &mut |_| {}).unwrap();
        let backward = Project::new();
        for new in facts.into_iter().rev() {
            backward.ws.remember(new).unwrap();
        }
        let a = forward.ws.distill(&DistillOptions::new().policy(policy.clone()).as_of(crate::common::stamp(AS_OF))).unwrap().report;
        let b = backward.ws.distill(&DistillOptions::new().policy(policy.clone()).as_of(crate::common::stamp(AS_OF))).unwrap().report;
        prop_assert_eq!(&a.scanned, &b.scanned);
        prop_assert_eq!(forward.ws.curated().unwrap(), backward.ws.curated().unwrap());
        prop_assert_eq!(forward.ws.memory().unwrap(), backward.ws.memory().unwrap());
        let cases = |p: &Project| -> Vec<_> {
            p.ws.conflicts().unwrap().cases.into_iter().map(|c| (c.memory_key, c.revision, c.fingerprint, c.status)).collect()
        };
        prop_assert_eq!(cases(&forward), cases(&backward));
    }
}

#[test]
fn one_distill_reaches_the_fixpoint_npm_then_pnpm() {
    let p = Project::new();
    p.add("npm", "decision", 5, Some("tooling.pm"), "Use npm.", "2026-01-01T00:00:00Z");
    p.add("pnpm-1", "decision", 4, Some("tooling.pm"), "Use pnpm.", "2026-01-05T00:00:00Z");
    p.add("pnpm-2", "decision", 4, Some("tooling.pm"), "Use pnpm.", "2026-01-06T00:00:00Z");
    assert_eq!(
        p.distill(),
        Report { scanned: 3, eligible: 3, created: 2, superseded: 1, ..Report::default() }
    );
    let state = p.ws.curated().unwrap();
    assert_eq!(state.entries.len(), 2);
    let npm = state.entries.iter().find(|e| e.content == "Use npm.").unwrap();
    let pnpm = state.active_for("tooling.pm").unwrap();
    assert_eq!((npm.revision, npm.status), (1, Status::Superseded));
    assert_eq!(npm.superseded_by.as_deref(), Some(pnpm.key.as_str()));
    assert_eq!((pnpm.content.as_str(), pnpm.revision), ("Use pnpm.", 2));
    assert_eq!(pnpm.supersedes.as_deref(), Some(npm.key.as_str()));
    assert_eq!(pnpm.evidence_ids, ["pnpm-1", "pnpm-2"]);
    let before = p.snapshot();
    let_clock_tick();
    assert_eq!(p.distill(), Report { scanned: 3, skipped: 3, ..Report::default() });
    assert_eq!(p.snapshot(), before);
}

#[test]
fn fixpoint_chains_several_revisions_in_one_run() {
    // alpha (importance 5) wins first; beta (2 facts, newer) replaces it;
    // gamma (3 facts, newer still) replaces beta; delta is stale by then.
    let p = Project::new();
    let key = Some("db.engine");
    p.add("a1", "decision", 5, key, "Use alpha.", "2026-01-01T00:00:00Z");
    p.add("b1", "decision", 4, key, "Use beta.", "2026-01-02T00:00:00Z");
    p.add("b2", "decision", 4, key, "Use beta.", "2026-01-03T00:00:00Z");
    p.add("c1", "decision", 3, key, "Use gamma.", "2026-01-04T00:00:00Z");
    p.add("c2", "decision", 3, key, "Use gamma.", "2026-01-05T00:00:00Z");
    p.add("c3", "decision", 3, key, "Use gamma.", "2026-01-06T00:00:00Z");
    p.add("d1", "decision", 2, key, "Use delta.", "2026-01-02T12:00:00Z");
    p.add("d2", "decision", 2, key, "Use delta.", "2026-01-03T12:00:00Z");
    assert_eq!(
        p.distill(),
        Report {
            scanned: 8,
            eligible: 6,
            created: 3,
            skipped: 2,
            superseded: 2,
            stale: 2,
            ..Report::default()
        }
    );
    let state = p.ws.curated().unwrap();
    let active = state.active_for("db.engine").unwrap();
    assert_eq!((active.content.as_str(), active.revision), ("Use gamma.", 3));
    let second = p.distill();
    assert_eq!(second, Report { scanned: 8, skipped: 8, stale: 2, ..Report::default() });
}
