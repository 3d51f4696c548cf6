//! `workmem chat`: the interactive agent of docs/cli.md on the
//! Anthropic Messages API, as a REPL.
//!
//! Configuration comes from the environment, then from `<project>/.env`
//! (the environment wins). On a terminal the REPL has line editing and
//! history (rustyline) and Ctrl-C cancels the running request or command,
//! not the program (a second Ctrl-C while one is pending exits). With piped
//! stdin it reads lines until EOF and prints no prompt. The model's text
//! goes to stdout; what its tools run, retries and status go to stderr.
//! Slash commands reuse the other commands' printing; `/resolve` is the
//! human adjudication path, which no model tool can reach.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Args;
use serde_json::Value;
use workmem::DistillOptions;
use workmem_agent::settings::{self, parse_dotenv};
use workmem_agent::{
    Agent, AgentError, AgentOptions, Cancel, ClientError, Events, HttpClient, RetryNotice,
    RetryPolicy, Settings, SettingsError, ToolOutput,
};

use crate::command_error::CommandError;
use crate::commands::{Ctx, conflicts, distill, facts, logs, memory, resolve};

/// The prompt shown on a terminal.
pub const PROMPT: &str = "workmem> ";

const SLASH_HELP: &str = "\
/memory      print MEMORY.md
/today       list today's facts (UTC)
/logs        list the daily logs
/distill     run the promotion policy now
/conflicts   list open conflict cases
/resolve CONFLICT_ID CANDIDATE --revision N --rationale TEXT
             decide a conflict case (you, not the model), as `workmem resolve`;
             also /resolve CONFLICT_ID CANDIDATE N RATIONALE...
/reset       forget the conversation (the memory is kept)
/quit        leave (also Ctrl-D)";

