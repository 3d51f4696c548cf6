//! The rules of promotion: the [`Policy`] distill applies (its thresholds,
//! the stable kinds and per-source overrides) and their valid ranges.

use std::collections::{BTreeMap, BTreeSet};

use jiff::SignedDuration;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Invalid, Result};
use crate::model::fact::Kind;
use crate::model::stamp::Stamp;

/// The promotion gate. Defaults are SPEC section 5.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Facts younger than this many days are not considered (>= 0).
    pub minimum_age_days: u32,
    /// A group with a fact this important qualifies (1-5).
    pub minimum_importance: u8,
    /// A group with this many distinct facts qualifies (>= 1).
    pub repeat_threshold: u32,
    /// Distinct facts a challenger needs to replace an active value (>= 2).
    pub supersession_repeat_threshold: u32,
    /// Kinds that may be promoted.
    pub stable_kinds: BTreeSet<Kind>,
    /// Per-source overrides of the age and importance thresholds, applied
    /// fact by fact (e.g. `user` facts promote sooner than `model_tool`).
    #[serde(default)]
    pub sources: BTreeMap<String, SourcePolicy>,
}

/// Thresholds of one source that differ from the policy's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcePolicy {
    /// Age a fact of this source needs, in days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_age_days: Option<u32>,
    /// Importance at which a fact of this source qualifies its group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_importance: Option<u8>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            minimum_age_days: 30,
            minimum_importance: 4,
            repeat_threshold: 2,
            supersession_repeat_threshold: 2,
            stable_kinds: [Kind::Decision, Kind::Convention, Kind::Pitfall].into_iter().collect(),
            sources: BTreeMap::new(),
        }
    }
}

impl Policy {
    /// Checks every value is in range.
    ///
    /// Errors: [`Error::InvalidInput`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        if !(1..=5).contains(&self.minimum_importance) {
            return Err(Error::invalid(
                "minimum_importance",
                Invalid::OutOfRange { value: self.minimum_importance.into(), min: 1, max: 5 },
            ));
        }
        if self.repeat_threshold < 1 {
            return Err(Error::invalid(
                "repeat_threshold",
                Invalid::TooSmall { value: self.repeat_threshold.into(), min: 1 },
            ));
        }
        if self.supersession_repeat_threshold < 2 {
            return Err(Error::invalid(
                "supersession_repeat_threshold",
                Invalid::TooSmall { value: self.supersession_repeat_threshold.into(), min: 2 },
            ));
        }
        if self.minimum_age_days > MAX_AGE_DAYS {
            return Err(Error::invalid(
                "minimum_age_days",
                Invalid::TooLarge { value: self.minimum_age_days.into(), max: MAX_AGE_DAYS.into() },
            ));
        }
        for (source, overrides) in &self.sources {
            if let Some(importance) = overrides.minimum_importance
                && !(1..=5).contains(&importance)
            {
                return Err(Error::invalid(
                    format!("source.{source}.minimum_importance"),
                    Invalid::OutOfRange { value: importance.into(), min: 1, max: 5 },
                ));
            }
            if let Some(days) = overrides.minimum_age_days.filter(|&days| days > MAX_AGE_DAYS) {
                return Err(Error::invalid(
                    format!("source.{source}.minimum_age_days"),
                    Invalid::TooLarge { value: days.into(), max: MAX_AGE_DAYS.into() },
                ));
            }
        }
        Ok(())
    }

    /// Returns the age, in days, a fact of `source` needs.
    pub fn age_days_for(&self, source: &str) -> u32 {
        self.sources.get(source).and_then(|o| o.minimum_age_days).unwrap_or(self.minimum_age_days)
    }

    /// Returns the importance at which a fact of `source` qualifies its
    /// group.
    pub fn importance_for(&self, source: &str) -> u8 {
        self.sources
            .get(source)
            .and_then(|o| o.minimum_importance)
            .unwrap_or(self.minimum_importance)
    }

    /// Returns the instant before which a fact of `source` must have been
    /// recorded to be aged at `as_of`.
    pub fn cutoff_for(&self, source: &str, as_of: &Stamp) -> jiff::Timestamp {
        // Before the earliest representable instant nothing is aged.
        as_of
            .instant()
            .checked_sub(SignedDuration::from_hours(24 * i64::from(self.age_days_for(source))))
            .unwrap_or(jiff::Timestamp::MIN)
    }
}

/// Largest accepted `minimum_age_days`.
pub const MAX_AGE_DAYS: u32 = 365_000;
