//! Which facts are retracted, computed from the records of the
//! corrections stream (docs/corrections.md, "Which facts are retracted").
//!
//! A fact is retracted while a `retract` or `redact` record in force names
//! it. A `retract` record is in force unless a `restore` record names it in
//! `restores`; a `redact` record is always in force. The records form a
//! set, not a sequence: the same records, in any order, give the same
//! retracted facts, which is what lets two clones' streams merge as a
//! union. Pure: the workspace reads the stream and asks here.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::RestoreRefusal;
use crate::model::fact_line::FactRecord;
use crate::model::stamp::Stamp;
use crate::policy::report::{Decision, Reason};
use crate::store::corrections::{Action, Correction};

/// The facts retracted by a set of correction records, each with the
/// event ids of the records in force that retract it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retractions {
    /// Fact id -> event ids of the retract and redact records in force
    /// that name it.
    by_fact: BTreeMap<String, BTreeSet<String>>,
    /// Event ids of the redact records (always in force).
    redactions: BTreeSet<String>,
    /// Event id of a retract record -> event ids of the restore records
    /// that undo it.
    restored: BTreeMap<String, BTreeSet<String>>,
    /// Fact id -> when each retract record that names it and is restored
    /// was recorded (the `superseded_at` of a case it closed).
    lapsed: BTreeMap<String, BTreeSet<jiff::Timestamp>>,
}

impl Retractions {
    /// Returns the facts retracted by `records`, whatever their order.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a Correction> + Clone) -> Self {
        let mut restored: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for record in records.clone() {
            if let (Action::Restore, Some(target)) = (record.action, &record.restores) {
                restored.entry(target.clone()).or_default().insert(record.event_id.clone());
            }
        }
        let mut by_fact: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut redactions = BTreeSet::new();
        let mut lapsed: BTreeMap<String, BTreeSet<jiff::Timestamp>> = BTreeMap::new();
        for record in records {
            let in_force = match record.action {
                Action::Retract => !restored.contains_key(&record.event_id),
                Action::Redact => {
                    redactions.insert(record.event_id.clone());
                    true
                }
                Action::Restore => false,
            };
            if in_force {
                for fact in &record.fact_ids {
                    by_fact.entry(fact.to_owned()).or_default().insert(record.event_id.clone());
                }
            } else if record.action == Action::Retract {
                for fact in &record.fact_ids {
                    lapsed.entry(fact.to_owned()).or_default().insert(record.recorded_at.instant());
                }
            }
        }
        Retractions { by_fact, redactions, restored, lapsed }
    }

    /// Returns whether `fact_id` is retracted (by a retraction in force or
    /// a redaction).
    pub fn is_retracted(&self, fact_id: &str) -> bool {
        self.by_fact.contains_key(fact_id)
    }

    /// Returns whether a retract record that names `fact_id` is restored:
    /// a restore may have released it.
    pub(crate) fn was_restored(&self, fact_id: &str) -> bool {
        self.lapsed.contains_key(fact_id)
    }

    /// Returns whether `fact_id` is redacted.
    pub fn is_redacted(&self, fact_id: &str) -> bool {
        self.by_fact
            .get(fact_id)
            .is_some_and(|events| events.iter().any(|event| self.redactions.contains(event)))
    }

    /// Returns the event ids of the records in force that retract
    /// `fact_id`, sorted; empty when it counts.
    pub fn retracted_by(&self, fact_id: &str) -> impl Iterator<Item = &str> {
        self.by_fact.get(fact_id).into_iter().flatten().map(String::as_str)
    }

    /// Returns every retracted fact id, sorted.
    pub fn facts(&self) -> impl Iterator<Item = &str> {
        self.by_fact.keys().map(String::as_str)
    }

    /// Returns how many facts are retracted (redacted ones included).
    pub fn len(&self) -> usize {
        self.by_fact.len()
    }

    /// Returns whether no fact is retracted.
    pub fn is_empty(&self) -> bool {
        self.by_fact.is_empty()
    }

    /// Returns how many facts are redacted.
    pub fn redacted_len(&self) -> usize {
        self.by_fact.keys().filter(|fact| self.is_redacted(fact)).count()
    }

    /// Returns whether a retraction that names `fact_id` and is restored
    /// was recorded at `at`: a case superseded then was closed by a
    /// retraction no longer in force.
    pub(crate) fn lapsed_at(&self, fact_id: &str, at: &Stamp) -> bool {
        self.lapsed.get(fact_id).is_some_and(|stamps| stamps.contains(&at.instant()))
    }

    /// Returns whether an entry or candidate that lists the facts `listed`
    /// (its evidence and the facts a correction took from it) must hold
    /// the redaction marker as its wording: it lists a redacted fact, and
    /// every fact it lists is redacted (none is left that could word it).
    /// An entry that came back on new facts of the same statement is
    /// worded by them, also once they are retracted in turn.
    pub(crate) fn needs_marker<'i>(&self, listed: impl IntoIterator<Item = &'i str>) -> bool {
        let mut listed = listed.into_iter().peekable();
        listed.peek().is_some() && listed.all(|id| self.is_redacted(id))
    }

    /// Returns the event ids of the restore records that undo the
    /// retraction `event_id`, sorted; empty when it is in force or unknown.
    pub fn restored_by(&self, event_id: &str) -> impl Iterator<Item = &str> {
        self.restored.get(event_id).into_iter().flatten().map(String::as_str)
    }
}

