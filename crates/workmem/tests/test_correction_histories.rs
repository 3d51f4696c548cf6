//! Corrections over random histories (docs/corrections.md): facts
//! remembered (keyed and unkeyed, ties on purpose), distills at a moving
//! `as_of`, decisions of open cases, retractions (of facts or of an
//! entry) and restores, through the library. After every step `verify`
//! is clean, no retracted fact is evidence of an entry that is not
//! retracted or of a candidate of an open case, no retracted fact is a
//! recent or pending fact of the context, and a retraction followed at
//! once by its restore leaves curated.json and conflicts.json as they
//! were. `rebuild` is one of the steps: the state it derives keeps every
//! decision and the same invariants.
#![allow(clippy::disallowed_methods)] // the test reads the files directly

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use workmem::{
    Action, CaseStatus, ContextOptions, DistillOptions, FixedClock, NewFact, Resolution,
    Restoration, Retraction, Stamp, Status, Workspace,
};
use workmem_testutil::files_holding;

use crate::common::stamp;

/// The clock of the workspace; every step happens before it.
const CLOCK: &str = "2026-06-01T00:00:00Z";

#[derive(Debug, Clone)]
enum Op {
    /// Facts through the library, `back` hours before now.
    Remember(Vec<FactSpec>),
    /// Two values of a key, equally strong: a tie once they age.
    Tie { key: usize, importance: i64 },
    /// Distill at `as_of`, moved `step` days forward from now (0 stands
    /// still).
    Distill { step: u32 },
    /// Decide an open case (picked by `case`) for a candidate (picked by
    /// `candidate`).
    Resolve { case: usize, candidate: usize },
    /// Retract some facts of the log (picked by index).
    Retract { facts: Vec<usize> },
    /// Retract every evidence fact of an entry (picked by index).
    RetractEntry { of: usize },
    /// Restore a retraction in force (picked by index).
    Restore { of: usize },
    /// A retraction of facts, restored at once.
    RetractRestore { facts: Vec<usize> },
    /// A retraction of an entry, restored at once.
    RetractEntryRestore { of: usize },
    /// curated.json and conflicts.json derived again from the records.
    Rebuild,
    /// Redact the fact picked, with every fact holding its text.
    Redact { fact: usize },
    /// Redact the actor and rationale of the decision or correction
    /// picked.
    RedactRecord { of: usize },
    /// Retract a keyed entry (picked by index), move its domain on (a tie
    /// of its key, then a distill, which detects a case after the
    /// retraction), and restore the retraction: its facts are released.
    /// Then (`then`): 0 nothing; 1 a released fact retracted and restored
    /// at once; 2 the same after a distill judged it again.
    MoveOn { of: usize, importance: i64, then: u8 },
}

#[derive(Debug, Clone)]
struct FactSpec {
    key: Option<usize>,
    value: usize,
    kind: usize,
    importance: i64,
    back: u32,
}

fn fact_spec() -> impl Strategy<Value = FactSpec> {
    (
        prop_oneof![Just(None), (0..3usize).prop_map(Some)],
        0..3usize,
        0..3usize,
        1..=5i64,
        0..1500u32,
    )
        .prop_map(|(key, value, kind, importance, back)| FactSpec {
            key,
            value,
            kind,
            importance,
            back,
        })
}

fn picks() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0..64usize, 1..4)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => proptest::collection::vec(fact_spec(), 1..5).prop_map(Op::Remember),
        2 => (0..3usize, 1..=5i64).prop_map(|(key, importance)| Op::Tie { key, importance }),
        4 => prop_oneof![2 => Just(0u32), 5 => 1..20u32].prop_map(|step| Op::Distill { step }),
        2 => (0..8usize, 0..8usize).prop_map(|(case, candidate)| Op::Resolve { case, candidate }),
        2 => picks().prop_map(|facts| Op::Retract { facts }),
        2 => (0..16usize).prop_map(|of| Op::RetractEntry { of }),
        2 => (0..16usize).prop_map(|of| Op::Restore { of }),
        1 => picks().prop_map(|facts| Op::RetractRestore { facts }),
        1 => (0..16usize).prop_map(|of| Op::RetractEntryRestore { of }),
        1 => Just(Op::Rebuild),
        1 => (0..64usize).prop_map(|fact| Op::Redact { fact }),
        1 => (0..16usize).prop_map(|of| Op::RedactRecord { of }),
        1 => (0..16usize, 1..=5i64, 0..3u8)
            .prop_map(|(of, importance, then)| Op::MoveOn { of, importance, then }),
    ]
}

