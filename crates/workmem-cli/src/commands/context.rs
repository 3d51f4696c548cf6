//! `workmem context`: prints the bounded agent context (docs/policy.md):
//! the curated memory plus the most recent unkeyed facts.

use clap::Args;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::ContextOutput;

/// Arguments of `workmem context`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem context
  workmem context --recent 10
  workmem context --json   # {\"context\": \"...\"}")]
pub struct ContextArgs {
    /// How many recent unkeyed facts to include [default: 6]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=1000))]
    pub recent: Option<u16>,
}

/// Runs `workmem context`.
///
/// Errors: corruption and scope errors, I/O errors.
pub fn run(ctx: &Ctx, args: &ContextArgs) -> Result<(), CommandError> {
    let context = ctx.workspace()?.context(args.recent.map(usize::from))?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&ContextOutput { context: &context });
    }
    ctx.ui.line(context.trim_end())
}
