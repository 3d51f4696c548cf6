//! `workmem review`: the human review of open conflict cases at a
//! terminal, one case at a time: its key, the current value and every
//! candidate with its evidence facts, the key's revision history and the
//! corrections that name a fact of the key. The
//! reviewer picks a candidate by number, types a rationale and confirms;
//! the decision goes through the library's `resolve` with the revision that
//! was shown, a fresh event id and the actor of `resolve`'s default.
//!
//! Keyboard contract (tests drive it): the candidate's number and Enter
//! (Enter alone skips the case, `q` quits); the rationale and Enter (`q`
//! quits); `y`/`yes` and Enter to confirm, `n`/`no` to skip the case, `q`
//! to quit. A number the case does not have, an empty rationale or another
//! answer asks again, keeping what was typed; quitting leaves the case
//! open and says so. A case another process changed meanwhile is refused
//! as stale, recorded nowhere, and shown again if it is still open, with
//! the rationale typed for it. Line input is rustyline's.

use std::collections::{BTreeSet, HashMap};
use std::io::IsTerminal;

use clap::Args;
use workmem::{Case, Error, Fact, Resolution, Workspace};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::conflicts::{describe_case, describe_set_aside};
use crate::commands::history::describe_correction;
use crate::commands::resolve::default_actor;

/// Arguments of `workmem review`.
#[derive(Debug, Args)]
#[command(after_help = "At each case: type the candidate's number and Enter (Enter alone skips
the case, q quits), then the rationale and Enter, then y (or yes) and Enter to
record the decision (n or no skips the case, q quits and leaves it open). A
wrong number, an empty rationale or another answer asks again. Scripts use
`workmem resolve`.

Examples:
  workmem review")]
pub struct ReviewArgs {}

/// What the reviewer said about one case.
enum Answer {
    Decide { candidate_id: String, rationale: String },
    Skip,
    Quit,
}

/// Runs `workmem review`.
///
/// Errors: usage error without a terminal (exit 2); library errors other
/// than a stale review.
pub fn run(ctx: &Ctx, _args: &ReviewArgs) -> Result<(), CommandError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CommandError::usage("workmem review needs a terminal").hinted(
            "in scripts, decide a case with `workmem resolve CONFLICT_ID CANDIDATE --revision N \
             --rationale TEXT` (see `workmem conflicts`)",
        ));
    }
    let ws = ctx.workspace()?;
    let actor = default_actor(ws.project());
    let mut editor = rustyline::DefaultEditor::new()
        .map_err(|err| CommandError::io("terminal", &std::io::Error::other(err.to_string())))?;
    let mut skipped: BTreeSet<String> = BTreeSet::new();
    // A rationale typed for a case refused as stale is offered again when
    // the case is shown again.
    let mut drafts: HashMap<String, String> = HashMap::new();
    let mut decided = 0usize;
    let mut shown = 0usize;
    loop {
        let queue = ws.conflicts()?;
        let Some(case) =
            queue.cases.iter().find(|case| case.is_open() && !skipped.contains(&case.conflict_id))
        else {
            break;
        };
        shown += 1;
        show(ctx, &ws, case)?;
        let draft = drafts.remove(&case.conflict_id).unwrap_or_default();
        match ask(ctx, &mut editor, case, &actor, &draft)? {
            Answer::Quit => {
                ctx.ui.line(format!(
                    "quit: {} stays open, nothing recorded for it (`workmem review` shows it again)",
                    case.conflict_id
                ))?;
                break;
            }
            Answer::Skip => {
                ctx.ui.line(format!("skipped: {} stays open", case.conflict_id))?;
                skipped.insert(case.conflict_id.clone());
            }
            Answer::Decide { candidate_id, rationale } => {
                let event_id = ws.fresh_event_id();
                let result = ws.resolve(Resolution {
                    conflict_id: case.conflict_id.clone(),
                    candidate_id,
                    expected_revision: i64::from(case.revision),
                    actor: actor.clone(),
                    rationale: rationale.clone(),
                    event_id,
                    resolved_at: None,
                });
                match result {
                    Ok(event) => {
                        decided += 1;
                        ctx.ui.line(format!(
                            "resolved {} (revision {}) as event {} by {}",
                            event.conflict_id, event.case_revision, event.event_id, event.actor
                        ))?;
                    }
                    Err(Error::StaleResolution(reason)) => {
                        ctx.ui.line(format!("stale, not recorded: {reason}"))?;
                        drafts.insert(case.conflict_id.clone(), rationale);
                    }
                    Err(err) => return Err(err.into()),
                }
            }
        }
    }
    if shown == 0 {
        return ctx.ui.line("no open conflict cases");
    }
    ctx.ui.line(format!("review done: {decided} decided, {} skipped", skipped.len()))
}

