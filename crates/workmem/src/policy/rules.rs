//! The rules of promotion: the [`Policy`] distill applies (its thresholds,
//! the stable kinds and per-source overrides) and their valid ranges.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use jiff::SignedDuration;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Invalid, Result};
use crate::model::fact::Kind;
use crate::model::stamp::Stamp;

/// The promotion gate. Defaults are docs/policy.md.
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
    /// The accepted `minimum_age_days` (also of a source).
    pub const AGE_DAYS: RangeInclusive<u32> = 0..=MAX_AGE_DAYS;
    /// The accepted `minimum_importance` (also of a source): a fact's range.
    pub const IMPORTANCE: RangeInclusive<u8> = crate::model::fact::IMPORTANCE;
    /// The accepted `repeat_threshold`.
    pub const REPEAT_THRESHOLD: RangeInclusive<u32> = 1..=1_000_000;
    /// The accepted `supersession_repeat_threshold`.
    pub const SUPERSESSION_REPEAT_THRESHOLD: RangeInclusive<u32> = 2..=1_000_000;

    /// Checks every value is in its range (the constants above: the one
    /// place the ranges are written).
    ///
    /// Errors: [`Error::InvalidInput`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        in_range("minimum_importance", self.minimum_importance, &Policy::IMPORTANCE)?;
        in_range("repeat_threshold", self.repeat_threshold, &Policy::REPEAT_THRESHOLD)?;
        in_range(
            "supersession_repeat_threshold",
            self.supersession_repeat_threshold,
            &Policy::SUPERSESSION_REPEAT_THRESHOLD,
        )?;
        in_range("minimum_age_days", self.minimum_age_days, &Policy::AGE_DAYS)?;
        for (source, overrides) in &self.sources {
            if let Some(importance) = overrides.minimum_importance {
                in_range(
                    &format!("source.{source}.minimum_importance"),
                    importance,
                    &Policy::IMPORTANCE,
                )?;
            }
            if let Some(days) = overrides.minimum_age_days {
                in_range(&format!("source.{source}.minimum_age_days"), days, &Policy::AGE_DAYS)?;
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

/// Checks that `value` of `field` lies in `range`.
///
/// Errors: [`Error::InvalidInput`] with [`Invalid::OutOfRange`].
pub(crate) fn in_range<T: Copy + PartialOrd + Into<i64>>(
    field: &str,
    value: T,
    range: &RangeInclusive<T>,
) -> Result<()> {
    if range.contains(&value) {
        return Ok(());
    }
    Err(Error::invalid(
        field,
        Invalid::OutOfRange {
            value: value.into(),
            min: (*range.start()).into(),
            max: (*range.end()).into(),
        },
    ))
}
