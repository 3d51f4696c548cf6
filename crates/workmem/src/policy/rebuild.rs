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

use foldhash::{HashSet, HashSetExt};

use crate::policy::PolicyError;

/// The policy's result: the reason alone for damage of the curated state.
type Result<T> = std::result::Result<T, PolicyError>;
use crate::model::canon;
use crate::model::fact::Fact;
use crate::model::stamp::Stamp;
use crate::policy::adjudication::{self, Resolution};
use crate::policy::distill;
use crate::policy::rules::Policy;
use crate::store::conflict_queue::ConflictQueue;
use crate::store::curated_state::CuratedState;
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

/// Derives the state from `facts` (every fact of the log, each id once)
/// and `records` (the audit stream), under `policy` as of `as_of`.
///
/// Errors: as the policy's run.
pub(crate) fn rebuild(
    facts: &[Fact],
    records: &[Adjudication],
    policy: &Policy,
    as_of: &Stamp,
    workspace_id: &str,
) -> Result<Rebuilt> {
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
        let run =
            distill::distill(facts, curated, &queue, policy, &record.resolved_at, workspace_id)?;
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
        } else if curated.active_entries().any(|e| {
            e.memory_key.as_deref().is_some_and(|key| {
                canon::candidate_id(key, e.kind.as_str(), &e.content)
                    == record.selected_candidate_id
            })
        }) {
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
    let run = distill::distill(facts, curated, &queue, policy, as_of, workspace_id)?;
    out.curated = run.curated;
    out.queue = run.queue;
    Ok(out)
}
