//! Corrections over random histories of two clones of one repository,
//! merged through real git with workmem's merge driver (docs/corrections.md,
//! "Corrections through git"). Each step runs on either clone: facts
//! remembered (keyed and unkeyed, ties on purpose, a few keys and values so
//! that the two clones' domains collide), a distill at a moving `--as-of`,
//! the decision of an open case, a retraction of facts or of an entry, a
//! restore, a fact with text of its own and its redaction, a commit, and a
//! merge of the other clone's main (one way, or both ways at once from the
//! same two heads).
//!
//! After every step, on every clone the step changed (the other's files
//! are as they were at its last check), once a first command has run
//! (which applies any correction that arrived): `verify` is clean, no
//! retracted fact is evidence of an entry that is not retracted or of a
//! candidate of an open case, or observed by an open case, and no
//! retracted fact is a recent or pending fact of the context, and no file
//! of its memory directory holds the text of a fact its stream redacts.
//! Whenever the two clones hold the same correction records (each has
//! pulled the other's), they agree on which facts are retracted.

#![allow(clippy::disallowed_methods)] // the test reads the memory files directly

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;

use crate::git_world::{Clone, World, text};

/// 2025-06-01T00:00:00Z: every instant of a history is some hours after it.
const BASE: i64 = 1_748_736_000;

/// The instant `hours` after [`BASE`], as `--at` takes it.
fn at(hours: u32) -> String {
    jiff::Timestamp::from_second(BASE + i64::from(hours) * 3600).unwrap().to_string()
}

const ACTOR: &str = "Ada <ada@example.com>";

#[derive(Debug, Clone)]
enum Op {
    /// Facts on clone `on`, each `back` hours before now.
    Remember { on: usize, facts: Vec<FactSpec> },
    /// Two values of a key, equally strong: a tie once they age.
    Tie { on: usize, key: usize, importance: u8 },
    /// Distill at now, moved `step` days forward (0 stands still).
    Distill { on: usize, step: u32 },
    /// Decide an open case (picked by `case`) for a candidate (picked by
    /// `candidate`).
    Resolve { on: usize, case: usize, candidate: usize },
    /// Retract some facts the clone holds (picked by index).
    Retract { on: usize, facts: Vec<usize> },
    /// Retract every evidence fact of an entry (picked by index).
    RetractEntry { on: usize, of: usize },
    /// Restore a retraction in force (picked by index).
    Restore { on: usize, of: usize },
    /// Commit everything.
    Commit { on: usize },
    /// The other clone commits; this one commits and merges its main.
    Pull { into: usize },
    /// Both commit, then each merges the other's head as it was before
    /// either merge (two merge commits, a criss-cross).
    Exchange,
    /// A fact with text of its own (unkeyed, or of a key), `back` hours
    /// before now: what a redaction takes out.
    Leak { on: usize, key: Option<usize>, back: u32 },
    /// Redact a leaked fact the clone holds (picked by index).
    Redact { on: usize, of: usize },
    /// Redact the words of a decision or correction the clone holds
    /// (picked by index).
    RedactWords { on: usize, of: usize },
    /// Retract a keyed entry (picked by index), tie its key, distill (a
    /// case detected after the retraction: the domain moved on) and
    /// restore the retraction: its facts are released.
    MoveOn { on: usize, of: usize, importance: u8 },
}

#[derive(Debug, Clone)]
struct FactSpec {
    key: Option<usize>,
    value: usize,
    kind: usize,
    importance: u8,
    back: u32,
}

fn fact_spec() -> impl Strategy<Value = FactSpec> {
    (prop_oneof![Just(None), (0..2usize).prop_map(Some)], 0..3usize, 0..3usize, 1..=5u8, 0..1500u32)
        .prop_map(|(key, value, kind, importance, back)| FactSpec {
            key,
            value,
            kind,
            importance,
            back,
        })
}

fn op() -> impl Strategy<Value = Op> {
    let on = 0..2usize;
    prop_oneof![
        4 => (on.clone(), proptest::collection::vec(fact_spec(), 1..4))
            .prop_map(|(on, facts)| Op::Remember { on, facts }),
        2 => (on.clone(), 0..2usize, 1..=5u8)
            .prop_map(|(on, key, importance)| Op::Tie { on, key, importance }),
        3 => (on.clone(), prop_oneof![1 => Just(0u32), 3 => 1..15u32])
            .prop_map(|(on, step)| Op::Distill { on, step }),
        2 => (on.clone(), 0..8usize, 0..8usize)
            .prop_map(|(on, case, candidate)| Op::Resolve { on, case, candidate }),
        3 => (on.clone(), proptest::collection::vec(0..64usize, 1..3))
            .prop_map(|(on, facts)| Op::Retract { on, facts }),
        2 => (on.clone(), 0..16usize).prop_map(|(on, of)| Op::RetractEntry { on, of }),
        2 => (on.clone(), 0..16usize).prop_map(|(on, of)| Op::Restore { on, of }),
        1 => on.clone().prop_map(|on| Op::Commit { on }),
        3 => on.clone().prop_map(|into| Op::Pull { into }),
        2 => Just(Op::Exchange),
        2 => (on.clone(), prop_oneof![Just(None), (0..2usize).prop_map(Some)], 0..1500u32)
            .prop_map(|(on, key, back)| Op::Leak { on, key, back }),
        2 => (on.clone(), 0..8usize).prop_map(|(on, of)| Op::Redact { on, of }),
        2 => (on.clone(), 0..8usize).prop_map(|(on, of)| Op::RedactWords { on, of }),
        1 => (on, 0..16usize, 1..=5u8)
            .prop_map(|(on, of, importance)| Op::MoveOn { on, of, importance }),
    ]
}

/// Every fact of the clone's daily logs, by id, with the line the context
/// shows it by.
fn facts_of(clone: &Clone<'_>) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    let Ok(days) = std::fs::read_dir(clone.memory().join("daily")) else { return facts };
    for day in days {
        let data = std::fs::read_to_string(day.unwrap().path()).unwrap();
        for line in data.lines() {
            let fact: Value = serde_json::from_str(line).unwrap();
            let kind = fact["kind"].as_str().unwrap();
            let content = fact["content"].as_str().unwrap();
            let day = &fact["recorded_at"].as_str().unwrap()[..10];
            let shown = match fact["memory_key"].as_str() {
                Some(key) => format!("- [{kind}] {key}: {content} ({day})"),
                None => format!("- [{kind}] {content} ({day})"),
            };
            facts.insert(fact["fact_id"].as_str().unwrap().to_owned(), shown);
        }
    }
    facts
}

