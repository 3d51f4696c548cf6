//! Plain configuration values handed to the library. Loading (files,
//! environment, flags) is the caller's business.

use std::ops::RangeInclusive;

use crate::error::Result;
use crate::policy::distill::Policy;
use crate::policy::projection::{
    DEFAULT_CONTEXT_BUDGET, DEFAULT_PENDING_FACTS, DEFAULT_RECENT_FACTS, MAX_PENDING_FACTS,
    MIN_CONTEXT_BUDGET,
};
use crate::policy::rules::in_range;

/// Settings of a workspace session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The distill policy.
    pub policy: Policy,
    /// Recent unkeyed facts shown in the agent context.
    pub recent_facts: usize,
    /// Pending keyed facts (not yet evidence of any curated entry) shown in
    /// the agent context; 0 leaves that part out.
    pub pending_facts: usize,
    /// Character budget of the agent context (0: unbounded).
    pub context_budget: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            policy: Policy::default(),
            recent_facts: DEFAULT_RECENT_FACTS,
            pending_facts: DEFAULT_PENDING_FACTS,
            context_budget: DEFAULT_CONTEXT_BUDGET,
        }
    }
}

impl Config {
    /// The accepted `recent_facts`.
    pub const RECENT_FACTS: RangeInclusive<usize> = 0..=1_000;
    /// The accepted `pending_facts` (0 turns the pending part off).
    pub const PENDING_FACTS: RangeInclusive<usize> = 0..=MAX_PENDING_FACTS;
    /// The accepted `context_budget` other than 0 (unbounded).
    pub const CONTEXT_BUDGET: RangeInclusive<usize> = MIN_CONTEXT_BUDGET..=100_000_000;

    /// Checks every value is in its range.
    ///
    /// Errors: [`crate::Error::InvalidInput`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        self.policy.validate()?;
        if self.context_budget != 0 {
            in_range(
                "context_budget (0 means unbounded)",
                self.context_budget as i64,
                &range_i64(&Config::CONTEXT_BUDGET),
            )?;
        }
        in_range("recent_facts", self.recent_facts as i64, &range_i64(&Config::RECENT_FACTS))?;
        in_range("pending_facts", self.pending_facts as i64, &range_i64(&Config::PENDING_FACTS))
    }
}

fn range_i64(range: &RangeInclusive<usize>) -> RangeInclusive<i64> {
    (*range.start() as i64)..=(*range.end() as i64)
}
