//! What the commands that run the policy share (`distill`, `explain`,
//! `rebuild`): the policy flags, `--as-of`, and the sentence that says why
//! a fact stands where it does.

use clap::Args;
use workmem::{Policy, Reason, Stamp, Status};

use crate::command_error::CommandError;

/// Policy flags shared by `distill`, `explain` and `rebuild`; they
/// override the configuration files.
#[derive(Debug, Default, Args)]
pub struct PolicyArgs {
    /// Only facts older than this many days are considered [default: 30]
    #[arg(long, value_name = "N")]
    pub min_age_days: Option<u32>,
    /// A group with a fact this important qualifies, 1-5 [default: 4]
    #[arg(long, value_name = "N")]
    pub min_importance: Option<u8>,
    /// A group with this many distinct facts qualifies, >= 1 [default: 2]
    #[arg(long = "repeat", value_name = "N")]
    pub repeat: Option<u32>,
    /// Distinct newer facts a challenger needs to replace an active value, >= 2 [default: 2]
    #[arg(long = "supersede-repeat", value_name = "N")]
    pub supersede_repeat: Option<u32>,
}

impl PolicyArgs {
    /// Returns `base` with the flags given on the command line applied.
    pub fn apply(&self, base: &Policy) -> Policy {
        let mut policy = base.clone();
        if let Some(days) = self.min_age_days {
            policy.minimum_age_days = days;
        }
        if let Some(importance) = self.min_importance {
            policy.minimum_importance = importance;
        }
        if let Some(repeat) = self.repeat {
            policy.repeat_threshold = repeat;
        }
        if let Some(repeat) = self.supersede_repeat {
            policy.supersession_repeat_threshold = repeat;
        }
        policy
    }
}

/// Parses an optional `--as-of` instant.
///
/// Errors: exit 2 naming `--as-of`.
pub fn parse_as_of(text: Option<&str>) -> Result<Option<Stamp>, CommandError> {
    text.map(|text| {
        Stamp::parse_normalized(text).map_err(|msg| {
            CommandError::invalid("--as-of", msg)
                .hinted("use an RFC 3339 instant, e.g. 2026-01-01T12:00:00Z")
        })
    })
    .transpose()
}

/// Which run a reason speaks of: it decides how a promotion is worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// A distill that wrote its result: the facts were promoted by it.
    Written,
    /// A dry run: the facts would be promoted by the same run writing.
    Dry,
    /// `explain`: the facts will be promoted by the next distill run with
    /// the same policy and instant.
    Next,
}

/// Returns one human sentence for a reason; `entry` is the named entry's
/// content and status, when known.
pub fn describe_reason(reason: &Reason, entry: Option<(&str, Status)>, run: Run) -> String {
    let shown = |key: &str| match entry {
        Some((content, _)) => format!("entry {key} (\"{content}\")"),
        None => format!("entry {key}"),
    };
    match reason {
        Reason::WaitingForAge { until } => {
            format!("waiting for age: it can be promoted from {}", until.as_str())
        }
        Reason::NotStableKind { kind } => {
            format!("not a stable kind: {kind} facts stay in the recent log")
        }
        Reason::AlreadyEvidence { entry_key, revision, status } => {
            if *status == Status::Contested {
                format!(
                    "evidence of {} revision {revision}, a value a merge put under review \
                     (contested): a person chooses between the values in dispute",
                    shown(entry_key)
                )
            } else {
                format!(
                    "promoted into {} revision {revision} ({})",
                    shown(entry_key),
                    status.as_str()
                )
            }
        }
        Reason::BelowThresholds { importance, minimum_importance, facts, repeat_threshold } => {
            format!(
                "below the thresholds: importance {importance} < {minimum_importance} and {facts} fact(s) < {repeat_threshold}"
            )
        }
        Reason::Promoted { entry_key, revision } => match run {
            Run::Written => format!("promoted into {} revision {revision}", shown(entry_key)),
            Run::Dry => format!(
                "would be promoted into {} revision {revision} (a dry run wrote nothing)",
                shown(entry_key)
            ),
            Run::Next => {
                format!(
                    "promoted into {} revision {revision} by the next distill",
                    shown(entry_key)
                )
            }
        },
        Reason::Reinforced { entry_key, revision } => {
            format!(
                "reinforcing the active value: more evidence for {} revision {revision}",
                shown(entry_key)
            )
        }
        // A domain whose decided value was retracted whole: the bar is
        // still the newest fact the person saw of the value they chose.
        Reason::Stale { entry_key, active_last_seen }
            if entry.is_some_and(|(_, status)| status == Status::Retracted) =>
        {
            format!(
                "stale: not newer than the value a decision chose, {} (retracted; last seen {} when \
                 decided), so it cannot take its place",
                shown(entry_key),
                active_last_seen.as_str()
            )
        }
        Reason::Stale { entry_key, active_last_seen } => format!(
            "stale: not newer than the active value {} (last seen {}), so it cannot replace it",
            shown(entry_key),
            active_last_seen.as_str()
        ),
        Reason::NeedsMoreEvidence { entry_key, facts, supersession_repeat_threshold } => format!(
            "needs more evidence: {facts} fact(s), replacing the active {} takes {supersession_repeat_threshold} \
             (counted before recency is checked)",
            shown(entry_key)
        ),
        Reason::LostToStrongerProposal { conflict_id } => {
            format!(
                "losing to a stronger proposal: the stronger values are tied in conflict case {conflict_id}"
            )
        }
        Reason::Tied { conflict_id } => {
            format!(
                "tied with an equally strong value: conflict case {conflict_id} awaits a human decision"
            )
        }
        Reason::UnderReview { conflict_id: Some(conflict_id) } => format!(
            "under review: each side of a merge had its own value of this key accepted; \
             conflict case {conflict_id} awaits a human decision"
        ),
        Reason::UnderReview { conflict_id: None } => "under review: each side of a merge had its \
             own value of this key accepted; its case opens once the values in dispute can be \
             compared"
            .to_owned(),
        Reason::RejectedByAdjudication { conflict_id, event_id } => format!(
            "rejected by adjudication {event_id} of conflict case {conflict_id}; it needs new evidence to return"
        ),
        Reason::Retracted { event_ids } => format!(
            "retracted by {}: it counts as not recorded (`workmem history` shows the record)",
            event_ids.join(", ")
        ),
    }
}