/// The records of the clone's corrections stream.
fn corrections_of(clone: &Clone<'_>) -> Vec<Value> {
    let path = clone.memory().join("memory-corrections.jsonl");
    let data = std::fs::read_to_string(path).unwrap_or_default();
    data.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value.as_array().into_iter().flatten().map(|v| v.as_str().unwrap())
}

/// The event ids of the retractions and redactions in force: not
/// restored.
fn in_force(records: &[Value]) -> Vec<&str> {
    let restored: BTreeSet<&str> = records.iter().filter_map(|r| r["restores"].as_str()).collect();
    records
        .iter()
        .filter(|r| r["action"] == "retract" || r["action"] == "redact")
        .map(|r| r["event_id"].as_str().unwrap())
        // A redaction is always in force (a restore of it is refused).
        .filter(|id| !restored.contains(id))
        .collect()
}

/// The facts the records retract (docs/corrections.md, "Which facts are
/// retracted": a set, whatever the order of the records).
fn retracted_by(records: &[Value]) -> BTreeSet<String> {
    let in_force = in_force(records);
    records
        .iter()
        .filter(|r| in_force.contains(&r["event_id"].as_str().unwrap()))
        .flat_map(|r| strings(&r["fact_ids"]))
        .map(str::to_owned)
        .collect()
}

fn read_json(dir: &Path, name: &str) -> Value {
    std::fs::read(dir.join(name)).map_or(Value::Null, |data| serde_json::from_slice(&data).unwrap())
}

/// The facts the clone's curated.json and conflicts.json rest on: the
/// evidence of every entry that is not retracted, and the evidence and
/// observed facts of every open case.
fn rests_on(clone: &Clone<'_>) -> BTreeSet<String> {
    let mut facts = BTreeSet::new();
    let curated = read_json(&clone.memory(), "curated.json");
    for entry in curated["entries"].as_array().into_iter().flatten() {
        if entry["status"] != "retracted" {
            facts.extend(strings(&entry["evidence_ids"]).map(str::to_owned));
        }
    }
    let conflicts = read_json(&clone.memory(), "conflicts.json");
    for case in conflicts["cases"].as_array().into_iter().flatten() {
        if case["status"] == "open" {
            let candidates = case["candidates"].as_array().unwrap();
            facts.extend(
                candidates.iter().flat_map(|c| strings(&c["evidence_ids"])).map(str::to_owned),
            );
            facts.extend(strings(&case["observed_fact_ids"]).map(str::to_owned));
        }
    }
    facts
}

/// Whether an entry of the clone's curated.json that has evidence spans
/// other instants than its evidence facts were recorded at.
fn span_guessed(clone: &Clone<'_>) -> bool {
    let mut recorded: BTreeMap<String, jiff::Timestamp> = BTreeMap::new();
    let Ok(days) = std::fs::read_dir(clone.memory().join("daily")) else { return false };
    for day in days {
        let data = std::fs::read_to_string(day.unwrap().path()).unwrap();
        for line in data.lines() {
            let fact: Value = serde_json::from_str(line).unwrap();
            let at = fact["recorded_at"].as_str().unwrap().parse().unwrap();
            recorded.insert(fact["fact_id"].as_str().unwrap().to_owned(), at);
        }
    }
    let curated = read_json(&clone.memory(), "curated.json");
    curated["entries"].as_array().into_iter().flatten().any(|entry| {
        let times: Vec<jiff::Timestamp> =
            strings(&entry["evidence_ids"]).filter_map(|id| recorded.get(id).copied()).collect();
        let (Some(first), Some(last)) = (times.iter().min(), times.iter().max()) else {
            return false;
        };
        let seen = |field: &str| entry[field].as_str().unwrap().parse::<jiff::Timestamp>().unwrap();
        seen("first_seen") != *first || seen("last_seen") != *last
    })
}

/// The two clones and what the steps gave them.
struct Twins<'w> {
    clones: [Clone<'w>; 2],
    /// Hours after [`BASE`] of the present step.
    now: u32,
    /// Facts and events made so far, for fresh ids.
    made: u32,
    /// The text of each leaked fact, by id, and the rationale of each
    /// decision and correction, by event id: what a redaction takes out.
    leaks: BTreeMap<String, String>,
}

/// What a step did to the clones: the ones it changed, and whether it
/// merged.
struct Changed {
    clones: Vec<usize>,
    merged: bool,
}

impl Changed {
    fn one(on: usize) -> Changed {
        Changed { clones: vec![on], merged: false }
    }

    fn none() -> Changed {
        Changed { clones: Vec::new(), merged: false }
    }
}

const NAMES: [&str; 2] = ["a", "b"];

