//! `workmem remember`: validates and appends one fact. Nothing is written
//! when any field is invalid (the library validates before it creates a
//! directory or opens a file).

use std::collections::BTreeMap;

use clap::Args;
use workmem::NewFact;

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem remember`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem remember 'Tests need a running Postgres' -k pitfall -i 4
  workmem remember 'Use Python 3.12' -k decision --key runtime.python-version -e file=pyproject.toml
  workmem remember 'Deployed 1.4 to staging' --at 2026-01-05T09:30:00+01:00 --json")]
pub struct RememberArgs {
    /// The statement to remember (whitespace runs are collapsed)
    pub content: String,
    /// decision, convention, pitfall (may be promoted) or outcome [default: outcome]
    #[arg(short, long, value_name = "KIND")]
    pub kind: Option<String>,
    /// 1 (trivia) to 5 (critical) [default: 3]
    #[arg(short, long, value_name = "N", allow_negative_numbers = true)]
    pub importance: Option<i64>,
    /// The question this fact answers, for values that may be replaced (e.g. runtime.python-version)
    #[arg(long = "key", value_name = "MEMORY_KEY")]
    pub memory_key: Option<String>,
    /// Who records the fact
    #[arg(long, value_name = "SRC", default_value = "user")]
    pub source: String,
    /// Evidence pointer, repeatable (e.g. -e file=src/db.rs -e commit=1a2b3c)
    // Parsed in `run`, not by clap: clap's error quotes the argument,
    // which may hold a credential.
    #[arg(short, long = "evidence", value_name = "KEY=VALUE")]
    pub evidence: Vec<String>,
    /// When it happened: an RFC 3339 instant, converted to UTC [default: now]
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
    /// Explicit fact id (a retry with identical fields is not stored twice) [default: random]
    #[arg(long = "id", value_name = "FACT_ID")]
    pub fact_id: Option<String>,
}

/// Returns the evidence map of `-e KEY=VALUE` arguments, refusing an
/// argument without `=` and a key given twice.
///
/// Errors: invalid input naming `evidence` (a credential first, by its
/// kind); the argument itself is never quoted, it may hold a credential
/// the guard does not know.
pub fn evidence_map(arguments: &[String]) -> Result<BTreeMap<String, String>, CommandError> {
    let mut map = BTreeMap::new();
    for (index, argument) in arguments.iter().enumerate() {
        let nth = index + 1;
        let Some((key, value)) = argument.split_once('=') else {
            workmem::check_secret("evidence", argument)?;
            return Err(CommandError::invalid(
                "evidence",
                format!("the -e/--evidence argument number {nth} is not KEY=VALUE"),
            ));
        };
        if map.insert(key.to_owned(), value.to_owned()).is_some() {
            workmem::check_secret("evidence key", key)?;
            return Err(CommandError::invalid(
                "evidence",
                format!("the key of -e/--evidence argument number {nth} is given twice"),
            ));
        }
    }
    Ok(map)
}

/// Runs `workmem remember`.
///
/// Errors: invalid input (exit 2, nothing written), I/O errors.
pub fn run(ctx: &Ctx, args: &RememberArgs) -> Result<(), CommandError> {
    let new = NewFact {
        content: args.content.clone(),
        kind: args.kind.clone(),
        importance: args.importance,
        memory_key: args.memory_key.clone(),
        source: Some(args.source.clone()),
        evidence: evidence_map(&args.evidence)?,
        recorded_at: args.at.clone(),
        fact_id: args.fact_id.clone(),
    };
    let fact = ctx.workspace()?.remember(new)?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&fact);
    }
    if ctx.ui.is_quiet() {
        return ctx.ui.line(fact.fact_id());
    }
    let key = fact.memory_key().map(|k| format!(", key {k}")).unwrap_or_default();
    ctx.ui.line(format_args!(
        "remembered {} ({}, importance {}{key}, {})",
        fact.fact_id(),
        fact.kind(),
        fact.importance(),
        fact.recorded_at().as_str()
    ))
}
