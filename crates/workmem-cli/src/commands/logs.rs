//! `workmem logs`: one line per daily log file with its fact count.

use clap::Args;

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem logs`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem logs
  workmem logs --json   # [{\"day\": \"2026-01-01\", \"facts\": 3}, ...]")]
pub struct LogsArgs {}

/// Runs `workmem logs`.
///
/// Errors: corruption and scope errors of the logs, I/O errors.
pub fn run(ctx: &Ctx, _args: &LogsArgs) -> Result<(), CommandError> {
    let days = ctx.workspace()?.log_days()?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&days);
    }
    if days.is_empty() {
        ctx.ui.status("no daily logs yet");
    }
    for day in &days {
        let noun = if day.facts == 1 { "fact" } else { "facts" };
        ctx.ui.line(format_args!("{}  {} {noun}", day.day, day.facts))?;
    }
    Ok(())
}