impl<'w> Twins<'w> {
    /// A shared repository `alice` and its clone `bob`, both with the
    /// merge driver configured by a first workmem command.
    fn new(world: &'w World) -> Twins<'w> {
        let a = world.init("alice/app");
        a.ok(&["init", "-q"]);
        a.ok(&["share", "-q"]);
        a.commit_all("share project memory");
        let b = world.clone_of(&a, "bob/app");
        b.ok(&["status", "-q"]);
        for clone in [&a, &b] {
            let driver = clone.git(&["config", "--get", "merge.workmem.driver"]);
            assert!(driver.contains("merge"), "{driver}");
        }
        Twins { clones: [a, b], now: 60 * 24, made: 0, leaks: BTreeMap::new() }
    }

    fn fresh(&mut self, on: usize) -> String {
        self.made += 1;
        format!("{}{}", NAMES[on], self.made)
    }

    fn remember(&mut self, on: usize, spec: &FactSpec) {
        let id = self.fresh(on);
        let kinds = ["decision", "convention", "pitfall"];
        let (key, content) = workmem_testutil::history_fact(spec.key, spec.value);
        let hour = self.now.saturating_sub(spec.back);
        let when = at(hour);
        let importance = spec.importance.to_string();
        let mut args = vec![
            "remember",
            &content,
            "-k",
            kinds[spec.kind],
            "-i",
            &importance,
            "--at",
            &when,
            "--id",
            &id,
            "-q",
        ];
        if let Some(key) = &key {
            args.extend(["--key", key]);
        }
        self.clones[on].ok(&args);
    }

    /// Records a fact whose text no other fact holds.
    fn leak(&mut self, on: usize, key: Option<usize>, back: u32) {
        let id = self.fresh(on);
        let content = format!("The deploy note {id} must not be kept.");
        let hour = self.now.saturating_sub(back);
        let when = at(hour);
        let key = key.map(workmem_testutil::history_key);
        let mut args =
            vec!["remember", &content, "-k", "decision", "--at", &when, "--id", &id, "-q"];
        if let Some(key) = &key {
            args.extend(["--key", key]);
        }
        self.clones[on].ok(&args);
        self.leaks.insert(id, content);
    }

    /// Redacts the leaked fact picked among those the clone holds and has
    /// not redacted yet.
    fn redact(&mut self, on: usize, of: usize) -> Changed {
        let clone = &self.clones[on];
        let held = facts_of(clone);
        let redacted: BTreeSet<String> = corrections_of(clone)
            .iter()
            .filter(|r| r["action"] == "redact")
            .flat_map(|r| r["fact_ids"].as_array().unwrap().iter())
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        let open: Vec<&String> = self
            .leaks
            .keys()
            .filter(|id| held.contains_key(*id) && !redacted.contains(*id))
            .collect();
        let Some(id) = open.get(of % open.len().max(1)).map(|id| (*id).clone()) else {
            return Changed::none();
        };
        let event = format!("correction:{}", self.fresh(on));
        let when = at(self.now);
        self.clones[on].ok(&[
            "redact",
            &id,
            "--rationale",
            "it must not be kept",
            "--actor",
            ACTOR,
            "--event-id",
            &event,
            "--at",
            &when,
            "--yes",
            "-q",
        ]);
        Changed::one(on)
    }

    /// Redacts the words of the decision or correction picked among those
    /// the clone holds that still hold them (not a redaction's).
    fn redact_words(&mut self, on: usize, of: usize) -> Changed {
        let clone = &self.clones[on];
        let mut records: Vec<Value> = clone.json(&["adjudications"]).as_array().unwrap().clone();
        records.extend(corrections_of(clone).into_iter().filter(|r| r["action"] != "redact"));
        let open: Vec<String> = records
            .iter()
            .filter(|r| r["rationale"] != "[redacted]")
            .map(|r| r["event_id"].as_str().unwrap().to_owned())
            .collect();
        let Some(target) = open.get(of % open.len().max(1)).cloned() else {
            return Changed::none();
        };
        let event = format!("correction:{}", self.fresh(on));
        let when = at(self.now);
        self.clones[on].ok(&[
            "redact",
            "--event",
            &target,
            "--rationale",
            "its words must not be kept",
            "--actor",
            ACTOR,
            "--event-id",
            &event,
            "--at",
            &when,
            "--yes",
            "-q",
        ]);
        Changed::one(on)
    }

    /// Runs a correction (`retract` or `restore` arguments); a retraction
    /// of a value a merge left in dispute is refused until a person decides
    /// (docs/corrections.md, "Values under review"), and nothing else is.
    /// Returns the event id of the record, or `None` when it was refused.
    fn correct(&mut self, on: usize, args: &[&str]) -> Option<String> {
        let event = format!("correction:{}", self.fresh(on));
        let when = at(self.now);
        // Words of its own, which a redaction of them takes out.
        let rationale = format!("recorded by mistake ({event})");
        self.leaks.insert(event.clone(), rationale.clone());
        let mut all = args.to_vec();
        all.extend([
            "--rationale",
            &rationale,
            "--actor",
            ACTOR,
            "--event-id",
            &event,
            "--at",
            &when,
            "-q",
        ]);
        let out = self.clones[on].run(&all);
        if out.status.success() {
            return Some(event);
        }
        let shown = text(&out);
        assert!(
            out.status.code() == Some(2) && args[0] == "retract" && shown.contains("under review"),
            "workmem {all:?}: {shown}"
        );
        None
    }

    fn resolve(&mut self, on: usize, case: usize, candidate: usize) {
        let cases = self.clones[on].json(&["conflicts"]);
        let open = cases.as_array().unwrap();
        let Some(chosen) = open.get(case % open.len().max(1)) else { return };
        let candidates = chosen["candidates"].as_array().unwrap();
        let pick = &candidates[candidate % candidates.len()];
        let event = format!("decision:{}", self.fresh(on));
        let when = at(self.now);
        let revision = chosen["revision"].to_string();
        let rationale = format!("the team chose it ({event})");
        self.leaks.insert(event.clone(), rationale.clone());
        let args = [
            "resolve",
            chosen["conflict_id"].as_str().unwrap(),
            pick["candidate_id"].as_str().unwrap(),
            "--revision",
            &revision,
            "--event-id",
            &event,
            "--actor",
            ACTOR,
            "--rationale",
            &rationale,
            "--at",
            &when,
            "-q",
        ];
        let out = self.clones[on].run(&args);
        // A case whose key gained facts since it was queued is refused as
        // stale until a distill brings it up to date.
        assert!(
            out.status.success() || out.status.code() == Some(3),
            "workmem {args:?}: {}",
            text(&out)
        );
    }

    /// Merges the other clone's head (fetched into FETCH_HEAD) into clone
    /// `into` with real git and the driver. Every entry of the merged curated.json spans exactly the facts it
    /// cites, before any workmem command runs: the driver never guesses a
    /// date ([`span_guessed`]).
    fn merge_fetched(&self, into: usize) {
        let clone = &self.clones[into];
        let out = clone.git_output(&["merge", "-q", "--no-edit", "FETCH_HEAD"]);
        assert!(out.status.success(), "git merge in {}: {}", NAMES[into], text(&out));
        let curated = read_json(&clone.memory(), "curated.json");
        assert!(!span_guessed(clone), "in {}, a span is guessed: {curated:#}", NAMES[into]);
    }

    fn fetch(&self, into: usize) {
        let from = &self.clones[1 - into];
        self.clones[into].git(&["fetch", "-q", from.dir.to_str().unwrap(), "main"]);
    }

    fn step(&mut self, op: &Op) -> Changed {
        self.now += 1;
        match op {
            Op::Remember { on, facts } => {
                for spec in facts {
                    self.remember(*on, spec);
                }
                Changed::one(*on)
            }
            Op::Tie { on, key, importance } => {
                for value in [0, 1] {
                    for back in [1100, 1099] {
                        let spec = FactSpec {
                            key: Some(*key),
                            value,
                            kind: 0,
                            importance: *importance,
                            back,
                        };
                        self.remember(*on, &spec);
                    }
                }
                Changed::one(*on)
            }
            Op::Distill { on, step } => {
                self.now += step * 24;
                self.clones[*on].ok(&["distill", "--as-of", &at(self.now), "-q"]);
                Changed::one(*on)
            }
            Op::Resolve { on, case, candidate } => {
                self.resolve(*on, *case, *candidate);
                Changed::one(*on)
            }
            Op::Retract { on, facts } => {
                let held: Vec<String> = facts_of(&self.clones[*on]).into_keys().collect();
                if held.is_empty() {
                    return Changed::none();
                }
                let picked: BTreeSet<&str> =
                    facts.iter().map(|p| held[p % held.len()].as_str()).collect();
                let mut args = vec!["retract"];
                args.extend(picked);
                self.correct(*on, &args);
                Changed::one(*on)
            }
            Op::RetractEntry { on, of } => {
                let curated = read_json(&self.clones[*on].memory(), "curated.json");
                let keys: Vec<&str> = curated["entries"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|e| e["evidence_ids"].as_array().is_some_and(|ids| !ids.is_empty()))
                    .map(|e| e["key"].as_str().unwrap())
                    .collect();
                let Some(key) = keys.get(of % keys.len().max(1)) else { return Changed::none() };
                let key = (*key).to_owned();
                self.correct(*on, &["retract", "--entry", &key]);
                Changed::one(*on)
            }
            Op::Restore { on, of } => {
                let records = corrections_of(&self.clones[*on]);
                let redactions: BTreeSet<&str> = records
                    .iter()
                    .filter(|r| r["action"] == "redact")
                    .map(|r| r["event_id"].as_str().unwrap())
                    .collect();
                let targets: Vec<&str> =
                    in_force(&records).into_iter().filter(|id| !redactions.contains(id)).collect();
                let Some(target) = targets.get(of % targets.len().max(1)) else {
                    return Changed::none();
                };
                let target = (*target).to_owned();
                self.correct(*on, &["restore", &target]);
                Changed::one(*on)
            }
            Op::MoveOn { on, of, importance } => {
                let curated = read_json(&self.clones[*on].memory(), "curated.json");
                let keyed: Vec<(String, usize)> = curated["entries"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|e| e["evidence_ids"].as_array().is_some_and(|ids| !ids.is_empty()))
                    .filter_map(|e| {
                        let key = workmem_testutil::history_key_number(e["memory_key"].as_str()?)?;
                        Some((e["key"].as_str()?.to_owned(), key))
                    })
                    .collect();
                let Some((entry, key)) = keyed.get(of % keyed.len().max(1)).cloned() else {
                    return Changed::none();
                };
                let Some(retraction) = self.correct(*on, &["retract", "--entry", &entry]) else {
                    return Changed::one(*on);
                };
                self.step(&Op::Tie { on: *on, key, importance: *importance });
                self.step(&Op::Distill { on: *on, step: 0 });
                self.now += 1;
                self.correct(*on, &["restore", &retraction]);
                Changed::one(*on)
            }
            Op::Commit { on } => {
                self.clones[*on].commit_all("work");
                Changed::none()
            }
            Op::Pull { into } => {
                self.clones[1 - into].commit_all("work");
                self.clones[*into].commit_all("work");
                self.fetch(*into);
                self.merge_fetched(*into);
                Changed { clones: vec![*into], merged: true }
            }
            Op::Exchange => {
                for clone in &self.clones {
                    clone.commit_all("work");
                }
                self.fetch(0);
                self.fetch(1);
                self.merge_fetched(0);
                self.merge_fetched(1);
                Changed { merged: true, clones: vec![0, 1] }
            }
            Op::Leak { on, key, back } => {
                self.leak(*on, *key, *back);
                Changed::one(*on)
            }
            Op::Redact { on, of } => self.redact(*on, *of),
            Op::RedactWords { on, of } => self.redact_words(*on, *of),
        }
    }

    /// The invariants every step keeps, on clone `on`.
    fn check(&self, on: usize) {
        let clone = &self.clones[on];
        // The first command after a merge applies what arrived, as a
        // user's would (`status` and `verify` only read).
        clone.ok(&["memory", "-q"]);
        let out = clone.run(&["verify", "--json"]);
        assert!(out.status.success(), "verify in {}: {}", NAMES[on], text(&out));
        let retracted = retracted_by(&corrections_of(clone));
        let resting: Vec<String> = rests_on(clone).intersection(&retracted).cloned().collect();
        assert!(
            resting.is_empty(),
            "in {}, an entry or an open case rests on retracted {resting:?}",
            NAMES[on]
        );
        // Every recent or pending fact of the context is shown for a fact
        // that is not retracted (each fact is told apart by its line).
        // The text of every fact the clone's stream redacts is in no file
        // of its memory directory (caches and the search index included).
        // So are the words of every decision and correction it redacts.
        for record in corrections_of(clone).iter().filter(|r| r["action"] == "redact") {
            let events = record["event_ids"].as_array().into_iter().flatten();
            for id in record["fact_ids"].as_array().unwrap().iter().chain(events) {
                let Some(text) = self.leaks.get(id.as_str().unwrap()) else { continue };
                let holding = workmem_testutil::files_holding(&clone.memory(), text);
                assert!(holding.is_empty(), "in {}, {text:?} is still in {holding:?}", NAMES[on]);
            }
        }
        let context = clone.json(&["context", "--recent", "1000", "--pending", "100"]);
        let context = context["context"].as_str().unwrap();
        let facts = facts_of(clone);
        for line in context.lines().filter(|l| l.starts_with("- [")) {
            let counted = facts
                .iter()
                .any(|(id, shown)| line.starts_with(shown.as_str()) && !retracted.contains(id));
            assert!(counted, "the context of {on} shows a retracted fact: {line}\n{context}");
        }
    }

    /// Takes the steps `ops`, checking nothing.
    fn play(&mut self, ops: &[Op]) {
        for op in ops {
            self.step(op);
        }
    }

    /// Takes the steps `ops`, checking the invariants on every clone a
    /// step changed, and the clones' agreement after every merge.
    fn play_checked(&mut self, ops: &[Op]) {
        for op in ops {
            let changed = self.step(op);
            for on in &changed.clones {
                self.check(*on);
            }
            if changed.merged {
                self.check_agreement();
            }
        }
    }

    /// When both clones hold the same correction records, they agree on
    /// which facts are retracted, as each one's `facts --all` reports them.
    fn check_agreement(&self) {
        let events = |clone: &Clone<'_>| -> BTreeSet<String> {
            corrections_of(clone)
                .iter()
                .map(|r| r["event_id"].as_str().unwrap().to_owned())
                .collect()
        };
        if events(&self.clones[0]) != events(&self.clones[1]) {
            return;
        }
        let reported = |clone: &Clone<'_>| -> BTreeSet<String> {
            clone
                .json(&["facts", "--all"])
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["retracted_by"].as_array().is_some_and(|by| !by.is_empty()))
                .map(|f| f["fact_id"].as_str().unwrap().to_owned())
                .collect()
        };
        let [a, b] = &self.clones;
        let retracted = reported(a);
        assert_eq!(retracted, reported(b), "the clones disagree on what is retracted");
        assert_eq!(retracted, retracted_by(&corrections_of(a)));
    }
}

