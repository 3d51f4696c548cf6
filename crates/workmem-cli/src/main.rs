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
mod git;
mod output;

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

use crate::cli::Cli;
use crate::command_error::{CommandError, EXIT_USAGE};

fn main() -> ExitCode {
    let json_requested =
        std::env::args_os().skip(1).take_while(|a| a != "--").any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err, json_requested),
    };
    let json = cli.global.json;
    let outcome = std::env::current_dir()
        .map_err(|err| CommandError::io("cannot read the current directory", &err))
        .and_then(|cwd| commands::Ctx::new(&cli.global, &cwd))
        .and_then(|ctx| commands::run(&ctx, &cli.command));
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
/// its exit code: 0 for help and version, 2 for every usage error.
fn usage_error(err: &clap::Error, json: bool) -> ExitCode {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Help on a closed stdout is not worth an error.
            let _ = err.print();
            ExitCode::SUCCESS
        }
        _ if json => {
            let rendered = err.render().to_string();
            let message = rendered
                .lines()
                .next()
                .unwrap_or("usage error")
                .trim_start_matches("error: ")
                .to_owned();
            CommandError::usage(message).report(true);
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
