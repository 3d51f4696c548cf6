//! `workmem merge`: the git merge driver of the memory files
//! (`workmem merge driver %O %A %B %P`, configured by `workmem share`) and
//! `workmem merge --continue`, which finishes a merge that git left with
//! conflict markers by merging the same way from git's index stages
//! (docs/sharing.md).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde::Serialize;
use workmem::{MemoryFile, MergeSides};

use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::git;

/// Arguments of `workmem merge`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:
  git merge origin/main          # the driver merges the memory files itself
  workmem merge --continue       # after a merge without the driver left conflict markers
  git commit                     # (or git rebase --continue, git cherry-pick --continue)

The driver is configured by `workmem share` (and by any command in a clone
whose .workmem/.gitattributes names it):
  git config merge.workmem.driver 'workmem merge driver %O %A %B %P'"
)]
pub struct MergeArgs {
    /// Finish a merge git left with conflict markers in memory files: merge
    /// them from the index stages, write them, render MEMORY.md, `git add`
    #[arg(long = "continue")]
    pub continue_merge: bool,
    #[command(subcommand)]
    pub driver: Option<MergeCommand>,
}

/// The driver interface git calls.
#[derive(Debug, Subcommand)]
pub enum MergeCommand {
    /// Merge one memory file as git's merge driver: BASE OURS THEIRS PATH
    /// (%O %A %B %P); the result replaces OURS
    Driver {
        /// The common ancestor's version (%O; empty when the file is new on both sides)
        base: PathBuf,
        /// The current version (%A), replaced by the result
        ours: PathBuf,
        /// The other side's version (%B)
        theirs: PathBuf,
        /// The file's path in the repository (%P)
        path: PathBuf,
    },
}

#[derive(Serialize)]
struct ContinueOutput {
    merged: Vec<String>,
}

/// Runs `workmem merge`.
///
/// Errors: usage error without `--continue` or `driver`; a merge error
/// naming the file, side and line.
pub fn run(ctx: &Ctx, args: &MergeArgs) -> Result<(), CommandError> {
    match &args.driver {
        Some(MergeCommand::Driver { base, ours, theirs, path }) => driver(base, ours, theirs, path),
        None if args.continue_merge => finish(ctx),
        None => Err(CommandError::usage("`workmem merge` needs --continue or `driver`").hinted(
            "run `workmem merge --continue` to finish a merge git left with conflict markers",
        )),
    }
}

/// Reads a file git handed to the driver.
fn read(path: &Path) -> Result<Vec<u8>, CommandError> {
    std::fs::read(path)
        .map_err(|err| CommandError::io(format!("cannot read {}", path.display()), &err))
}

/// Merges one file for git: the result replaces `ours`. On failure `ours`
/// is left as it is and git reports a conflict.
fn driver(base: &Path, ours: &Path, theirs: &Path, path: &Path) -> Result<(), CommandError> {
    let Some(file) = MemoryFile::for_path(path) else {
        return Err(CommandError::usage(format!(
            "{} is not a workmem memory file; the workmem merge driver only merges those",
            path.display()
        )));
    };
    let (base, ours_data, theirs) = (read(base)?, read(ours)?, read(theirs)?);
    let sides = MergeSides {
        base: (!base.is_empty()).then_some(base.as_slice()),
        ours: &ours_data,
        theirs: &theirs,
    };
    let merged = workmem::merge_memory_file(file, path, sides)?;
    // OURS is git's own temporary copy, which git reads back by path: not
    // a memory file, so no atomic replace is needed.
    #[allow(clippy::disallowed_methods)]
    std::fs::write(ours, merged)
        .map_err(|err| CommandError::io(format!("cannot write {}", ours.display()), &err))
}

/// Finishes a merge that git left unmerged in memory files.
fn finish(ctx: &Ctx) -> Result<(), CommandError> {
    let ws = ctx.workspace()?;
    let Some(top) = git::toplevel(ws.project()) else {
        return Err(CommandError::usage(format!(
            "{} is not inside a git work tree; there is no merge to finish",
            ws.project().display()
        )));
    };
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let memory = ws.memory_dir();
    let under = memory.strip_prefix(&top).map_err(|_| {
        CommandError::usage(format!(
            "the memory directory {} is outside the git work tree {}",
            memory.display(),
            top.display()
        ))
    })?;
    let mut merged = Vec::new();
    let mut untracked = Vec::new();
    let project = ws.project().strip_prefix(&top).unwrap_or(Path::new("")).to_path_buf();
    let mut unmerged = git::unmerged(&top, under)?;
    // The pin, `.workmem/workspace.toml`, merges too (the same id on both
    // sides, or the merge is refused).
    unmerged.extend(
        git::unmerged(&top, &workmem::pin_file(&project))?
            .into_iter()
            .filter(|u| !u.path.starts_with(under)),
    );
    for unmerged in unmerged {
        let Some(file) = MemoryFile::for_path(&unmerged.path) else { continue };
        let relative = unmerged.path.strip_prefix(under).unwrap_or(&unmerged.path).to_path_buf();
        let stage = |i: usize| -> Result<Option<Vec<u8>>, CommandError> {
            unmerged.stages[i].as_deref().map(|blob| git::blob(&top, blob)).transpose()
        };
        if matches!(file, MemoryFile::View | MemoryFile::Journal) {
            // Never committed: out of git's index, this clone's file kept.
            untracked.push(unmerged.path);
            continue;
        }
        let (base, ours, theirs) =
            (stage(0)?, stage(1)?.unwrap_or_default(), stage(2)?.unwrap_or_default());
        let sides = MergeSides { base: base.as_deref(), ours: &ours, theirs: &theirs };
        let mut data = workmem::merge_memory_file(file, &unmerged.path, sides)?;
        if file == MemoryFile::Pin {
            // The same id on both sides: this side's file stands.
            #[allow(clippy::disallowed_methods)]
            std::fs::write(top.join(&unmerged.path), &data).map_err(|err| {
                CommandError::io(format!("cannot write {}", unmerged.path.display()), &err)
            })?;
            merged.push(unmerged.path);
            continue;
        }
        // Records appended to the worktree file since git stopped.
        if matches!(file, MemoryFile::DailyLog | MemoryFile::Audit | MemoryFile::Corrections) {
            let current = std::fs::read(top.join(&unmerged.path)).unwrap_or_default();
            let salvaged = workmem::salvage_records(file, &current);
            let sides = MergeSides { base: Some(&data), ours: &data, theirs: &salvaged };
            data = workmem::merge_memory_file(file, &unmerged.path, sides)?;
        }
        ws.write_merged(&relative, &data)?;
        merged.push(unmerged.path);
    }
    if !untracked.is_empty() {
        git::remove_from_index(&top, &untracked)?;
    }
    if !merged.is_empty() {
        // MEMORY.md is rendered from the merged curated.json (never
        // committed).
        ws.memory()?;
        git::add(&top, &merged)?;
    }
    merged.extend(untracked);
    let shown: Vec<String> = merged.iter().map(|p| p.display().to_string()).collect();
    if ctx.ui.is_json() {
        return ctx.ui.json(&ContinueOutput { merged: shown });
    }
    if shown.is_empty() {
        ctx.ui.line("no memory file is unmerged in git's index; nothing to do")?;
        return Ok(());
    }
    for path in &shown {
        ctx.ui.line(format_args!("merged  {path}"))?;
    }
    ctx.ui.status("staged; commit (or continue the rebase or cherry-pick) to finish the merge");
    Ok(())
}
