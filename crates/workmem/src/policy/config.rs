//! Plain configuration values handed to the library. Loading (files,
//! environment, flags) is the caller's business.

use crate::error::{Error, Invalid, Result};
use crate::policy::distill::Policy;
use crate::policy::projection::{DEFAULT_CONTEXT_BUDGET, DEFAULT_RECENT_FACTS, MIN_CONTEXT_BUDGET};

/// Settings of a workspace session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The distill policy.
    pub policy: Policy,
    /// Recent unkeyed facts shown in the agent context.
    pub recent_facts: usize,
    /// Character budget of the agent context (0: unbounded).
    pub context_budget: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            policy: Policy::default(),
            recent_facts: DEFAULT_RECENT_FACTS,
            context_budget: DEFAULT_CONTEXT_BUDGET,
        }
    }
}

impl Config {
    /// Checks every value is in range.
    ///
    /// Errors: [`Error::InvalidInput`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        self.policy.validate()?;
        if self.context_budget != 0 && self.context_budget < MIN_CONTEXT_BUDGET {
            return Err(Error::invalid(
                "context_budget (0 means unbounded)",
                Invalid::TooSmall {
                    value: self.context_budget as i64,
                    min: MIN_CONTEXT_BUDGET as i64,
                },
            ));
        }
        if self.recent_facts > 1_000 {
            return Err(Error::invalid(
                "recent_facts",
                Invalid::TooLarge { value: self.recent_facts as i64, max: 1_000 },
            ));
        }
        Ok(())
    }
}
