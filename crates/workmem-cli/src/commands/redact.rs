//! `workmem redact`: a person removes facts' text from every file of the
//! memory directory (docs/corrections.md, "Redact"), for a credential or
//! anything else that must not be stored. A trusted entry point; no model
//! tool can reach it. At a terminal it shows what it will rewrite and asks
//! first; `--yes` confirms for scripts.

use std::io::{self, BufRead, IsTerminal};

use clap::Args;
use workmem::{Redaction, RedactionPreview};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::commands::resolve::{default_actor, refuse_placeholder};
use crate::commands::retract::{fresh, parse_at, report, required_rationale};

/// Arguments of `workmem redact`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem scan                                   # names the facts holding a credential
  workmem redact --scan --rationale 'a deploy token was pasted into a fact'
  workmem redact 5f0c1f7e2c4b4f7e9a0d3b6c8e1f2a4d --rationale 'holds a password' --yes
  workmem redact --event review:db-engine --rationale 'a token in the rationale' --yes

Each fact's line in its daily file becomes a tombstone (its ids, kind, key and
time kept; its text gone), every entry and conflict candidate worded by it
holds `[redacted]` instead, every cache is removed, and the facts stop
counting for good: a redaction cannot be restored. Another fact holding the
same text (in another case or spacing) must be named too, or the redaction is
refused. With --event, a decision's or correction's actor and rationale (and
the case's copies of a decision's) hold `[redacted]` instead; the decision or
correction itself stands. At a terminal the command lists what it will rewrite and asks; without
a terminal it needs --yes.

The text stays in git history and in every clone that has it: commit the
redaction, purge the history (docs/corrections.md says how), and rotate a
credential that was stored, whatever else is done.")]
pub struct RedactArgs {
    /// The facts to redact (ids as `workmem facts --all` lists them)
    #[arg(
        value_name = "FACT_ID",
        required_unless_present_any = ["scan", "events"],
        conflicts_with = "scan"
    )]
    pub fact_ids: Vec<String>,
    /// A decision or correction whose actor and rationale to redact (its
    /// event id, as `workmem history` shows it); repeatable
    #[arg(long = "event", value_name = "EVENT_ID", conflicts_with = "scan")]
    pub events: Vec<String>,
    /// Redact every fact, decision and correction `workmem scan` reports
    /// holding a credential
    #[arg(long)]
    pub scan: bool,
    /// Why the text must go
    #[arg(long)]
    pub rationale: Option<String>,
    /// Do not ask (scripts; required without a terminal)
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// An id for this correction (makes retries safe) [default: a fresh
    /// `correction:` id, printed]
    #[arg(long)]
    pub event_id: Option<String>,
    /// Who redacts [default: git's `user.name <user.email>`, else the OS user]
    #[arg(long)]
    pub actor: Option<String>,
    /// When the correction was made (RFC 3339) [default: now]
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
}

