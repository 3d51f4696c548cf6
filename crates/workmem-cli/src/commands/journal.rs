//! `workmem journal`: shows the transaction journal (work in flight of a
//! human decision) and, with `--discard`, discards the transactions this
//! clone did not prepare: a journal that arrived through git or was copied
//! from another machine is never applied (docs/sharing.md).

use clap::Args;
use serde::Serialize;
use workmem::{JournalReport, JournalTransaction};

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem journal`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem journal                # what the journal holds, and who prepared it
  workmem journal --discard      # drop the transactions this clone did not prepare
  workmem journal --json         # {\"path\", \"written_here\", \"transactions\": [...], ...}

The journal is empty at rest. A transaction this clone did not prepare (a
journal that arrived through git or was copied) is never applied: `verify`
reports it and writing commands refuse until it is discarded.")]
pub struct JournalArgs {
    /// Discard every unfinished transaction this clone did not prepare
    /// (after showing it); this clone's own unfinished work is kept
    #[arg(long)]
    pub discard: bool,
}

#[derive(Serialize)]
struct JournalOutput<'a> {
    #[serde(flatten)]
    report: &'a JournalReport,
    /// Transaction ids discarded (with `--discard`).
    #[serde(skip_serializing_if = "Option::is_none")]
    discarded: Option<Vec<String>>,
    /// Whether the whole file was discarded (unreadable and not written here).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    discarded_file: bool,
}

/// Runs `workmem journal`.
///
/// Errors: library errors reading (or, with `--discard`, rewriting) the
/// journal.
pub fn run(ctx: &Ctx, args: &JournalArgs) -> Result<(), CommandError> {
    let ws = ctx.workspace()?;
    let report = if args.discard { ws.discard_foreign_transactions()? } else { ws.journal()? };
    let foreign: Vec<String> = report
        .transactions
        .iter()
        .filter(|t| !t.committed && !t.prepared_here)
        .map(|t| t.transaction_id.clone())
        .collect();
    let discarded_file = args.discard && report.unreadable.is_some() && !report.written_here;
    let foreign_intent = report.distill_intent.as_ref().filter(|intent| !intent.written_here);
    if ctx.ui.is_json() {
        return ctx.ui.json(&JournalOutput {
            report: &report,
            discarded: args.discard.then(|| foreign.clone()),
            discarded_file,
        });
    }
    ctx.ui.line(format_args!("journal   {}", report.path.display()))?;
    if let Some(why) = &report.unreadable {
        let whose = if report.written_here {
            "written by this clone"
        } else {
            "not written by this clone (it arrived through git or was copied)"
        };
        ctx.ui.line(format_args!("unreadable, {whose}: {why}"))?;
    }
    if report.transactions.is_empty() && report.unreadable.is_none() {
        ctx.ui.line("empty     nothing in flight")?;
    }
    for t in &report.transactions {
        show(ctx, t)?;
    }
    if let Some(intent) = &report.distill_intent {
        let whose = if intent.written_here {
            "an interrupted distill of this clone (the next writing command finishes it)"
        } else {
            "NOT written by this clone (it arrived through git or was copied)"
        };
        ctx.ui.line(format_args!("distill   {}: {whose}", intent.path.display()))?;
    }
    if args.discard {
        if discarded_file {
            ctx.ui.line("discarded the whole file: it holds nothing this clone wrote")?;
        }
        for id in &foreign {
            ctx.ui.line(format_args!("discarded {id}"))?;
        }
        if let Some(intent) = foreign_intent {
            ctx.ui.line(format_args!("discarded {}", intent.path.display()))?;
        }
        if foreign.is_empty() && !discarded_file && foreign_intent.is_none() {
            ctx.ui.line("nothing to discard: the journal holds nothing from elsewhere")?;
        }
    } else if report.has_foreign() {
        ctx.ui.status(
            "this clone did not prepare the work above: it is never applied, and writing \
             commands refuse until `workmem journal --discard` discards it",
        );
    }
    Ok(())
}

/// Prints one transaction.
fn show(ctx: &Ctx, t: &JournalTransaction) -> Result<(), CommandError> {
    let state = if t.committed { "committed" } else { "unfinished" };
    let whose = if t.prepared_here { "prepared here" } else { "NOT prepared by this clone" };
    ctx.ui.line(format_args!(
        "{}  line {}  {state}, {whose}  [{}]",
        t.transaction_id,
        t.line,
        t.phases.join(" ")
    ))?;
    if let Some(a) = &t.adjudication {
        ctx.ui.line(format_args!(
            "  decision: {} chose {} for {} (revision {}) at {}, event {}: {}",
            a.actor,
            a.selected_candidate_id,
            a.conflict_id,
            a.case_revision,
            a.resolved_at,
            a.event_id,
            a.rationale
        ))?;
    }
    if let Some(c) = &t.correction {
        let what = match c.action {
            workmem::Action::Retract => "a retraction",
            workmem::Action::Restore => "a restore",
            workmem::Action::Redact => "a redaction",
        };
        let n = c.fact_ids.len();
        ctx.ui.line(format_args!(
            "  correction: {what} by {} of {n} fact{} at {}, event {}: {}",
            c.actor,
            if n == 1 { "" } else { "s" },
            c.recorded_at,
            c.event_id,
            c.rationale
        ))?;
    }
    Ok(())
}
