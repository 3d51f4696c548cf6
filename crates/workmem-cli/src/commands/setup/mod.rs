//! `workmem setup CLIENT`: wires workmem into an agent client (Claude Code,
//! Codex CLI, Cursor, VS Code, Gemini CLI): the MCP server entry, a
//! session-start hook printing the context where the client has hooks,
//! and a managed block in its instruction file (docs/agents.md).
//!
//! Every file is planned before any is written: a file that does not
//! parse stops the command with nothing written. `--print` shows the plan
//! as a unified diff and writes nothing; `--remove` takes out exactly what
//! `setup` put in; `--check` reports, for each client found, whether
//! workmem is configured and whether the server it names starts and lists
//! its tools. This module only edits client files: it never opens the
//! memory.

mod block;
mod check;
mod clients;
mod edit;
mod format;
mod json;
mod toml;

use std::path::{Path, PathBuf};

use clap::Args;

use self::clients::{Client, Places, Scope};
use self::edit::{Action, Change, FileError, FileErrorKind};
use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::{SetupFile, SetupOutput};

/// Arguments of `workmem setup`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  workmem setup claude-code            # .mcp.json, .claude/settings.json hook, CLAUDE.md block
  workmem setup codex --scope user     # ~/.codex/config.toml, hooks.json, AGENTS.md
  workmem setup cursor --print         # the diff it would apply; writes nothing
  workmem setup gemini --remove        # takes out exactly what setup wrote
  workmem setup --check                # every client found: configured? starts? tools?
  workmem setup vscode --json          # {\"client\", \"scope\", \"files\": [{\"path\", \"action\"}]}

Clients: claude-code, codex, cursor, vscode (Copilot agent mode), gemini.
Re-running changes nothing; a file that cannot be parsed is left untouched.")]
pub struct SetupArgs {
    /// The client to set up (all clients found, with --check)
    #[arg(value_enum, required_unless_present = "check")]
    pub client: Option<Client>,
    /// Write the project's files (to commit) or your own (every project)
    /// [default: project; --check: both]
    #[arg(long, value_enum)]
    pub scope: Option<Scope>,
    /// Print what would change as a unified diff; write nothing
    #[arg(long)]
    pub print: bool,
    /// Take out what setup wrote, leaving everything else as it was
    #[arg(long, conflicts_with = "check")]
    pub remove: bool,
    /// Check each client found: configured, binary present, server starts
    #[arg(long, conflicts_with = "print")]
    pub check: bool,
}

/// What one run of `setup` did (or, with `--print`, would do).
struct Outcome {
    client: Client,
    scope: Scope,
    changes: Vec<Change>,
    /// What the user should know, printed on stderr.
    notes: Vec<String>,
}

/// Runs `workmem setup`.
///
/// Errors: usage error for a file that cannot be parsed or holds the wrong
/// shape (nothing is written then); I/O errors; with `--check`, exit 1
/// when a configured server cannot be found or started.
pub fn run(ctx: &Ctx, args: &SetupArgs) -> Result<(), CommandError> {
    let places = places(ctx)?;
    if args.check {
        return check::run(ctx, &places, args.client, args.scope);
    }
    // clap requires a client unless --check.
    let Some(client) = args.client else {
        return Err(CommandError::usage("setup needs a client (or --check)"));
    };
    let scope = args.scope.unwrap_or(Scope::Project);
    let plan = clients::plan(client, scope, &places);
    let changes = plan
        .files
        .iter()
        .map(|file| if args.remove { file.remove() } else { file.setup() })
        .collect::<Result<Vec<Change>, FileError>>()
        .map_err(|err| file_error(&err, client, args.remove))?;

    if !args.print {
        let stop = if scope == Scope::Project { &places.project } else { &places.home };
        for change in changes.iter().filter(|c| c.action() != Action::Unchanged) {
            edit::write(change, stop).map_err(|(path, err)| {
                CommandError::io(format_args!("cannot write {}", path.display()), &err)
            })?;
        }
    }
    let mut notes = if args.remove { Vec::new() } else { plan.notes };
    if !args.remove && which("workmem").is_none() {
        notes.push(format!(
            "`workmem` is not on PATH: the client starts it by that name; put the binary ({}) in a \
             directory on PATH (e.g. `cargo install --path crates/workmem-cli`)",
            std::env::current_exe()
                .map_or_else(|_| "workmem".to_owned(), |p| p.display().to_string())
        ));
    }
    report(ctx, &places, &Outcome { client, scope, changes, notes }, args.print)
}