impl Retractions {
    /// Takes the retracted facts out of `facts`, the input of a policy
    /// run, keeping the order of the others: the policy never sees a
    /// retracted fact. With `record`, what is returned remembers the order
    /// of the whole input, to put each retracted fact's decision back in
    /// its place ([`Withheld::decisions`]).
    pub(crate) fn withhold<F: FactRecord>(&self, facts: &mut Vec<F>, record: bool) -> Withheld {
        let mut withheld = Withheld::default();
        if self.is_empty() {
            return withheld;
        }
        if record {
            withheld.order = Some(facts.iter().map(|f| f.fact_id().to_owned()).collect());
        }
        withheld.facts = facts
            .extract_if(.., |f| self.is_retracted(f.fact_id()))
            .map(|f| Decision {
                fact_id: f.fact_id().to_owned(),
                memory_key: f.memory_key().map(str::to_owned),
                reason: Reason::Retracted {
                    event_ids: self.retracted_by(f.fact_id()).map(str::to_owned).collect(),
                },
            })
            .collect();
        withheld
    }
}

/// The retracted facts [`Retractions::withhold`] took out of a run's
/// input, each with its decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Withheld {
    facts: Vec<Decision>,
    /// The ids of the whole input, in order, when a run records decisions.
    order: Option<Vec<String>>,
}

impl Withheld {
    /// Returns the ids of the facts taken out, in input order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.facts.iter().map(|d| d.fact_id.as_str())
    }

    /// Returns `decisions` (a recording run's, in the order of its input)
    /// with the decision of every fact taken out (reason
    /// [`Reason::Retracted`]) in its place in the whole input.
    pub(crate) fn decisions(self, decisions: Vec<Decision>) -> Vec<Decision> {
        let Some(order) = self.order else { return decisions };
        let mut by_id: std::collections::HashMap<String, Decision> = decisions
            .into_iter()
            .chain(self.facts)
            .map(|decision| (decision.fact_id.clone(), decision))
            .collect();
        order.iter().filter_map(|id| by_id.remove(id)).collect()
    }
}

