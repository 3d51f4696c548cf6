//! `workmem context`: prints the bounded agent context (docs/policy.md):
//! the curated memory, the most recent unkeyed facts and the most recent
//! keyed facts the policy has not accepted yet.

use clap::Args;
use workmem::{Config, ContextOptions};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::ContextOutput;

/// Arguments of `workmem context`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem context
  workmem context --recent 10
  workmem context --pending 0   # without the pending keyed facts
  workmem context --json   # {\"context\": \"...\"}")]
pub struct ContextArgs {
    /// How many recent unkeyed facts to include [default: 6]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=1000))]
    pub recent: Option<u16>,
    /// How many pending keyed facts (written with a memory key, not yet
    /// accepted into the memory by distill) to include; 0 leaves the part
    /// out [default: 6]
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(0..=*Config::PENDING_FACTS.end() as i64)
    )]
    pub pending: Option<u16>,
}

/// Runs `workmem context`.
///
/// Errors: corruption and scope errors, I/O errors.
pub fn run(ctx: &Ctx, args: &ContextArgs) -> Result<(), CommandError> {
    let mut options = ContextOptions::new();
    options.recent = args.recent.map(usize::from);
    options.pending = args.pending.map(usize::from);
    let context = ctx.workspace()?.context_with(&options)?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&ContextOutput { context: &context });
    }
    ctx.ui.line(context.trim_end())
}
