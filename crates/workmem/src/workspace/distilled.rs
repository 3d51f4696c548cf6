//! What a distill run hands back, and what it leaves to free: shared by
//! the full run and the incremental one.

use crate::policy::distill::{self, Decision, Report};
use crate::policy::projection::Projection;
use crate::store::conflict_queue::ConflictQueue;
use crate::store::curated_file::CuratedFile;
use crate::store::curated_state::CuratedState;

/// What a run leaves of curated.json.
pub(super) enum CuratedOutcome {
    /// A new file, to write.
    Changed(CuratedFile),
    /// The file as it was: its projection, to repair the derived files.
    Unchanged(Projection),
    /// No curated.json, and the run made none.
    Missing,
}

/// What there is to free of a state: a few strings per entry, case and
/// candidate (a list of ids is two blocks, however long).
pub(super) fn allocations_of(curated: &CuratedState, queue: &ConflictQueue) -> usize {
    const PER_RECORD: usize = 6;
    let cases: usize = queue.cases.iter().map(|c| 1 + c.candidates.len()).sum();
    PER_RECORD * (curated.entries.len() + cases)
}

/// Drops `value`, which owns about `allocations` heap blocks, on another
/// thread when they are many: freeing what a run held (a string per fact,
/// per evidence id; an incremental run, those of the entries and cases it
/// decoded) takes milliseconds its caller need not wait for, and none at
/// all when the process exits first. A few are dropped
/// here, sooner than a thread starts.
pub(super) fn drop_in_background<T: Send + 'static>(value: T, allocations: usize) {
    const MANY: usize = 10_000;
    if allocations >= MANY {
        // When no thread can be started, the value is dropped here.
        let _ = std::thread::Builder::new().spawn(move || drop(value));
    }
}

/// What [`Workspace::distill`](crate::Workspace::distill) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distilled {
    /// The counters of the run.
    pub report: Report,
    /// Every fact's decision, in log order; empty unless the options asked
    /// to explain.
    pub decisions: Vec<Decision>,
    /// How many of the report's `skipped` facts were already evidence of an
    /// entry (promoted by an earlier run) rather than not promoted.
    pub already_evidence: usize,
    /// Active curated entries after the run (what MEMORY.md shows).
    pub active_entries: usize,
}

impl Distilled {
    /// Returns what a caller sees of `outcome`; the rest of it, which
    /// grows with the log, is freed on another thread.
    pub(super) fn of(outcome: distill::Outcome) -> Distilled {
        let distill::Outcome {
            curated, queue, report, decisions, already_evidence, collected, ..
        } = outcome;
        let distilled = Distilled {
            active_entries: curated.active_entries().count(),
            report,
            decisions,
            already_evidence,
        };
        let allocations = allocations_of(&curated, &queue);
        drop_in_background((curated, queue, collected), allocations);
        distilled
    }

    /// Returns the report and the decisions.
    pub fn into_parts(self) -> (Report, Vec<Decision>) {
        (self.report, self.decisions)
    }
}
