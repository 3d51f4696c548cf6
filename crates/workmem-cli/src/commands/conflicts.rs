//! `workmem conflicts`: lists conflict cases (ties distill refused to
//! guess) with their candidates, filtered by status.

use std::collections::BTreeMap;

use clap::{Args, ValueEnum};
use serde::Serialize;
use workmem::{Adjudication, Case, CaseStatus, ConflictQueue};

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
    let ws = ctx.workspace()?;
    let queue = ws.conflicts()?;
    let set_aside = set_aside_by_case(&queue, ws.adjudications()?);
    let cases: Vec<&Case> =
        queue.cases.iter().filter(|case| args.status.accepts(case.status)).collect();
    let set_aside_of =
        |case: &Case| set_aside.get(&case.conflict_id).map(Vec::as_slice).unwrap_or_default();
    if ctx.ui.is_json() {
        let listed: Vec<ListedCase<'_>> = cases
            .iter()
            .map(|case| ListedCase { case, set_aside_decisions: set_aside_of(case) })
            .collect();
        return ctx.ui.json(&listed);
    }
    if cases.is_empty() {
        ctx.ui.status(nothing_listed(args.status, &queue.cases));
    }
    for case in cases {
        ctx.ui.lines(describe_case(case))?;
        ctx.ui.lines(describe_set_aside(case, set_aside_of(case)))?;
    }
    Ok(())
}

/// A case of `conflicts --json`: its record, plus the decisions about it
/// that do not close it (present only when there are any).
#[derive(Debug, Serialize)]
struct ListedCase<'a> {
    #[serde(flatten)]
    case: &'a Case,
    #[serde(skip_serializing_if = "<[Adjudication]>::is_empty")]
    set_aside_decisions: &'a [Adjudication],
}

/// Returns whether `record` is set aside: a decision recorded in the audit
/// stream that is not the one closing its case. When two people decided
/// one case differently on two clones, a merge keeps both decisions and
/// opens the case again; when they decided alike, the earlier closes it
/// and the later is set aside.
pub fn is_set_aside(queue: &ConflictQueue, record: &Adjudication) -> bool {
    queue.get(&record.conflict_id).and_then(|case| case.resolution_event_id.as_deref())
        != Some(record.event_id.as_str())
}

/// Returns the set-aside decisions ([`is_set_aside`]) by conflict id, each
/// case's oldest first.
pub fn set_aside_by_case(
    queue: &ConflictQueue,
    events: Vec<Adjudication>,
) -> BTreeMap<String, Vec<Adjudication>> {
    let mut by_case: BTreeMap<String, Vec<Adjudication>> = BTreeMap::new();
    for record in events.into_iter().filter(|record| is_set_aside(queue, record)) {
        by_case.entry(record.conflict_id.clone()).or_default().push(record);
    }
    by_case
}

/// Returns the lines that show a case's set-aside decisions: who chose
/// which candidate, when and why.
pub fn describe_set_aside(case: &Case, records: &[Adjudication]) -> Vec<String> {
    if records.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "  {} {} set aside{}:",
        records.len(),
        if records.len() == 1 { "decision" } else { "decisions" },
        if case.is_open() {
            " (a merge kept decisions that disagree and opened the case again: decide it anew)"
        } else {
            " (another decision closes the case)"
        }
    )];
    for record in records {
        lines.push(format!("    {}", describe_decision(Some(case), record)));
    }
    lines
}

/// Returns one line for a decision: who chose which candidate (its number
/// and wording when the case lists it), when, and why.
pub fn describe_decision(case: Option<&Case>, record: &Adjudication) -> String {
    let chosen = case
        .and_then(|case| {
            case.candidates
                .iter()
                .position(|c| c.candidate_id == record.selected_candidate_id)
                .map(|index| format!("{}. {:?}", index + 1, case.candidates[index].content))
        })
        .unwrap_or_else(|| record.selected_candidate_id.clone());
    format!(
        "{} chose {chosen} at {} ({}): {:?}",
        record.actor,
        record.resolved_at.as_str(),
        record.event_id,
        record.rationale
    )
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