fn run(ops: &[Op]) {
    let world = World::new();
    Twins::new(&world).play_checked(ops);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 16,
        max_shrink_iters: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_step_of_two_clones_merging_corrections_keeps_the_invariants(
        ops in proptest::collection::vec(op(), 8..20)
    ) {
        run(&ops);
    }
}

/// The minimal history the property found first: bob's retraction of a
/// fact that only alice's open case holds arrives by a merge and waits.
/// `status` and `verify` only read, so they refuse while it waits; the
/// way out they name must be a command that applies it.
#[test]
fn a_correction_waiting_after_a_merge_names_a_command_that_applies_it() {
    let world = World::new();
    let mut twins = Twins::new(&world);
    let history = [
        Op::Tie { on: 1, key: 0, importance: 1 },
        Op::Pull { into: 0 },
        Op::Distill { on: 0, step: 0 },
        Op::Retract { on: 1, facts: vec![0] },
        Op::Pull { into: 0 },
    ];
    twins.play(&history);
    let a = &twins.clones[0];
    let cases = read_json(&a.memory(), "conflicts.json");
    assert_eq!(cases["cases"][0]["status"], "open", "{cases}");
    for reader in ["status", "verify"] {
        let out = a.run(&[reader]);
        let shown = text(&out);
        assert!(!out.status.success(), "{reader}: {shown}");
        assert!(
            shown.contains("retract correction:b5") && shown.contains("not applied"),
            "{shown}"
        );
    }
    let out = a.run(&["status"]);
    let shown = String::from_utf8_lossy(&out.stderr).into_owned();
    let named = shown.split('`').find_map(|part| part.strip_prefix("workmem ")).unwrap();
    let way_out: Vec<&str> = named.split(' ').collect();
    a.ok(&way_out);
    a.ok(&["status", "-q"]);
    let cases = read_json(&a.memory(), "conflicts.json");
    assert_eq!(cases["cases"][0]["status"], "superseded", "{cases}");
    twins.check(0);
}

