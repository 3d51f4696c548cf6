//! `workmem retract` and `workmem restore`: a person takes facts out of
//! the memory, or undoes one such retraction (docs/corrections.md). These
//! are trusted entry points; no model tool can reach them.

use clap::Args;
use workmem::{Corrected, Restoration, Retraction, Stamp};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::resolve::{default_actor, refuse_placeholder};

/// Arguments of `workmem retract`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem retract 5f0c1f7e2c4b4f7e9a0d3b6c8e1f2a4d --rationale 'recorded against the wrong service'
  workmem retract --entry 0f1e2d3c4b5a6978 --rationale 'this convention was never agreed'
  workmem restore correction:8a2f01 --rationale 'it was right after all'

A retracted fact stops counting everywhere: it is no longer evidence of any
entry, and the entries and cases it was part of change at once (an entry left
with no evidence leaves the memory). The facts and the record stay;
`workmem facts --all`, `history` and `explain` show them. The next `distill`
judges the touched domains again. Without --event-id a fresh one is generated
and printed; the same event id with the same record writes nothing. The actor
defaults to git's `user.name <user.email>` in a git repository, else the OS
user.")]
pub struct RetractArgs {
    /// The facts to retract (ids as `workmem facts` lists them)
    #[arg(value_name = "FACT_ID", required_unless_present = "entry")]
    pub fact_ids: Vec<String>,
    /// Retract every evidence fact of this entry (its key)
    #[arg(long, value_name = "ENTRY_KEY")]
    pub entry: Option<String>,
    /// Why these facts are wrong
    #[arg(long)]
    pub rationale: Option<String>,
    /// An id for this correction (makes retries safe) [default: a fresh
    /// `correction:` id, printed]
    #[arg(long)]
    pub event_id: Option<String>,
    /// Who retracts [default: git's `user.name <user.email>`, else the OS user]
    #[arg(long)]
    pub actor: Option<String>,
    /// When the correction was made (RFC 3339) [default: now]
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
}

/// Arguments of `workmem restore`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem history db.engine          # lists the corrections with their event ids
  workmem restore correction:8a2f01 --rationale 'it was right after all'

Each fact the retraction named counts again, unless another retraction still
names it, and goes back where it was. A redaction cannot be restored.")]
pub struct RestoreArgs {
    /// The event id of the retraction to undo
    pub restores: String,
    /// Why the retraction was wrong
    #[arg(long)]
    pub rationale: Option<String>,
    /// An id for this correction (makes retries safe) [default: a fresh
    /// `correction:` id, printed]
    #[arg(long)]
    pub event_id: Option<String>,
    /// Who restores [default: git's `user.name <user.email>`, else the OS user]
    #[arg(long)]
    pub actor: Option<String>,
    /// When the correction was made (RFC 3339) [default: now]
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
}

/// Runs `workmem retract`.
///
/// Errors: exit 2 for malformed input, an unknown fact id or entry key; 6
/// for an event id used by another record; 4 for corrupt state or a journal
/// this clone did not prepare; 5 for a record of another workspace.
pub fn run_retract(ctx: &Ctx, args: &RetractArgs) -> Result<(), CommandError> {
    for id in &args.fact_ids {
        refuse_placeholder("fact_id", id, "an id `workmem facts` lists")?;
    }
    let rationale = required_rationale(args.rationale.as_deref(), "why these facts are wrong")?;
    let recorded_at = parse_at(args.at.as_deref())?;
    let ws = ctx.workspace()?;
    let actor = args.actor.clone().unwrap_or_else(|| default_actor(ws.project()));
    let event_id = args.event_id.clone().unwrap_or_else(|| fresh(&ws));
    let result = ws.retract(Retraction {
        fact_ids: args.fact_ids.clone(),
        entry_key: args.entry.clone(),
        actor,
        rationale,
        event_id: event_id.clone(),
        recorded_at,
    });
    report(ctx, result, &event_id, args.event_id.is_none())
}

