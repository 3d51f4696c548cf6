//! `rebuild`: curated.json and conflicts.json derived again from the daily
//! logs and the audit stream, every human decision re-applied or reported
//! as set aside (see `policy::rebuild`). The way out when a derived file is
//! missing, was deleted by a branch, or fails its check against the log.

use serde::Serialize;

use crate::error::Result;
use crate::policy::rebuild;
use crate::store::conflict_queue::ConflictsFile;
use crate::store::curated_file::CuratedFile;
use crate::store::journal::{self, Adjudication};
use crate::store::names::{AUDIT_FILE, CONFLICTS_FILE, CURATED_FILE};
use crate::workspace::{DistillOptions, Workspace};

/// What [`Workspace::rebuild`] derived and wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rebuilt {
    /// Curated entries written, of any status.
    pub entries: usize,
    /// Conflict cases written, of any status.
    pub cases: usize,
    /// Event ids of the decisions re-applied to a rebuilt case.
    pub decisions_applied: Vec<String>,
    /// Event ids of the decisions whose chosen value the policy had made
    /// the active one on its own.
    pub decisions_held: Vec<String>,
    /// The decisions that matched no case: each stays in the audit stream.
    pub decisions_set_aside: Vec<SetAside>,
}

/// A decision [`Workspace::rebuild`] could not re-apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetAside {
    /// The decision's event id.
    pub event_id: String,
    /// The case it closed when it was made.
    pub conflict_id: String,
    /// The candidate it chose.
    pub selected_candidate_id: String,
    /// Who made it.
    pub actor: String,
    /// Why it could not be re-applied.
    pub reason: String,
}

impl Workspace {
    /// Derives curated.json and conflicts.json again from the daily logs
    /// and the audit stream and replaces both, under the lock: the policy
    /// (from `options`, else the workspace's) runs as of each decision's
    /// time, the decision is re-applied to the open case of its memory key
    /// whose candidates hold the value it chose, every correction in force
    /// is applied in the order it was recorded, as the commands apply it
    /// (the policy no longer sees the facts it retracts), and the policy
    /// runs once more as of `options`' `as_of` (default now). A decision that matches
    /// no case is reported, never dropped: the audit stream keeps every
    /// record. Whatever the two files held before is not read.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{DistillOptions, NewFact, Stamp, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// ws.remember(NewFact {
    ///     kind: Some("decision".into()),
    ///     importance: Some(4),
    ///     recorded_at: Some("2026-01-05T09:00:00Z".into()),
    ///     ..NewFact::new("Use SQLite in WAL mode for the cache")
    /// })?;
    /// let as_of = DistillOptions::new().as_of(Stamp::parse("2026-03-01T00:00:00Z").unwrap());
    /// ws.distill(&as_of)?;
    /// std::fs::remove_file(ws.memory_dir().join("curated.json")).unwrap();
    /// let rebuilt = ws.rebuild(&as_of)?;
    /// assert_eq!(rebuilt.entries, 1);
    /// assert!(ws.verify()?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: read errors as [`Workspace::facts`] and
    /// [`Workspace::adjudications`]; [`crate::Error::InvalidInput`] for a
    /// bad policy or a read-only handle; [`crate::Error::Io`].
    pub fn rebuild(&self, options: &DistillOptions) -> Result<Rebuilt> {
        self.writable()?;
        let policy = options.policy.as_ref().unwrap_or(&self.config.policy);
        policy.validate()?;
        let as_of = options.as_of.clone().unwrap_or_else(|| self.now());
        let _lock = self.lock()?;
        self.finish_pending_locked()?;
        let facts = self.log.read_all()?;
        let records: Vec<Adjudication> =
            journal::read_stream::<Adjudication>(&self.file(AUDIT_FILE), self.workspace_id())?
                .into_iter()
                .map(|n| n.record)
                .collect();
        let corrections = self.corrections()?;
        let derived =
            rebuild::rebuild(&facts, &records, &corrections, policy, &as_of, self.workspace_id())
                .map_err(|err| self.placed(err))?;
        let curated =
            CuratedFile::encode(&derived.curated, &self.file(CURATED_FILE), self.workspace_id())?;
        let conflicts =
            ConflictsFile::encode(&derived.queue, &self.file(CONFLICTS_FILE), self.workspace_id())?;
        // conflicts.json first: a crash between the two leaves a pair that
        // fails its check, and running rebuild again finishes the work.
        self.write_conflicts(conflicts)?;
        self.write_curated(curated)?;
        Ok(Rebuilt {
            entries: derived.curated.entries.len(),
            cases: derived.queue.cases.len(),
            decisions_applied: derived.applied,
            decisions_held: derived.held,
            decisions_set_aside: derived
                .set_aside
                .into_iter()
                .map(|(record, reason)| SetAside {
                    event_id: record.event_id,
                    conflict_id: record.conflict_id,
                    selected_candidate_id: record.selected_candidate_id,
                    actor: record.actor,
                    reason,
                })
                .collect(),
        })
    }
}