/// The stamp `hours` after 2026-01-01.
fn hour_stamp(hours: u32) -> Stamp {
    let at = jiff::Timestamp::from_second(1_767_225_600).unwrap()
        + jiff::SignedDuration::from_hours(i64::from(hours));
    Stamp::from_timestamp(at)
}

fn new_fact(spec: &FactSpec, id: &str, at: &Stamp) -> NewFact {
    let kinds = ["decision", "convention", "pitfall"];
    let (memory_key, content) = workmem_testutil::history_fact(spec.key, spec.value);
    NewFact {
        content,
        kind: Some(kinds[spec.kind].to_owned()),
        importance: Some(spec.importance),
        memory_key,
        source: None,
        evidence: BTreeMap::new(),
        recorded_at: Some(at.as_str().to_owned()),
        fact_id: Some(id.to_owned()),
    }
}

fn read(memory: &Path, name: &str) -> Option<String> {
    fs::read_to_string(memory.join(name)).ok()
}

/// The history under test: the workspace and what the steps recorded.
struct History {
    _project: tempfile::TempDir,
    ws: Workspace,
    memory: std::path::PathBuf,
    /// Every fact id remembered, with the context line it is shown by.
    facts: Vec<(String, String)>,
    /// Hours after 2026-01-01 of the present step.
    now: u32,
    events: u32,
    /// The hour of the latest decision.
    decided: Option<u32>,
    /// Whether a fact dated at or before a decision was recorded after it.
    ///
    /// Known limit of `rebuild`, left out of the histories: it replays a
    /// decision on the case a distill as of the decision's time finds, and
    /// such a fact makes that case another one, so the decision is set
    /// aside (reported) and verify then finds it naming a case that is not
    /// in conflicts.json. Rebuild is not a step of such a history.
    backdated: bool,
    /// Whether a redaction was made after a decision.
    ///
    /// Known limit of `rebuild`, left out of the histories: a decision
    /// whose chosen value was redacted cannot be re-applied (the wording
    /// it chose is gone), so rebuild sets it aside and reports it.
    redacted_after_decision: bool,
    /// Whether the steps are drawn at random (the property), which leaves
    /// the known limits out; the tests of a fixed history meet them as
    /// written.
    random: bool,
}

impl History {
    fn new() -> History {
        let project = tempfile::tempdir().unwrap();
        let memory = project.path().join(".workmem/memory");
        let ws = Workspace::builder(project.path())
            .memory_dir(&memory)
            .clock(Arc::new(FixedClock::new(stamp(CLOCK))))
            .open()
            .unwrap();
        ws.init().unwrap();
        History {
            _project: project,
            ws,
            memory,
            facts: Vec::new(),
            now: 60 * 24,
            events: 0,
            decided: None,
            backdated: false,
            redacted_after_decision: false,
            random: false,
        }
    }

    fn remember(&mut self, spec: &FactSpec) {
        let id = format!("f{}", self.facts.len());
        let hour = self.now.saturating_sub(spec.back);
        self.backdated |= self.decided.is_some_and(|decided| hour <= decided);
        let at = hour_stamp(hour);
        let fact = self.ws.remember(new_fact(spec, &id, &at)).unwrap();
        let line = match &fact.memory_key() {
            Some(key) => format!(
                "- [{}] {key}: {} ({})",
                fact.kind(),
                fact.content(),
                fact.recorded_at().utc_day()
            ),
            None => {
                format!("- [{}] {} ({})", fact.kind(), fact.content(), fact.recorded_at().utc_day())
            }
        };
        self.facts.push((id, line));
    }

    fn next_event(&mut self) -> String {
        self.events += 1;
        format!("correction:{:04}", self.events)
    }

    fn retraction(&mut self, fact_ids: Vec<String>, entry_key: Option<String>) -> Retraction {
        let event_id = self.next_event();
        Retraction {
            fact_ids,
            entry_key,
            actor: "Ada <ada@example.com>".into(),
            // Words of its own, so that a redaction of them can be looked
            // for in every file.
            rationale: format!("recorded by mistake ({event_id})"),
            event_id,
            recorded_at: Some(hour_stamp(self.now)),
        }
    }

