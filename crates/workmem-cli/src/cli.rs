//! The command line: global flags and the top-level subcommand enum.
//!
//! Each subcommand's arguments live next to its `run` in `commands/`; this
//! module only assembles them, and dispatches a parsed command to its
//! `run`. Help text comes from the doc comments
//! (imperative first line, no period) and each command's `after_help`
//! examples.

use std::path::PathBuf;

use clap::{ArgMatches, Args, FromArgMatches, Parser, Subcommand};

use crate::command_error::CommandError;
use crate::commands::{self, Ctx};
use crate::output::Ui;

const AFTER_HELP: &str = "\
Exit codes:
  0  success
  1  I/O or unexpected failure; `scan` found a credential
  2  usage error or invalid input (bad kind, importance, memory_key, id, secret detected, ...)
  3  stale resolution (revision changed, case closed, evidence changed)
  4  corruption (invalid or inconsistent durable state)
  5  scope error (state belongs to another workspace)
  6  resolution rejected (unknown conflict or candidate, event id reused)

Environment:
  WORKMEM_MEMORY_DIR  where the memory files live (same as --memory-dir)
  XDG_CONFIG_HOME     holds workmem/config.toml, the user defaults (else ~/.config)

Configuration: <project>/.workmem/config.toml overrides the user file; flags
override both. See `workmem explain --help` and docs/config.md.

Examples:
  workmem init
  workmem remember 'Use WAL mode for the cache' -k decision -i 4
  workmem distill --dry-run
  workmem context
  workmem demo";

/// Durable, auditable project memory for AI coding agents
///
/// Agents append small facts to an append-only log; `distill` promotes the
/// facts that stay relevant into a curated memory with revision history,
/// and queues ties between competing values for a human.
#[derive(Debug, Parser)]
#[command(name = "workmem", version, after_help = AFTER_HELP, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Project directory [default: nearest ancestor holding .workmem/, else
    /// .git, else the current directory]
    #[arg(
        short = 'C',
        long = "project",
        value_name = "DIR",
        global = true,
        help_heading = "Global Options"
    )]
    pub project: Option<PathBuf>,
    /// Where the memory files live (default `<project>/.workmem/memory`).
    #[arg(
        long,
        value_name = "DIR",
        env = "WORKMEM_MEMORY_DIR",
        global = true,
        help_heading = "Global Options",
        help = "Where the memory files live [default: <project>/.workmem/memory]; a relative path is taken \
                from the current directory"
    )]
    pub memory_dir: Option<PathBuf>,
    /// Print machine-readable JSON on stdout (errors as JSON on stderr)
    #[arg(long, global = true, help_heading = "Global Options")]
    pub json: bool,
    /// Print only essential output
    #[arg(short, long, global = true, help_heading = "Global Options")]
    pub quiet: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the memory directory and print the workspace id
    Init(Deferred<commands::init::InitArgs>),
    /// Append one fact to the log
    Remember(Deferred<commands::remember::RememberArgs>),
    /// Append facts from a JSONL file or stdin, all or nothing
    Import(Deferred<commands::import::ImportArgs>),
    /// List facts (default: those recorded today, UTC)
    Facts(Deferred<commands::facts::FactsArgs>),
    /// List the daily logs with their fact counts
    Logs(Deferred<commands::logs::LogsArgs>),
    /// Promote aged, relevant facts into the curated memory
    Distill(Deferred<commands::distill::DistillArgs>),
    /// Print MEMORY.md, repairing it from curated.json if stale
    Memory(Deferred<commands::memory::MemoryArgs>),
    /// Print the bounded agent context: memory, recent and pending facts
    Context(Deferred<commands::context::ContextArgs>),
    /// Search the memory and the facts: ranked, paged, with snippets
    Search(Deferred<commands::search::SearchArgs>),
    /// List conflict cases and their candidates
    Conflicts(Deferred<commands::conflicts::ConflictsArgs>),
    /// Decide a conflict case (the human review step)
    Resolve(Deferred<commands::resolve::ResolveArgs>),
    /// Retract facts: they stop counting anywhere, and the record stays
    Retract(Deferred<commands::retract::RetractArgs>),
    /// Undo one retraction
    Restore(Deferred<commands::retract::RestoreArgs>),
    /// Remove facts' text from every file of the memory (for a credential)
    Redact(Deferred<commands::redact::RedactArgs>),
    /// Review open conflict cases one at a time at a terminal
    Review(Deferred<commands::review::ReviewArgs>),
    /// List the audit stream of human decisions
    Adjudications(Deferred<commands::adjudications::AdjudicationsArgs>),
    /// Show every revision of a memory key, its evidence and its cases
    History(Deferred<commands::history::HistoryArgs>),
    /// Explain where a fact or a memory key stands under the policy, and why
    Explain(Deferred<commands::explain::ExplainArgs>),
    /// Show where the workspace stands: facts, what waits, memory, conflicts
    Status(Deferred<commands::status::StatusArgs>),
    /// Check every invariant of the durable state; exit 0 only when clean
    Verify(Deferred<commands::verify::VerifyArgs>),
    /// Derive curated.json and conflicts.json again from the logs and decisions
    Rebuild(Deferred<commands::rebuild::RebuildArgs>),
    /// Pin the workspace id and prepare the git repository to share memory
    Share(Deferred<commands::share::ShareArgs>),
    /// Wire workmem into an agent client: MCP server, hook, instructions
    Setup(Deferred<commands::setup::SetupArgs>),
    /// Take over a memory written at another path by pinning its id
    Adopt(Deferred<commands::adopt::AdoptArgs>),
    /// Merge memory files: git's merge driver, and `--continue` after markers
    Merge(Deferred<commands::merge::MergeArgs>),
    /// Show what a git revision range changes in the memory, for review
    Diff(Deferred<commands::diff::DiffArgs>),
    /// Show the transaction journal; `--discard` drops work this clone did not prepare
    Journal(Deferred<commands::journal::JournalArgs>),
    /// Look for credentials stored in the memory directory; exit 1 when any
    Scan(Deferred<commands::scan::ScanArgs>),
    /// Walk through facts, distill, supersession and a tie offline
    Demo(Deferred<commands::demo::DemoArgs>),
    /// Serve this workspace to MCP clients over stdio
    #[cfg(feature = "mcp")]
    Mcp(Deferred<commands::mcp::McpArgs>),
    /// Talk to an agent that remembers this project
    #[cfg(feature = "chat")]
    Chat(Deferred<commands::chat::ChatArgs>),
}

