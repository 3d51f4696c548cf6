//! `workmem status`: one screen on where the workspace stands — facts,
//! what waits for the age gate and when the first becomes eligible, the
//! curated entries, open conflicts, unfinished work. Read-only: it opens
//! the workspace without recovery and writes nothing.

use clap::Args;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::conflicts::{describe_decision, set_aside_by_case};

/// Arguments of `workmem status`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem status
  workmem status --json   # {\"workspace_id\", \"pinned\", \"shared\", \"facts\": {\"total\", \"today\",
                          #  \"waiting_for_age\", \"first_eligible_at\"}, \"curated\": {KIND: N},
                          #  \"open_conflicts\", \"awaiting_review\": [KEY], \"without_value\": [KEY], \"corrections\": {\"records\", \"retracted_facts\",
                          #  \"redacted_facts\", \"redacted_records\"}, \"sharing\": {\"git\", \"attributes\", \"merge_driver\"}, ...}")]
pub struct StatusArgs {}

/// Runs `workmem status`.
///
/// Errors: corruption and scope errors of the state, I/O errors.
pub fn run(ctx: &Ctx, _args: &StatusArgs) -> Result<(), CommandError> {
    let ws = ctx.workspace_read_only()?;
    let overview = ws.overview(None)?;
    let git = crate::git::toplevel(ws.project()).is_some();
    let merge_driver = git && crate::git::driver_configured(ws.project());
    let misrouted = crate::git::misrouted(&ws).unwrap_or_default();
    if ctx.ui.is_json() {
        return print_json(ctx, &overview, git, merge_driver, &misrouted);
    }
    let facts = &overview.facts;
    ctx.ui.line(format_args!(
        "workspace   {} ({})",
        overview.workspace_id,
        if overview.pinned { "pinned in .workmem/workspace.toml" } else { "derived from the path" }
    ))?;
    ctx.ui.line(format_args!(
        "sharing     {}",
        match (git, overview.shared, merge_driver) {
            (false, _, _) => "not in a git repository",
            (true, false, _) => "not shared (`workmem share` shares it through git)",
            (true, true, true) => "shared through git; merge driver configured",
            (true, true, false) =>
                "shared through git; merge driver NOT configured (`workmem share`)",
        }
    ))?;
    if !misrouted.is_empty() {
        let files: Vec<String> = misrouted
            .iter()
            .map(|(path, merge)| format!("{} (merge={merge})", path.display()))
            .collect();
        ctx.ui.line(format_args!(
            "routing     NOT merged by workmem's driver: {}; {}",
            files.join(", "),
            crate::git::REROUTE
        ))?;
    }
    ctx.ui.line(format_args!("memory dir  {}", ws.memory_dir().display()))?;
    ctx.ui.line(format_args!(
        "facts       {} in the log, {} recorded today",
        facts.total, facts.today
    ))?;
    match &facts.first_eligible_at {
        Some(first) => ctx.ui.line(format_args!(
            "waiting     {} too young for the policy; the first becomes eligible at {}",
            facts.waiting_for_age,
            first.as_str()
        ))?,
        None => ctx.ui.line("waiting     none")?,
    }
    let curated: Vec<String> = overview
        .curated
        .iter()
        .map(|(kind, count)| format!("{count} {kind}{}", if *count == 1 { "" } else { "s" }))
        .collect();
    let curated = if curated.is_empty() { "nothing yet".to_owned() } else { curated.join(", ") };
    ctx.ui.line(format_args!("curated     {curated}"))?;
    match &overview.curated_changed_at {
        Some(at) => ctx.ui.line(format_args!("changed     {}", at.as_str()))?,
        None => ctx.ui.line("changed     never (no distill has promoted anything yet)")?,
    }
    ctx.ui.line(format_args!(
        "conflicts   {} open{}",
        overview.open_conflicts,
        if overview.open_conflicts > 0 { " (workmem conflicts; workmem resolve)" } else { "" }
    ))?;
    print_domains(ctx, &overview)?;
    if overview.set_aside_decisions > 0 {
        print_set_aside(ctx, &ws, &overview)?;
    }
    let corrections = &overview.corrections;
    if corrections.records > 0 {
        let plural =
            |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
        ctx.ui.line(format_args!(
            "corrections {} {}: {} {} retracted, {} redacted{}",
            corrections.records,
            plural(corrections.records, "record", "records"),
            corrections.retracted_facts,
            plural(corrections.retracted_facts, "fact", "facts"),
            corrections.redacted_facts,
            match corrections.redacted_records {
                0 => String::new(),
                n => format!("; the words of {n} {} redacted", plural(n, "record", "records")),
            },
        ))?;
    }
    let unfinished = overview.unfinished_transactions + usize::from(overview.distill_interrupted);
    ctx.ui.line(format_args!(
        "unfinished  {}",
        if unfinished == 0 {
            "none".to_owned()
        } else {
            format!("{unfinished} (the next writing command finishes them)")
        }
    ))
}

