//! `workmem adjudications`: the append-only audit stream of human
//! decisions, each marked when it is set aside (it does not close its
//! case, as after a merge of two clones that decided one case).

use clap::Args;
use serde::Serialize;
use workmem::Adjudication;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::conflicts::is_set_aside;

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
    let ws = ctx.workspace()?;
    let events = ws.adjudications()?;
    let queue = ws.conflicts()?;
    let listed: Vec<Listed<'_>> = events
        .iter()
        .map(|record| Listed { record, set_aside: is_set_aside(&queue, record) })
        .collect();
    if ctx.ui.is_json() {
        return ctx.ui.json(&listed);
    }
    if events.is_empty() {
        ctx.ui.status("no adjudications");
    }
    for Listed { record: event, set_aside } in listed {
        ctx.ui.line(format!(
            "{}  {}  {} chose {} for {} (revision {}): {}{}",
            event.resolved_at,
            event.event_id,
            event.actor,
            event.selected_candidate_id,
            event.conflict_id,
            event.case_revision,
            event.rationale,
            if set_aside { "  [set aside: it does not close its case]" } else { "" }
        ))?;
    }
    Ok(())
}

/// A record of `adjudications --json`: the audit record plus whether it
/// is set aside (it does not close its case: a merge kept two decisions
/// of one case).
#[derive(Debug, Serialize)]
struct Listed<'a> {
    #[serde(flatten)]
    record: &'a Adjudication,
    set_aside: bool,
}