    fn restoration(&mut self, restores: &str) -> Restoration {
        let event_id = self.next_event();
        Restoration {
            restores: restores.to_owned(),
            actor: "Ada <ada@example.com>".into(),
            rationale: format!("it was right after all ({event_id})"),
            event_id,
            recorded_at: Some(hour_stamp(self.now)),
        }
    }

    /// The retraction of the facts picked, or `None` before any fact.
    fn retract_facts(&mut self, picks: &[usize]) -> Option<Retraction> {
        let facts: Vec<&String> = self.facts.iter().map(|(id, _)| id).collect();
        if facts.is_empty() {
            return None;
        }
        let mut ids: Vec<String> = picks.iter().map(|p| facts[p % facts.len()].clone()).collect();
        ids.sort();
        ids.dedup();
        Some(self.retraction(ids, None))
    }

    /// The retraction of the entry picked among those with evidence.
    fn retract_entry(&mut self, of: usize) -> Option<Retraction> {
        let state = self.ws.curated().unwrap();
        let keys: Vec<String> = state
            .entries
            .iter()
            .filter(|e| !e.evidence_ids.is_empty())
            .map(|e| e.key.clone())
            .collect();
        let key = keys.get(of % keys.len().max(1))?.clone();
        Some(self.retraction(Vec::new(), Some(key)))
    }

    /// Retracts, then at once restores, and checks that curated.json and
    /// conflicts.json are as they were (but for their versions, which the
    /// first correction raises, and the wording of an entry the
    /// retraction worded again).
    fn retract_and_restore(&mut self, request: Retraction) {
        let before_curated = read(&self.memory, "curated.json");
        let before_conflicts = read(&self.memory, "conflicts.json");
        let first = self.ws.corrections().unwrap().is_empty();
        let before_state = self.ws.curated().unwrap();
        let done = self.ws.retract(request).unwrap();
        self.check();
        let worded_again: Vec<(String, String, String)> = self
            .ws
            .curated()
            .unwrap()
            .entries
            .iter()
            .filter_map(|after| {
                let before = before_state.entries.iter().find(|e| e.key == after.key)?;
                (before.content != after.content)
                    .then(|| (after.key.clone(), before.content.clone(), after.content.clone()))
            })
            .collect();
        let restoration = self.restoration(&done.correction.event_id);
        self.ws.restore(restoration).unwrap();
        let mut curated = read(&self.memory, "curated.json");
        let mut conflicts = read(&self.memory, "conflicts.json");
        if first {
            curated =
                curated.map(|t| t.replacen("\"schema_version\": 3", "\"schema_version\": 2", 1));
            conflicts =
                conflicts.map(|t| t.replacen("\"schema_version\": 2", "\"schema_version\": 1", 1));
        }
        for (key, old, new) in &worded_again {
            // Only an unkeyed entry is worded again here (keyed values
            // have one wording each); its content is the field before its
            // key.
            assert!(!new.starts_with("Key "), "a keyed value worded again: {new}");
            let mut text = curated.take().unwrap();
            let at = text.find(&format!("\"key\": \"{key}\"")).unwrap();
            let field = format!("\"content\": \"{new}\"");
            let start = text[..at].rfind(&field).unwrap();
            text.replace_range(start..start + field.len(), &format!("\"content\": \"{old}\""));
            curated = Some(text);
        }
        // Before the first distill there was no file: the correction
        // writes the empty state at the version that marks corrections.
        if before_curated.is_none() {
            assert!(self.ws.curated().unwrap().entries.is_empty());
            curated = None;
        }
        if before_conflicts.is_none() {
            assert!(self.ws.conflicts().unwrap().cases.is_empty());
            conflicts = None;
        }
        assert_eq!(curated, before_curated, "curated.json after a retract and its restore");
        assert_eq!(conflicts, before_conflicts, "conflicts.json after a retract and its restore");
    }

