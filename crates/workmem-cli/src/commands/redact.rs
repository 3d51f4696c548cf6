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

Each fact's line in its daily file becomes a tombstone (its ids, kind, key and
time kept; its text gone), every entry and conflict candidate worded by it
holds `[redacted]` instead, every cache is removed, and the facts stop
counting for good: a redaction cannot be restored. Another fact holding the
same text (in another case or spacing) must be named too, or the redaction is
refused. At a terminal the command lists what it will rewrite and asks; without
a terminal it needs --yes.

The text stays in git history and in every clone that has it: commit the
redaction, purge the history (docs/corrections.md says how), and rotate a
credential that was stored, whatever else is done.")]
pub struct RedactArgs {
    /// The facts to redact (ids as `workmem facts --all` lists them)
    #[arg(value_name = "FACT_ID", required_unless_present = "scan", conflicts_with = "scan")]
    pub fact_ids: Vec<String>,
    /// Redact every fact `workmem scan` reports holding a credential
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
    let ws = ctx.workspace()?;
    let fact_ids = if args.scan { scanned(&ws)? } else { args.fact_ids.clone() };
    if fact_ids.is_empty() {
        ctx.ui.status(format!("ok: no fact holds a credential in {}", ws.memory_dir().display()));
        return Ok(());
    }
    let actor = args.actor.clone().unwrap_or_else(|| default_actor(ws.project()));
    let event_id = args.event_id.clone().unwrap_or_else(|| fresh(&ws));
    let request = Redaction { fact_ids, actor, rationale, event_id: event_id.clone(), recorded_at };
    if !args.yes {
        let preview = ws.preview_redaction(&request)?;
        if !confirmed(ctx, &preview)? {
            return Err(CommandError::usage("redaction cancelled: nothing was written"));
        }
    }
    let result = ws.redact(request);
    let redacted = result.is_ok();
    report(ctx, result, &event_id, args.event_id.is_none())?;
    if redacted {
        ctx.ui.status(
            "the text stays in git history and in other clones: commit this, purge the history \
             (see docs/corrections.md), and rotate a credential that was stored",
        );
    }
    Ok(())
}

/// The facts `workmem scan` reports holding a credential in a field a
/// redaction removes.
///
/// Errors: exit 2 for a credential in a memory key, or in a record that is
/// not a fact, which a redaction does not rewrite.
fn scanned(ws: &workmem::Workspace) -> Result<Vec<String>, CommandError> {
    let scan = ws.scan()?;
    let mut ids = Vec::new();
    let mut elsewhere = Vec::new();
    for finding in &scan.findings {
        match &finding.fact_id {
            Some(id) if finding.field != "memory_key" => ids.push(id.clone()),
            _ => {
                let line = finding.line.map(|l| format!(":{l}")).unwrap_or_default();
                let record = finding.record.as_deref().unwrap_or("");
                elsewhere.push(format!("{}{line} {record} {}", finding.file, finding.field));
            }
        }
    }
    if !elsewhere.is_empty() {
        return Err(CommandError::invalid(
            "scan",
            format!(
                "a credential is where a redaction cannot remove it yet (a memory key, or a \
                 record that is not a fact): {}",
                elsewhere.join("; ")
            ),
        )
        .hinted(
            "edit those lines by hand (then run `workmem verify`), and rotate the credential",
        ));
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
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
    eprintln!("workmem redact will remove the text of {n} fact(s): {}", preview.fact_ids.join(" "));
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
