//! Human adjudication (docs/policy.md): validating a decision against the
//! current state and planning its effect. Pure: the workspace runs the plan
//! through the journal.
//!
//! Only a trusted human entry point may resolve a conflict; no model tool
//! reaches this module.

use crate::error::{Error, Invalid, Rejected, Result, Stale};
use crate::model::canon;
use crate::model::stamp::Stamp;
use crate::policy::PolicyError;
use crate::policy::distill::observed_fact_ids;
use crate::store::conflict_queue::{Case, CaseStatus, ConflictQueue};
use crate::store::curated_state::{CuratedState, Entry, Revision, push_revision, sort_entries};
use crate::store::journal::{Adjudication, JOURNAL_SCHEMA_VERSION};

/// Longest actor or rationale, in characters.
pub(crate) const MAX_ACTOR_CHARS: usize = 1_000;

/// A reviewer's decision on one conflict case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The case.
    pub conflict_id: String,
    /// The chosen candidate.
    pub candidate_id: String,
    /// The case revision the reviewer saw (>= 1).
    pub expected_revision: i64,
    /// Who decides.
    pub actor: String,
    /// Why.
    pub rationale: String,
    /// Idempotency key of the decision.
    pub event_id: String,
    /// When; default now.
    pub resolved_at: Option<Stamp>,
}

impl Resolution {
    /// Returns the resolution with ids checked and actor and rationale
    /// cleaned; a credential in any field is refused before anything else
    /// is looked at.
    ///
    /// Errors: [`Error::InvalidInput`] naming the field.
    pub fn validated(mut self) -> Result<Resolution> {
        // Credentials first: the checks below quote a malformed id.
        for (field, value) in [
            ("conflict_id", &self.conflict_id),
            ("candidate_id", &self.candidate_id),
            ("event_id", &self.event_id),
            ("actor", &self.actor),
            ("rationale", &self.rationale),
        ] {
            crate::model::secret::check(field, value)?;
        }
        canon::check_id("conflict_id", &self.conflict_id)?;
        canon::check_id("candidate_id", &self.candidate_id)?;
        canon::check_id("event_id", &self.event_id)?;
        if self.expected_revision < 1 || self.expected_revision > i64::from(u32::MAX) {
            return Err(Error::invalid(
                "revision",
                Invalid::OutOfRange {
                    value: self.expected_revision,
                    min: 1,
                    max: i64::from(u32::MAX),
                },
            ));
        }
        self.actor = canon::clean_text("actor", &self.actor, MAX_ACTOR_CHARS)?;
        self.rationale = canon::clean_text("rationale", &self.rationale, MAX_ACTOR_CHARS)?;
        crate::model::fact::refuse_marker("actor", &self.actor)?;
        crate::model::fact::refuse_marker("rationale", &self.rationale)?;
        Ok(self)
    }

    /// Returns whether a stored adjudication records this same decision.
    pub fn matches(&self, stored: &Adjudication) -> bool {
        stored.conflict_id == self.conflict_id
            && i64::from(stored.case_revision) == self.expected_revision
            && stored.selected_candidate_id == self.candidate_id
            && stored.actor == self.actor
            && stored.rationale == self.rationale
    }
}

/// The effect of a decision, scoped to the decided case's domain: a
/// decision changes only the entries and cases of one memory_key.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The domain: the decided case's memory_key.
    pub memory_key: String,
    /// The domain's curated entries before the decision, in canonical order.
    pub curated_before: Vec<Entry>,
    /// The domain's curated entries after the decision, in canonical order.
    pub curated_after: Vec<Entry>,
    /// The domain's conflict cases before the decision, in canonical order.
    pub cases_before: Vec<Case>,
    /// The domain's conflict cases after the decision, in canonical order.
    pub cases_after: Vec<Case>,
    /// The audit record.
    pub adjudication: Adjudication,
}