    /// Redacts the fact picked (unless redacted already) with every other
    /// fact holding its text, then checks that no file under the memory
    /// directory holds that text any more.
    fn redact(&mut self, pick: usize) {
        let facts = self.ws.facts().unwrap();
        let live: Vec<&workmem::Fact> =
            facts.iter().filter(|f| f.content() != workmem::REDACTED).collect();
        let Some(chosen) = live.get(pick % live.len().max(1)) else { return };
        let text = chosen.content().to_owned();
        let normal = text.to_lowercase();
        let mut ids: Vec<String> = live
            .iter()
            .filter(|f| f.content().to_lowercase() == normal)
            .map(|f| f.fact_id().to_owned())
            .collect();
        ids.sort();
        let event_id = self.next_event();
        self.redacted_after_decision |= self.decided.is_some();
        self.ws
            .redact(workmem::Redaction {
                fact_ids: ids,
                event_ids: Vec::new(),
                actor: "Ada <ada@example.com>".into(),
                rationale: "it must not be stored".into(),
                event_id,
                recorded_at: Some(hour_stamp(self.now)),
            })
            .unwrap();
        for variant in [text.clone(), text.to_uppercase(), text.to_lowercase()] {
            let holding = files_holding(&self.memory, &variant);
            assert_eq!(holding, Vec::<String>::new(), "{variant:?} is still stored");
        }
    }

    /// Redacts the words of the decision or correction picked (one that
    /// still holds them, and not a redaction: their words are the same),
    /// then looks for them in every file.
    fn redact_record(&mut self, pick: usize) {
        let mut records: Vec<(String, String)> = self
            .ws
            .adjudications()
            .unwrap()
            .into_iter()
            .map(|a| (a.event_id, a.rationale))
            .collect();
        records.extend(
            self.ws
                .corrections()
                .unwrap()
                .into_iter()
                .filter(|c| c.action != workmem::Action::Redact)
                .map(|c| (c.event_id, c.rationale)),
        );
        records.retain(|(_, rationale)| rationale != workmem::REDACTED);
        let Some((event, rationale)) = records.get(pick % records.len().max(1)).cloned() else {
            return;
        };
        let event_id = self.next_event();
        self.ws
            .redact(workmem::Redaction {
                fact_ids: Vec::new(),
                event_ids: vec![event],
                actor: "Ada <ada@example.com>".into(),
                rationale: "it must not be stored".into(),
                event_id,
                recorded_at: Some(hour_stamp(self.now)),
            })
            .unwrap();
        assert_eq!(files_holding(&self.memory, &rationale), Vec::<String>::new(), "{rationale:?}");
    }

    /// Retracts the keyed entry picked, ties its key, distills and
    /// restores the retraction (see [`Op::MoveOn`]), checking after each.
    fn move_on(&mut self, of: usize, importance: i64, then: u8) {
        let state = self.ws.curated().unwrap();
        let keyed: Vec<&workmem::Entry> = state
            .entries
            .iter()
            .filter(|e| e.memory_key.is_some() && !e.evidence_ids.is_empty())
            .collect();
        let Some(entry) = keyed.get(of % keyed.len().max(1)) else { return };
        let key = entry.memory_key.as_deref().unwrap();
        let key = workmem_testutil::history_key_number(key).unwrap();
        let request = self.retraction(Vec::new(), Some(entry.key.clone()));
        let done = self.ws.retract(request).unwrap();
        self.check();
        self.step(&Op::Tie { key, importance });
        self.step(&Op::Distill { step: 0 });
        self.now += 1;
        let restoration = self.restoration(&done.correction.event_id);
        self.ws.restore(restoration).unwrap();
        if then == 0 {
            return;
        }
        self.check();
        if then == 2 {
            self.step(&Op::Distill { step: 0 });
        }
        let Some(fact) = done.correction.fact_ids.first() else { return };
        if !self.ws.retractions().unwrap().is_retracted(fact) {
            let request = self.retraction(vec![fact.to_owned()], None);
            self.retract_and_restore(request);
        }
    }

    /// The invariants every step keeps.
    fn check(&self) {
        let problems = Workspace::builder(self.ws.project())
            .memory_dir(&self.memory)
            .open_read_only()
            .unwrap()
            .verify()
            .unwrap();
        assert_eq!(problems, [], "verify");
        let retracted = self.ws.retractions().unwrap();
        for entry in &self.ws.curated().unwrap().entries {
            if entry.status == Status::Retracted {
                continue;
            }
            for id in &entry.evidence_ids {
                assert!(!retracted.is_retracted(id), "retracted {id} is evidence of {entry:?}");
            }
        }
        for case in &self.ws.conflicts().unwrap().cases {
            if case.status != CaseStatus::Open {
                continue;
            }
            for id in case.candidates.iter().flat_map(|c| c.evidence_ids.iter()) {
                assert!(!retracted.is_retracted(id), "retracted {id} is evidence of {case:?}");
            }
            for id in &case.observed_fact_ids {
                assert!(!retracted.is_retracted(id), "retracted {id} is observed by {case:?}");
            }
        }
        // Every recent or pending fact of the context is shown for a fact
        // that is not retracted (each fact is told apart by its line).
        let context = self
            .ws
            .context_with(&ContextOptions::new().recent(1000).pending(100).budget(1_000_000))
            .unwrap();
        for line in context.lines().filter(|l| l.starts_with("- [")) {
            let counted = self
                .facts
                .iter()
                .any(|(id, shown)| line.starts_with(shown.as_str()) && !retracted.is_retracted(id));
            assert!(counted, "the context shows a retracted fact: {line}\n{context}");
        }
    }

