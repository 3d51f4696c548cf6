//! The few git operations that sharing memory needs, through the `git`
//! binary: where the repository is, whether workmem's merge driver is
//! configured in it (and configuring it, as `git lfs install` does), and
//! the index stages of files a merge left unmerged.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::command_error::CommandError;

/// Runs `git -C dir args...` and returns its stdout.
///
/// Errors: I/O error when git cannot run; a usage error with git's message
/// when it fails.
fn git<I, S>(dir: &Path, args: I) -> Result<Vec<u8>, CommandError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    let shown: Vec<String> =
        args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect();
    let output =
        Command::new("git").arg("-C").arg(dir).args(&args).stdin(Stdio::null()).output().map_err(
            |err| {
                CommandError::io("cannot run git", &err).hinted("sharing memory needs git on PATH")
            },
        )?;
    if !output.status.success() {
        return Err(CommandError::usage(format!(
            "`git {}` failed: {}",
            shown.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(output.stdout)
}

/// Returns the top of the git work tree that holds `dir`, `None` when it
/// is in none (or git is missing).
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    let out = git(dir, ["rev-parse", "--show-toplevel"]).ok()?;
    let text = String::from_utf8(out).ok()?;
    Some(PathBuf::from(text.trim_end_matches('\n')))
}

/// Returns whether git's configuration for the repository of `dir` defines
/// workmem's merge driver. Reads the repository's config file directly (no
/// process) when it can find it, so that every command can afford the
/// check.
pub fn driver_configured(dir: &Path) -> bool {
    let section = format!("[merge \"{}\"]", workmem::MERGE_DRIVER);
    if let Some(config) = config_file(dir)
        && let Ok(text) = std::fs::read_to_string(config)
        && text.lines().any(|line| line.trim() == section)
    {
        return true;
    }
    // Global or system configuration, or a layout not recognised above.
    git(dir, ["config", "--get", &format!("merge.{}.driver", workmem::MERGE_DRIVER)])
        .is_ok_and(|out| !out.is_empty())
}

/// Returns `<git dir>/config` of the repository holding `dir` (through a
/// worktree's `commondir`), found by walking up to `.git`.
fn config_file(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.ancestors().map(|d| d.join(".git")).find(|p| p.exists())?;
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
        if target.is_absolute() { target } else { dot_git.parent()?.join(target) }
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim()),
        Err(_) => git_dir,
    };
    Some(common.join("config"))
}

/// Configures workmem's merge driver in the repository of `dir` (its
/// `.git/config`), as the running binary.
///
/// Errors: as the git calls.
pub fn configure_driver(dir: &Path) -> Result<String, CommandError> {
    let exe = std::env::current_exe()
        .map_err(|err| CommandError::io("cannot find the workmem binary", &err))?;
    let driver = format!("{} merge driver %O %A %B %P", shell_quote(&exe.to_string_lossy()));
    let name = workmem::MERGE_DRIVER;
    git(
        dir,
        [
            "config",
            "--local",
            &format!("merge.{name}.name"),
            "workmem semantic merge of memory files",
        ],
    )?;
    git(dir, ["config", "--local", &format!("merge.{name}.driver"), &driver])?;
    Ok(driver)
}

/// Quotes `text` for the POSIX shell that git runs a driver with.
fn shell_quote(text: &str) -> String {
    if text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b)) {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// One file a merge left unmerged, with the blob of each stage present.
#[derive(Debug, Default)]
pub struct Unmerged {
    /// Path relative to the top of the work tree.
    pub path: PathBuf,
    /// Stage 1 (base), 2 (ours), 3 (theirs): blob ids.
    pub stages: [Option<String>; 3],
}

/// Returns the unmerged files under `under` (a path inside the work tree
/// rooted at `top`).
///
/// Errors: as the git call.
pub fn unmerged(top: &Path, under: &Path) -> Result<Vec<Unmerged>, CommandError> {
    let out = git(
        top,
        [
            OsStr::new("ls-files"),
            OsStr::new("-u"),
            OsStr::new("-z"),
            OsStr::new("--"),
            under.as_os_str(),
        ],
    )?;
    let mut files: Vec<Unmerged> = Vec::new();
    for record in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        // "<mode> <blob> <stage>\t<path>"
        let text = String::from_utf8_lossy(record);
        let Some((meta, path)) = text.split_once('\t') else { continue };
        let mut parts = meta.split(' ');
        let (Some(_mode), Some(blob), Some(stage)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(stage @ 1..=3) = stage.parse::<usize>() else { continue };
        let path = PathBuf::from(path);
        if files.last().is_none_or(|f| f.path != path) {
            files.push(Unmerged { path: path.clone(), ..Unmerged::default() });
        }
        if let Some(file) = files.last_mut() {
            file.stages[stage - 1] = Some(blob.to_owned());
        }
    }
    Ok(files)
}

/// Returns the content of a blob.
///
/// Errors: as the git call.
pub fn blob(top: &Path, id: &str) -> Result<Vec<u8>, CommandError> {
    git(top, ["cat-file", "blob", id])
}

/// Stages `paths` (relative to `top`).
///
/// Errors: as the git call.
pub fn add(top: &Path, paths: &[PathBuf]) -> Result<(), CommandError> {
    let mut args: Vec<&OsStr> = vec![OsStr::new("add"), OsStr::new("--")];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    git(top, args).map(drop)
}

/// Removes from git's index those of `paths` (absolute, inside the work
/// tree rooted at `top`) that it tracks, keeping the files on disk
/// (`git rm --cached`); returns the paths it untracked, relative to `top`.
///
/// Errors: as the git calls.
pub fn untrack(top: &Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>, CommandError> {
    let mut tracked = Vec::new();
    for path in paths {
        let Ok(relative) = path.strip_prefix(top) else { continue };
        let listed = git(top, [OsStr::new("ls-files"), OsStr::new("--"), relative.as_os_str()])?;
        if !listed.is_empty() {
            tracked.push(relative.to_path_buf());
        }
    }
    if !tracked.is_empty() {
        remove_from_index(top, &tracked)?;
    }
    Ok(tracked)
}

/// Removes `paths` (relative to `top`) from git's index, unmerged entries
/// included, keeping the files on disk (`git rm --cached`).
///
/// Errors: as the git call.
pub fn remove_from_index(top: &Path, paths: &[PathBuf]) -> Result<(), CommandError> {
    let mut args: Vec<&OsStr> =
        vec![OsStr::new("rm"), OsStr::new("--cached"), OsStr::new("--quiet"), OsStr::new("--")];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    git(top, args).map(drop)
}