/// Alice retracts a tie fact and runs a command that reads the memory
/// (which records her corrections stream as applied); bob, who never saw
/// the retraction, distills the tie into an open case; alice merges bob's
/// main. Her stream is unchanged by the merge, but the derived files did
/// not come from her clone, so her first command plans every record again
/// and supersedes the case that rests on the fact she retracted.
#[test]
fn an_applied_correction_meets_state_merged_from_a_side_that_never_saw_it() {
    let world = World::new();
    let mut twins = Twins::new(&world);
    let history = [
        Op::Tie { on: 0, key: 0, importance: 1 },
        Op::Pull { into: 1 },
        Op::Retract { on: 0, facts: vec![0] },
        Op::Distill { on: 1, step: 0 },
    ];
    twins.play(&history);
    let [a, b] = &twins.clones;
    a.ok(&["memory", "-q"]);
    b.commit_all("bob distills");
    a.commit_all("alice retracts");
    a.git(&["pull", "-q", "--no-rebase", "--no-edit", b.dir.to_str().unwrap(), "main"]);
    assert!(rests_on(a).contains("a1"), "bob's case rests on a1");
    assert_eq!(retracted_by(&corrections_of(a)), BTreeSet::from(["a1".to_owned()]));
    // The first command applies alice's retraction to the merged case.
    twins.check(0);
}

/// The second minimal history the property found: both clones distill a
/// tie into the same entry (a3 and a4, an hour apart); alice retracts a3,
/// the older; a merge in either direction must leave the entry spanning
/// only a4, which the first command after it checks against the logs.
#[test]
fn a_merge_that_takes_a_retraction_narrows_the_entry_to_its_evidence() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let history = [
            Op::Tie { on: 0, key: 0, importance: 1 },
            Op::Retract { on: 0, facts: vec![0] },
            Op::Pull { into: 1 },
            Op::Distill { on: 0, step: 0 },
            Op::Distill { on: 1, step: 0 },
            Op::Retract { on: 0, facts: vec![2] },
            Op::Pull { into },
        ];
        twins.play_checked(&history);
        let clone = &twins.clones[into];
        let curated = read_json(&clone.memory(), "curated.json");
        let entry = curated["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["retracted_evidence_ids"] == serde_json::json!(["a3"]))
            .unwrap_or_else(|| panic!("{curated}"));
        assert_eq!(entry["evidence_ids"], serde_json::json!(["a4"]), "{entry}");
        assert_eq!(entry["first_seen"], entry["last_seen"], "{entry}");
    }
}