/// Runs `workmem restore`.
///
/// Errors: exit 2 for malformed input or an event id that names no
/// retraction in force (unknown, a redaction, a restore, already restored);
/// otherwise as `retract`.
pub fn run_restore(ctx: &Ctx, args: &RestoreArgs) -> Result<(), CommandError> {
    refuse_placeholder("event_id", &args.restores, "an event id `workmem history` lists")?;
    let rationale = required_rationale(args.rationale.as_deref(), "why the retraction was wrong")?;
    let recorded_at = parse_at(args.at.as_deref())?;
    let ws = ctx.workspace()?;
    let actor = args.actor.clone().unwrap_or_else(|| default_actor(ws.project()));
    let event_id = args.event_id.clone().unwrap_or_else(|| fresh(&ws));
    let result = ws.restore(Restoration {
        restores: args.restores.clone(),
        actor,
        rationale,
        event_id: event_id.clone(),
        recorded_at,
    });
    report(ctx, result, &event_id, args.event_id.is_none())
}

/// A fresh event id for a correction.
pub(crate) fn fresh(ws: &workmem::Workspace) -> String {
    let id = ws.fresh_event_id();
    format!("correction:{}", id.strip_prefix("review:").unwrap_or(&id))
}

pub(crate) fn required_rationale(given: Option<&str>, what: &str) -> Result<String, CommandError> {
    given.map(str::to_owned).ok_or_else(|| {
        CommandError::invalid("rationale", "is required")
            .hinted(format!("add --rationale '{what}'"))
    })
}

pub(crate) fn parse_at(text: Option<&str>) -> Result<Option<Stamp>, CommandError> {
    let Some(text) = text else { return Ok(None) };
    // The parse error quotes the text; a credential is never quoted.
    workmem::check_secret("at", text)?;
    Ok(Some(Stamp::parse_normalized(text).map_err(|msg| CommandError::invalid("at", msg))?))
}

/// Prints the correction record (JSON: the record itself) and, on stderr,
/// what changed and the distill that judges the touched domains again.
pub(crate) fn report(
    ctx: &Ctx,
    result: workmem::Result<Corrected>,
    event_id: &str,
    generated: bool,
) -> Result<(), CommandError> {
    let done = match result {
        Ok(done) => done,
        Err(err) => {
            let err = CommandError::from(err);
            if generated && err.exit_code() == 1 && !ctx.ui.is_json() {
                // An I/O failure may have recorded the correction or not: a
                // retry must reuse this id.
                ctx.ui.status(format!(
                    "this attempt used event id {event_id}: pass --event-id {event_id} to retry"
                ));
            }
            return Err(err);
        }
    };
    if ctx.ui.is_json() {
        return ctx.ui.json(&done.correction);
    }
    let c = &done.correction;
    let n = c.fact_ids.len();
    let what = match c.action {
        workmem::Action::Restore => {
            format!("restored {} ({n} fact{})", c.restores.as_deref().unwrap_or(""), plural(n))
        }
        workmem::Action::Retract | workmem::Action::Redact => format!(
            "{} {n} fact{}: {}",
            if c.action == workmem::Action::Redact { "redacted" } else { "retracted" },
            plural(n),
            c.fact_ids.iter().collect::<Vec<_>>().join(" ")
        ),
    };
    let events: Vec<&str> = c.event_ids.iter().flatten().collect();
    let what = match (events.is_empty(), n) {
        (true, _) => what,
        (false, 0) => format!("redacted the actor and rationale of {}", events.join(" ")),
        (false, _) => format!("{what}, and the actor and rationale of {}", events.join(" ")),
    };
    ctx.ui.line(format!("{what}; recorded as event {} by {}", c.event_id, c.actor))?;
    if done.already_recorded {
        ctx.ui.status("this event id was already recorded with this correction: nothing written");
        return Ok(());
    }
    if !done.entry_keys.is_empty() {
        ctx.ui.status(format!("entries changed: {}", done.entry_keys.join(" ")));
    }
    if !done.conflict_ids.is_empty() {
        ctx.ui.status(format!("conflict cases changed: {}", done.conflict_ids.join(" ")));
    }
    // A redaction of records alone changes no evidence: nothing to judge.
    if !done.memory_keys.is_empty() && !c.fact_ids.is_empty() {
        ctx.ui.status(format!(
            "run `workmem distill` to judge {} again",
            done.memory_keys.join(", ")
        ));
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
