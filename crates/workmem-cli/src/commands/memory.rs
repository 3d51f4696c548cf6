//! `workmem memory`: prints MEMORY.md, rebuilding it from curated.json
//! first when it is stale (the library does the repair).

use clap::Args;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::MemoryOutput;

/// Arguments of `workmem memory`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem memory
  workmem memory --json   # {\"memory\": \"# Workspace Memory\\n...\"}")]
pub struct MemoryArgs {}

/// Runs `workmem memory`.
///
/// Errors: corruption and scope errors of curated.json, I/O errors.
pub fn run(ctx: &Ctx, _args: &MemoryArgs) -> Result<(), CommandError> {
    let ws = ctx.workspace()?;
    let memory = ws.memory()?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&MemoryOutput { memory: &memory });
    }
    if memory.is_empty() {
        let why = crate::commands::status::day_one(&ws)?;
        ctx.ui.status(why.unwrap_or_else(|| "no curated memory yet".to_owned()));
        return Ok(());
    }
    ctx.ui.text(&memory)
}
