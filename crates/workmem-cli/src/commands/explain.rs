//! `workmem explain`: where a fact, or every fact of a memory key, stands
//! under the policy and why. The reasons come from a dry-run distill that
//! records its decisions, the same code that promotes facts.

use clap::Args;
use workmem::FactExplanation;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::policy::{PolicyArgs, Run, describe_reason, parse_as_of};

/// Arguments of `workmem explain`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem explain 4f1c2a9e0b7d4c3e8a6f5b2d1c0e9f8a
  workmem explain --key runtime.python-version
  workmem explain --key db.engine --as-of 2026-03-01T00:00:00Z --json")]
pub struct ExplainArgs {
    /// The fact to explain
    #[arg(required_unless_present = "key", conflicts_with = "key")]
    pub fact_id: Option<String>,
    /// Explain every fact of this memory key instead
    #[arg(long = "key", value_name = "MEMORY_KEY")]
    pub key: Option<String>,
    /// Evaluate the policy as of this RFC 3339 instant [default: now]
    #[arg(long, value_name = "T")]
    pub as_of: Option<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// Runs `workmem explain`.
///
/// Errors: exit 2 for an unknown fact, a malformed key or a bad flag;
/// read errors of the workspace.
pub fn run(ctx: &Ctx, args: &ExplainArgs) -> Result<(), CommandError> {
    let as_of = parse_as_of(args.as_of.as_deref())?;
    let ws = ctx.workspace()?;
    let policy = args.policy.apply(&ws.config().policy);
    let as_of = as_of.unwrap_or_else(|| ws.now());
    if let Some(key) = &args.key {
        let explained = ws.explain_key(key, &policy, Some(as_of))?;
        if ctx.ui.is_json() {
            return ctx.ui.json(&explained);
        }
        match &explained.active {
            Some(entry) => ctx.ui.line(format!(
                "{}: active value \"{}\" (entry {}, revision {})",
                explained.memory_key, entry.content, entry.key, entry.revision
            ))?,
            None => ctx.ui.line(format!("{}: no active value", explained.memory_key))?,
        }
        if explained.facts.is_empty() {
            ctx.ui.status(format!("no facts with memory_key {}", explained.memory_key));
        }
        for item in &explained.facts {
            ctx.ui.line(format!(
                "  {}  \"{}\": {}",
                item.fact.fact_id(),
                item.fact.content(),
                describe(item)
            ))?;
        }
        return Ok(());
    }
    let fact_id = args.fact_id.as_deref().unwrap_or_default();
    crate::commands::resolve::refuse_placeholder(
        "fact_id",
        fact_id,
        "a fact id (`workmem facts` lists them, `workmem remember -q` prints the new one)",
    )?;
    let explained = ws.explain_fact(fact_id, &policy, Some(as_of.clone()))?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&explained);
    }
    ctx.ui.line(format!(
        "{} [{}] \"{}\"",
        explained.fact.fact_id(),
        explained.fact.kind(),
        explained.fact.content()
    ))?;
    ctx.ui.line(format!("as of {}: {}", as_of.as_str(), describe(&explained)))
}

/// Returns one human sentence for an explanation.
pub fn describe(item: &FactExplanation) -> String {
    describe_reason(
        &item.reason,
        item.entry.as_ref().map(|e| (e.content.as_str(), e.status)),
        Run::Next,
    )
}