    fn step(&mut self, op: &Op) {
        self.now += 1;
        match op {
            Op::RedactRecord { of } => self.redact_record(*of),
            Op::Remember(specs) => {
                for spec in specs {
                    self.remember(spec);
                }
            }
            Op::Tie { key, importance } => {
                for value in [0, 1] {
                    for back in [1100, 1099] {
                        let spec = FactSpec {
                            key: Some(*key),
                            value,
                            kind: 0,
                            importance: *importance,
                            back,
                        };
                        self.remember(&spec);
                    }
                }
            }
            Op::Distill { step } => {
                self.now += step * 24;
                let options = DistillOptions::new().as_of(hour_stamp(self.now));
                self.ws.distill(&options).unwrap();
            }
            Op::Resolve { case, candidate } => {
                let queue = self.ws.conflicts().unwrap();
                let open: Vec<&workmem::Case> =
                    queue.cases.iter().filter(|c| c.status == CaseStatus::Open).collect();
                let Some(chosen) = open.get(case % open.len().max(1)) else { return };
                let pick = &chosen.candidates[candidate % chosen.candidates.len()];
                let event_id = self.next_event().replace("correction", "decision");
                let decided = self.ws.resolve(Resolution {
                    conflict_id: chosen.conflict_id.clone(),
                    candidate_id: pick.candidate_id.clone(),
                    expected_revision: i64::from(chosen.revision),
                    actor: "Ada <ada@example.com>".into(),
                    rationale: format!("the team chose it ({event_id})"),
                    event_id,
                    resolved_at: Some(hour_stamp(self.now)),
                });
                match decided {
                    // A case whose key gained facts since it was queued is
                    // refused until a distill brings it up to date.
                    Err(workmem::Error::StaleResolution(_)) => {}
                    other => {
                        other.unwrap();
                        self.decided = Some(self.now);
                    }
                }
            }
            Op::Retract { facts } => {
                if let Some(request) = self.retract_facts(facts) {
                    self.ws.retract(request).unwrap();
                }
            }
            Op::RetractEntry { of } => {
                if let Some(request) = self.retract_entry(*of) {
                    self.ws.retract(request).unwrap();
                }
            }
            Op::Restore { of } => {
                let records = self.ws.corrections().unwrap();
                let in_force: Vec<&str> = records
                    .iter()
                    .filter(|r| r.action == Action::Retract)
                    .filter(|r| !records.iter().any(|s| s.restores.as_ref() == Some(&r.event_id)))
                    .map(|r| r.event_id.as_str())
                    .collect();
                let Some(target) = in_force.get(of % in_force.len().max(1)) else { return };
                let restoration = self.restoration(target);
                self.ws.restore(restoration).unwrap();
            }
            Op::RetractRestore { facts } => {
                if let Some(request) = self.retract_facts(facts) {
                    self.retract_and_restore(request);
                }
            }
            Op::RetractEntryRestore { of } => {
                if let Some(request) = self.retract_entry(*of) {
                    self.retract_and_restore(request);
                }
            }
            Op::Redact { fact } => self.redact(*fact),
            Op::MoveOn { of, importance, then } => self.move_on(*of, *importance, *then),
            Op::Rebuild => {
                if self.backdated || self.redacted_after_decision {
                    return;
                }
                let rebuilt =
                    self.ws.rebuild(&DistillOptions::new().as_of(hour_stamp(self.now))).unwrap();
                // Every decision holds in the rebuilt state.
                assert_eq!(rebuilt.decisions_set_aside, [], "decisions set aside by rebuild");
            }
        }
        self.check();
    }
}

