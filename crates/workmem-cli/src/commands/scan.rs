//! `workmem scan`: looks for credentials already stored in the memory
//! directory (a cloned repository's memory, or one written before the guard
//! knew a format) and lists where they are, never what they are. Opens the
//! workspace read-only, without recovery and without its configuration
//! (a hostile configuration file must not stop the check), and never
//! writes. Exits 0 only when nothing is found and every file was read.

use clap::Args;
use serde::Serialize;
use workmem::{Finding, Problem};

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem scan`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem scan
  workmem -C ~/src/cloned-repo scan
  workmem scan --json | jq -r '.findings[] | \"\\(.file):\\(.line) \\(.field): \\(.kind)\"'

Each finding names the file, the line, the record (fact id, event id, entry
key or conflict id), the field and the kind of credential; never the value.
Files need not be valid: a line that is not JSON is checked as text.

Exit codes: 0 nothing found; 1 at least one credential found; 4 a file could
not be read (a symlink, a FIFO), so the memory is not known to be clean.")]
pub struct ScanArgs {}

/// `scan --json`.
///
/// ```json
/// {"findings": [{"file": ".../daily/2026-01-05.jsonl", "line": 3, "fact_id": "f-17",
///   "record": "fact f-17", "field": "content", "kind": "GitHub token"}], "unreadable": []}
/// ```
#[derive(Debug, Serialize)]
pub struct ScanOutput<'a> {
    /// Every credential found.
    pub findings: &'a [Finding],
    /// Files that could not be read, with the reason.
    pub unreadable: &'a [Problem],
}

/// Runs `workmem scan`.
///
/// Errors: exit 1 when a credential is found, 4 when a file could not be
/// read, and the usual errors of opening a workspace.
pub fn run(ctx: &Ctx, _args: &ScanArgs) -> Result<(), CommandError> {
    let ws = ctx.workspace_unconfigured_read_only()?;
    let scan = ws.scan()?;
    if ctx.ui.is_json() {
        ctx.ui.json(&ScanOutput { findings: &scan.findings, unreadable: &scan.unreadable })?;
    } else {
        for finding in &scan.findings {
            let line = finding.line.map(|l| format!(":{l}")).unwrap_or_default();
            let record = finding.record.as_deref().map(|r| format!(" {r}")).unwrap_or_default();
            ctx.ui.line(format_args!(
                "{}{line}:{record} {}: {}",
                finding.file, finding.field, finding.kind
            ))?;
        }
        for problem in &scan.unreadable {
            ctx.ui.status(format_args!("warning: {}: {}", problem.file, problem.message));
        }
    }
    if !scan.findings.is_empty() {
        let n = scan.findings.len();
        return Err(CommandError::found(format!(
            "{n} credential{} found in {}",
            if n == 1 { "" } else { "s" },
            ws.memory_dir().display()
        ))
        .hinted(
            "remove them with `workmem redact --scan --rationale TEXT` (and from git history if \
             the memory was committed, see docs/corrections.md), then rotate them: a credential \
             that was stored is exposed",
        ));
    }
    if !scan.unreadable.is_empty() {
        return Err(CommandError::corrupt(format!(
            "{} file(s) could not be scanned",
            scan.unreadable.len()
        )));
    }
    ctx.ui.status(format!("ok: no credentials found in {}", ws.memory_dir().display()));
    Ok(())
}