/// Returns the retraction that `restore EVENT_ID` would undo: the record
/// of `records` with that event id, when it is a retraction still in
/// force.
///
/// Errors: the [`RestoreRefusal`] that names why not.
pub fn restorable<'a>(
    records: impl IntoIterator<Item = &'a Correction> + Clone,
    event_id: &str,
) -> Result<&'a Correction, RestoreRefusal> {
    let mut found = None;
    let mut restored_by = None;
    for record in records {
        if record.event_id == event_id && found.is_none() {
            found = Some(record);
        }
        if record.action == Action::Restore
            && record.restores.as_deref() == Some(event_id)
            && restored_by.is_none()
        {
            restored_by = Some(record.event_id.clone());
        }
    }
    let event_id = event_id.to_owned();
    let record = found.ok_or_else(|| RestoreRefusal::Unknown { event_id: event_id.clone() })?;
    match record.action {
        Action::Redact => Err(RestoreRefusal::Redaction { event_id }),
        Action::Restore => Err(RestoreRefusal::NotARetraction { event_id }),
        Action::Retract => match restored_by {
            Some(by) => Err(RestoreRefusal::AlreadyRestored { event_id, by }),
            None => Ok(record),
        },
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::id_list::IdList;
    use crate::model::stamp::Stamp;
    use crate::store::corrections::CORRECTION_SCHEMA_VERSION;

    fn record(
        action: Action,
        event_id: &str,
        facts: &[&str],
        restores: Option<&str>,
    ) -> Correction {
        let mut fact_ids = IdList::new();
        for fact in facts {
            fact_ids.push(fact);
        }
        let line_sha256 = (action == Action::Redact)
            .then(|| facts.iter().map(|f| ((*f).to_owned(), "0".repeat(64))).collect());
        Correction {
            action,
            actor: "Ada".to_owned(),
            entry_key: None,
            event_id: event_id.to_owned(),
            event_ids: None,
            fact_ids,
            line_sha256,
            rationale: "wrong".to_owned(),
            recorded_at: Stamp::parse("2026-07-02T09:12:00Z").expect("a valid instant"),
            restores: restores.map(str::to_owned),
            schema_version: CORRECTION_SCHEMA_VERSION,
            workspace_id: "7cc7b721a32e1a2d".to_owned(),
        }
    }

    fn retracted(records: &[Correction]) -> Vec<String> {
        Retractions::from_records(records).facts().map(str::to_owned).collect()
    }

    #[test]
    fn a_restore_undoes_one_retraction_for_every_fact_it_named() {
        let retract_a = record(Action::Retract, "c-1", &["f-1", "f-2"], None);
        let retract_b = record(Action::Retract, "c-2", &["f-2", "f-3"], None);
        let restore_a = record(Action::Restore, "c-3", &["f-1", "f-2"], Some("c-1"));
        let set = Retractions::from_records(&[retract_a.clone(), retract_b.clone()]);
        assert_eq!(set.retracted_by("f-2").collect::<Vec<_>>(), ["c-1", "c-2"]);
        let all = [retract_a, retract_b, restore_a];
        // f-2 is still named by c-2, which is in force.
        assert_eq!(retracted(&all), ["f-2", "f-3"]);
        let set = Retractions::from_records(&all);
        assert_eq!(set.retracted_by("f-2").collect::<Vec<_>>(), ["c-2"]);
        assert_eq!(set.retracted_by("f-1").count(), 0);
        assert_eq!(set.restored_by("c-1").collect::<Vec<_>>(), ["c-3"]);
    }

    #[test]
    fn a_redaction_is_always_in_force() {
        let redact = record(Action::Redact, "c-1", &["f-1"], None);
        let restore = record(Action::Restore, "c-2", &["f-1"], Some("c-1"));
        let set = Retractions::from_records(&[redact, restore]);
        assert!(set.is_retracted("f-1") && set.is_redacted("f-1"));
        assert_eq!((set.len(), set.redacted_len()), (1, 1));
    }

    #[test]
    fn restore_refuses_what_is_not_a_retraction_in_force() {
        let records = [
            record(Action::Retract, "c-1", &["f-1"], None),
            record(Action::Restore, "c-2", &["f-1"], Some("c-1")),
            record(Action::Redact, "c-3", &["f-2"], None),
            record(Action::Retract, "c-4", &["f-3"], None),
        ];
        let refusal = |id: &str| restorable(&records, id).expect_err("refused");
        assert_eq!(refusal("c-9"), RestoreRefusal::Unknown { event_id: "c-9".to_owned() });
        assert_eq!(
            refusal("c-1"),
            RestoreRefusal::AlreadyRestored { event_id: "c-1".to_owned(), by: "c-2".to_owned() }
        );
        assert_eq!(refusal("c-2"), RestoreRefusal::NotARetraction { event_id: "c-2".to_owned() });
        assert_eq!(refusal("c-3"), RestoreRefusal::Redaction { event_id: "c-3".to_owned() });
        assert_eq!(restorable(&records, "c-4").map(|r| r.event_id.as_str()), Ok("c-4"));
    }

    /// A random stream: retractions and redactions of facts f-0..f-5, and
    /// restores naming earlier or later records (or none of them).
    fn stream() -> impl Strategy<Value = Vec<Correction>> {
        let one = (0..3u8, proptest::collection::btree_set(0..6u8, 1..4), 0..12u8);
        proptest::collection::vec(one, 0..12).prop_map(|specs| {
            specs
                .into_iter()
                .enumerate()
                .map(|(n, (action, facts, target))| {
                    let facts: Vec<String> = facts.iter().map(|f| format!("f-{f}")).collect();
                    let facts: Vec<&str> = facts.iter().map(String::as_str).collect();
                    let event = format!("c-{n}");
                    match action {
                        0 => record(Action::Retract, &event, &facts, None),
                        1 => record(Action::Redact, &event, &facts, None),
                        _ => record(Action::Restore, &event, &facts, Some(&format!("c-{target}"))),
                    }
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn the_retracted_set_does_not_depend_on_the_order_of_records(
            records in stream(),
            seed in any::<u64>(),
        ) {
            let mut shuffled = records.clone();
            // A deterministic permutation from the seed.
            let len = shuffled.len();
            let mut state = seed;
            for i in (1..len).rev() {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let j = usize::try_from(state >> 33).unwrap_or(0) % (i + 1);
                shuffled.swap(i, j);
            }
            prop_assert_eq!(
                Retractions::from_records(&records),
                Retractions::from_records(&shuffled)
            );
            // A union with itself (a merge of two equal clones) means the
            // same.
            let doubled: Vec<Correction> = records.iter().chain(&records).cloned().collect();
            let once = Retractions::from_records(&records);
            let twice = Retractions::from_records(&doubled);
            prop_assert_eq!(once.facts().collect::<Vec<_>>(), twice.facts().collect::<Vec<_>>());
        }

        #[test]
        fn a_fact_is_retracted_exactly_when_a_record_in_force_names_it(records in stream()) {
            let set = Retractions::from_records(&records);
            for fact in (0..6).map(|f| format!("f-{f}")) {
                let expected = records.iter().any(|r| {
                    r.fact_ids.contains(&fact)
                        && match r.action {
                            Action::Redact => true,
                            Action::Retract => !records.iter().any(|s| {
                                s.action == Action::Restore
                                    && s.restores.as_deref() == Some(r.event_id.as_str())
                            }),
                            Action::Restore => false,
                        }
                });
                prop_assert_eq!(set.is_retracted(&fact), expected, "{}", fact);
            }
        }
    }
}
