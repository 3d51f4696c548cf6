//! `workmem mcp`: serves the workspace to MCP clients over stdio (see
//! docs/mcp.md) until the client closes stdin.
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
/// A project it cannot serve (outside a project, a refused directory,
/// state it cannot open) is still served: the handshake completes and
/// every call is answered with the error and its hints, so that the client
/// shows them rather than a closed connection; the command then ends with
/// that error once the client leaves.
///
/// Errors: corruption and scope errors found when opening the workspace,
/// I/O errors, a broken MCP handshake.
pub fn run(ctx: &Ctx, _args: &McpArgs) -> Result<(), CommandError> {
    let workspace = match refuse_implicit_root_or_home(ctx).and_then(|()| ctx.workspace()) {
        Ok(workspace) => workspace,
        Err(err) => {
            ctx.ui.status(format!(
                "workmem mcp: cannot serve this project; answering every call with the error \
                 until the client closes stdin:\n{}",
                err.to_text()
            ));
            workmem_mcp::serve_stdio_unavailable(format!(
                "workmem cannot serve this project's memory.\n{}\nhint: once it is fixed, restart \
                 this MCP server from the client (e.g. /mcp in Claude Code)",
                err.to_text()
            ))
            .map_err(|serve| {
                CommandError::io("MCP server", &std::io::Error::other(serve.to_string()))
            })?;
            return Err(err);
        }
    };
    ctx.ui.status(format!(
        "workmem mcp: serving {} on stdio (memory in {}); close stdin to stop",
        workspace.project().display(),
        workspace.memory_dir().display()
    ));
    workmem_mcp::serve_stdio(workspace)
        .map_err(|err| CommandError::io("MCP server", &std::io::Error::other(err.to_string())))
}

/// Refuses to serve `/` or the home directory unless it was named with
/// `-C` or a memory directory was named: an MCP client started from the
/// wrong directory must not hand a model the whole disk's or the user's
/// memory.
fn refuse_implicit_root_or_home(ctx: &Ctx) -> Result<(), CommandError> {
    if ctx.explicit || ctx.memory_dir.is_some() {
        return Ok(());
    }
    let project = std::fs::canonicalize(&ctx.project).unwrap_or_else(|_| ctx.project.clone());
    let home = std::env::var_os("HOME").and_then(|home| std::fs::canonicalize(home).ok());
    if project.parent().is_none() || home.as_deref() == Some(project.as_path()) {
        return Err(CommandError::usage(format!(
            "refusing to serve {} without -C: it is the root or the home directory",
            project.display()
        ))
        .hinted("start the server in the project, or name it: workmem -C /path/to/project mcp"));
    }
    Ok(())
}
