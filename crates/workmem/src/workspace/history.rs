//! The history of one memory key: every revision with the facts behind it,
//! every conflict case of the key, and every correction that names one of
//! its facts. Read-only.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use crate::model::canon;
use crate::model::fact::Fact;
use crate::store::conflict_queue::Case;
use crate::store::corrections::Correction;
use crate::store::curated_state::Entry;
use crate::store::names::{CONFLICTS_FILE, CURATED_FILE};
use crate::store::{id_index, lock};
use crate::workspace::Workspace;

/// One revision and its evidence facts.
#[derive(Debug, Clone, Serialize)]
pub struct RevisionHistory {
    /// The curated revision.
    #[serde(flatten)]
    pub entry: Entry,
    /// The facts named by its evidence ids that are still in the log.
    pub facts: Vec<Fact>,
}

/// Everything workmem knows about one memory key.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    /// The key, in normal form.
    pub memory_key: String,
    /// Revisions, oldest first.
    pub revisions: Vec<RevisionHistory>,
    /// Conflict cases of the key, oldest first.
    pub cases: Vec<Case>,
    /// The corrections (retractions, restores, redactions) that name a
    /// fact of the key, in time order.
    pub corrections: Vec<Correction>,
}

impl Workspace {
    /// Returns every revision of `memory_key` with its evidence facts, and
    /// the key's conflict cases. Only the key's entries and cases are
    /// decoded, and its evidence facts are read where the id index places
    /// them (the whole log is read only when the index cannot answer
    /// without being rebuilt).
    ///
    /// Errors: [`crate::Error::InvalidInput`] for a malformed key; read
    /// errors as [`Workspace::facts`].
    pub fn history(&self, memory_key: &str) -> Result<History> {
        // The key is printed back: credentials first.
        crate::model::secret::check("memory_key", memory_key)?;
        let memory_key = canon::clean_memory_key(memory_key)?;
        self.check_state()?;
        let mut entries =
            self.dir.stored_curated()?.file.records(&self.file(CURATED_FILE), |head| {
                head.memory_key.as_deref() == Some(memory_key.as_str())
            })?;
        entries.sort_by_key(|e| e.revision);
        let mut ids: Vec<&str> = entries.iter().flat_map(|e| e.evidence_ids.iter()).collect();
        ids.sort_unstable();
        ids.dedup();
        let by_id = self.facts_with_ids(&ids)?;
        let revisions = entries
            .into_iter()
            .map(|entry| {
                let facts =
                    entry.evidence_ids.iter().filter_map(|id| by_id.get(id).cloned()).collect();
                RevisionHistory { entry, facts }
            })
            .collect();
        let cases = self
            .dir
            .stored_conflicts()?
            .file
            .records(&self.file(CONFLICTS_FILE), |head| head.memory_key == memory_key)?;
        let corrections = self.corrections_of_key(&memory_key)?;
        Ok(History { memory_key, revisions, cases, corrections })
    }

    /// Returns the corrections that name a fact of `memory_key`, ordered by
    /// (`recorded_at`, `event_id`).
    ///
    /// Errors: as [`Workspace::corrections`] and [`Workspace::facts`].
    fn corrections_of_key(&self, memory_key: &str) -> Result<Vec<Correction>> {
        let records = self.corrections()?;
        if records.is_empty() {
            return Ok(records);
        }
        let mut ids: Vec<&str> = records.iter().flat_map(|r| r.fact_ids.iter()).collect();
        ids.sort_unstable();
        ids.dedup();
        let by_id = self.facts_with_ids(&ids)?;
        let of_key = |id: &str| by_id.get(id).is_some_and(|f| f.memory_key() == Some(memory_key));
        let mut found: Vec<Correction> =
            records.into_iter().filter(|r| r.fact_ids.iter().any(of_key)).collect();
        found.sort_by(|a, b| {
            a.recorded_at
                .instant()
                .cmp(&b.recorded_at.instant())
                .then_with(|| a.event_id.cmp(&b.event_id))
        });
        Ok(found)
    }

    /// Returns the fact of each of `ids` the log holds (the first record
    /// of the id, as every reader counts it): read where the id index
    /// places it. A reader (no lock) uses the index when it can answer
    /// without being rebuilt (brought up to date in memory, never
    /// written), else reads the whole log; a writer holding the lock
    /// brings the index up to date, or builds it, and keeps it.
    ///
    /// Errors: read errors as [`Workspace::facts`].
    pub(crate) fn facts_with_ids(&self, ids: &[&str]) -> Result<HashMap<String, Fact>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        // A writer (a correction, under the lock) brings the index up to
        // date and keeps it, building it once when it is missing: a
        // correction then reads its facts where the index places them
        // instead of the whole log.
        let index = if !self.read_only && lock::held_here(self.dir.path()) {
            let mut index =
                id_index::refresh(&self.log, self.dir.path(), self.workspace_id())?.index;
            // A cache: a failure to keep it costs the next writer a rebuild.
            let _ = index.save();
            Some(index)
        } else {
            id_index::peek(&self.log, self.dir.path(), self.workspace_id())?
        };
        let indexed = match index {
            Some(index) => self.facts_at_places(&index, ids)?,
            None => None,
        };
        let found = match indexed {
            Some(found) => found,
            None => self.facts_from_log(ids)?,
        };
        Ok(found.into_iter().flatten().map(|fact| (fact.fact_id.clone(), fact)).collect())
    }
}
