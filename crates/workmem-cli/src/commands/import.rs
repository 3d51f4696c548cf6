//! `workmem import`: appends facts from JSONL (a file or stdin), all or
//! nothing: every line is parsed and every fact validated before the first
//! byte is written. Errors name the 1-based input line.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use clap::Args;
use workmem::NewFact;

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::ImportOutput;

/// Arguments of `workmem import`.
#[derive(Debug, Args)]
#[command(after_help = "Each line is one JSON object with the fields of `remember`:
  content, kind, importance, memory_key, source, evidence, recorded_at, fact_id
Blank lines are skipped. Missing fields take the defaults of the library (source: agent).
A line without fact_id gets an id derived from the line itself, so running an
interrupted import again appends only what is missing.

Examples:
  workmem import facts.jsonl
  echo '{\"content\": \"Use WAL mode\", \"kind\": \"decision\", \"importance\": 4}' | workmem import -
  workmem import facts.jsonl --json   # {\"imported\": 120, \"already_present\": 0}")]
pub struct ImportArgs {
    /// JSONL file to read; `-` or nothing reads stdin
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// Runs `workmem import`.
///
/// Errors: invalid input naming the line (exit 2, nothing written), I/O
/// errors.
pub fn run(ctx: &Ctx, args: &ImportArgs) -> Result<(), CommandError> {
    let (label, data) = read_input(args.file.as_ref())?;
    let (items, lines) = parse(&data, &label)?;
    let total = items.len();
    let ws = ctx.workspace()?;
    let (imported, already_present) = if total == 0 {
        (0, 0)
    } else {
        let progress = ctx.ui.shows_progress();
        let mut report = |done: usize| {
            if progress {
                // Progress is decoration; a failing stderr must not stop the import.
                let _ = write!(io::stderr().lock(), "\rimported {done}/{total} facts");
            }
        };
        let result = ws.import(items, &mut report);
        if progress {
            let _ = writeln!(io::stderr().lock());
        }
        let result = result.map_err(|err| relabel(err, &lines, &label))?;
        (result.facts.len(), result.already_present)
    };
    if ctx.ui.is_json() {
        return ctx.ui.json(&ImportOutput { imported, already_present });
    }
    if ctx.ui.is_quiet() {
        return ctx.ui.line(imported);
    }
    let noun = if imported == 1 { "fact" } else { "facts" };
    ctx.ui.line(format_args!("imported {imported} {noun}"))?;
    if already_present > 0 {
        ctx.ui.status(format_args!(
            "{already_present} already present (stored by an earlier run; skipped)"
        ));
    }
    Ok(())
}

/// Returns a label for messages and the whole input.
fn read_input(file: Option<&PathBuf>) -> Result<(String, Vec<u8>), CommandError> {
    let mut data = Vec::new();
    match file {
        Some(path) if path.as_os_str() != "-" => {
            // A path that names no readable file is not repeated: it may
            // be a credential passed in the wrong place.
            let data = std::fs::read(path)
                .map_err(|err| CommandError::io("cannot read the FILE given to import", &err))?;
            Ok((path.display().to_string(), data))
        }
        _ => {
            io::stdin()
                .lock()
                .read_to_end(&mut data)
                .map_err(|err| CommandError::io("stdin", &err))?;
            Ok(("stdin".to_owned(), data))
        }
    }
}

/// Parses every non-blank line; returns the items and the 1-based line of
/// each.
fn parse(data: &[u8], label: &str) -> Result<(Vec<NewFact>, Vec<usize>), CommandError> {
    let mut items = Vec::new();
    let mut lines = Vec::new();
    for (index, line) in data.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let number = index + 1;
        let item: NewFact = serde_json::from_slice(line).map_err(|err| {
            // serde's position is within the line; the line is ours to name.
            let text = err.to_string();
            let text = text.rsplit_once(" at line ").map_or(text.as_str(), |(head, _)| head);
            // serde quotes the offending value or field name; a
            // credential is named by its kind instead.
            let hidden;
            let text = match workmem::find_secret(text) {
                Some(kind) => {
                    hidden = format!(
                        "not a fact object; the value it complains about looks like it contains a secret \
                         ({kind}) and is not shown"
                    );
                    hidden.as_str()
                }
                None => text,
            };
            CommandError::invalid(
                &format!("line {number} of {label}"),
                format_args!("column {}: {text}", err.column()),
            )
            .hinted("each line must be one JSON object with the fields of `workmem remember`")
        })?;
        items.push(item);
        lines.push(number);
    }
    Ok((items, lines))
}

/// Names the input line of an invalid item: `<field> on line L of <input>`.
fn relabel(err: workmem::Error, lines: &[usize], label: &str) -> CommandError {
    if let workmem::Error::InvalidInput { field, item: Some(item), reason } = &err
        && let Some(line) = item.checked_sub(1).and_then(|k| lines.get(k))
    {
        return CommandError::from_invalid(&format!("{field} on line {line} of {label}"), reason);
    }
    err.into()
}
