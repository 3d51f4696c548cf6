//! `workmem verify`: a read-only check of every invariant of the durable
//! state and the journal. Opens the workspace without recovery and never
//! writes; unfinished work is reported, not finished. Exits 0 only when the
//! workspace is clean.

use clap::Args;
use serde::Serialize;
use workmem::Problem;

use crate::command_error::CommandError;
use crate::commands::Ctx;

/// Arguments of `workmem verify`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem verify
  workmem verify --json | jq '.problems[]'

Exit code 4 means at least one problem was found; each is listed with its
file and line.")]
pub struct VerifyArgs {}

/// `verify --json`.
///
/// ```json
/// {"ok": false, "problems": [{"file": ".../curated.json", "line": 12, "message": "..."}]}
/// ```
#[derive(Debug, Serialize)]
pub struct VerifyOutput<'a> {
    /// Whether no problem was found.
    pub ok: bool,
    /// Every problem found.
    pub problems: &'a [Problem],
}

/// Runs `workmem verify`.
///
/// Errors: exit 4 when any problem is found; I/O errors.
pub fn run(ctx: &Ctx, _args: &VerifyArgs) -> Result<(), CommandError> {
    // Not `ctx.workspace()`: opening that way recovers, which writes.
    let ws = ctx.workspace_read_only()?;
    let mut problems = ws.verify()?;
    // The library says what is wrong; the way out names a command.
    for problem in &mut problems {
        if let Some(way_out) = problem.damage.as_ref().and_then(workmem_hints::way_out) {
            problem.message = format!("{}; {way_out}", problem.message);
        }
    }
    // What only git can tell: memory files its attributes no longer route
    // to workmem's driver, which the next two-sided merge would corrupt.
    for (path, merge) in crate::git::misrouted(&ws).unwrap_or_default() {
        problems.push(Problem {
            file: path.display().to_string(),
            line: None,
            message: format!(
                "git's attributes merge this file with merge={merge}, not workmem's driver; {}",
                crate::git::REROUTE
            ),
            damage: None,
        });
    }
    // Records of another workspace under a pin: a branch may have changed
    // the pin; git names the commit to revert.
    if ws.is_pinned()
        && let Some(found) = problems.iter().find_map(|p| foreign_id(&p.message))
        && let Some(hint) = ctx.pin_change(found, ws.workspace_id())
    {
        let pin = workmem::pin_file(ws.project());
        let file = pin.display().to_string();
        problems.insert(0, Problem { file, line: None, message: hint, damage: None });
    }
    if ctx.ui.is_json() {
        ctx.ui.json(&VerifyOutput { ok: problems.is_empty(), problems: &problems })?;
    } else {
        for problem in &problems {
            match problem.line {
                Some(line) => {
                    ctx.ui.line(format!("{}:{line}: {}", problem.file, problem.message))?;
                }
                None => ctx.ui.line(format!("{}: {}", problem.file, problem.message))?,
            }
        }
    }
    if problems.is_empty() {
        ctx.ui.status(format!("ok: {} is consistent", ws.memory_dir().display()));
        return Ok(());
    }
    Err(CommandError::corrupt(format!("{} problem(s) found", problems.len())))
}

/// Returns the workspace id a problem says a record belongs to, when it is
/// a record of another workspace (`belongs to workspace ID, ...`).
fn foreign_id(message: &str) -> Option<&str> {
    let rest = message.split_once("belongs to workspace ")?.1;
    let id = rest.get(..16)?;
    id.bytes().all(|b| b.is_ascii_hexdigit()).then_some(id)
}