/// The history behind the merges the property left out while the driver
/// guessed a span: alice's entry of a statement rests on a1 and a2; bob
/// took it and reinforced it with b3, newer; alice retracts a1, the
/// oldest. Merged, the entry's evidence left (a2, b3) is covered by
/// neither side's span alone (bob's includes a1), and the files hold no
/// fact dates: the driver keeps a1 as evidence under both sides' spans
/// (exact for what they cite) and the first command after the merge
/// applies the retraction, dating the entry from a2 to b3.
#[test]
fn a_span_the_driver_cannot_date_is_left_to_the_retraction() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let unkeyed = |back| FactSpec { key: None, value: 0, kind: 0, importance: 1, back };
        let history = [
            Op::Remember { on: 0, facts: vec![unkeyed(1000), unkeyed(900)] },
            Op::Distill { on: 0, step: 0 },
            Op::Pull { into: 1 },
            Op::Remember { on: 1, facts: vec![unkeyed(800)] },
            Op::Distill { on: 1, step: 0 },
            Op::Retract { on: 0, facts: vec![0] },
        ];
        twins.play(&history);
        let entry = |clone: &Clone<'_>| {
            let curated = read_json(&clone.memory(), "curated.json");
            curated["entries"][0].clone()
        };
        let bob = entry(&twins.clones[1]);
        assert_eq!(bob["evidence_ids"], serde_json::json!(["a1", "a2", "b3"]), "{bob}");
        let alice = entry(&twins.clones[0]);
        assert_eq!(alice["retracted_evidence_ids"], serde_json::json!(["a1"]), "{alice}");
        // The merge (which asserts that no span is guessed), before any
        // workmem command runs.
        twins.step(&Op::Pull { into });
        let merged = entry(&twins.clones[into]);
        assert_eq!(merged["evidence_ids"], bob["evidence_ids"], "{merged}");
        assert_eq!(
            (&merged["first_seen"], &merged["last_seen"]),
            (&bob["first_seen"], &bob["last_seen"])
        );
        // The first command applies the retraction.
        twins.check(into);
        let applied = entry(&twins.clones[into]);
        assert_eq!(applied["evidence_ids"], serde_json::json!(["a2", "b3"]), "{applied}");
        assert_eq!(applied["retracted_evidence_ids"], serde_json::json!(["a1"]), "{applied}");
        assert_eq!(applied["first_seen"], alice["first_seen"], "{applied}");
        assert_eq!(applied["last_seen"], bob["last_seen"], "{applied}");
    }
}

/// Alice's entry of a statement rests on a1 and a2, two wordings of it,
/// worded by a1; bob took it, and changed curated.json with another
/// entry; alice retracts a1, and her entry is worded again by a2. The
/// merge takes the retraction: the entry keeps alice's wording, the one
/// of the evidence left, not the common ancestor's, which no fact left
/// holds (the first command after the merge refused curated.json).
#[test]
fn a_merge_that_takes_a_retraction_keeps_the_wording_of_the_evidence_left() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let fact = |value, back| FactSpec { key: None, value, kind: 0, importance: 1, back };
        let history = [
            Op::Remember { on: 0, facts: vec![fact(0, 1000), fact(1, 900)] },
            Op::Distill { on: 0, step: 0 },
            Op::Pull { into: 1 },
            Op::Retract { on: 0, facts: vec![0] },
            Op::Remember { on: 1, facts: vec![fact(2, 1000), fact(2, 900)] },
            Op::Distill { on: 1, step: 0 },
        ];
        twins.play(&history);
        let statement = |clone: &Clone<'_>| {
            let curated = read_json(&clone.memory(), "curated.json");
            let entries = curated["entries"].as_array().unwrap().clone();
            entries.into_iter().find(|e| e["retracted_evidence_ids"] == serde_json::json!(["a1"]))
        };
        let alice = statement(&twins.clones[0]).unwrap();
        assert_eq!(alice["content"], "RUN THE MIGRATIONS FIRST.", "{alice}");
        twins.step(&Op::Pull { into });
        let merged = statement(&twins.clones[into]).unwrap();
        assert_eq!(merged["content"], alice["content"], "{merged}");
        assert_eq!(merged["evidence_ids"], serde_json::json!(["a2"]), "{merged}");
        twins.check(into);
    }
}

/// The third minimal history the property found: alice decides a tie of
/// `k.key-0` and then retracts the chosen value's entry, so her domain
/// has no value; bob, meanwhile, promoted a value of his own (a
/// convention, newer than alice's). Their chains diverge at the first
/// revision. A retracted revision is not a value, so nothing is in
/// dispute: the merge keeps alice's retracted revision as it is (her
/// decision names it, and its key holds its number) and makes bob's value
/// the next revision after it, whichever side merges.
#[test]
fn a_side_whose_value_was_retracted_merges_with_a_side_that_holds_one() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let history = [
            Op::Remember {
                on: 0,
                facts: vec![FactSpec { key: Some(0), value: 0, kind: 0, importance: 1, back: 0 }],
            },
            Op::Tie { on: 0, key: 0, importance: 1 },
            Op::Distill { on: 0, step: 0 },
            Op::Remember {
                on: 1,
                facts: vec![FactSpec { key: Some(0), value: 0, kind: 1, importance: 4, back: 647 }],
            },
            Op::Resolve { on: 0, case: 0, candidate: 0 },
            Op::Distill { on: 1, step: 3 },
            Op::RetractEntry { on: 0, of: 0 },
        ];
        twins.play(&history);
        let entries = |clone: &Clone<'_>| -> Vec<Value> {
            let curated = read_json(&clone.memory(), "curated.json");
            curated["entries"].as_array().unwrap().clone()
        };
        let [alice] = &entries(&twins.clones[0])[..] else { panic!("one entry of alice") };
        let [bob] = &entries(&twins.clones[1])[..] else { panic!("one entry of bob") };
        assert_eq!((&alice["status"], &alice["revision"]), (&"retracted".into(), &1.into()));
        assert_eq!((&bob["status"], &bob["revision"]), (&"active".into(), &1.into()));
        twins.step(&Op::Pull { into });
        twins.check(into);
        let mut merged = entries(&twins.clones[into]);
        merged.sort_by_key(|e| e["revision"].as_u64());
        assert_eq!(merged.len(), 2, "{merged:?}");
        // Alice's retracted revision, untouched but for its link.
        assert_eq!(merged[0]["key"], alice["key"]);
        assert_eq!(merged[0]["status"], "retracted");
        assert_eq!(merged[0]["retracted_evidence_ids"], alice["retracted_evidence_ids"]);
        // Bob's value, the next revision: the domain's value.
        assert_eq!(merged[1]["status"], "active");
        assert_eq!(merged[1]["revision"], 2);
        assert_eq!(merged[1]["evidence_ids"], bob["evidence_ids"]);
        assert_eq!(merged[1]["supersedes"], alice["key"]);
        assert_eq!(merged[0]["superseded_by"], merged[1]["key"]);
        let active = twins.clones[into].active("k.key-0");
        assert_eq!(active.as_deref(), bob["content"].as_str());
    }
}

/// The entries of `key` in the clone's curated.json, by revision.
fn chain_of(clone: &Clone<'_>, key: &str) -> Vec<Value> {
    let curated = read_json(&clone.memory(), "curated.json");
    let mut chain: Vec<Value> = curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["memory_key"] == key)
        .cloned()
        .collect();
    chain.sort_by_key(|e| e["revision"].as_u64());
    chain
}

