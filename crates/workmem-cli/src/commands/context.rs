//! `workmem context`: prints the bounded agent context (docs/policy.md):
//! the curated memory, the most recent unkeyed facts and the most recent
//! keyed facts the policy has not accepted yet.
//!
//! With `--hook` it prints that context as the JSON a client's
//! session-start hook returns (Claude Code, Codex, Gemini CLI read
//! `hookSpecificOutput.additionalContext`), opening the memory read-only
//! (no recovery, no lock to wait for), and never fails: a missing, locked
//! or damaged memory, or any error, gives a one-line notice and exit 0, so
//! a broken memory never stops a session from starting.

use std::panic::AssertUnwindSafe;

use clap::Args;
use workmem::{Config, ContextOptions};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::{ContextOutput, HookContext, HookOutput};

/// Arguments of `workmem context`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem context
  workmem context --recent 10
  workmem context --pending 0   # without the pending keyed facts
  workmem context --query \"connection pool\"   # entries about it first
  workmem context --json   # {\"context\": \"...\"}
  workmem context --hook   # for a session-start hook (what `workmem setup` writes)")]
pub struct ContextArgs {
    /// How many recent unkeyed facts to include [default: 6]
    #[arg(long, value_name = "N", value_parser = crate::usage::count_up_to(1000))]
    pub recent: Option<u16>,
    /// How many pending keyed facts (written with a memory key, not yet
    /// accepted into the memory by distill) to include; 0 leaves the part
    /// out [default: 6]
    #[arg(
        long,
        value_name = "N",
        value_parser = crate::usage::count_up_to(*Config::PENDING_FACTS.end())
    )]
    pub pending: Option<u16>,
    /// Print the context as a session-start hook's JSON, at most 10,000
    /// characters; always exit 0 (a notice instead of an error)
    #[arg(long)]
    pub hook: bool,
    /// The task at hand: when not every curated entry fits, the entries
    /// relevant to it come first (search syntax, at most 1,000 characters)
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,
}

/// The most a hook hands the client: Claude Code replaces longer hook
/// output with a preview the model cannot use.
const HOOK_BUDGET: usize = 10_000;

/// Runs `workmem context`.
///
/// Errors: corruption and scope errors, I/O errors.
pub fn run(ctx: &Ctx, args: &ContextArgs) -> Result<(), CommandError> {
    if args.hook {
        hook(ctx, args);
        return Ok(());
    }
    let mut options = ContextOptions::new();
    options.recent = args.recent.map(usize::from);
    options.pending = args.pending.map(usize::from);
    options.query.clone_from(&args.query);
    let context = ctx.workspace()?.context_with(&options)?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&ContextOutput { context: &context });
    }
    ctx.ui.line(context.trim_end())
}

/// Prints the context for a session-start hook; never fails.
fn hook(ctx: &Ctx, args: &ContextArgs) {
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| hook_context(ctx, args)));
    let (context, notice) = match outcome {
        Ok(Ok(Some(context))) => (context, None),
        Ok(Ok(None)) => (
            "workmem: this project has no memory yet; facts written with `write_memory` start it."
                .to_owned(),
            None,
        ),
        Ok(Err(err)) => {
            let reason = err.message().lines().next().unwrap_or("unknown error").to_owned();
            let notice = format!(
                "workmem: project memory not loaded ({reason}); run `workmem verify` in the project"
            );
            (notice.clone(), Some(notice))
        }
        Err(_) => {
            let notice =
                "workmem: project memory not loaded (internal error); run `workmem verify` \
                          in the project"
                    .to_owned();
            (notice.clone(), Some(notice))
        }
    };
    let output = HookOutput {
        system_message: notice,
        hook_specific_output: HookContext {
            hook_event_name: "SessionStart",
            additional_context: context,
        },
    };
    // The session goes on whatever happens to this output.
    let _ = ctx.ui.json(&output);
}

/// Returns the context for a hook, `None` when there is no memory here.
fn hook_context(ctx: &Ctx, args: &ContextArgs) -> Result<Option<String>, CommandError> {
    if !ctx.found {
        return Ok(None);
    }
    let memory_dir =
        ctx.memory_dir.clone().unwrap_or_else(|| workmem::default_memory_dir(&ctx.project));
    if !memory_dir.is_dir() {
        return Ok(None);
    }
    let ws = ctx.builder_in_project()?.open_read_only()?;
    let budget = match ws.config().context_budget {
        0 => HOOK_BUDGET,
        n => n.min(HOOK_BUDGET),
    };
    let mut options = ContextOptions::new().budget(budget);
    options.recent = args.recent.map(usize::from);
    options.pending = args.pending.map(usize::from);
    Ok(Some(ws.context_with(&options)?))
}
