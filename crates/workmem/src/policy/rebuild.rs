//! Re-deriving curated.json and conflicts.json from the facts of the log
//! and the decisions of the audit stream (docs/trust.md, "rebuild"): the
//! way out when a derived file is missing, was deleted by a branch, or
//! fails its check. Pure: the workspace reads the log and the audit stream
//! and writes what this returns.
//!
//! The decisions are replayed in the order they were made: before each,
//! the policy runs as of the moment it was made, and the decision is
//! applied to the open case of its memory key whose candidates hold the
//! value it chose (matched by candidate id, which names the key, the kind
//! and the wording). A decision whose value is the active one already is
//! held; one that matches no case is set aside, with the reason, and never
//! dropped silently: the audit stream keeps it. Then the policy runs once
//! more as of `as_of`.
//!
//! Every correction in force (a retraction no restore undid) is applied,
//! in (`recorded_at`, `event_id`) order, by the plan the commands use,
//! between the decisions made before and after it; from then on the
//! policy no longer sees the facts it retracts, so its last run re-judges
//! the domains it touched as the next distill would.

use std::collections::HashMap;

use foldhash::{HashSet, HashSetExt};

use crate::policy::PolicyError;

/// The policy's result: the reason alone for damage of the curated state.
type Result<T> = std::result::Result<T, PolicyError>;
use crate::model::fact::Fact;
use crate::model::stamp::Stamp;
use crate::policy::adjudication::{self, Resolution};
use crate::policy::correction;
use crate::policy::distill;
use crate::policy::retractions::Retractions;
use crate::policy::rules::Policy;
use crate::store::conflict_queue::{CONFLICTS_SCHEMA_CORRECTED, ConflictQueue};
use crate::store::corrections::{Action, Correction};
use crate::store::curated_state::{CURATED_SCHEMA_CORRECTED, CuratedState};
use crate::store::journal::Adjudication;

/// What [`rebuild`] derives.
#[derive(Debug, Clone)]
pub(crate) struct Rebuilt {
    /// The curated state.
    pub(crate) curated: CuratedState,
    /// The conflict queue.
    pub(crate) queue: ConflictQueue,
    /// Event ids of the decisions applied to a rebuilt case.
    pub(crate) applied: Vec<String>,
    /// Event ids of the decisions whose value was already the active one.
    pub(crate) held: Vec<String>,
    /// Decisions that matched no case, with the reason.
    pub(crate) set_aside: Vec<(Adjudication, String)>,
}

/// The corrections of the stream applied so far, and what they retract.
struct Corrected<'a> {
    /// The retractions in force, in the order they apply.
    in_force: Vec<&'a Correction>,
    /// How many of them are applied.
    applied: usize,
    /// The facts the applied ones retract.
    retracted: Retractions,
    /// Every fact by id, for the plans' dates and wording.
    by_id: HashMap<String, Fact>,
}

