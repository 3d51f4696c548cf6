//! `workmem init`: creates the memory directory (and `daily/`) and prints
//! where it is and the workspace id. Safe to run again: it then says the
//! workspace already existed.

use clap::Args;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::InitOutput;

/// Arguments of `workmem init`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem init
  workmem -C ~/src/app init --json
  WORKMEM_MEMORY_DIR=/tmp/mem workmem init")]
pub struct InitArgs {}

/// Runs `workmem init`.
///
/// Errors: library I/O errors.
pub fn run(ctx: &Ctx, _args: &InitArgs) -> Result<(), CommandError> {
    let ws = ctx.open_workspace()?;
    let existed = ws.is_initialized();
    ws.init()?;
    let out = InitOutput {
        project: ws.project(),
        memory_dir: ws.memory_dir(),
        workspace_id: ws.workspace_id(),
    };
    if ctx.ui.is_json() {
        return ctx.ui.json(&out);
    }
    if ctx.ui.is_quiet() {
        return ctx.ui.line(out.memory_dir.display());
    }
    if existed {
        ctx.ui.status("the workspace already existed: nothing changed");
    }
    ctx.ui.line(format_args!("workspace {}", out.workspace_id))?;
    ctx.ui.line(format_args!("project     {}", out.project.display()))?;
    ctx.ui.line(format_args!("memory dir  {}", out.memory_dir.display()))
}