/// Alice decides a tie and retracts the chosen value; bob promoted a
/// value of his own from a fact older than alice's (an important one,
/// promoted alone). Both revisions are kept in the order of their
/// evidence: bob's value first, where he numbered it, then alice's
/// retracted revision after it, so the domain has no value, and alice's
/// decision (which names her revision, renumbered) still holds; the next
/// distill, judging bob's older fact against her decision, leaves the
/// domain without a value.
#[test]
fn a_value_older_than_the_retracted_one_goes_before_it() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let older = FactSpec { key: Some(0), value: 2, kind: 0, importance: 5, back: 1500 };
        let history = [
            Op::Remember { on: 1, facts: vec![older] },
            Op::Distill { on: 1, step: 0 },
            Op::Tie { on: 0, key: 0, importance: 1 },
            Op::Distill { on: 0, step: 0 },
            Op::Resolve { on: 0, case: 0, candidate: 0 },
            Op::RetractEntry { on: 0, of: 0 },
        ];
        twins.play(&history);
        let alice = chain_of(&twins.clones[0], "k.key-0");
        let bob = chain_of(&twins.clones[1], "k.key-0");
        assert_eq!((alice.len(), &alice[0]["status"]), (1, &"retracted".into()), "{alice:?}");
        assert_eq!((bob.len(), &bob[0]["status"]), (1, &"active".into()), "{bob:?}");
        twins.step(&Op::Pull { into });
        twins.check(into);
        let merged = chain_of(&twins.clones[into], "k.key-0");
        let statuses: Vec<&Value> = merged.iter().map(|e| &e["status"]).collect();
        assert_eq!(statuses, ["superseded", "retracted"], "{merged:?}");
        assert_eq!(merged[0]["key"], bob[0]["key"]);
        assert_eq!(merged[0]["evidence_ids"], bob[0]["evidence_ids"]);
        assert_eq!(merged[1]["content"], alice[0]["content"]);
        assert_eq!(merged[1]["retracted_evidence_ids"], alice[0]["retracted_evidence_ids"]);
        assert_eq!(merged[1]["supersedes"], bob[0]["key"]);
        assert_eq!(twins.clones[into].active("k.key-0"), None);
        // The next distill judges bob's fact against alice's decision: it
        // is older than the value she chose, so it does not replace it.
        twins.step(&Op::Distill { on: into, step: 1 });
        twins.check(into);
        assert_eq!(twins.clones[into].active("k.key-0"), None);
    }
}

/// Both clones decide one tie differently and each retracts its chosen
/// value. Neither side holds a value, so neither is contested: both
/// retracted revisions are kept, one after the other, the domain without
/// a value, and the case both decided (open again by the merge, on facts
/// now retracted) is superseded by the first command after it.
#[test]
fn two_sides_that_each_retracted_their_value_keep_both_revisions() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let history = [
            Op::Tie { on: 0, key: 0, importance: 1 },
            Op::Pull { into: 1 },
            Op::Distill { on: 0, step: 0 },
            Op::Distill { on: 1, step: 0 },
            Op::Resolve { on: 0, case: 0, candidate: 0 },
            Op::Resolve { on: 1, case: 0, candidate: 1 },
            Op::RetractEntry { on: 0, of: 0 },
            Op::RetractEntry { on: 1, of: 0 },
        ];
        twins.play(&history);
        let held: Vec<Value> =
            twins.clones.iter().flat_map(|clone| chain_of(clone, "k.key-0")).collect();
        assert!(held.iter().all(|e| e["status"] == "retracted" && e["revision"] == 1));
        twins.step(&Op::Pull { into });
        twins.check(into);
        let merged = chain_of(&twins.clones[into], "k.key-0");
        let statuses: Vec<&Value> = merged.iter().map(|e| &e["status"]).collect();
        assert_eq!(statuses, ["retracted", "retracted"], "{merged:?}");
        // The first keeps its key; the second, renumbered, its value and
        // its retracted evidence.
        assert!(held.iter().any(|e| e["key"] == merged[0]["key"]), "{merged:?}");
        assert_eq!(merged[1]["supersedes"], merged[0]["key"]);
        let second = held.iter().find(|e| e["key"] != merged[0]["key"]).unwrap();
        assert_eq!(merged[1]["content"], second["content"]);
        assert_eq!(merged[1]["retracted_evidence_ids"], second["retracted_evidence_ids"]);
        assert_eq!(twins.clones[into].active("k.key-0"), None);
        let cases = read_json(&twins.clones[into].memory(), "conflicts.json");
        assert_eq!(cases["cases"][0]["status"], "superseded", "{cases}");
    }
}

/// Alice decides her tie and retracts the chosen value; bob decides a
/// tie of his own, newer, on the same key. The merge makes bob's value
/// the next revision after alice's retracted one, which renumbers it;
/// bob's decision still holds (verify finds its value in the domain).
#[test]
fn a_decided_value_after_a_retracted_one_keeps_its_decision() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let history = [
            Op::Tie { on: 0, key: 0, importance: 1 },
            Op::Distill { on: 0, step: 0 },
            Op::Resolve { on: 0, case: 0, candidate: 0 },
            Op::RetractEntry { on: 0, of: 0 },
            // Dated after alice's decision: aged by a month of distills.
            Op::Tie { on: 1, key: 0, importance: 1 },
            Op::Distill { on: 1, step: 31 },
            Op::Resolve { on: 1, case: 0, candidate: 1 },
        ];
        twins.play(&history);
        let bob = chain_of(&twins.clones[1], "k.key-0");
        assert_eq!((bob.len(), &bob[0]["status"]), (1, &"active".into()), "{bob:?}");
        twins.step(&Op::Pull { into });
        twins.check(into);
        let merged = chain_of(&twins.clones[into], "k.key-0");
        let statuses: Vec<&Value> = merged.iter().map(|e| &e["status"]).collect();
        assert_eq!(statuses, ["retracted", "active"], "{merged:?}");
        assert_eq!(merged[1]["evidence_ids"], bob[0]["evidence_ids"]);
        let active = twins.clones[into].active("k.key-0");
        assert_eq!(active.as_deref(), bob[0]["content"].as_str());
        // The next distill keeps bob's decided value.
        twins.step(&Op::Distill { on: into, step: 1 });
        twins.check(into);
        assert_eq!(twins.clones[into].active("k.key-0"), active);
    }
}