impl GlobalArgs {
    /// Returns the context these flags give a command run from `cwd`.
    ///
    /// Errors: as [`Ctx::new`].
    pub fn ctx(&self, cwd: &std::path::Path) -> Result<Ctx, CommandError> {
        Ctx::new(
            cwd,
            self.project.as_deref(),
            self.memory_dir.as_deref(),
            Ui::new(self.json, self.quiet),
        )
    }
}

impl Command {
    /// Runs the subcommand.
    ///
    /// Errors: whatever the command returns.
    pub fn run(&self, ctx: &Ctx) -> Result<(), CommandError> {
        // The merge commands finish what is unmerged; appends never rewrite a
        // file, so they stay possible meanwhile (`merge --continue` keeps them).
        let refuse_unmerged = !matches!(
            self,
            Command::Merge(_) | Command::Remember(_) | Command::Import(_) | Command::Init(_)
        );
        commands::run(ctx, refuse_unmerged, |ctx| self.dispatch(ctx))
    }

    /// Calls the `run` of the subcommand's module.
    fn dispatch(&self, ctx: &Ctx) -> Result<(), CommandError> {
        #[cfg(feature = "chat")]
        use commands::chat;
        #[cfg(feature = "mcp")]
        use commands::mcp;
        use commands::{
            adjudications, adopt, conflicts, context, demo, diff, distill, explain, facts, history,
            import, init, journal, logs, memory, merge, rebuild, redact, remember, resolve,
            retract, review, scan, search, setup, share, status, verify,
        };
        match self {
            Command::Init(args) => init::run(ctx, args),
            Command::Remember(args) => remember::run(ctx, args),
            Command::Import(args) => import::run(ctx, args),
            Command::Facts(args) => facts::run(ctx, args),
            Command::Logs(args) => logs::run(ctx, args),
            Command::Distill(args) => distill::run(ctx, args),
            Command::Memory(args) => memory::run(ctx, args),
            Command::Context(args) => context::run(ctx, args),
            Command::Conflicts(args) => conflicts::run(ctx, args),
            Command::Resolve(args) => resolve::run(ctx, args),
            Command::Retract(args) => retract::run_retract(ctx, args),
            Command::Restore(args) => retract::run_restore(ctx, args),
            Command::Redact(args) => redact::run(ctx, args),
            Command::Review(args) => review::run(ctx, args),
            Command::Adjudications(args) => adjudications::run(ctx, args),
            Command::History(args) => history::run(ctx, args),
            Command::Explain(args) => explain::run(ctx, args),
            Command::Verify(args) => verify::run(ctx, args),
            Command::Diff(args) => diff::run(ctx, args),
            Command::Rebuild(args) => rebuild::run(ctx, args),
            Command::Scan(args) => scan::run(ctx, args),
            Command::Search(args) => search::run(ctx, args),
            Command::Status(args) => status::run(ctx, args),
            Command::Share(args) => share::run(ctx, args),
            Command::Setup(args) => setup::run(ctx, args),
            Command::Adopt(args) => adopt::run(ctx, args),
            Command::Merge(args) => merge::run(ctx, args),
            Command::Journal(args) => journal::run(ctx, args),
            Command::Demo(args) => demo::run(ctx, args),
            #[cfg(feature = "mcp")]
            Command::Mcp(args) => mcp::run(ctx, args),
            #[cfg(feature = "chat")]
            Command::Chat(args) => chat::run(ctx, args),
        }
    }
}

/// A subcommand's arguments, defined only when that subcommand is parsed
/// or its help shown: otherwise every command would build the arguments
/// of all of them at start (clap's deferred initialization).
#[derive(Debug)]
pub struct Deferred<T>(pub T);

impl<T> std::ops::Deref for Deferred<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.defer(|cmd| keep_about(cmd, T::augment_args))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(|cmd| keep_about(cmd, T::augment_args_for_update))
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Deferred)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Deferred)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

/// Adds arguments to `cmd` with `augment`, keeping the description the
/// subcommand's own doc comment gave it: deferred, the arguments' struct
/// would otherwise replace it with its own.
fn keep_about(cmd: clap::Command, augment: fn(clap::Command) -> clap::Command) -> clap::Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let cmd = augment(cmd);
    match (about, long_about) {
        (Some(about), Some(long_about)) => cmd.about(about).long_about(long_about),
        (Some(about), None) => cmd.about(about).long_about(None::<&str>),
        (None, _) => cmd,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent_with_every_subcommand_built() {
        super::Cli::command().debug_assert();
        let mut cli = super::Cli::command();
        cli.build();
        for sub in cli.get_subcommands() {
            assert!(sub.get_about().is_some(), "{} has a description", sub.get_name());
        }
        let remember = cli.find_subcommand("remember").expect("remember");
        assert_eq!(
            remember.get_about().map(ToString::to_string).as_deref(),
            Some("Append one fact to the log")
        );
        assert!(
            remember.get_arguments().any(|arg| arg.get_id() == "kind"),
            "deferred arguments are built"
        );
    }
}