/// Arguments of `workmem chat`.
#[derive(Debug, Args)]
#[command(after_help = "Environment (also read from <project>/.env; the environment wins):
  MODEL_ID            the model to talk to (required)
  ANTHROPIC_API_KEY   the API key (required)
  ANTHROPIC_BASE_URL  the API endpoint [default: https://api.anthropic.com]
  WORKMEM_MAX_TOKENS  reply token budget, 1 to 1000000 [default: 4096]

Slash commands:
  /memory /today /logs /distill /conflicts /reset /quit
  /resolve CONFLICT_ID CANDIDATE --revision N --rationale TEXT (as `workmem resolve`;
           or positional: /resolve CONFLICT_ID CANDIDATE N RATIONALE...)

The model has two tools: bash (runs in the project, 120 s timeout, output
capped, destructive commands refused) and write_memory (source model_tool).
It cannot resolve conflicts: only you can, with /resolve.

Examples:
  MODEL_ID=claude-sonnet-4-5 workmem chat
  echo 'What do we know about the build?' | workmem chat")]
pub struct ChatArgs {}

/// Runs `workmem chat`.
///
/// Errors: usage error (exit 2) for missing or invalid configuration or
/// `--json`; with piped stdin, a failed model call ends the session (exit
/// 1); library errors opening the workspace.
pub fn run(ctx: &Ctx, _args: &ChatArgs) -> Result<(), CommandError> {
    if ctx.ui.is_json() {
        return Err(CommandError::usage("chat has no JSON output")
            .hinted("run `workmem chat` without --json"));
    }
    let settings = load_settings(&ctx.project)?;
    let workspace = ctx.workspace()?;
    let client =
        HttpClient::new(settings.messages_url(), settings.api_key.clone(), RetryPolicy::default());
    let mut agent = Agent::new(
        client,
        workspace,
        AgentOptions::new(settings.model.clone(), settings.max_tokens),
    );
    let cancel = install_interrupt()?;
    let interactive = io::stdin().is_terminal();
    let mut input = if interactive {
        ctx.ui.status(format!(
            "workmem chat: {} at {} on {}\ntype /help for commands, /quit or Ctrl-D to leave; Ctrl-C cancels a \
             running request",
            settings.model,
            settings.base_url,
            agent.workspace().project().display()
        ));
        let editor = rustyline::DefaultEditor::new().map_err(|err| {
            CommandError::io("cannot start the line editor", &io::Error::other(err.to_string()))
        })?;
        Input::Terminal(Box::new(editor))
    } else {
        Input::Piped(io::stdin().lock())
    };
    let mut printer = Printer { interactive };
    while let Some(line) = input.next_line()? {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(command) = line.strip_prefix('/') {
            match slash(ctx, &mut agent, command) {
                Flow::Quit => break,
                Flow::Continue => continue,
            }
        }
        cancel.reset();
        let outcome = agent.turn(line, &mut printer, &cancel);
        cancel.reset();
        match outcome {
            Ok(_) => {
                if interactive {
                    println!();
                }
            }
            Err(AgentError::Cancelled) => {
                ctx.ui.status("cancelled; this turn was dropped from the conversation");
            }
            Err(err) => {
                let err = turn_error(err);
                if !interactive {
                    return Err(err);
                }
                err.report(false);
            }
        }
    }
    Ok(())
}

/// Returns the settings from the environment and `<project>/.env`.
///
/// A base URL from `.env` is used only when the key comes from the same
/// file: a cloned repository must not be able to send the user's own key
/// to an endpoint of its choosing.
///
/// Errors: usage errors naming the variable; I/O errors reading `.env`.
fn load_settings(project: &Path) -> Result<Settings, CommandError> {
    let path = project.join(".env");
    let dotenv = match std::fs::read_to_string(&path) {
        Ok(text) => parse_dotenv(&text),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Default::default(),
        Err(err) => return Err(CommandError::io(format!("cannot read {}", path.display()), &err)),
    };
    let from_env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let from_file = |name: &str| dotenv.get(name).filter(|v| !v.trim().is_empty()).cloned();
    if from_env(settings::BASE_URL_VAR).is_none()
        && from_file(settings::BASE_URL_VAR).is_some()
        && from_env(settings::API_KEY_VAR).is_some()
    {
        return Err(CommandError::usage(format!(
            "{} sets {} but the API key comes from the environment",
            path.display(),
            settings::BASE_URL_VAR
        ))
        .hinted(format!(
            "a project's .env may not redirect your own key: set {} in the environment, or put the key in the \
             same .env",
            settings::BASE_URL_VAR
        )));
    }
    Settings::from_lookup(|name| from_env(name).or_else(|| from_file(name))).map_err(|err| {
        let hint = match &err {
            SettingsError::Missing { name } if *name == settings::MODEL_VAR => {
                format!(
                    "set MODEL_ID in the environment or in {}, e.g. MODEL_ID=claude-sonnet-4-5",
                    path.display()
                )
            }
            SettingsError::Missing { name } => {
                format!("set {name} in the environment or in {}", path.display())
            }
            _ => "see `workmem chat --help` for the variables".to_owned(),
        };
        CommandError::usage(err.to_string()).hinted(hint)
    })
}

/// Returns the cancel flag that Ctrl-C sets. While it is set, a second
/// Ctrl-C exits with 130.
///
/// Errors: I/O error when the handler cannot be installed.
fn install_interrupt() -> Result<Cancel, CommandError> {
    let flag = Arc::new(AtomicBool::new(false));
    let sigint = signal_hook::consts::SIGINT;
    // Registered first, so it sees the flag as the previous Ctrl-C left it.
    signal_hook::flag::register_conditional_shutdown(sigint, 130, Arc::clone(&flag))
        .and_then(|_| signal_hook::flag::register(sigint, Arc::clone(&flag)))
        .map_err(|err| CommandError::io("cannot install the Ctrl-C handler", &err))?;
    Ok(Cancel::from_flag(flag))
}

/// Where lines come from.
enum Input {
    Terminal(Box<rustyline::DefaultEditor>),
    Piped(io::StdinLock<'static>),
}

impl Input {
    /// Returns the next line, `None` at the end.
    fn next_line(&mut self) -> Result<Option<String>, CommandError> {
        match self {
            Input::Terminal(editor) => loop {
                match editor.readline(PROMPT) {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            // History is a convenience; a failure to add is harmless.
                            let _ = editor.add_history_entry(line.as_str());
                        }
                        return Ok(Some(line));
                    }
                    // Ctrl-C at the prompt drops the line, like a shell.
                    Err(rustyline::error::ReadlineError::Interrupted) => {}
                    Err(rustyline::error::ReadlineError::Eof) => return Ok(None),
                    Err(err) => {
                        return Err(CommandError::io(
                            "cannot read input",
                            &io::Error::other(err.to_string()),
                        ));
                    }
                }
            },
            Input::Piped(stdin) => {
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) => Ok(None),
                    Ok(_) => Ok(Some(line)),
                    Err(err) => Err(CommandError::io("cannot read stdin", &err)),
                }
            }
        }
    }
}

