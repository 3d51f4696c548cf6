//! `workmem adjudications`: the append-only audit stream of human
//! decisions.

use clap::Args;

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem adjudications`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem adjudications
  workmem adjudications --json | jq '.[] | {event_id, actor, rationale}'")]
pub struct AdjudicationsArgs {}

/// Runs `workmem adjudications`.
///
/// Errors: corruption and scope errors of the audit stream, I/O errors.
pub fn run(ctx: &Ctx, _args: &AdjudicationsArgs) -> Result<(), CommandError> {
    let events = ctx.workspace()?.adjudications()?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&events);
    }
    if events.is_empty() {
        ctx.ui.status("no adjudications");
    }
    for event in events {
        ctx.ui.line(format!(
            "{}  {}  {} chose {} for {} (revision {}): {}",
            event.resolved_at,
            event.event_id,
            event.actor,
            event.selected_candidate_id,
            event.conflict_id,
            event.case_revision,
            event.rationale
        ))?;
    }
    Ok(())
}
