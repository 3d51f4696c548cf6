//! `workmem facts`: lists facts of one UTC day (default today), all facts,
//! or the most recent ones, optionally only those of one memory key.

use clap::Args;
use workmem::Fact;

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem facts`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem facts
  workmem facts --day 2026-01-05
  workmem facts --all --key runtime.python-version
  workmem facts --recent 20 --json")]
pub struct FactsArgs {
    /// List the facts recorded on this UTC day (YYYY-MM-DD) [default: today]
    #[arg(long, value_name = "DATE", conflicts_with_all = ["all", "recent"])]
    pub day: Option<String>,
    /// List every fact, oldest first
    #[arg(long, conflicts_with = "recent")]
    pub all: bool,
    /// List the N most recent facts, oldest of them first
    #[arg(long, value_name = "N")]
    pub recent: Option<usize>,
    /// Only facts with this memory key
    #[arg(long, value_name = "K")]
    pub key: Option<String>,
}

/// Runs `workmem facts`.
///
/// Errors: invalid `--day` or `--key` (exit 2); corruption, scope and I/O
/// errors of the logs.
pub fn run(ctx: &Ctx, args: &FactsArgs) -> Result<(), CommandError> {
    let key = args.key.as_deref().map(workmem::clean_memory_key).transpose()?;
    let day = args.day.as_deref().map(check_day).transpose()?;
    let ws = ctx.workspace()?;
    let mut facts = if args.all {
        ws.facts()?
    } else if let Some(n) = args.recent {
        ws.recent_facts(n)?
    } else {
        let day = day.unwrap_or_else(|| ws.now().utc_day());
        ws.facts_on(&day)?
    };
    if let Some(key) = &key {
        facts.retain(|fact| fact.memory_key() == Some(key.as_str()));
    }
    if ctx.ui.is_json() {
        return ctx.ui.json(&facts);
    }
    if facts.is_empty() {
        ctx.ui.status("no facts");
    }
    for fact in &facts {
        ctx.ui.line(describe(fact))?;
    }
    Ok(())
}

/// Returns `text` if it is a real calendar date written `YYYY-MM-DD`.
///
/// Errors: invalid input naming `--day`.
fn check_day(text: &str) -> Result<String, CommandError> {
    let parsed = text
        .parse::<jiff::civil::Date>()
        .ok()
        .filter(|date| date.strftime("%Y-%m-%d").to_string() == text);
    match parsed {
        Some(_) => Ok(text.to_owned()),
        None => Err(CommandError::invalid(
            "--day",
            "is not a date written YYYY-MM-DD (a real calendar date)",
        )),
    }
}

/// Returns the one-line human form of a fact.
pub fn describe(fact: &Fact) -> String {
    let key = fact.memory_key().map(|k| format!(" {k}:")).unwrap_or_default();
    format!(
        "{}  {:<10} {}{key} {}  ({})",
        fact.recorded_at().as_str(),
        fact.kind().as_str(),
        fact.importance(),
        fact.content(),
        fact.fact_id()
    )
}
