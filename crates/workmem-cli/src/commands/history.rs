//! `workmem history`: every revision of one memory key with the facts
//! behind it, the key's conflict cases, and the corrections that name its
//! facts.

use clap::Args;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::conflicts::describe_case;

/// Arguments of `workmem history`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem history runtime.python-version
  workmem history db.engine --json")]
pub struct HistoryArgs {
    /// The memory key (the question the values answer)
    pub memory_key: String,
}

/// Runs `workmem history`.
///
/// Errors: exit 2 for a malformed key; read errors of the workspace.
pub fn run(ctx: &Ctx, args: &HistoryArgs) -> Result<(), CommandError> {
    let history = ctx.workspace()?.history(&args.memory_key)?;
    if ctx.ui.is_json() {
        return ctx.ui.json(&history);
    }
    if history.revisions.is_empty() && history.cases.is_empty() && history.corrections.is_empty() {
        ctx.ui.status(format!("nothing curated for {} yet", history.memory_key));
    }
    for revision in &history.revisions {
        let entry = &revision.entry;
        let status = entry.status.as_str();
        ctx.ui.line(format!(
            "revision {} ({status}) [{}] {}  key {}  seen {}x, {} .. {}",
            entry.revision,
            entry.kind,
            entry.content,
            entry.key,
            entry.occurrences,
            entry.first_seen,
            entry.last_seen
        ))?;
        for fact in &revision.facts {
            ctx.ui.line(format!(
                "  {}  {}  importance {}  {}  {:?}",
                fact.fact_id(),
                fact.recorded_at(),
                fact.importance(),
                fact.source(),
                fact.content()
            ))?;
        }
        let missing = entry.evidence_ids.len() - revision.facts.len();
        if missing > 0 {
            ctx.ui.line(format!("  ({missing} evidence facts are no longer in the log)"))?;
        }
    }
    for case in &history.cases {
        for line in describe_case(case) {
            ctx.ui.line(line)?;
        }
    }
    for record in &history.corrections {
        ctx.ui.line(describe_correction(record))?;
    }
    Ok(())
}

/// Returns one line for a correction record: its event id, what it does,
/// who made it and when, the facts it names and why.
pub fn describe_correction(record: &workmem::Correction) -> String {
    let what = match &record.restores {
        Some(restored) => format!("restore of {restored}"),
        None => record.action.to_string(),
    };
    let facts: Vec<&str> = record.fact_ids.iter().collect();
    format!(
        "correction {} ({what}) by {} at {}: facts {}: {}",
        record.event_id,
        record.actor,
        record.recorded_at,
        facts.join(", "),
        record.rationale
    )
}
