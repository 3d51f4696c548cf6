//! `workmem facts`: lists facts of one UTC day (default today), all facts,
//! or the most recent ones, optionally only those of one memory key. A
//! retracted fact counts as not recorded: only `--all` lists it, marked
//! with the corrections that retract it.

use clap::Args;
use workmem::Fact;

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem facts`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem facts
  workmem facts --day 2026-01-05
  workmem facts --all --key runtime.python-version   # retracted facts too, marked
  workmem facts --recent 20 --json")]
pub struct FactsArgs {
    /// List the facts recorded on this UTC day (YYYY-MM-DD) [default: today]
    #[arg(long, value_name = "DATE", conflicts_with_all = ["all", "recent"])]
    pub day: Option<String>,
    /// List every fact, oldest first, retracted ones included (marked)
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
    let retractions = ws.retractions()?;
    if !args.all {
        facts.retain(|fact| !retractions.is_retracted(fact.fact_id()));
    }
    let retracted_by =
        |fact: &Fact| retractions.retracted_by(fact.fact_id()).collect::<Vec<&str>>();
    if ctx.ui.is_json() {
        let mut listed = Vec::with_capacity(facts.len());
        for fact in &facts {
            let mut value = serde_json::to_value(fact)
                .map_err(|err| CommandError::stdout(&std::io::Error::from(err)))?;
            let by = retracted_by(fact);
            if !by.is_empty() {
                value["retracted_by"] = serde_json::json!(by);
            }
            listed.push(value);
        }
        return ctx.ui.json(&listed);
    }
    if facts.is_empty() {
        ctx.ui.status("no facts");
    }
    for fact in &facts {
        let by = retracted_by(fact);
        if by.is_empty() {
            ctx.ui.line(describe(fact))?;
        } else {
            ctx.ui.line(format_args!("{}  [retracted by {}]", describe(fact), by.join(", ")))?;
        }
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
