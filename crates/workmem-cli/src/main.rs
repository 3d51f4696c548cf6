//! `workmem`: the command-line surface of the workmem library.
//!
//! Parses the command line, resolves the project and memory directory,
//! runs one command and turns its outcome into an exit code (the table in
//! docs/cli.md). Errors go to stderr, as `error:`/`caused by:`/`hint:` lines or,
//! with `--json`, as one `{"error": {"kind", "message"}}` document. A closed
//! stdout (broken pipe) ends the process silently with 0. Only this file
//! exits the process.

#![forbid(unsafe_code)]

mod cli;
mod command_error;
mod commands;
mod config_load;
mod escape;
mod git;
mod output;
mod usage;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

use crate::cli::Cli;
use crate::command_error::{CommandError, EXIT_USAGE};

fn main() -> ExitCode {
    let json_requested =
        std::env::args_os().skip(1).take_while(|a| a != "--").any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&usage::safe(err, &Cli::command()), json_requested),
    };
    let json = cli.global.json;
    let outcome = std::env::current_dir()
        .map_err(|err| CommandError::io("cannot read the current directory", &err))
        .and_then(|cwd| cli.global.ctx(&cwd))
        .and_then(|ctx| cli.command.run(&ctx));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(err) => {
            err.report(json);
            exit_code(err.exit_code())
        }
    }
}

/// Prints a clap error (or help/version, which are not errors) and returns
/// its exit code: 0 for help and version, 2 for every usage error. A usage
/// error names the argument and the rule, never what was typed
/// ([`usage`]).
fn usage_error(err: &usage::UsageError, json: bool) -> ExitCode {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Help on a closed stdout is not worth an error.
            let _ = err.print();
            ExitCode::SUCCESS
        }
        _ if json => {
            CommandError::usage(usage::message(err)).report(true);
            exit_code(EXIT_USAGE)
        }
        _ => {
            let _ = err.print();
            exit_code(EXIT_USAGE)
        }
    }
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
