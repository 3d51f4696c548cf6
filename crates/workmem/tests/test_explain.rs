//! Explanations and per-source policy (issue: policy configuration, source
//! trust and `explain`). The agreement property runs the pure policy on 1,000
//! random workspaces: every fact the recorded decisions call promoted is
//! evidence of the named entry after `distill`, and no other fact is.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use workmem::internals::distill::{self, Policy, Reason, SourcePolicy};
use workmem::{ConflictQueue, CuratedState, Fact, Kind, NewFact, Stamp};

const WS: &str = "0123456789abcdef";

fn stamp(text: &str) -> Stamp {
    Stamp::parse(text).expect("stamp")
}

#[derive(Debug, Clone)]
struct Gen {
    kind: Kind,
    importance: u8,
    key: Option<u8>,
    value: u8,
    days_before: u16,
    source: u8,
}

fn fact_gen() -> impl Strategy<Value = Gen> {
    (
        prop::sample::select(Kind::ALL.to_vec()),
        1..=5u8,
        prop::option::of(0..3u8),
        0..4u8,
        0..120u16,
        0..3u8,
    )
        .prop_map(|(kind, importance, key, value, days_before, source)| Gen {
            kind,
            importance,
            key,
            value,
            days_before,
            source,
        })
}

fn policy() -> impl Strategy<Value = Policy> {
    (0..60u32, 1..=5u8, 1..=3u32, 2..=3u32, prop::option::of((0..40u32, 1..=5u8))).prop_map(
        |(age, importance, repeat, supersession, user)| {
            let mut policy = Policy {
                minimum_age_days: age,
                minimum_importance: importance,
                repeat_threshold: repeat,
                supersession_repeat_threshold: supersession,
                ..Policy::default()
            };
            if let Some((days, importance)) = user {
                policy.sources.insert(
                    "user".into(),
                    SourcePolicy {
                        minimum_age_days: Some(days),
                        minimum_importance: Some(importance),
                    },
                );
            }
            policy
        },
    )
}

fn facts(gens: &[Gen], as_of: jiff::Timestamp, offset: usize) -> Vec<Fact> {
    gens.iter()
        .enumerate()
        .map(|(i, g)| {
            let at = as_of
                - jiff::SignedDuration::from_hours(24 * i64::from(g.days_before) + (i % 7) as i64);
            let new = NewFact {
                content: format!("Value {} for the question.", g.value),
                kind: Some(g.kind.as_str().into()),
                importance: Some(i64::from(g.importance)),
                memory_key: g.key.map(|k| format!("topic.k{k}")),
                source: Some(["agent", "user", "model_tool"][usize::from(g.source)].into()),
                recorded_at: Some(Stamp::from_timestamp(at).as_str().to_owned()),
                fact_id: Some(format!("f{:04}", offset + i)),
                ..NewFact::default()
            };
            workmem::internals::fact_from_new(
                new,
                WS,
                stamp("2026-01-01T00:00:00Z"),
                || unreachable!(),
            )
            .expect("valid fact")
        })
        .collect()
}

/// Checks that the decisions of a run agree with the state a plain distill
/// of the same inputs produces.
fn agree(
    all: &[Fact],
    curated: &CuratedState,
    queue: &ConflictQueue,
    policy: &Policy,
    as_of: &Stamp,
) {
    let explained = distill::distill_with(
        all,
        curated.clone(),
        queue,
        policy,
        as_of,
        WS,
        distill::RunOptions::explained(),
    )
    .expect("explained");
    let plain = distill::distill(all, curated.clone(), queue, policy, as_of, WS).expect("distill");
    assert_eq!(explained.curated, plain.curated, "recording changed the outcome");
    assert_eq!(explained.report, plain.report);
    let evidence: HashMap<&str, &str> = plain
        .curated
        .entries
        .iter()
        .flat_map(|e| e.evidence_ids.iter().map(move |id| (id, e.key.as_str())))
        .collect();
    assert_eq!(explained.decisions.len(), all.len(), "every fact has a decision");
    for decision in &explained.decisions {
        let holder = evidence.get(decision.fact_id.as_str()).copied();
        if decision.reason.is_promoted() {
            assert_eq!(holder, decision.reason.entry_key(), "{decision:?}");
        } else {
            assert_eq!(holder, None, "{decision:?} is evidence of an entry");
        }
    }
}