enum Flow {
    Continue,
    Quit,
}

/// Runs one slash command (without its `/`); errors are reported and the
/// session goes on.
fn slash<C: workmem_agent::MessagesClient>(ctx: &Ctx, agent: &mut Agent<C>, command: &str) -> Flow {
    let (name, rest) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
    let result = match name {
        "quit" | "exit" | "q" => return Flow::Quit,
        "memory" => memory::run(ctx, &memory::MemoryArgs {}),
        "today" => {
            facts::run(ctx, &facts::FactsArgs { day: None, all: false, recent: None, key: None })
        }
        "logs" => logs::run(ctx, &logs::LogsArgs {}),
        "distill" => distill_now(ctx),
        "conflicts" => {
            conflicts::run(ctx, &conflicts::ConflictsArgs { status: conflicts::StatusFilter::Open })
        }
        "resolve" => resolve_args(rest).and_then(|args| resolve::run(ctx, &args)),
        "reset" => {
            agent.reset();
            ctx.ui.status("conversation cleared; the project memory is kept");
            Ok(())
        }
        "help" | "?" => ctx.ui.line(SLASH_HELP),
        other => Err(CommandError::usage(format!("unknown command /{other}"))
            .hinted("type /help for the list")),
    };
    if let Err(err) = result {
        err.report(false);
    }
    Flow::Continue
}

/// Runs the policy as of now with the workspace's configuration, printed
/// like `workmem distill`.
fn distill_now(ctx: &Ctx) -> Result<(), CommandError> {
    let ws = ctx.workspace()?;
    let as_of = ws.now();
    let policy = ws.config().policy.clone();
    let report =
        ws.distill(&DistillOptions::new().policy(policy.clone()).as_of(as_of.clone()))?.report;
    ctx.ui.status(format_args!("distilled as of {}", as_of.as_str()));
    for line in distill::describe(&report) {
        ctx.ui.line(line)?;
    }
    Ok(())
}

const RESOLVE_USAGE: &str = "usage: /resolve CONFLICT_ID CANDIDATE --revision N --rationale TEXT \
     [--event-id ID] [--actor NAME] [--at T], or /resolve CONFLICT_ID CANDIDATE N RATIONALE...";

/// `/resolve` read with the grammar of `workmem resolve`.
#[derive(Debug, clap::Parser)]
#[command(name = "/resolve", no_binary_name = true, disable_help_flag = true)]
struct ResolveLine {
    #[command(flatten)]
    args: resolve::ResolveArgs,
}

/// Returns the `workmem resolve` arguments of a `/resolve` line, split like
/// a shell splits words: the arguments of `workmem resolve` in its order
/// (`CONFLICT_ID CANDIDATE --revision N --rationale TEXT`, and its other
/// flags), or all positional in that order, the rest of the line being the
/// rationale (`CONFLICT_ID CANDIDATE N RATIONALE...`). The line then runs
/// as `workmem resolve` does, with its defaults (a fresh event id, the
/// actor from git, else the OS user).
fn resolve_args(rest: &str) -> Result<resolve::ResolveArgs, CommandError> {
    let usage =
        || CommandError::usage(RESOLVE_USAGE).hinted("/conflicts lists the ids and revisions");
    let words = shlex::split(rest).ok_or_else(usage)?;
    let flagged = words.iter().any(|word| word.starts_with("--"));
    if !flagged && words.len() >= 3 {
        let revision = words[2].parse::<i64>().map_err(|_| {
            CommandError::invalid("revision", format!("{:?} is not an integer", words[2]))
                .hinted(RESOLVE_USAGE)
        })?;
        let rationale = words[3..].join(" ");
        if rationale.trim().is_empty() {
            return Err(usage().hinted("end the line with why this value is right"));
        }
        return Ok(resolve::ResolveArgs {
            conflict_id: words[0].clone(),
            candidate_id: words[1].clone(),
            revision,
            event_id: None,
            actor: None,
            rationale: Some(rationale),
            at: None,
        });
    }
    <ResolveLine as clap::Parser>::try_parse_from(&words).map(|line| line.args).map_err(|err| {
        let first = err.to_string();
        let first = first.lines().next().unwrap_or_default().trim_start_matches("error: ");
        CommandError::usage(format!("/resolve: {first}")).hinted(RESOLVE_USAGE)
    })
}

