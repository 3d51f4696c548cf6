//! `overview`: one read-only look at where a workspace stands — facts,
//! what waits for the age gate and when the first becomes eligible, the
//! curated entries, open conflicts and unfinished work. Writes nothing.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::model::fact::Kind;
use crate::model::stamp::Stamp;
use crate::policy::report::Reason;
use crate::store::atomic_io::file_stamp;
use crate::store::journal::{self, JOURNAL_FILE};
use crate::workspace::{CURATED_FILE, DistillOptions, Workspace};

/// Where a workspace stands, as [`Workspace::overview`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overview {
    /// The workspace id.
    pub workspace_id: String,
    /// Whether `.workmem/workspace.toml` pins the id (a shared or adopted
    /// memory), rather than the project's path deriving it.
    pub pinned: bool,
    /// Whether the memory is shared through git: a `.gitattributes` routes
    /// its files to workmem's merge driver.
    pub shared: bool,
    /// The facts of the log.
    pub facts: FactCounts,
    /// Active curated entries by kind.
    pub curated: BTreeMap<Kind, usize>,
    /// Open conflict cases, waiting for a human.
    pub open_conflicts: usize,
    /// When curated.json last changed (the last distill or resolution that
    /// changed the memory), if it exists.
    pub curated_changed_at: Option<Stamp>,
    /// Resolutions a crash left unfinished (the next writing command
    /// finishes them).
    pub unfinished_transactions: usize,
    /// Whether a distill was interrupted between its writes.
    pub distill_interrupted: bool,
    /// Decisions of the audit stream that do not close their case: two
    /// people decided one case on two machines, and a merge kept both
    /// (the case is open again, or the earlier of two equal decisions
    /// closed it).
    pub set_aside_decisions: usize,
}

/// Fact counts of an [`Overview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FactCounts {
    /// Every fact in the log.
    pub total: usize,
    /// Facts recorded on the current UTC day.
    pub today: usize,
    /// Facts the policy will judge once they are old enough.
    pub waiting_for_age: usize,
    /// When the first of those becomes old enough.
    pub first_eligible_at: Option<Stamp>,
}

impl Workspace {
    /// Returns where the workspace stands at `as_of` (default now). Runs
    /// the policy as a dry run to find the facts waiting for their age, so
    /// its cost is that of `distill --dry-run`; never writes.
    ///
    /// Errors: as [`Workspace::distill`] and [`Workspace::conflicts`].
    pub fn overview(&self, as_of: Option<Stamp>) -> Result<Overview> {
        let as_of = as_of.unwrap_or_else(|| self.now());
        let mut options = DistillOptions::new().dry_run().explain();
        options = options.as_of(as_of.clone());
        let decisions = self.distill(&options)?.decisions;
        let mut waiting_for_age = 0;
        let mut first_eligible_at: Option<Stamp> = None;
        for decision in &decisions {
            if let Reason::WaitingForAge { until } = &decision.reason {
                waiting_for_age += 1;
                if first_eligible_at.as_ref().is_none_or(|first| until.instant() < first.instant())
                {
                    first_eligible_at = Some(until.clone());
                }
            }
        }
        let mut curated = BTreeMap::new();
        for entry in self.curated()?.active_entries() {
            *curated.entry(entry.kind).or_insert(0) += 1;
        }
        let queue = self.conflicts()?;
        let open_conflicts = queue.cases.iter().filter(|case| case.is_open()).count();
        let set_aside_decisions = self
            .adjudications()?
            .iter()
            .filter(|record| {
                queue.get(&record.conflict_id).and_then(|case| case.resolution_event_id.as_deref())
                    != Some(record.event_id.as_str())
            })
            .count();
        let curated_changed_at =
            file_stamp(&self.file(CURATED_FILE))?.and_then(|[_, _, secs, nanos]| {
                jiff::Timestamp::new(secs, i32::try_from(nanos).ok()?)
                    .ok()
                    .map(Stamp::from_timestamp)
            });
        // Only the journal's last transaction can be unfinished: when it
        // committed (or the journal is empty, as at rest) nothing else is read.
        let journal_path = self.file(JOURNAL_FILE);
        let unfinished_transactions =
            if journal::last_is_committed(&journal_path, self.workspace_id())? {
                0
            } else {
                journal::transactions(&journal_path, self.workspace_id())?
                    .iter()
                    .filter(|transaction| !transaction.committed())
                    .count()
            };
        Ok(Overview {
            workspace_id: self.workspace_id().to_owned(),
            pinned: self.is_pinned(),
            shared: self.shared_attributes()?.is_some(),
            facts: FactCounts {
                total: decisions.len(),
                today: self.facts_on(&as_of.utc_day())?.len(),
                waiting_for_age,
                first_eligible_at,
            },
            curated,
            open_conflicts,
            curated_changed_at,
            unfinished_transactions,
            distill_interrupted: self.distill_pending(),
            set_aside_decisions,
        })
    }
}
