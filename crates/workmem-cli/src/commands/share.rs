//! `workmem share`: pins the workspace id and prepares the git repository
//! for sharing the memory (docs/sharing.md): `.workmem/workspace.toml`,
//! `.workmem/.gitignore`, `.workmem/.gitattributes`, and workmem's merge
//! driver in the clone's git configuration.

use clap::Args;
use serde::Serialize;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::git;

/// Arguments of `workmem share`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem share && git add .workmem && git commit -m 'share project memory'
  workmem share --json   # {\"workspace_id\", \"files\": [...], \"merge_driver\"}

Run it once in the repository; in a fresh clone it configures the merge
driver again (any command does that when it finds the attributes).")]
pub struct ShareArgs {}

#[derive(Serialize)]
struct ShareOutput<'a> {
    workspace_id: &'a str,
    /// Files written or updated.
    files: Vec<String>,
    /// The driver command configured in the clone.
    merge_driver: String,
    /// Memory files that are never committed and that git tracked: removed
    /// from git's index, kept on disk.
    untracked: Vec<String>,
}

/// Runs `workmem share`.
///
/// Errors: usage error outside a git work tree; scope errors of a memory
/// written at another path; library and git errors.
pub fn run(ctx: &Ctx, _args: &ShareArgs) -> Result<(), CommandError> {
    let ws = ctx.workspace()?;
    let Some(top) = git::toplevel(ws.project()) else {
        return Err(CommandError::usage(format!(
            "{} is not inside a git work tree",
            ws.project().display()
        ))
        .hinted(
            "sharing memory goes through git: run `git init` (or clone the repository) first",
        ));
    };
    let shared = ws.share()?;
    let merge_driver = git::configure_driver(&top)?;
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let untracked: Vec<String> = git::untrack(&top, &shared.not_committed)?
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let files: Vec<String> = shared.files.iter().map(|f| f.display().to_string()).collect();
    if ctx.ui.is_json() {
        return ctx.ui.json(&ShareOutput {
            workspace_id: &shared.workspace_id,
            files,
            merge_driver,
            untracked,
        });
    }
    ctx.ui.line(format_args!("workspace {} is pinned", shared.workspace_id))?;
    for file in &files {
        ctx.ui.line(format_args!("wrote     {file}"))?;
    }
    if files.is_empty() {
        ctx.ui.line("files     already in place")?;
    }
    for file in &untracked {
        ctx.ui.line(format_args!("untracked {file} (never committed; kept on disk)"))?;
    }
    ctx.ui.line(format_args!("driver    merge.workmem.driver = {merge_driver}"))?;
    if !ctx.ui.is_quiet() {
        ctx.ui.line("next      git add .workmem && git commit -m 'share project memory'")?;
    }
    Ok(())
}
