//! `workmem adopt`: takes over a memory directory written at another path
//! (a moved, copied or re-mounted project) by pinning the one workspace id
//! its records carry (docs/sharing.md).

use clap::Args;
use serde::Serialize;

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem adopt`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  mv ~/src/app ~/work/app && cd ~/work/app
  workmem adopt          # pins the id every record carries, then verify
  workmem adopt --json   # {\"workspace_id\", \"previous_path_id\", \"pinned_now\"}

It refuses a memory whose records carry several ids, and writes nothing but
.workmem/workspace.toml.")]
pub struct AdoptArgs {}

#[derive(Serialize)]
struct AdoptOutput<'a> {
    workspace_id: &'a str,
    previous_path_id: &'a str,
    pinned_now: bool,
}

/// Runs `workmem adopt`.
///
/// Errors: scope error for a memory holding several ids; invalid input for
/// an empty memory directory; library errors.
pub fn run(ctx: &Ctx, _args: &AdoptArgs) -> Result<(), CommandError> {
    let (ws, adopted) = ctx.builder_in_project()?.adopt()?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&AdoptOutput {
            workspace_id: &adopted.workspace_id,
            previous_path_id: &adopted.previous_path_id,
            pinned_now: adopted.pinned_now,
        });
    }
    if adopted.pinned_now {
        ctx.ui.line(format_args!(
            "adopted workspace {} (this path alone would be {}); pinned in .workmem/workspace.toml",
            adopted.workspace_id, adopted.previous_path_id
        ))?;
    } else {
        ctx.ui.line(format_args!(
            "workspace {} is already pinned and every record carries it",
            adopted.workspace_id
        ))?;
    }
    ctx.ui.status(format_args!(
        "memory dir {}; check it with `workmem verify`",
        ws.memory_dir().display()
    ));
    Ok(())
}