/// Runs `workmem redact`.
///
/// Errors: exit 2 for malformed input, an unknown fact, a fact redacted
/// already, another fact holding the same text, no confirmation, or a
/// credential `--scan` cannot remove; 6 for an event id used by another
/// record; 4 for corrupt state; 5 for a record of another workspace.
pub fn run(ctx: &Ctx, args: &RedactArgs) -> Result<(), CommandError> {
    for id in &args.fact_ids {
        refuse_placeholder("fact_id", id, "an id `workmem facts --all` lists")?;
    }
    let rationale = required_rationale(args.rationale.as_deref(), "why the text must go")?;
    let recorded_at = parse_at(args.at.as_deref())?;
    for id in &args.events {
        refuse_placeholder("event_id", id, "an event id `workmem history` shows")?;
    }
    let ws = ctx.workspace()?;
    let (fact_ids, event_ids) = if args.scan {
        let found = scanned(&ws)?;
        (found.fact_ids, found.event_ids)
    } else {
        (args.fact_ids.clone(), args.events.clone())
    };
    if fact_ids.is_empty() && event_ids.is_empty() {
        ctx.ui.status(format!("ok: no record holds a credential in {}", ws.memory_dir().display()));
        return Ok(());
    }
    let actor = args.actor.clone().unwrap_or_else(|| default_actor(ws.project()));
    let event_id = args.event_id.clone().unwrap_or_else(|| fresh(&ws));
    let request = Redaction {
        fact_ids,
        event_ids,
        actor,
        rationale,
        event_id: event_id.clone(),
        recorded_at,
    };
    if !args.yes {
        let preview = ws.preview_redaction(&request)?;
        if !confirmed(ctx, &preview)? {
            return Err(CommandError::usage("redaction cancelled: nothing was written"));
        }
    }
    let result = ws.redact(request);
    let redacted = result.is_ok();
    report(ctx, result, &event_id, args.event_id.is_none())?;
    if redacted && args.scan {
        // The derived copies went with the facts and records; a credential
        // still found was in no fact or record.
        let left = ws.scan()?.findings;
        if !left.is_empty() {
            return Err(CommandError::invalid(
                "scan",
                format!(
                    "redacted, but a credential is still in a file and in no fact or record: {}",
                    places(&left)
                ),
            )
            .hinted(
                "edit those lines by hand (then run `workmem verify`), and rotate the credential",
            ));
        }
    }
    if redacted {
        ctx.ui.status(
            "the text stays in git history and in other clones: commit this, purge the history \
             (see docs/corrections.md), and rotate a credential that was stored",
        );
    }
    Ok(())
}

/// The facts, decisions and corrections `workmem scan` reports holding a
/// credential in a field a redaction removes.
///
/// Errors: exit 2 for a credential a redaction does not remove (an id, a
/// line that is not a record, the journal), or found only in a derived
/// file.
fn scanned(ws: &workmem::Workspace) -> Result<workmem::ScanRedaction, CommandError> {
    let found = ws.scan()?.redaction();
    let mut refused = found.elsewhere.clone();
    if found.fact_ids.is_empty() && found.event_ids.is_empty() {
        refused.extend(found.copies.iter().cloned());
    }
    if !refused.is_empty() {
        return Err(CommandError::invalid(
            "scan",
            format!(
                "a credential is where a redaction does not remove it (an id, a line that is \
                 not a record, or a file that holds no fact or record of it): {}",
                places(&refused)
            ),
        )
        .hinted(
            "edit those lines by hand (then run `workmem verify`), and rotate the credential",
        ));
    }
    Ok(found)
}

/// The places of `findings`, for a message: file, line, record and field.
fn places(findings: &[workmem::Finding]) -> String {
    let place = |finding: &workmem::Finding| {
        let line = finding.line.map(|l| format!(":{l}")).unwrap_or_default();
        let record = finding.record.as_deref().unwrap_or("");
        format!("{}{line} {record} {}", finding.file, finding.field)
    };
    findings.iter().map(place).collect::<Vec<_>>().join("; ")
}

/// Shows what the redaction rewrites and asks; without a terminal (or
/// with `--json`) refuses, since nothing can be asked.
fn confirmed(ctx: &Ctx, preview: &RedactionPreview) -> Result<bool, CommandError> {
    if ctx.ui.is_json() || !io::stdin().is_terminal() {
        return Err(CommandError::usage(
            "redact rewrites the memory's files and cannot be undone: confirm with --yes",
        ));
    }
    let n = preview.fact_ids.len();
    if n > 0 {
        eprintln!(
            "workmem redact will remove the text of {n} fact(s): {}",
            preview.fact_ids.join(" ")
        );
    }
    if !preview.event_ids.is_empty() {
        eprintln!(
            "workmem redact will remove the actor and rationale of {} record(s): {}",
            preview.event_ids.len(),
            preview.event_ids.join(" ")
        );
    }
    for file in &preview.files {
        eprintln!("  rewrite {}", file.display());
    }
    if !preview.entry_keys.is_empty() {
        eprintln!("  entries changed: {}", preview.entry_keys.join(" "));
    }
    if !preview.conflict_ids.is_empty() {
        eprintln!("  conflict cases changed: {}", preview.conflict_ids.join(" "));
    }
    eprintln!("  and every cache removed. A redaction cannot be restored.");
    eprint!("redact? [y/N] ");
    let mut answer = String::new();
    io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|err| CommandError::io("reading the answer", &err))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}
