//! `explain`: where a fact, or every proposal of a memory key, stands and
//! why. The answer is the decision record of a dry-run distill
//! (`distill_with` and `RunOptions::explained`), the very code that
//! promotes facts, so the explanation cannot drift from what `distill`
//! does.

use serde::Serialize;

use crate::error::{Error, Invalid, Result};
use crate::model::canon;
use crate::model::fact::Fact;
use crate::model::stamp::Stamp;
use crate::policy::distill::{Policy, Reason};
use crate::store::curated_state::Entry;
use crate::workspace::Workspace;

/// One fact and where it stands.
#[derive(Debug, Clone, Serialize)]
pub struct FactExplanation {
    /// The fact.
    pub fact: Fact,
    /// Where it stands after a distill at `as_of`, and why.
    #[serde(flatten)]
    pub reason: Reason,
    /// The entry the reason names (as it would be after the distill), if any.
    pub entry: Option<Entry>,
}

/// Every fact of one memory key and where each stands.
#[derive(Debug, Clone, Serialize)]
pub struct KeyExplanation {
    /// The key, in normal form.
    pub memory_key: String,
    /// The instant the policy was evaluated at.
    pub as_of: Stamp,
    /// The active entry after a distill at `as_of`, if any.
    pub active: Option<Entry>,
    /// Each fact with the key, oldest first.
    pub facts: Vec<FactExplanation>,
}

impl Reason {
    /// Returns whether the fact is (or would become) evidence of an entry.
    pub fn is_promoted(&self) -> bool {
        matches!(
            self,
            Reason::Promoted { .. } | Reason::Reinforced { .. } | Reason::AlreadyEvidence { .. }
        )
    }

    /// Returns the entry key the reason names, if any.
    pub fn entry_key(&self) -> Option<&str> {
        match self {
            Reason::Promoted { entry_key, .. }
            | Reason::Reinforced { entry_key, .. }
            | Reason::AlreadyEvidence { entry_key, .. }
            | Reason::Stale { entry_key, .. }
            | Reason::NeedsMoreEvidence { entry_key, .. } => Some(entry_key),
            _ => None,
        }
    }
}

impl Workspace {
    /// Explains where the fact `fact_id` stands under `policy` at `as_of`
    /// (default now). Writes nothing.
    ///
    /// Errors: [`Error::InvalidInput`] naming `fact_id` when no such fact
    /// exists; read errors as [`Workspace::facts`].
    pub fn explain_fact(
        &self,
        fact_id: &str,
        policy: &Policy,
        as_of: Option<Stamp>,
    ) -> Result<FactExplanation> {
        // A lookup echoes the id it did not find: credentials first.
        crate::model::secret::check("fact_id", fact_id)?;
        canon::check_id("fact_id", fact_id)?;
        let as_of = as_of.unwrap_or_else(|| self.now());
        let (mut found, _) = self.explain_matching(policy, &as_of, |f| f.fact_id == fact_id)?;
        found.pop().ok_or_else(|| Error::invalid("fact_id", Invalid::NoSuchFact))
    }

    /// Explains every fact of `memory_key` under `policy` at `as_of`
    /// (default now). Writes nothing.
    ///
    /// Errors: [`Error::InvalidInput`] for a malformed key; read errors as
    /// [`Workspace::facts`].
    pub fn explain_key(
        &self,
        memory_key: &str,
        policy: &Policy,
        as_of: Option<Stamp>,
    ) -> Result<KeyExplanation> {
        crate::model::secret::check("memory_key", memory_key)?;
        let memory_key = canon::clean_memory_key(memory_key)?;
        let as_of = as_of.unwrap_or_else(|| self.now());
        let (facts, entries) = self.explain_matching(policy, &as_of, |f| {
            f.memory_key.as_deref() == Some(memory_key.as_str())
        })?;
        let active = entries
            .into_iter()
            .find(|e| e.is_active() && e.memory_key.as_deref() == Some(&memory_key));
        Ok(KeyExplanation { memory_key, as_of, active, facts })
    }

    /// Runs a recording dry-run distill; returns the explanations of the
    /// facts `wanted` accepts and the curated entries after the run.
    fn explain_matching(
        &self,
        policy: &Policy,
        as_of: &Stamp,
        wanted: impl Fn(&Fact) -> bool,
    ) -> Result<(Vec<FactExplanation>, Vec<Entry>)> {
        let facts = self.facts()?;
        // A retracted fact is not the policy's: its reason is the
        // correction.
        let retractions = self.retractions()?;
        let mut without: Vec<Fact> = Vec::new();
        let mut withheld = None;
        if !retractions.is_empty() {
            without.clone_from(&facts);
            withheld = Some(retractions.withhold(&mut without, true));
        }
        let judged = if withheld.is_some() { &without } else { &facts };
        let mut outcome = crate::policy::distill::distill_with(
            judged,
            self.curated()?,
            &self.conflicts()?,
            policy,
            as_of,
            self.workspace_id(),
            crate::policy::distill::RunOptions::explained(),
        )
        .map_err(|err| self.placed(err))?;
        if let Some(withheld) = withheld {
            outcome.decisions = withheld.decisions(std::mem::take(&mut outcome.decisions));
        }
        let mut reasons: std::collections::HashMap<&str, &Reason> =
            outcome.decisions.iter().map(|d| (d.fact_id.as_str(), &d.reason)).collect();
        let mut out = Vec::new();
        for fact in facts.iter().filter(|f| wanted(f)) {
            let Some(reason) = reasons.remove(fact.fact_id.as_str()) else { continue };
            let entry = reason
                .entry_key()
                .and_then(|key| outcome.curated.entries.iter().find(|e| e.key == key))
                .cloned();
            out.push(FactExplanation { fact: fact.clone(), reason: reason.clone(), entry });
        }
        Ok((out, outcome.curated.entries))
    }
}