/// Found by the property once diverged chains with a retracted revision
/// were drawn: bob decides value 1 of a tie; alice promotes value 1 on
/// her own facts (the same revision, the same entry key), retracts it,
/// and her next distill judges the domain again into a second revision.
/// Merged, the shared revision has bob's evidence again and alice's
/// successor: it is superseded, not active (the driver refused to save an
/// active entry with a successor).
#[test]
fn a_revision_one_side_retracted_and_moved_past_merges_superseded() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let history = [
            Op::Tie { on: 1, key: 0, importance: 1 },
            Op::Remember {
                on: 0,
                facts: vec![FactSpec { key: Some(0), value: 1, kind: 0, importance: 1, back: 0 }],
            },
            Op::Distill { on: 1, step: 0 },
            Op::Resolve { on: 1, case: 0, candidate: 1 },
            Op::Tie { on: 0, key: 0, importance: 1 },
            Op::Distill { on: 0, step: 30 },
            Op::RetractEntry { on: 0, of: 0 },
            Op::Distill { on: 0, step: 0 },
        ];
        twins.play(&history);
        let alice = chain_of(&twins.clones[0], "k.key-0");
        let bob = chain_of(&twins.clones[1], "k.key-0");
        assert_eq!(alice.len(), 2, "{alice:?}");
        assert_eq!((&alice[0]["key"], &alice[0]["status"]), (&bob[0]["key"], &"retracted".into()));
        twins.step(&Op::Pull { into });
        twins.check(into);
        let merged = chain_of(&twins.clones[into], "k.key-0");
        assert_eq!(merged[0]["status"], "superseded", "{merged:?}");
        assert_eq!(merged[0]["evidence_ids"], bob[0]["evidence_ids"]);
        assert_eq!(merged[0]["superseded_by"], alice[1]["key"]);
    }
}

/// The fourth minimal history the property found, on one clone and
/// without git: a tie of `k.key-1` decided; a fact of that key recorded
/// after the decision but dated before the tie's oldest facts; a
/// retraction of one fact of the tie (a4, the chosen value's newest). The
/// retraction lowered the chosen entry's `last_seen`, and the next distill
/// took the rejected value's old facts for newer evidence and replaced
/// the decided value, which `verify` reported ("replaced the value
/// decision ... chose for k.key-1 without newer evidence"). A decision now
/// holds until a fact dated after the chosen value's newest fact as the
/// person saw it.
#[test]
fn a_backdated_fact_a_retraction_and_a_distill_keep_the_decision() {
    let world = World::new();
    let mut twins = Twins::new(&world);
    let history = [
        Op::Tie { on: 0, key: 1, importance: 1 },
        Op::Distill { on: 0, step: 0 },
        Op::Resolve { on: 0, case: 0, candidate: 0 },
    ];
    twins.play(&history);
    // Recorded now, dated before the tie's oldest facts.
    twins.now += 1;
    twins.clones[0].ok(&[
        "remember",
        "Key 1 uses value 0.",
        "-k",
        "decision",
        "-i",
        "1",
        "--at",
        &at(twins.now - 1103),
        "--id",
        "a6",
        "--key",
        "k.key-1",
        "-q",
    ]);
    twins.step(&Op::Retract { on: 0, facts: vec![3] });
    twins.step(&Op::Distill { on: 0, step: 0 });
    twins.check(0);
    // The decided value holds, on a3 alone.
    let curated = read_json(&twins.clones[0].memory(), "curated.json");
    let active: Vec<(&str, &Value)> = curated["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "active")
        .map(|e| (e["content"].as_str().unwrap(), &e["evidence_ids"]))
        .collect();
    assert_eq!(active, [("Key 1 uses value 1.", &serde_json::json!(["a3"]))]);
}

/// The fifth minimal history the property found: alice's retraction
/// supersedes a case (its candidate lists the fact as retracted evidence)
/// that bob's distill had superseded earlier with newer facts; merged, the
/// case took the earlier instant with alice's candidates, so no
/// correction at its `superseded_at` named its retracted evidence and the
/// first command refused conflicts.json. The side that closed it first
/// now gives both.
#[test]
fn a_case_two_sides_superseded_for_two_reasons_merges_whole() {
    let world = World::new();
    let mut twins = Twins::new(&world);
    let unkeyed = |n| vec![FactSpec { key: None, value: 0, kind: 0, importance: 1, back: 0 }; n];
    let history = [
        Op::Remember { on: 1, facts: unkeyed(2) },
        Op::Remember { on: 0, facts: unkeyed(3) },
        Op::Remember { on: 0, facts: unkeyed(2) },
        Op::Tie { on: 1, key: 0, importance: 1 },
        Op::Tie { on: 1, key: 0, importance: 1 },
        Op::Pull { into: 0 },
        Op::Tie { on: 1, key: 0, importance: 1 },
        Op::Distill { on: 0, step: 0 },
        Op::Exchange,
        Op::Remember {
            on: 1,
            facts: vec![FactSpec { key: Some(0), value: 0, kind: 0, importance: 1, back: 720 }],
        },
        Op::Distill { on: 1, step: 0 },
        Op::Tie { on: 0, key: 0, importance: 1 },
        Op::Retract { on: 0, facts: vec![56] },
        Op::Pull { into: 0 },
    ];
    twins.play_checked(&history);
}

/// Found by the property: both clones redact the same fact, each with its
/// own record and tombstone; a merge keeps one tombstone of the line
/// (either record names it), and both clones hold no text of it and
/// verify clean, whichever side merges.
#[test]
fn two_redactions_of_one_fact_merge_into_one_tombstone() {
    for into in [0, 1] {
        let world = World::new();
        let mut twins = Twins::new(&world);
        let history = [
            Op::Leak { on: 0, key: None, back: 0 },
            Op::Pull { into: 1 },
            Op::Redact { on: 1, of: 0 },
            Op::Redact { on: 0, of: 0 },
            Op::Pull { into },
            Op::Pull { into: 1 - into },
        ];
        twins.play_checked(&history);
        twins.check_agreement();
        let day = std::fs::read_dir(twins.clones[0].memory().join("daily")).unwrap();
        for file in day {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            assert_eq!(text.matches("\"fact_id\": \"a1\"").count(), 1, "{text}");
        }
    }
}
