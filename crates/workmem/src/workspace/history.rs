//! The history of one memory key: every revision with the facts behind it,
//! and every conflict case of the key. Read-only.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use crate::model::canon;
use crate::model::fact::Fact;
use crate::store::conflict_queue::Case;
use crate::store::curated_state::Entry;
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
}

impl Workspace {
    /// Returns every revision of `memory_key` with its evidence facts, and
    /// the key's conflict cases.
    ///
    /// Errors: [`crate::Error::InvalidInput`] for a malformed key; read
    /// errors as [`Workspace::facts`].
    pub fn history(&self, memory_key: &str) -> Result<History> {
        let memory_key = canon::clean_memory_key(memory_key)?;
        let mut entries: Vec<Entry> = self
            .curated()?
            .entries
            .into_iter()
            .filter(|e| e.memory_key.as_deref() == Some(&memory_key))
            .collect();
        entries.sort_by_key(|e| e.revision);
        let facts = self.facts()?;
        let by_id: HashMap<&str, &Fact> = facts.iter().map(|f| (f.fact_id.as_str(), f)).collect();
        let revisions = entries
            .into_iter()
            .map(|entry| {
                let facts = entry
                    .evidence_ids
                    .iter()
                    .filter_map(|id| by_id.get(id.as_str()).map(|f| (*f).clone()))
                    .collect();
                RevisionHistory { entry, facts }
            })
            .collect();
        let cases =
            self.conflicts()?.cases.into_iter().filter(|c| c.memory_key == memory_key).collect();
        Ok(History { memory_key, revisions, cases })
    }
}
