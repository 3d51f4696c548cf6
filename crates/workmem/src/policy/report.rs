//! What one distill run reports: the counters of the [`Report`] and, per
//! fact, the [`Decision`] and its [`Reason`] that `distill --explain` and
//! `explain` show.

use serde::Serialize;

use crate::model::fact::Kind;
use crate::model::stamp::Stamp;
use crate::store::curated_state::Status;

/// Why a fact stands where it does after a distill: the per-fact record of
/// the decisions of one run, shared by `distill --explain` and `explain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reason {
    /// Too young: recorded less than its source's minimum age before `as_of`.
    WaitingForAge {
        /// The first instant at which it is old enough.
        until: Stamp,
    },
    /// Its kind is not one the policy promotes.
    NotStableKind {
        /// The fact's kind.
        kind: Kind,
    },
    /// Already evidence of an entry before this run.
    AlreadyEvidence {
        /// The entry.
        entry_key: String,
        /// Its revision.
        revision: u32,
        /// Whether it is still the active value.
        status: Status,
    },
    /// Its group has no fact important enough and too few facts.
    BelowThresholds {
        /// Highest importance in the group.
        importance: u8,
        /// Importance needed (the lowest threshold among the group's sources).
        minimum_importance: u8,
        /// Distinct facts in the group.
        facts: usize,
        /// Distinct facts needed.
        repeat_threshold: u32,
    },
    /// Became evidence of an entry in this run (new entry, new revision, or
    /// more evidence for an unkeyed entry).
    Promoted {
        /// The entry.
        entry_key: String,
        /// Its revision.
        revision: u32,
    },
    /// Repeats the active value of its memory key: more evidence, no revision.
    Reinforced {
        /// The active entry.
        entry_key: String,
        /// Its revision.
        revision: u32,
    },
    /// Enough facts to challenge the active value, but none newer than its
    /// `last_seen`: it cannot roll it back (checked after
    /// [`Reason::NeedsMoreEvidence`], docs/policy.md). After a decision, a
    /// fact is newer only when dated after the chosen value's newest fact
    /// as the person saw it, also when a correction took that fact since
    /// or the domain has no value left.
    Stale {
        /// The active entry (the retracted one the decision chose, when
        /// the domain has no value).
        entry_key: String,
        /// The instant a challenger must be newer than: the active entry's
        /// `last_seen`, or the decided value's as the person saw it when
        /// that is later.
        active_last_seen: Stamp,
    },
    /// A challenger without enough distinct facts to replace the active
    /// value, whatever its age (the first test of docs/policy.md).
    NeedsMoreEvidence {
        /// The active entry.
        entry_key: String,
        /// Distinct facts of the challenger.
        facts: usize,
        /// Distinct facts needed.
        supersession_repeat_threshold: u32,
    },
    /// Qualified, but a stronger tie took the decision to a human.
    LostToStrongerProposal {
        /// The conflict case of the stronger, tied proposals.
        conflict_id: String,
    },
    /// One of equally strong proposals: a conflict case awaits a human.
    Tied {
        /// The case.
        conflict_id: String,
    },
    /// Of a memory key under review after a merge, where each side had
    /// its own value accepted: nothing is promoted until a person chooses.
    UnderReview {
        /// The case of the values in dispute, once it could be opened.
        conflict_id: Option<String>,
    },
    /// Retracted by a correction in force: the policy does not see it
    /// (docs/corrections.md).
    Retracted {
        /// The event ids of the retract and redact records in force that
        /// name it, sorted.
        event_ids: Vec<String>,
    },
    /// A value a human rejected, with no new evidence since.
    RejectedByAdjudication {
        /// The resolved case.
        conflict_id: String,
        /// The adjudication's event id.
        event_id: String,
    },
}

/// One fact's outcome in a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The fact.
    pub fact_id: String,
    /// Its memory key, if keyed.
    pub memory_key: Option<String>,
    /// Where it stands and why.
    #[serde(flatten)]
    pub reason: Reason,
}

/// What one distill run did. Field names are those of the format and the CLI (docs/policy.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Aged facts (older than the cutoff).
    pub scanned: usize,
    /// Candidate facts that became evidence of an entry.
    pub eligible: usize,
    /// Entries or revisions created.
    pub created: usize,
    /// Entries that gained evidence.
    pub updated: usize,
    /// Aged facts not promoted.
    pub skipped: usize,
    /// Revisions replaced by a newer one.
    pub superseded: usize,
    /// Domains that ended in a tie.
    pub conflicts: usize,
    /// Skipped facts stopped by the recency test.
    pub stale: usize,
    /// Conflict cases opened by this run.
    pub queued_conflicts: usize,
    /// Ids of the tie cases of this run (new or reused).
    pub conflict_case_ids: Vec<String>,
}

impl Report {
    /// Adds what `other`, a report of other units of the same run,
    /// counted; its case ids follow this report's.
    pub(crate) fn add(&mut self, other: Report) {
        self.scanned += other.scanned;
        self.eligible += other.eligible;
        self.created += other.created;
        self.updated += other.updated;
        self.skipped += other.skipped;
        self.superseded += other.superseded;
        self.conflicts += other.conflicts;
        self.stale += other.stale;
        self.queued_conflicts += other.queued_conflicts;
        self.conflict_case_ids.extend(other.conflict_case_ids);
    }
}
