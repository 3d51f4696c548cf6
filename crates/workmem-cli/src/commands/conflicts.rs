//! `workmem conflicts`: lists conflict cases (ties distill refused to
//! guess) with their candidates, filtered by status.

use clap::{Args, ValueEnum};
use workmem::{Case, CaseStatus};

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem conflicts`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem conflicts
  workmem conflicts --status all
  workmem conflicts --json | jq '.[].conflict_id'")]
pub struct ConflictsArgs {
    /// Which cases to list
    #[arg(long, value_enum, default_value_t = StatusFilter::Open)]
    pub status: StatusFilter,
}

/// The `--status` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusFilter {
    /// Awaiting a human decision
    Open,
    /// Decided by a human
    Resolved,
    /// Replaced by a newer case or settled by distill
    Superseded,
    /// Every case
    All,
}

impl StatusFilter {
    fn accepts(self, status: CaseStatus) -> bool {
        match self {
            StatusFilter::Open => status == CaseStatus::Open,
            StatusFilter::Resolved => status == CaseStatus::Resolved,
            StatusFilter::Superseded => status == CaseStatus::Superseded,
            StatusFilter::All => true,
        }
    }
}

/// Runs `workmem conflicts`.
///
/// Errors: corruption and scope errors of conflicts.json, I/O errors.
pub fn run(ctx: &Ctx, args: &ConflictsArgs) -> Result<(), CommandError> {
    let queue = ctx.workspace()?.conflicts()?;
    let cases: Vec<&Case> =
        queue.cases.iter().filter(|case| args.status.accepts(case.status)).collect();
    if ctx.ui.is_json() {
        return ctx.ui.json(&cases);
    }
    if cases.is_empty() {
        ctx.ui.status(nothing_listed(args.status, &queue.cases));
    }
    for case in cases {
        for line in describe_case(case) {
            ctx.ui.line(line)?;
        }
    }
    Ok(())
}

/// Returns the line saying that no case has the status asked for, and how
/// many cases of the other statuses there are.
fn nothing_listed(filter: StatusFilter, cases: &[Case]) -> String {
    let wanted = match filter {
        StatusFilter::Open => "no open conflict cases",
        StatusFilter::Resolved => "no resolved conflict cases",
        StatusFilter::Superseded => "no superseded conflict cases",
        StatusFilter::All => return "no conflict cases".to_owned(),
    };
    let others: Vec<String> = [CaseStatus::Open, CaseStatus::Resolved, CaseStatus::Superseded]
        .into_iter()
        .filter(|status| !filter.accepts(*status))
        .filter_map(|status| {
            let count = cases.iter().filter(|case| case.status == status).count();
            (count > 0).then(|| format!("{count} {}", status.as_str()))
        })
        .collect();
    if others.is_empty() {
        return wanted.to_owned();
    }
    format!("{wanted} ({}; --status all lists them)", others.join(", "))
}

/// Returns the human lines describing one case and its candidates.
pub fn describe_case(case: &Case) -> Vec<String> {
    let mut lines = vec![format!(
        "{}  {}  key {}  revision {}  detected {}",
        case.conflict_id,
        case.status.as_str(),
        case.memory_key,
        case.revision,
        case.detected_at.as_str()
    )];
    for (number, candidate) in case.candidates.iter().enumerate() {
        let role = if candidate.incumbent { "  (current value)" } else { "" };
        lines.push(format!(
            "  {}. {}  [{}] {:?}  seen {}x, importance {}, last {}{role}",
            number + 1,
            candidate.candidate_id,
            candidate.kind,
            candidate.content,
            candidate.occurrences,
            candidate.maximum_importance,
            candidate.last_seen.as_str()
        ));
    }
    if let Some(selected) = &case.selected_candidate_id {
        lines.push(format!("  selected {selected}"));
    }
    lines
}
