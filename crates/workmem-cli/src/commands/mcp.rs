//! `workmem mcp`: serves the workspace to MCP clients over stdio (SPEC
//! section 9) until the client closes stdin.
//!
//! stdout belongs to the protocol: this command writes nothing there
//! itself, and its one status line goes to stderr. `--json` has no effect.

use clap::Args;

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem mcp`.
#[derive(Debug, Args)]
#[command(after_help = "Tools: write_memory, get_context, list_recent_facts, list_conflicts.
Resources: workmem://memory (MEMORY.md), workmem://context (the agent context).
No tool resolves a conflict, distills or deletes anything.

Examples:
  workmem -C /path/to/project mcp
  claude mcp add workmem -- workmem -C /path/to/project mcp")]
pub struct McpArgs {}

/// Runs `workmem mcp`.
///
/// Errors: corruption and scope errors found when opening the workspace,
/// I/O errors, a broken MCP handshake.
pub fn run(ctx: &Ctx, _args: &McpArgs) -> Result<(), CommandError> {
    let workspace = ctx.workspace()?;
    ctx.ui.status(format!(
        "workmem mcp: serving {} on stdio (memory in {}); close stdin to stop",
        workspace.project().display(),
        workspace.memory_dir().display()
    ));
    workmem_mcp::serve_stdio(workspace)
        .map_err(|err| CommandError::io("MCP server", &std::io::Error::other(err.to_string())))
}