/// Checks `resolution` (already validated) against the current state and
/// returns its plan. `domain_fact_ids` are the ids of every fact in the log
/// with the case's memory_key (in any order). Only the case's domain is
/// copied: the cost does not grow with the rest of the state.
///
/// Errors: [`Error::ResolutionRejected`] for an unknown conflict or
/// candidate; [`Error::StaleResolution`] when the revision differs, the case
/// is closed, the active entry changed, or the evidence changed.
pub(crate) fn plan(
    resolution: &Resolution,
    curated: &CuratedState,
    queue: &ConflictQueue,
    domain_fact_ids: &[String],
    resolved_at: Stamp,
    workspace_id: &str,
) -> std::result::Result<Plan, PolicyError> {
    let id = &resolution.conflict_id;
    let case = queue.get(id).ok_or(Error::ResolutionRejected(Rejected::UnknownConflict))?;
    if i64::from(case.revision) != resolution.expected_revision {
        return Err(Error::StaleResolution(Stale::Revision {
            conflict_id: id.clone(),
            current: case.revision,
            expected: resolution.expected_revision,
        })
        .into());
    }
    if case.status != CaseStatus::Open {
        return Err(Error::StaleResolution(Stale::Closed {
            conflict_id: id.clone(),
            status: case.status.as_str(),
        })
        .into());
    }
    let candidate = case.candidate(&resolution.candidate_id).ok_or_else(|| {
        Error::ResolutionRejected(Rejected::UnknownCandidate { conflict_id: id.clone() })
    })?;
    let active = curated.active_for(&case.memory_key);
    if active.map(|e| e.key.as_str()) != case.active_entry_key.as_deref() {
        return Err(Error::StaleResolution(Stale::ActiveChanged {
            conflict_id: id.clone(),
            memory_key: case.memory_key.clone(),
        })
        .into());
    }
    let observed = observed_fact_ids(domain_fact_ids.iter().map(String::as_str), &case.candidates);
    if observed != case.observed_fact_ids {
        return Err(Error::StaleResolution(Stale::EvidenceChanged {
            conflict_id: id.clone(),
            memory_key: case.memory_key.clone(),
        })
        .into());
    }

    let curated_before = curated.domain(&case.memory_key);
    // A decision settles a domain under review after a merge: the values
    // in dispute leave the state, the chosen one as the next revision.
    let mut curated_after: Vec<Entry> =
        curated_before.iter().filter(|e| !e.is_contested()).cloned().collect();
    let resulting_key = if candidate.incumbent {
        // Keeping the incumbent records the decision only.
        case.active_entry_key.clone().unwrap_or_default()
    } else {
        promote_candidate(&mut curated_after, curated, case, candidate)?
    };
    let cases_before = queue.domain(&case.memory_key);
    let mut cases_after = cases_before.clone();
    let closed = cases_after.iter_mut().find(|c| c.conflict_id == *id).expect("case found above");
    closed.status = CaseStatus::Resolved;
    closed.resolved_at = Some(resolved_at.clone());
    closed.selected_candidate_id = Some(candidate.candidate_id.clone());
    closed.resolution_event_id = Some(resolution.event_id.clone());
    closed.resolution_actor = Some(resolution.actor.clone());
    closed.resolution_rationale = Some(resolution.rationale.clone());
    closed.resulting_active_entry_key = Some(resulting_key.clone());
    let adjudication = Adjudication {
        event_id: resolution.event_id.clone(),
        workspace_id: workspace_id.to_owned(),
        conflict_id: id.clone(),
        case_revision: case.revision,
        selected_candidate_id: candidate.candidate_id.clone(),
        actor: resolution.actor.clone(),
        rationale: resolution.rationale.clone(),
        resolved_at,
        prior_active_entry_key: case.active_entry_key.clone(),
        resulting_active_entry_key: resulting_key,
        evidence_ids: candidate.evidence_ids.clone(),
        schema_version: JOURNAL_SCHEMA_VERSION,
    };
    Ok(Plan {
        memory_key: case.memory_key.clone(),
        curated_before,
        curated_after,
        cases_before,
        cases_after,
        adjudication,
    })
}

/// Adds the next revision of the case's domain from `candidate` to
/// `domain` (the domain's entries of `curated`), superseding the active
/// one, or the latest one when a correction retracted it; returns its
/// key. Entry keys are unique across the whole state.
///
/// Errors: [`PolicyError::Curated`] if the new entry key is already taken.
fn promote_candidate(
    domain: &mut Vec<Entry>,
    curated: &CuratedState,
    case: &Case,
    candidate: &crate::store::conflict_queue::Candidate,
) -> std::result::Result<String, PolicyError> {
    // The revision it follows: the active one, else the domain's latest
    // when a correction retracted it (the chain stays contiguous, and the
    // retracted revision stays retracted once superseded).
    let active = domain.iter().position(Entry::is_active).or_else(|| {
        let latest = domain
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.is_contested())
            .max_by_key(|(_, e)| e.revision)?;
        latest.1.is_retracted().then_some(latest.0)
    });
    let revision = Revision {
        memory_key: &case.memory_key,
        kind: candidate.kind,
        content: candidate.content.clone(),
        evidence_ids: candidate.evidence_ids.clone(),
        first_seen: candidate.first_seen.clone(),
        last_seen: candidate.last_seen.clone(),
    };
    // (A contested entry of the domain leaves it: its key may be reused.)
    let taken = |key: &str| {
        curated.entries.iter().any(|e| {
            e.key == key && !(e.is_contested() && e.memory_key.as_ref() == Some(&case.memory_key))
        })
    };
    let position = push_revision(domain, active, revision, taken).map_err(PolicyError::Curated)?;
    let key = domain[position].key.clone();
    sort_entries(domain);
    Ok(key)
}
