//! `workmem explain`: where a fact, or every fact of a memory key, stands
//! under the policy and why. The reasons come from a dry-run distill that
//! records its decisions, the same code that promotes facts.

use clap::Args;
use workmem::FactExplanation;
use workmem::{Reason, Status};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::distill::PolicyArgs;

/// Arguments of `workmem explain`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem explain 4f1c2a9e0b7d4c3e8a6f5b2d1c0e9f8a
  workmem explain --key runtime.python-version
  workmem explain --key db.engine --as-of 2026-03-01T00:00:00Z --json")]
pub struct ExplainArgs {
    /// The fact to explain
    #[arg(required_unless_present = "key", conflicts_with = "key")]
    pub fact_id: Option<String>,
    /// Explain every fact of this memory key instead
    #[arg(long = "key", value_name = "MEMORY_KEY")]
    pub key: Option<String>,
    /// Evaluate the policy as of this RFC 3339 instant [default: now]
    #[arg(long, value_name = "T")]
    pub as_of: Option<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Runs `workmem explain`.
///
/// Errors: exit 2 for an unknown fact, a malformed key or a bad flag;
/// read errors of the workspace.
pub fn run(ctx: &Ctx, args: &ExplainArgs) -> Result<(), CommandError> {
    let as_of = crate::commands::distill::parse_as_of(args.as_of.as_deref())?;
    let ws = ctx.workspace()?;
    let policy = args.policy.apply(&ws.config().policy);
    let as_of = as_of.unwrap_or_else(|| ws.now());
    if let Some(key) = &args.key {
        let explained = ws.explain_key(key, &policy, Some(as_of))?;
        if ctx.ui.is_json() {
            return ctx.ui.json(&explained);
        }
        match &explained.active {
            Some(entry) => ctx.ui.line(format!(
                "{}: active value \"{}\" (entry {}, revision {})",
                explained.memory_key, entry.content, entry.key, entry.revision
            ))?,
            None => ctx.ui.line(format!("{}: no active value", explained.memory_key))?,
        }
        if explained.facts.is_empty() {
            ctx.ui.status(format!("no facts with memory_key {}", explained.memory_key));
        }
        for item in &explained.facts {
            ctx.ui.line(format!(
                "  {}  \"{}\": {}",
                item.fact.fact_id(),
                item.fact.content(),
                describe(item)
            ))?;
        }
        return Ok(());
    }
    let fact_id = args.fact_id.as_deref().unwrap_or_default();
    crate::commands::resolve::refuse_placeholder(
        "fact_id",
        fact_id,
        "a fact id (`workmem facts` lists them, `workmem remember -q` prints the new one)",
    )?;
    let explained = ws.explain_fact(fact_id, &policy, Some(as_of.clone()))?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&explained);
    }
    ctx.ui.line(format!(
        "{} [{}] \"{}\"",
        explained.fact.fact_id(),
        explained.fact.kind(),
        explained.fact.content()
    ))?;
    ctx.ui.line(format!("as of {}: {}", as_of.as_str(), describe(&explained)))
}

/// Returns one human sentence for an explanation.
pub fn describe(item: &FactExplanation) -> String {
    describe_reason(
        &item.reason,
        item.entry.as_ref().map(|e| (e.content.as_str(), e.status)),
        Run::Next,
    )
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
    }
}