#[test]
fn explain_and_distill_agree_on_a_thousand_random_workspaces() {
    let mut runner = TestRunner::new(ProptestConfig { cases: 1_000, ..ProptestConfig::default() });
    let strategy = (
        prop::collection::vec(fact_gen(), 1..40),
        prop::collection::vec(fact_gen(), 0..20),
        policy(),
    );
    runner
        .run(&strategy, |(first, later, policy)| {
            let as_of = stamp("2026-03-01T00:00:00Z");
            let before =
                facts(&first, as_of.instant() - jiff::SignedDuration::from_hours(24 * 20), 0);
            let empty = (CuratedState::new(), ConflictQueue::default());
            agree(&before, &empty.0, &empty.1, &policy, &as_of);
            // A second run over a populated state exercises evidence that
            // already exists, reinforcement, supersession and reused cases.
            let first_run =
                distill::distill(&before, empty.0.clone(), &empty.1, &policy, &as_of, WS)
                    .expect("distill");
            let mut all = before;
            all.extend(facts(&later, as_of.instant(), 1_000));
            let later_as_of = stamp("2026-04-15T00:00:00Z");
            agree(&all, &first_run.curated, &first_run.queue, &policy, &later_as_of);
            Ok(())
        })
        .expect("explain agrees with distill");
}

fn fact(
    id: &str,
    content: &str,
    importance: i64,
    key: Option<&str>,
    source: &str,
    at: &str,
) -> Fact {
    let new = NewFact {
        content: content.into(),
        kind: Some("decision".into()),
        importance: Some(importance),
        memory_key: key.map(str::to_owned),
        source: Some(source.into()),
        recorded_at: Some(at.into()),
        fact_id: Some(id.into()),
        ..NewFact::default()
    };
    workmem::internals::fact_from_new(new, WS, stamp("2026-01-01T00:00:00Z"), || unreachable!())
        .expect("fact")
}

fn reasons(all: &[Fact], policy: &Policy, as_of: &str) -> BTreeMap<String, Reason> {
    let outcome = distill::distill_with(
        all,
        CuratedState::new(),
        &ConflictQueue::default(),
        policy,
        &stamp(as_of),
        WS,
        distill::RunOptions::explained(),
    )
    .expect("distill");
    outcome.decisions.into_iter().map(|d| (d.fact_id, d.reason)).collect()
}

#[test]
fn source_overrides_apply_fact_by_fact() {
    let mut policy = Policy::default();
    policy.sources.insert(
        "user".into(),
        SourcePolicy { minimum_age_days: Some(7), minimum_importance: Some(3) },
    );
    let all = vec![
        // 10 days old: aged for `user` (7 days) but not for `agent` (30).
        fact("u1", "Confirmed by a person.", 3, None, "user", "2026-02-19T00:00:00Z"),
        fact("a1", "Guessed by an agent.", 5, None, "agent", "2026-02-19T00:00:00Z"),
        // Old enough for both; importance 3 qualifies only a `user` fact.
        fact("u2", "Another confirmation.", 3, None, "user", "2026-01-01T00:00:00Z"),
        fact("a2", "Another guess.", 3, None, "agent", "2026-01-01T00:00:00Z"),
        // A group qualifies when any one fact meets its own source's bar.
        fact("g1", "Mixed sources agree.", 3, None, "agent", "2026-01-01T00:00:00Z"),
        fact("g2", "mixed sources  agree.", 3, None, "user", "2026-01-02T00:00:00Z"),
    ];
    let got = reasons(&all, &policy, "2026-03-01T00:00:00Z");
    assert!(matches!(got["u1"], Reason::Promoted { .. }), "{:?}", got["u1"]);
    assert!(matches!(got["a1"], Reason::WaitingForAge { .. }), "{:?}", got["a1"]);
    assert!(matches!(got["u2"], Reason::Promoted { .. }), "{:?}", got["u2"]);
    assert_eq!(
        got["a2"],
        Reason::BelowThresholds {
            importance: 3,
            minimum_importance: 4,
            facts: 1,
            repeat_threshold: 2
        }
    );
    assert!(matches!(got["g1"], Reason::Promoted { .. }) && got["g1"] == got["g2"]);
    // Without overrides the same log behaves exactly as docs/policy.md.
    let plain = reasons(&all, &Policy::default(), "2026-03-01T00:00:00Z");
    assert!(matches!(plain["u1"], Reason::WaitingForAge { .. }));
    assert!(matches!(plain["u2"], Reason::BelowThresholds { .. }));
    // The waiting fact's `until` is the first instant it is old enough.
    let Reason::WaitingForAge { until } = &got["a1"] else { unreachable!() };
    assert_eq!(until.as_str(), "2026-03-21T00:00:00.000001Z");
    let later = reasons(&all, &policy, until.as_str());
    assert!(matches!(later["a1"], Reason::Promoted { .. }), "{:?}", later["a1"]);
}

#[test]
fn invalid_source_overrides_are_rejected() {
    let mut policy = Policy::default();
    policy.sources.insert(
        "user".into(),
        SourcePolicy { minimum_age_days: None, minimum_importance: Some(0) },
    );
    let err = policy.validate().expect_err("importance 0");
    assert!(err.to_string().contains("source.user.minimum_importance"), "{err}");
    let kinds: BTreeSet<Kind> = BTreeSet::new();
    let empty_kinds = Policy { stable_kinds: kinds, ..Policy::default() };
    assert!(empty_kinds.validate().is_ok());
}
