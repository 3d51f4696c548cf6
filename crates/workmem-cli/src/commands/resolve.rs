//! `workmem resolve`: a human decides a conflict case (docs/policy.md).
//! This is the trusted entry point; no model tool can reach it.

use clap::Args;
use workmem::{Resolution, Stamp};

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem resolve`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem conflicts
  workmem resolve conflict-1a2b3c4d5e6f7a8b 2 --revision 1 --rationale 'Production needs PostGIS'
  workmem resolve conflict-1a2b3c4d5e6f7a8b candidate-0f1e2d3c4b5a6978 --revision 1 \\
      --event-id review:db-engine:1 --rationale 'Production needs PostGIS'

The candidate is its id or its number as `workmem conflicts` lists it. Without
--event-id a fresh one is generated and printed; retrying with that event id is
safe: the same event id with the same decision returns the stored adjudication
and writes nothing. The actor defaults to git's `user.name <user.email>` in a
git repository, else the OS user.")]
pub struct ResolveArgs {
    /// The conflict case, as listed by `workmem conflicts`
    pub conflict_id: String,
    /// The chosen candidate: its id, or its number as `workmem conflicts` lists it
    pub candidate_id: String,
    /// The case revision you reviewed (stale reviews are refused)
    #[arg(long, allow_negative_numbers = true)]
    pub revision: i64,
    /// An id for this decision, unique per decision (makes retries safe)
    /// [default: a fresh `review:` id, printed]
    #[arg(long)]
    pub event_id: Option<String>,
    /// Who decides [default: git's `user.name <user.email>`, else the OS user]
    #[arg(long)]
    pub actor: Option<String>,
    /// Why this value is right
    #[arg(long)]
    pub rationale: Option<String>,
    /// When the decision was made (RFC 3339) [default: now]
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
}

/// Runs `workmem resolve`.
///
/// Errors: exit 2 for malformed input, 3 for a stale review, 6 for an unknown
/// case or candidate or a reused event id, 4 for corrupt state.
pub fn run(ctx: &Ctx, args: &ResolveArgs) -> Result<(), CommandError> {
    refuse_placeholder("conflict_id", &args.conflict_id, "an id `workmem conflicts` lists")?;
    refuse_placeholder(
        "candidate",
        &args.candidate_id,
        "a candidate's number or id as `workmem conflicts` lists it",
    )?;
    let Some(rationale) = args.rationale.clone() else {
        return Err(CommandError::invalid("rationale", "is required")
            .hinted("add --rationale 'why this value is right'"));
    };
    let resolved_at = match &args.at {
        None => None,
        Some(text) => {
            // The parse error quotes the text; a credential is never quoted.
            workmem::check_secret("at", text)?;
            Some(Stamp::parse_normalized(text).map_err(|msg| CommandError::invalid("at", msg))?)
        }
    };
    let ws = ctx.workspace()?;
    let actor = args.actor.clone().unwrap_or_else(|| default_actor(ws.project()));
    let event_id = args.event_id.clone().unwrap_or_else(|| ws.fresh_event_id());
    let queue = ws.conflicts()?;
    let candidate_id = candidate_by_number(&queue, &args.conflict_id, &args.candidate_id)?;
    let chosen = queue
        .get(&args.conflict_id)
        .and_then(|case| case.candidates.iter().find(|c| c.candidate_id == candidate_id))
        .map(|candidate| candidate.content.clone());
    let result = ws.resolve(Resolution {
        conflict_id: args.conflict_id.clone(),
        candidate_id,
        expected_revision: args.revision,
        actor,
        rationale,
        event_id: event_id.clone(),
        resolved_at,
    });
    let event = match result {
        Ok(event) => event,
        Err(err) => {
            let err = CommandError::from(err);
            if args.event_id.is_none() && err.exit_code() == 1 && !ctx.ui.is_json() {
                // An I/O failure may have recorded the decision or not: a
                // retry must reuse this id. A refusal (stale, unknown,
                // invalid) is final, and a retry cannot help.
                ctx.ui.status(format!(
                    "this attempt used event id {event_id}: pass --event-id {event_id} to retry"
                ));
            }
            return Err(err);
        }
    };
    if ctx.ui.is_json() {
        return ctx.ui.json(&event);
    }
    let kept =
        event.prior_active_entry_key.as_deref() == Some(event.resulting_active_entry_key.as_str());
    ctx.ui.line(format!(
        "resolved {} (revision {}) with {}{}: {}",
        event.conflict_id,
        event.case_revision,
        event.selected_candidate_id,
        chosen.map(|content| format!(" ({content:?})")).unwrap_or_default(),
        if kept {
            "kept the current value".to_owned()
        } else {
            format!("new active entry {}", event.resulting_active_entry_key)
        }
    ))?;
    ctx.ui.status(format!("recorded as event {} by {}", event.event_id, event.actor));
    Ok(())
}

/// Returns the candidate id `given` names: itself, or when it is a number,
/// the candidate listed at that position (1-based) for the case.
fn candidate_by_number(
    queue: &workmem::ConflictQueue,
    conflict_id: &str,
    given: &str,
) -> Result<String, CommandError> {
    let Ok(number) = given.parse::<usize>() else { return Ok(given.to_owned()) };
    let Some(case) = queue.get(conflict_id) else {
        // The library names an unknown case (exit 6); keep its wording.
        return Ok(given.to_owned());
    };
    number
        .checked_sub(1)
        .and_then(|index| case.candidates.get(index))
        .map(|candidate| candidate.candidate_id.clone())
        .ok_or_else(|| {
            CommandError::invalid(
                "candidate",
                format!(
                    "{number} is not a candidate number of {conflict_id} (it has {})",
                    case.candidates.len()
                ),
            )
            .hinted("`workmem conflicts` lists each case's candidates with their numbers")
        })
}

/// Refuses a placeholder copied from an example (`CONFLICT_ID`,
/// `CANDIDATE_ID`, `FACT_ID`) where a real value belongs: upper-case
/// letters and underscores ending in `_ID`, which no generated id is.
///
/// Errors: invalid input (exit 2) naming `field` and what to put there.
pub fn refuse_placeholder(field: &str, value: &str, instead: &str) -> Result<(), CommandError> {
    let placeholder =
        value.ends_with("_ID") && value.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    if !placeholder {
        return Ok(());
    }
    Err(CommandError::invalid(field, format!("{value} is a placeholder, not a value"))
        .hinted(format!("replace {value} with {instead}")))
}

/// Returns who decides when `--actor` is not given: git's `user.name
/// <user.email>` for the project when it is in a git repository and they
/// are set, else the OS user.
pub fn default_actor(project: &std::path::Path) -> String {
    let git = |key: &str| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(project)
            .args(["config", "--get", key])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|out| out.status.success())
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .map(|text| text.trim().to_owned())
            .filter(|text| !text.is_empty())
    };
    match (git("user.name"), git("user.email")) {
        (Some(name), Some(email)) => format!("{name} <{email}>"),
        (Some(name), None) => name,
        _ => os_user(),
    }
}

fn os_user() -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}
