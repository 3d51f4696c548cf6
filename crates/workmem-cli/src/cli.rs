//! The command line: global flags and the top-level subcommand enum.
//!
//! Each subcommand's arguments live next to its `run` in `commands/`; this
//! module only assembles them. Help text comes from the doc comments
//! (imperative first line, no period) and each command's `after_help`
//! examples.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::commands;

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
    Init(commands::init::InitArgs),
    /// Append one fact to the log
    Remember(commands::remember::RememberArgs),
    /// Append facts from a JSONL file or stdin, all or nothing
    Import(commands::import::ImportArgs),
    /// List facts (default: those recorded today, UTC)
    Facts(commands::facts::FactsArgs),
    /// List the daily logs with their fact counts
    Logs(commands::logs::LogsArgs),
    /// Promote aged, relevant facts into the curated memory
    Distill(commands::distill::DistillArgs),
    /// Print MEMORY.md, repairing it from curated.json if stale
    Memory(commands::memory::MemoryArgs),
    /// Print the bounded agent context: memory, recent and pending facts
    Context(commands::context::ContextArgs),
    /// List conflict cases and their candidates
    Conflicts(commands::conflicts::ConflictsArgs),
    /// Decide a conflict case (the human review step)
    Resolve(commands::resolve::ResolveArgs),
    /// Review open conflict cases one at a time at a terminal
    Review(commands::review::ReviewArgs),
    /// List the audit stream of human decisions
    Adjudications(commands::adjudications::AdjudicationsArgs),
    /// Show every revision of a memory key, its evidence and its cases
    History(commands::history::HistoryArgs),
    /// Explain where a fact or a memory key stands under the policy, and why
    Explain(commands::explain::ExplainArgs),
    /// Show where the workspace stands: facts, what waits, memory, conflicts
    Status(commands::status::StatusArgs),
    /// Check every invariant of the durable state; exit 0 only when clean
    Verify(commands::verify::VerifyArgs),
    /// Pin the workspace id and prepare the git repository to share memory
    Share(commands::share::ShareArgs),
    /// Take over a memory written at another path by pinning its id
    Adopt(commands::adopt::AdoptArgs),
    /// Merge memory files: git's merge driver, and `--continue` after markers
    Merge(commands::merge::MergeArgs),
    /// Look for credentials stored in the memory directory; exit 1 when any
    Scan(commands::scan::ScanArgs),
    /// Walk through facts, distill, supersession and a tie offline
    Demo(commands::demo::DemoArgs),
    /// Serve this workspace to MCP clients over stdio
    #[cfg(feature = "mcp")]
    Mcp(commands::mcp::McpArgs),
    /// Talk to an agent that remembers this project
    #[cfg(feature = "chat")]
    Chat(commands::chat::ChatArgs),
}
