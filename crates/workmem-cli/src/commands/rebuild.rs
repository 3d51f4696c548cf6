//! `workmem rebuild`: derives curated.json and conflicts.json again from
//! the daily logs and the audit stream, re-applying every human decision
//! (docs/trust.md). The way out when a derived file is missing, was
//! deleted by a branch, or fails its check.

use clap::Args;
use workmem::{DistillOptions, Rebuilt};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::policy::{PolicyArgs, parse_as_of};

/// Arguments of `workmem rebuild`.
#[derive(Debug, Default, Args)]
#[command(after_help = "Examples:
  workmem rebuild
  workmem rebuild --as-of 2026-03-01T00:00:00Z --json
  workmem rebuild --min-age-days 0

The policy runs as of each decision's time before the decision is applied
again, then once more as of --as-of; pass the flags your distills use. A
decision that matches no case is listed as set aside: it stays in the audit
stream, and `workmem adjudications` shows it.")]
pub struct RebuildArgs {
    /// Run the policy's last pass as of this RFC 3339 instant [default: now]
    #[arg(long, value_name = "T")]
    pub as_of: Option<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Runs `workmem rebuild`.
///
/// Errors: invalid `--as-of` or policy value (exit 2); corruption of the
/// logs or the audit stream, scope and I/O errors.
pub fn run(ctx: &Ctx, args: &RebuildArgs) -> Result<(), CommandError> {
    let as_of = parse_as_of(args.as_of.as_deref())?;
    let ws = ctx.workspace()?;
    let policy = args.policy.apply(&ws.config().policy);
    let mut options = DistillOptions::new().policy(policy);
    if let Some(as_of) = as_of {
        options = options.as_of(as_of);
    }
    let rebuilt = ws.rebuild(&options)?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&rebuilt);
    }
    print_text(ctx, &rebuilt)
}

fn print_text(ctx: &Ctx, rebuilt: &Rebuilt) -> Result<(), CommandError> {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    ctx.ui.line(format!(
        "rebuilt: {}, {}; {} re-applied, {} already held by the policy, {} set aside",
        plural(rebuilt.entries, "entry", "entries"),
        plural(rebuilt.cases, "conflict case", "conflict cases"),
        plural(rebuilt.decisions_applied.len(), "decision", "decisions"),
        rebuilt.decisions_held.len(),
        rebuilt.decisions_set_aside.len(),
    ))?;
    for aside in &rebuilt.decisions_set_aside {
        ctx.ui.line(format!(
            "  set aside: decision {} by {} (case {}, candidate {}): {}",
            aside.event_id,
            aside.actor,
            aside.conflict_id,
            aside.selected_candidate_id,
            aside.reason
        ))?;
    }
    Ok(())
}