impl<'a> Corrected<'a> {
    fn new(facts: &[Fact], corrections: &'a [Correction]) -> Corrected<'a> {
        let mut in_force: Vec<&Correction> = corrections
            .iter()
            .filter(|c| matches!(c.action, Action::Retract | Action::Redact))
            .filter(|c| {
                !corrections.iter().any(|r| {
                    r.action == Action::Restore && r.restores.as_deref() == Some(&c.event_id)
                })
            })
            .collect();
        in_force.sort_by(|a, b| {
            (a.recorded_at.instant(), &a.event_id).cmp(&(b.recorded_at.instant(), &b.event_id))
        });
        let mut seen = HashSet::new();
        in_force.retain(|c| seen.insert(c.event_id.as_str()));
        let mut by_id = HashMap::with_capacity(facts.len());
        for fact in facts {
            by_id.entry(fact.fact_id.clone()).or_insert_with(|| fact.clone());
        }
        Corrected { in_force, applied: 0, retracted: Retractions::default(), by_id }
    }

    /// Applies, as the commands do, every correction recorded at or
    /// before `until` (all of them when `None`).
    fn apply_until(
        &mut self,
        until: Option<&Stamp>,
        curated: &mut CuratedState,
        queue: &mut ConflictQueue,
    ) {
        while let Some(&record) = self.in_force.get(self.applied) {
            if until.is_some_and(|t| record.recorded_at.instant() > t.instant()) {
                break;
            }
            self.applied += 1;
            self.retracted =
                Retractions::from_records(self.in_force[..self.applied].iter().copied());
            let plan = correction::plan(
                record,
                None,
                &curated.entries,
                &queue.cases,
                &self.retracted,
                &self.by_id,
            );
            for changed in plan.entries {
                if let Some(slot) = curated.entries.iter_mut().find(|e| e.key == changed.key) {
                    *slot = changed;
                }
            }
            for changed in plan.cases {
                if let Some(slot) =
                    queue.cases.iter_mut().find(|c| c.conflict_id == changed.conflict_id)
                {
                    *slot = changed;
                }
            }
        }
    }

    /// The facts the policy sees now: those no applied correction retracts.
    fn visible(&self, facts: &[Fact]) -> Vec<Fact> {
        facts.iter().filter(|f| !self.retracted.is_retracted(&f.fact_id)).cloned().collect()
    }
}

/// Derives the state from `facts` (every fact of the log, each id once),
/// `records` (the audit stream) and `corrections` (the corrections
/// stream), under `policy` as of `as_of`.
///
/// Errors: as the policy's run.
pub(crate) fn rebuild(
    facts: &[Fact],
    records: &[Adjudication],
    corrections: &[Correction],
    policy: &Policy,
    as_of: &Stamp,
    workspace_id: &str,
) -> Result<Rebuilt> {
    let mut corrected = Corrected::new(facts, corrections);
    let mut order: Vec<&Adjudication> = records.iter().collect();
    order.sort_by(|a, b| {
        (a.resolved_at.instant(), &a.event_id).cmp(&(b.resolved_at.instant(), &b.event_id))
    });
    let mut seen = HashSet::new();
    order.retain(|r| seen.insert(r.event_id.as_str()));

    let mut curated = CuratedState::new();
    let mut queue = ConflictQueue::default();
    let mut out = Rebuilt {
        curated: CuratedState::new(),
        queue: ConflictQueue::default(),
        applied: Vec::new(),
        held: Vec::new(),
        set_aside: Vec::new(),
    };
    for record in order {
        corrected.apply_until(Some(&record.resolved_at), &mut curated, &mut queue);
        let visible = corrected.visible(facts);
        let run =
            distill::distill(&visible, curated, &queue, policy, &record.resolved_at, workspace_id)?;
        curated = run.curated;
        queue = run.queue;
        let case = queue
            .cases
            .iter()
            .find(|c| c.is_open() && c.candidate(&record.selected_candidate_id).is_some());
        if let Some(case) = case {
            let domain: Vec<String> = facts
                .iter()
                .filter(|f| f.memory_key.as_deref() == Some(case.memory_key.as_str()))
                .map(|f| f.fact_id.clone())
                .collect();
            let resolution = Resolution {
                conflict_id: case.conflict_id.clone(),
                candidate_id: record.selected_candidate_id.clone(),
                expected_revision: i64::from(case.revision),
                actor: record.actor.clone(),
                rationale: record.rationale.clone(),
                event_id: record.event_id.clone(),
                resolved_at: Some(record.resolved_at.clone()),
            };
            let plan = adjudication::plan(
                &resolution,
                &curated,
                &queue,
                &domain,
                record.resolved_at.clone(),
                workspace_id,
            )?;
            curated.replace_domain(&plan.memory_key, plan.curated_after);
            queue.replace_domain(&plan.memory_key, plan.cases_after);
            out.applied.push(record.event_id.clone());
        } else if curated
            .active_entries()
            .any(|e| e.candidate_id().is_some_and(|id| id == record.selected_candidate_id))
        {
            out.held.push(record.event_id.clone());
        } else {
            out.set_aside.push((
                record.clone(),
                format!(
                    "as of {}, when it was made, no open case holds the value it chose",
                    record.resolved_at
                ),
            ));
        }
    }
    corrected.apply_until(None, &mut curated, &mut queue);
    let visible = corrected.visible(facts);
    let run = distill::distill(&visible, curated, &queue, policy, as_of, workspace_id)?;
    out.curated = run.curated;
    out.queue = run.queue;
    // A memory with corrections keeps the versions that mark them.
    if !corrections.is_empty() {
        out.curated.schema_version = out.curated.schema_version.max(CURATED_SCHEMA_CORRECTED);
        out.queue.schema_version = out.queue.schema_version.max(CONFLICTS_SCHEMA_CORRECTED);
    }
    Ok(out)
}