/// Prints one case: its candidates with their evidence facts, then the
/// revision history of its key.
fn show(ctx: &Ctx, ws: &Workspace, case: &Case) -> Result<(), CommandError> {
    ctx.ui.line("")?;
    ctx.ui.lines(describe_case(case))?;
    let decided: Vec<workmem::Adjudication> = ws
        .adjudications()?
        .into_iter()
        .filter(|record| record.conflict_id == case.conflict_id)
        .collect();
    ctx.ui.lines(describe_set_aside(case, &decided))?;
    let facts = ws.facts()?;
    let by_id: HashMap<&str, &Fact> = facts.iter().map(|f| (f.fact_id(), f)).collect();
    let retractions = ws.retractions()?;
    for (number, candidate) in case.candidates.iter().enumerate() {
        ctx.ui.line(format!(
            "  {}. evidence of {:?} (first {}, last {}):",
            number + 1,
            candidate.content,
            candidate.first_seen.as_str(),
            candidate.last_seen.as_str()
        ))?;
        for id in &candidate.evidence_ids {
            let Some(fact) = by_id.get(id) else { continue };
            let evidence: Vec<String> =
                fact.evidence().iter().map(|(key, value)| format!("{key}={value}")).collect();
            let by: Vec<&str> = retractions.retracted_by(fact.fact_id()).collect();
            ctx.ui.line(format!(
                "       {} {} [{}] {:?} from {}{}{}",
                fact.recorded_at().utc_day(),
                fact.fact_id(),
                fact.importance(),
                fact.content(),
                fact.source(),
                if evidence.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", evidence.join(", "))
                },
                if by.is_empty() {
                    String::new()
                } else {
                    format!(" [retracted by {}]", by.join(", "))
                }
            ))?;
        }
    }
    let history = ws.history(&case.memory_key)?;
    if history.revisions.is_empty() {
        ctx.ui.line(format!("  history of {}: no revision yet", case.memory_key))?;
    }
    for revision in &history.revisions {
        ctx.ui.line(format!(
            "  history r{} {:?} ({}, {} facts)",
            revision.entry.revision,
            revision.entry.content,
            revision.entry.status.as_str(),
            revision.entry.occurrences
        ))?;
    }
    // The corrections that name a fact of the key, in time order: what a
    // person took out of the domain is part of what is decided.
    for record in &history.corrections {
        ctx.ui.line(format!("  {}", describe_correction(record)))?;
    }
    Ok(())
}

/// Asks for a candidate, a rationale and a confirmation. Nothing typed is
/// dropped: a number the case does not have, an empty rationale or an
/// answer other than yes or no asks again, keeping what was typed.
fn ask(
    ctx: &Ctx,
    editor: &mut rustyline::DefaultEditor,
    case: &Case,
    actor: &str,
    draft: &str,
) -> Result<Answer, CommandError> {
    let count = case.candidates.len();
    let candidate = loop {
        let Some(choice) = read(editor, "candidate number (Enter skips, q quits)> ", "")? else {
            return Ok(Answer::Quit);
        };
        match choice.trim() {
            "" => return Ok(Answer::Skip),
            "q" | "Q" => return Ok(Answer::Quit),
            number => {
                match number
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| case.candidates.get(n.checked_sub(1)?))
                {
                    Some(candidate) => break candidate,
                    None => ctx.ui.line(format!(
                        "  {number:?} is not a candidate number: type 1 to {count}, Enter to skip \
                         the case, q to quit"
                    ))?,
                }
            }
        }
    };
    let rationale = loop {
        let Some(typed) = read(editor, "rationale (q quits)> ", draft)? else {
            return Ok(Answer::Quit);
        };
        match typed.trim() {
            "" => ctx.ui.line("  a decision needs a rationale: why is this value right?")?,
            "q" | "Q" => return Ok(Answer::Quit),
            _ => break typed,
        }
    };
    let prompt =
        format!("record {:?} for {} as {actor}? (y/n)> ", candidate.content, case.memory_key);
    loop {
        let Some(confirm) = read(editor, &prompt, "")? else { return Ok(Answer::Quit) };
        match confirm.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => {
                return Ok(Answer::Decide {
                    candidate_id: candidate.candidate_id.clone(),
                    rationale,
                });
            }
            "n" | "no" => return Ok(Answer::Skip),
            "q" => return Ok(Answer::Quit),
            _ => ctx.ui.line("  type y to record the decision, n to skip the case, q to quit")?,
        }
    }
}

/// Reads one line, `initial` already typed; `None` on end of input or
/// Ctrl-C (quit).
fn read(
    editor: &mut rustyline::DefaultEditor,
    prompt: &str,
    initial: &str,
) -> Result<Option<String>, CommandError> {
    match editor.readline_with_initial(prompt, (initial, "")) {
        Ok(line) => Ok(Some(line)),
        Err(
            rustyline::error::ReadlineError::Eof | rustyline::error::ReadlineError::Interrupted,
        ) => Ok(None),
        Err(err) => Err(CommandError::io("terminal", &std::io::Error::other(err.to_string()))),
    }
}
