//! `workmem resolve`: a human decides a conflict case (docs/policy.md).
//! This is the trusted entry point; no model tool can reach it.

use clap::Args;
use workmem::{Resolution, Stamp};

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem resolve`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem conflicts
  workmem resolve conflict-1a2b3c4d5e6f7a8b candidate-0f1e2d3c4b5a6978 --revision 1 \\
      --event-id review:db-engine:1 --rationale 'Production needs PostGIS'

Retrying the same command is safe: the same event id with the same decision
returns the stored adjudication and writes nothing.")]
pub struct ResolveArgs {
    /// The conflict case, as listed by `workmem conflicts`
    pub conflict_id: String,
    /// The chosen candidate of that case
    pub candidate_id: String,
    /// The case revision you reviewed (stale reviews are refused)
    #[arg(long, allow_negative_numbers = true)]
    pub revision: i64,
    /// An id for this decision, unique per decision (makes retries safe)
    #[arg(long)]
    pub event_id: String,
    /// Who decides [default: the OS user]
    #[arg(long)]
    pub actor: Option<String>,
    /// Why this value is right
    #[arg(long)]
    pub rationale: Option<String>,
    /// When the decision was made (RFC 3339) [default: now]
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
}

/// Runs `workmem resolve`.
///
/// Errors: exit 2 for malformed input, 3 for a stale review, 6 for an unknown
/// case or candidate or a reused event id, 4 for corrupt state.
pub fn run(ctx: &Ctx, args: &ResolveArgs) -> Result<(), CommandError> {
    let Some(rationale) = args.rationale.clone() else {
        return Err(CommandError::invalid("rationale", "is required")
            .hinted("add --rationale 'why this value is right'"));
    };
    let resolved_at = match &args.at {
        None => None,
        Some(text) => {
            Some(Stamp::parse_normalized(text).map_err(|msg| CommandError::invalid("at", msg))?)
        }
    };
    let actor = args.actor.clone().unwrap_or_else(os_user);
    let ws = ctx.workspace()?;
    let event = ws.resolve(Resolution {
        conflict_id: args.conflict_id.clone(),
        candidate_id: args.candidate_id.clone(),
        expected_revision: args.revision,
        actor,
        rationale,
        event_id: args.event_id.clone(),
        resolved_at,
    })?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&event);
    }
    let kept =
        event.prior_active_entry_key.as_deref() == Some(event.resulting_active_entry_key.as_str());
    ctx.ui.line(format!(
        "resolved {} (revision {}) with {}: {}",
        event.conflict_id,
        event.case_revision,
        event.selected_candidate_id,
        if kept {
            "kept the current value".to_owned()
        } else {
            format!("new active entry {}", event.resulting_active_entry_key)
        }
    ))?;
    ctx.ui.status(format!("recorded as event {} by {}", event.event_id, event.actor));
    Ok(())
}

fn os_user() -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}