fn run(ops: &[Op]) {
    let mut history = History::new();
    history.random = true;
    for op in ops {
        history.step(op);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_step_of_a_history_with_corrections_keeps_the_invariants(
        ops in proptest::collection::vec(op(), 8..28)
    ) {
        run(&ops);
    }
}

/// A decision chose value 0 over value 1 (facts f2, f3); f2 was retracted,
/// then the chosen value's evidence: the next distill must not promote
/// value 1 from f3, a fact the person saw when rejecting it.
#[test]
fn a_rejected_value_stays_rejected_when_part_of_what_was_seen_is_retracted() {
    let mut history = History::new();
    let unkeyed = FactSpec { key: None, value: 0, kind: 0, importance: 1, back: 0 };
    history.step(&Op::Tie { key: 1, importance: 4 });
    history.step(&Op::Distill { step: 0 });
    let case = history.ws.conflicts().unwrap().cases[0].clone();
    let chosen = case.candidates.iter().position(|c| c.content == "Key 1 uses value 0.").unwrap();
    history.step(&Op::Resolve { case: 0, candidate: chosen });
    history.step(&Op::Retract { facts: vec![2] });
    history.step(&Op::RetractEntry { of: 0 });
    let entry = &history.ws.curated().unwrap().entries[0];
    assert_eq!(entry.status, Status::Retracted);
    assert_eq!(entry.retracted_evidence_ids, ["f0", "f1"]);
    history.step(&Op::Remember(vec![unkeyed]));
    history.step(&Op::Distill { step: 1 });
    let state = history.ws.curated().unwrap();
    assert_eq!(state.active_entries().filter(|e| e.memory_key.is_some()).count(), 0, "{state:?}");
    // New evidence of value 1 may promote it.
    history.step(&Op::Remember(vec![FactSpec {
        key: Some(1),
        value: 1,
        kind: 0,
        importance: 4,
        back: 1000,
    }]));
    history.step(&Op::Distill { step: 1 });
    let state = history.ws.curated().unwrap();
    let active: Vec<&str> = state
        .active_entries()
        .filter(|e| e.memory_key.is_some())
        .map(|e| e.content.as_str())
        .collect();
    assert_eq!(active, ["Key 1 uses value 1."]);
}

/// A decision chose value 1; a distill then promoted value 0 of another
/// kind on facts f7 and f9, f9 newer than the chosen value. Retracting f9
/// leaves that revision active on f7 alone, dated by f7: the policy
/// judged it on f9 too, and verify accepts it.
#[test]
fn a_revision_after_a_decision_keeps_its_place_when_its_newer_fact_is_retracted() {
    let mut history = History::new();
    let pitfall = |back| FactSpec { key: Some(1), value: 0, kind: 2, importance: 1, back };
    history.step(&Op::Tie { key: 1, importance: 1 });
    history.step(&Op::Remember(vec![pitfall(1200), pitfall(520)]));
    history.step(&Op::Distill { step: 1 });
    let case = history.ws.conflicts().unwrap().cases[0].clone();
    let chosen = case.candidates.iter().position(|c| c.content == "Key 1 uses value 1.").unwrap();
    history.step(&Op::Resolve { case: 0, candidate: chosen });
    history.step(&Op::Distill { step: 9 });
    let state = history.ws.curated().unwrap();
    let next = state.active_entries().next().unwrap();
    assert_eq!((next.kind.as_str(), next.revision), ("pitfall", 2));
    assert_eq!(next.evidence_ids, ["f4", "f5"]);
    history.step(&Op::Retract { facts: vec![5] });
    let state = history.ws.curated().unwrap();
    let next = state.active_entries().next().unwrap();
    assert_eq!(next.evidence_ids, ["f4"]);
    assert_eq!(next.retracted_evidence_ids, ["f5"]);
}

/// A restore after the domain moved on (a case detected since the
/// retraction) releases the facts: they count again and stay listed where
/// they were, apart from the evidence. Retracting one of them again and
/// restoring that retraction at once leaves every entry and case as it
/// was, before the next distill judges them and after.
#[test]
fn a_fact_a_restore_released_is_retracted_and_restored_again_in_place() {
    let mut history = History::new();
    let value = |value, back| FactSpec { key: Some(0), value, kind: 0, importance: 3, back };
    history.step(&Op::Remember(vec![value(0, 1400), value(0, 1390)]));
    history.step(&Op::Distill { step: 0 });
    let first = history.ws.curated().unwrap().entries[0].clone();
    assert_eq!(first.evidence_ids, ["f0", "f1"]);
    assert_eq!(first.status, Status::Active);
    history.step(&Op::Retract { facts: vec![0, 1] });
    // A tie of the key, detected after the retraction: the domain moved on.
    history.step(&Op::Tie { key: 0, importance: 3 });
    history.step(&Op::Distill { step: 0 });
    assert!(history.ws.conflicts().unwrap().cases.iter().any(|c| c.status == CaseStatus::Open));
    history.step(&Op::Restore { of: 0 });
    let released = history.ws.curated().unwrap().entries[0].clone();
    assert_eq!(released.key, first.key);
    assert_eq!(released.status, Status::Retracted);
    assert!(released.evidence_ids.is_empty());
    assert!(released.retracted_evidence_ids.is_empty());
    assert_eq!(released.released_evidence_ids, ["f0", "f1"]);
    // Not judged yet: retracted from nowhere, restored to nowhere.
    history.step(&Op::RetractRestore { facts: vec![0] });
    // Judged again by the distill: retracted from where it is now, and
    // given back there.
    history.step(&Op::Distill { step: 1 });
    let state = history.ws.curated().unwrap();
    let holding: Vec<&str> = state
        .entries
        .iter()
        .filter(|e| e.evidence_ids.iter().any(|id| id == "f0"))
        .map(|e| e.key.as_str())
        .collect();
    let queue = history.ws.conflicts().unwrap();
    let open_with_it = queue
        .cases
        .iter()
        .filter(|c| c.status == CaseStatus::Open)
        .any(|c| c.candidates.iter().any(|c| c.evidence_ids.iter().any(|id| id == "f0")));
    assert!(!holding.is_empty() || open_with_it, "f0 is judged again: {state:?} {queue:?}");
    assert!(!holding.contains(&first.key.as_str()));
    history.step(&Op::RetractRestore { facts: vec![0] });
    history.step(&Op::Retract { facts: vec![0] });
    history.step(&Op::Restore { of: 0 });
    let again = history.ws.curated().unwrap();
    let entry = again.entries.iter().find(|e| e.key == first.key).unwrap();
    assert_eq!(entry.released_evidence_ids, ["f0", "f1"]);
    assert!(entry.evidence_ids.is_empty());
}

/// `rebuild` with curated.json and conflicts.json deleted: the decision is
/// re-applied, the retraction in force applied after it (the chosen value
/// retracted, the domain without a value), the restored one not; verify
/// accepts the result, and no retracted fact counts.
#[test]
fn rebuild_applies_the_corrections_in_force_after_the_decisions() {
    let mut history = History::new();
    let unkeyed = |back| FactSpec { key: None, value: 2, kind: 1, importance: 3, back };
    history.step(&Op::Tie { key: 1, importance: 4 });
    history.step(&Op::Remember(vec![unkeyed(1200), unkeyed(1100)]));
    history.step(&Op::Distill { step: 0 });
    let case = history.ws.conflicts().unwrap().cases[0].clone();
    let chosen = case.candidates.iter().position(|c| c.content == "Key 1 uses value 0.").unwrap();
    history.step(&Op::Resolve { case: 0, candidate: chosen });
    // The unkeyed entry loses f4 (restored below), then the chosen value
    // all its evidence (f0, f1).
    history.step(&Op::Retract { facts: vec![4] });
    history.step(&Op::Retract { facts: vec![0, 1] });
    history.step(&Op::Restore { of: 0 });
    let before = (history.ws.curated().unwrap(), history.ws.conflicts().unwrap());
    assert_eq!(before.0.active_entries().filter(|e| e.memory_key.is_some()).count(), 0);
    fs::remove_file(history.memory.join("curated.json")).unwrap();
    fs::remove_file(history.memory.join("conflicts.json")).unwrap();
    history.step(&Op::Rebuild);
    let state = history.ws.curated().unwrap();
    assert_eq!(state.schema_version, 3);
    let value = state.entries.iter().find(|e| e.content == "Key 1 uses value 0.").unwrap();
    assert_eq!(value.status, Status::Retracted);
    assert_eq!(value.retracted_evidence_ids, ["f0", "f1"]);
    assert_eq!(state.active_entries().filter(|e| e.memory_key.is_some()).count(), 0);
    let unkeyed = state.entries.iter().find(|e| e.content == "Pin every action.").unwrap();
    assert_eq!(unkeyed.evidence_ids, ["f4", "f5"]);
    assert!(unkeyed.retracted_evidence_ids.is_empty());
    // The decision re-applied to its case, as the commands left it.
    let queue = history.ws.conflicts().unwrap();
    let resolved: Vec<&str> = queue
        .cases
        .iter()
        .filter(|c| c.status == CaseStatus::Resolved)
        .filter_map(|c| c.resolution_event_id.as_deref())
        .collect();
    assert_eq!(resolved, ["decision:0001"]);
}

/// A restore that a rebuild's state took part in stays applied after
/// later appends (found by the property above).
#[test]
fn a_restore_after_a_rebuild_stays_applied_after_later_appends() {
    let mut history = History::new();
    let unkeyed = FactSpec { key: None, value: 0, kind: 0, importance: 1, back: 0 };
    for op in [
        Op::Tie { key: 0, importance: 1 },
        Op::Rebuild,
        Op::Retract { facts: vec![11] },
        Op::Retract { facts: vec![36] },
        Op::Restore { of: 2 },
        Op::Restore { of: 0 },
        Op::Remember(vec![unkeyed.clone(), unkeyed]),
    ] {
        history.step(&op);
    }
}

/// Found by the property: every fact of an unkeyed statement redacted,
/// then the statement recorded again: its entry comes back worded by the
/// new fact, with the redacted ones among its retracted evidence, and
/// verify stays clean (the marker stays only where redacted facts alone
/// word an entry).
#[test]
fn a_distill_after_a_redaction_keeps_the_marker_where_a_redacted_fact_is_listed() {
    let mut history = History::new();
    let unkeyed = |kind, importance, back| FactSpec { key: None, value: 0, kind, importance, back };
    for op in [
        Op::Tie { key: 0, importance: 1 },
        Op::Remember(vec![unkeyed(0, 1, 0), unkeyed(0, 1, 0), unkeyed(0, 1, 1102)]),
        Op::Remember(vec![unkeyed(0, 1, 1103), unkeyed(2, 4, 552), unkeyed(0, 1, 1103)]),
        Op::Distill { step: 7 },
        Op::Redact { fact: 0 },
        Op::Remember(vec![unkeyed(2, 4, 336)]),
        Op::Distill { step: 16 },
        Op::Remember(vec![unkeyed(0, 1, 2)]),
    ] {
        history.step(&op);
    }
    let retracted = history.ws.retractions().unwrap();
    let state = history.ws.curated().unwrap();
    let back = state
        .entries
        .iter()
        .find(|e| {
            !e.evidence_ids.is_empty()
                && e.retracted_evidence_ids.iter().any(|id| retracted.is_redacted(id))
        })
        .expect("an entry back on a new fact");
    assert_eq!(back.content, "Run the migrations first.");
}

/// Found by the property: a domain whose only value was retracted, a tie
/// detected since, and a decision of it. The chosen value becomes revision
/// 2, superseding the retracted revision 1 (which stays retracted); the
/// decision had made a second revision 1 beside it, which the state
/// refused to save.
#[test]
fn a_decision_in_a_domain_without_a_value_follows_its_retracted_revision() {
    let mut history = History::new();
    let convention = FactSpec { key: Some(0), value: 0, kind: 1, importance: 4, back: 696 };
    for op in [
        Op::Remember(vec![convention]),
        Op::Distill { step: 1 },
        Op::MoveOn { of: 0, importance: 4, then: 0 },
        Op::Distill { step: 0 },
    ] {
        history.step(&op);
    }
    let queue = history.ws.conflicts().unwrap();
    let open = queue.cases.iter().find(|c| c.status == CaseStatus::Open).unwrap();
    assert_eq!(open.active_entry_key, None);
    history.step(&Op::Resolve { case: 0, candidate: 0 });
    let state = history.ws.curated().unwrap();
    let chain: Vec<(u32, Status, Option<&str>)> =
        state.entries.iter().map(|e| (e.revision, e.status, e.supersedes.as_deref())).collect();
    let first = &state.entries.iter().find(|e| e.revision == 1).unwrap().key;
    assert_eq!(chain.len(), 2, "{chain:?}");
    assert!(chain.contains(&(1, Status::Retracted, None)), "{chain:?}");
    assert!(chain.contains(&(2, Status::Active, Some(first.as_str()))), "{chain:?}");
}