/// Prints the overview and the state of sharing as one JSON value.
fn print_json(
    ctx: &Ctx,
    overview: &workmem::Overview,
    git: bool,
    merge_driver: bool,
    misrouted: &[(std::path::PathBuf, String)],
) -> Result<(), CommandError> {
    let mut value = serde_json::to_value(overview)
        .map_err(|err| CommandError::stdout(&std::io::Error::from(err)))?;
    let misrouted: Vec<serde_json::Value> = misrouted
        .iter()
        .map(
            |(path, merge)| serde_json::json!({"path": path.display().to_string(), "merge": merge}),
        )
        .collect();
    value["sharing"] = serde_json::json!({
        "git": git,
        "attributes": overview.shared,
        "merge_driver": merge_driver,
        "routed": misrouted.is_empty(),
        "misrouted": misrouted,
    });
    ctx.ui.json(&value)
}

/// Prints the decisions a merge kept without applying, by case.
fn print_set_aside(
    ctx: &Ctx,
    ws: &workmem::ReadOnlyWorkspace,
    overview: &workmem::Overview,
) -> Result<(), CommandError> {
    ctx.ui.line(format_args!(
        "set aside   {} {} a merge kept without applying (`workmem adjudications`):",
        overview.set_aside_decisions,
        if overview.set_aside_decisions == 1 { "decision" } else { "decisions" }
    ))?;
    let queue = ws.conflicts()?;
    for (conflict_id, records) in set_aside_by_case(&queue, ws.adjudications()?) {
        let case = queue.get(&conflict_id);
        for record in &records {
            ctx.ui.line(format_args!(
                "            {}{}",
                case.map(|case| format!(
                    "{} ({}): ",
                    case.memory_key,
                    if case.is_open() { "open again" } else { "closed" }
                ))
                .unwrap_or_default(),
                describe_decision(case, record)
            ))?;
        }
    }
    Ok(())
}

/// Returns, when nothing is curated yet, the line that says why: how many
/// facts wait for the age gate and when the first becomes eligible, or that
/// the log is empty or nothing qualifies yet. `None` once memory exists.
///
/// Errors: as [`workmem::Workspace::overview`].
pub fn day_one(ws: &workmem::Workspace) -> Result<Option<String>, CommandError> {
    let overview = ws.overview(None)?;
    if !overview.curated.is_empty() {
        return Ok(None);
    }
    let facts = &overview.facts;
    Ok(Some(match &facts.first_eligible_at {
        Some(first) => format!(
            "nothing is curated yet: {} {} for the age gate; the first becomes eligible at {} \
             (`workmem status`, `workmem explain FACT_ID`)",
            facts.waiting_for_age,
            if facts.waiting_for_age == 1 { "fact waits" } else { "facts wait" },
            first.as_str()
        ),
        None if facts.total == 0 => {
            "nothing is curated yet: the log is empty (`workmem remember ...`)".to_owned()
        }
        None => "nothing is curated yet: no fact qualifies for the policy \
                 (`workmem distill --dry-run --explain` says why)"
            .to_owned(),
    }))
}

/// Prints the memory keys a merge put in dispute and those a correction
/// left without a value.
fn print_domains(ctx: &Ctx, overview: &workmem::Overview) -> Result<(), CommandError> {
    if !overview.awaiting_review.is_empty() {
        ctx.ui.line(format_args!(
            "in dispute  {} (a merge kept each side's value; the next `workmem distill` opens \
             the case for a person)",
            overview.awaiting_review.join(", ")
        ))?;
    }
    if !overview.without_value.is_empty() {
        ctx.ui.line(format_args!(
            "no value    {} (a correction retracted the active value; the next `workmem distill` \
             judges the remaining facts again)",
            overview.without_value.join(", ")
        ))?;
    }
    Ok(())
}