/// Prints the outcome: the diff with `print`, else one line per file,
/// then the notes on stderr.
fn report(ctx: &Ctx, places: &Places, outcome: &Outcome, print: bool) -> Result<(), CommandError> {
    let Outcome { client, scope, changes, notes } = outcome;
    if ctx.ui.is_json() {
        let files = changes
            .iter()
            .map(|c| SetupFile {
                path: c.path.clone(),
                action: c.action().name(),
                diff: print.then(|| c.diff(&shown(&c.path, places))),
            })
            .collect();
        return ctx.ui.json(&SetupOutput {
            client: client.name(),
            scope: scope.name(),
            files,
            notes,
        });
    }
    if print {
        let diff: String = changes.iter().map(|c| c.diff(&shown(&c.path, places))).collect();
        if diff.is_empty() {
            ctx.ui.status(format_args!(
                "{} ({} scope): nothing to change",
                client.name(),
                scope.name()
            ));
        } else {
            ctx.ui.text(&diff)?;
        }
        return Ok(());
    }
    let verb = |action| match action {
        Action::Create => "created  ",
        Action::Update => "updated  ",
        Action::Delete => "deleted  ",
        Action::Unchanged => "unchanged",
    };
    let mut lines = vec![format!("{} ({} scope)", client.name(), scope.name())];
    lines.extend(
        changes.iter().map(|c| format!("  {} {}", verb(c.action()), shown(&c.path, places))),
    );
    ctx.ui.lines(lines)?;
    for note in notes {
        ctx.ui.status(format_args!("note: {note}"));
    }
    Ok(())
}

/// Returns the places of the plans: the project (canonical) and the home
/// directories.
fn places(ctx: &Ctx) -> Result<Places, CommandError> {
    let project = std::fs::canonicalize(&ctx.project).map_err(|err| {
        CommandError::io(
            format_args!("cannot read project directory {}", ctx.project.display()),
            &err,
        )
    })?;
    Places::from_env(project).ok_or_else(|| {
        CommandError::usage("cannot tell your home directory: HOME is not set")
            .hinted("set HOME to the directory holding your client settings")
    })
}

/// Returns `path` relative to the project, or under `~`, for display.
fn shown(path: &Path, places: &Places) -> String {
    if let Ok(rest) = path.strip_prefix(&places.project) {
        return rest.display().to_string();
    }
    if let Ok(rest) = path.strip_prefix(&places.home) {
        return format!("~/{}", rest.display());
    }
    path.display().to_string()
}

/// Returns the error of a file that could not be planned: which file, what
/// is wrong with it, and the way out.
fn file_error(err: &FileError, client: Client, remove: bool) -> CommandError {
    let path = err.path.display();
    let verb = if remove { "remove workmem from" } else { "set up" };
    match &err.kind {
        FileErrorKind::Read(io) => {
            CommandError::io(format_args!("cannot read {path}"), io).hinted("nothing was written")
        }
        FileErrorKind::NotText => CommandError::usage(format!("{path} is not UTF-8 text"))
            .hinted("nothing was written; check that this is the client's configuration file"),
        FileErrorKind::Edit(edit) => CommandError::usage(format!(
            "cannot {verb} {}: {path}: {edit}",
            client.name()
        ))
        .hinted(format!(
            "nothing was written; fix {path} (or move it aside) and run `workmem setup {}` again",
            client.name()
        )),
    }
}

/// Returns the first file named `program` in a directory of `PATH`.
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        let candidate = dir.join(program);
        candidate.metadata().is_ok_and(|m| m.is_file()).then_some(candidate).or_else(|| {
            cfg!(windows).then(|| dir.join(format!("{program}.exe"))).filter(|p| p.is_file())
        })
    })
}