/// Returns the command error for a failed turn.
fn turn_error(err: AgentError) -> CommandError {
    match err {
        AgentError::Memory(err) => err.into(),
        AgentError::Client(ClientError::Unauthorized { message }) => CommandError::io(
            "the model API rejected the API key (HTTP 401)",
            &io::Error::other(if message.is_empty() { "unauthorized".to_owned() } else { message }),
        )
        .hinted("check ANTHROPIC_API_KEY (environment or the project's .env)"),
        AgentError::Client(err @ ClientError::Network { .. }) => {
            CommandError::io("model request failed", &io::Error::other(err.to_string()))
                .hinted("check ANTHROPIC_BASE_URL and the network")
        }
        other => CommandError::io("model request failed", &io::Error::other(other.to_string())),
    }
}

/// Shows the loop's progress: model text on stdout, tool activity on
/// stderr.
struct Printer {
    interactive: bool,
}

impl Printer {
    fn err(&self, line: impl std::fmt::Display) {
        // A closed stderr must not stop the conversation.
        let _ =
            writeln!(io::stderr().lock(), "{}", crate::escape::escape_controls(&line.to_string()));
    }
}

impl Events for Printer {
    fn text(&mut self, text: &str) {
        let mut out = io::stdout().lock();
        // A closed stdout (a pipe reader that left) loses only the display.
        let _ = writeln!(out, "{}", crate::escape::escape_controls(text.trim_end()))
            .and_then(|()| out.flush());
    }

    fn tool_call(&mut self, name: &str, input: &Value) {
        let line = match name {
            "bash" => format!(
                "$ {}",
                input.get("command").and_then(Value::as_str).unwrap_or("(no command)")
            ),
            "write_memory" => {
                let field = |key: &str| {
                    input.get(key).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                };
                // The call is refused if it holds a credential; the
                // terminal (and any recording of it) must not show one
                // either.
                if let Some(kind) = workmem::find_secret(&input.to_string()) {
                    format!(
                        "+ write_memory (not shown: it looks like it contains a secret ({kind}))"
                    )
                } else {
                    let key = field("memory_key").map(|k| format!(" {k}:")).unwrap_or_default();
                    format!(
                        "+ write_memory [{} {}]{key} {}",
                        field("kind").unwrap_or_default(),
                        field("importance").unwrap_or_default(),
                        field("content").unwrap_or_default()
                    )
                }
            }
            other => format!("? {other} {input}"),
        };
        self.err(line);
    }

    fn tool_result(&mut self, name: &str, output: &ToolOutput) {
        if output.is_error {
            let first: String =
                output.content.lines().last().unwrap_or("").chars().take(300).collect();
            self.err(format!("  ! {name} failed: {first}"));
        } else if name == "write_memory" && self.interactive {
            self.err("  remembered");
        }
    }

    fn retry(&mut self, notice: &RetryNotice) {
        self.err(format!(
            "model API unavailable ({}); retrying in {:.1} s (attempt {} of {})",
            notice.reason,
            notice.delay.as_secs_f64(),
            notice.attempt + 1,
            notice.max_attempts
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_line_parsing() {
        let flagged = resolve_args(
            " conflict-1  2 --revision 3 --rationale 'Production needs  PostGIS' --event-id ev:1",
        )
        .unwrap();
        let positional = resolve_args("conflict-1 2 3 Production needs PostGIS").unwrap();
        for args in [&flagged, &positional] {
            assert_eq!(
                (args.conflict_id.as_str(), args.candidate_id.as_str(), args.revision),
                ("conflict-1", "2", 3)
            );
            assert_eq!(args.actor, None);
        }
        assert_eq!(flagged.rationale.as_deref(), Some("Production needs  PostGIS"));
        assert_eq!(flagged.event_id.as_deref(), Some("ev:1"));
        assert_eq!(positional.rationale.as_deref(), Some("Production needs PostGIS"));
        assert_eq!(positional.event_id, None);
        for bad in ["c cand 1", "c cand one why", "", "c cand --revision x --rationale y", "'c"] {
            assert_eq!(resolve_args(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
