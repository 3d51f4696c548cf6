//! `workmem distill`: runs the promotion policy (docs/policy.md) at a given
//! instant and prints the report; `--dry-run` computes the report without
//! writing anything or taking the lock.

use clap::Args;
use serde::Serialize;
use workmem::DistillOptions;
use workmem::{Decision, Report};

use crate::commands::policy::{PolicyArgs, Run, describe_reason, parse_as_of};

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem distill` (the default is a plain distill as of now).
#[derive(Debug, Default, Args)]
#[command(after_help = "Examples:
  workmem distill --dry-run
  workmem distill --as-of 2026-03-01T00:00:00Z
  workmem distill --dry-run --explain
  workmem distill --min-age-days 0 --min-importance 3 --json")]
pub struct DistillArgs {
    /// Run the policy as of this RFC 3339 instant [default: now]
    #[arg(long, value_name = "T")]
    pub as_of: Option<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Report what would change without writing anything
    #[arg(long)]
    pub dry_run: bool,
    /// Also print each fact's outcome in this run and why
    #[arg(long)]
    pub explain: bool,
}

/// `distill --explain --json`: the report plus each fact's decision.
#[derive(Debug, Serialize)]
pub struct ExplainedReport<'a> {
    /// The report (docs/policy.md field names).
    #[serde(flatten)]
    pub report: &'a Report,
    /// Each fact's outcome in this run.
    pub decisions: &'a [Decision],
}

/// Runs `workmem distill`.
///
/// Errors: invalid `--as-of` or policy value (exit 2); corruption, scope
/// and I/O errors.
pub fn run(ctx: &Ctx, args: &DistillArgs) -> Result<(), CommandError> {
    let as_of = parse_as_of(args.as_of.as_deref())?;
    let ws = ctx.workspace()?;
    let policy = args.policy.apply(&ws.config().policy);
    let as_of = as_of.unwrap_or_else(|| ws.now());
    let mut options =
        DistillOptions::new().policy(policy.clone()).as_of(as_of.clone()).dry_run_if(args.dry_run);
    if args.explain {
        options = options.explain();
    }
    let distilled = ws.distill(&options)?;
    let (report, decisions) = (&distilled.report, &distilled.decisions);
    if ctx.ui.is_json() {
        if args.explain {
            return ctx.ui.json(&ExplainedReport { report, decisions });
        }
        return ctx.ui.json(report);
    }
    if ctx.ui.is_quiet() && !args.explain {
        // -q: success says nothing; the exit code is the answer.
        return Ok(());
    }
    let header = if args.dry_run { "dry run, nothing written" } else { "distilled" };
    ctx.ui.status(format_args!("{header} as of {}", as_of.as_str()));
    let mut lines = describe(report);
    if distilled.already_evidence > 0 {
        lines.push(format!(
            "           of the skipped: {} already promoted by an earlier run, {} not promoted",
            distilled.already_evidence,
            report.skipped - distilled.already_evidence
        ));
    }
    ctx.ui.lines(lines)?;
    if args.explain {
        let run = if args.dry_run { Run::Dry } else { Run::Written };
        ctx.ui.lines(describe_decisions(decisions, run))?;
    }
    // Only an empty memory needs the day-one line, and finding out why it
    // is empty costs another pass over the log: not on every no-op run.
    if distilled.active_entries == 0
        && let Some(why) = crate::commands::status::day_one(&ws)?
    {
        ctx.ui.status(why);
    }
    Ok(())
}

/// Returns the per-group lines of `distill --explain`: facts that share a
/// memory key (or, unkeyed, an outcome) are listed under one heading.
pub fn describe_decisions(decisions: &[Decision], run: Run) -> Vec<String> {
    let mut groups: std::collections::BTreeMap<String, Vec<&Decision>> =
        std::collections::BTreeMap::new();
    for decision in decisions {
        let group = match &decision.memory_key {
            Some(key) => format!("key {key}"),
            None => "unkeyed facts".to_owned(),
        };
        groups.entry(group).or_default().push(decision);
    }
    let mut lines = Vec::new();
    for (group, items) in groups {
        lines.push(format!("{group}:"));
        for decision in items {
            lines.push(format!(
                "  {}  {}",
                decision.fact_id,
                describe_reason(&decision.reason, None, run)
            ));
        }
    }
    lines
}

/// Returns the human lines of a report: the counters that matter (scanned
/// always, the others when non-zero) and the conflict case ids.
pub fn describe(report: &Report) -> Vec<String> {
    let counters = [
        ("scanned", report.scanned, "aged facts considered"),
        ("eligible", report.eligible, "facts became evidence of an entry"),
        ("created", report.created, "entries or revisions created"),
        ("updated", report.updated, "entries gained evidence"),
        ("superseded", report.superseded, "revisions replaced by a newer one"),
        ("skipped", report.skipped, "aged facts not promoted"),
        ("stale", report.stale, "skipped: not newer than the active value"),
        ("conflicts", report.conflicts, "keys ended in a tie"),
        ("queued", report.queued_conflicts, "new conflict cases"),
    ];
    let mut lines: Vec<String> = counters
        .iter()
        .filter(|(name, value, _)| *name == "scanned" || *value > 0)
        .map(|(name, value, meaning)| format!("{name:<11}{value:>6}  {meaning}"))
        .collect();
    if report.created == 0
        && report.updated == 0
        && report.superseded == 0
        && report.queued_conflicts == 0
    {
        lines.push("nothing changed".to_owned());
    }
    for id in &report.conflict_case_ids {
        lines.push(format!("conflict   {id}  (see `workmem conflicts`)"));
    }
    lines
}
