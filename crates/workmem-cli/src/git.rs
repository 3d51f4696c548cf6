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

/// Returns the work tree top and the git directory of the repository
/// holding `dir` (a worktree's own git directory), found by walking up to
/// `.git` without running git.
fn repository(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot_git = dir.ancestors().map(|d| d.join(".git")).find(|p| p.exists())?;
    let top = dot_git.parent()?.to_path_buf();
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
        if target.is_absolute() { target } else { top.join(target) }
    };
    Some((top, git_dir))
}

/// Returns `<git dir>/config` of the repository holding `dir` (through a
/// worktree's `commondir`), found by walking up to `.git`.
fn config_file(dir: &Path) -> Option<PathBuf> {
    let (_, git_dir) = repository(dir)?;
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim()),
        Err(_) => git_dir,
    };
    Some(common.join("config"))
}

/// Returns the program of workmem's merge driver as the repository's
/// config file sets it (the first word of `merge.workmem.driver`, unquoted),
/// `None` when the file does not set it or cannot be read.
pub fn driver_program(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(config_file(dir)?).ok()?;
    let section = format!("[merge \"{}\"]", workmem::MERGE_DRIVER);
    let mut inside = false;
    let mut program = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == section;
        } else if inside
            && let Some((name, value)) = line.split_once('=')
            && name.trim() == "driver"
        {
            program = first_word(value.trim());
        }
    }
    program
}

/// Returns the first word of a shell command as `configure_driver` writes
/// it: a plain word, or one in single quotes (with `'\''` for a quote).
/// git's config syntax may also wrap the value in double quotes.
fn first_word(command: &str) -> Option<String> {
    let command = command.strip_prefix('"').and_then(|c| c.strip_suffix('"')).unwrap_or(command);
    if let Some(rest) = command.strip_prefix('\'') {
        let mut word = String::new();
        let mut rest = rest;
        loop {
            let end = rest.find('\'')?;
            word.push_str(&rest[..end]);
            rest = &rest[end + 1..];
            match rest.strip_prefix("\\''") {
                Some(more) => {
                    word.push('\'');
                    rest = more;
                }
                None => return Some(word),
            }
        }
    }
    command.split_whitespace().next().map(str::to_owned)
}

/// The identity of git's index file (inode, size, modification time):
/// while it holds, the index has not changed.
pub type IndexStamp = [i64; 4];

/// Returns the identity of the index of the repository holding `dir`, with
/// the work tree top and the file recording the last identity checked,
/// kept in the git directory (which no branch can write); `None` outside a
/// repository or without an index.
pub fn index_stamp(dir: &Path) -> Option<(IndexStamp, PathBuf, PathBuf)> {
    use std::os::unix::fs::MetadataExt;
    let (top, git_dir) = repository(dir)?;
    let meta = std::fs::metadata(git_dir.join("index")).ok()?;
    let stamp = [meta.ino() as i64, meta.size() as i64, meta.mtime(), meta.mtime_nsec()];
    Some((stamp, top, git_dir.join("workmem-index-checked")))
}

/// Returns the paths (relative to `top`) git's index holds unmerged under
/// any of `paths`.
///
/// Errors: as the git call.
pub fn unmerged_paths(top: &Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>, CommandError> {
    let mut args: Vec<&OsStr> =
        vec![OsStr::new("ls-files"), OsStr::new("-u"), OsStr::new("-z"), OsStr::new("--")];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    let out = git(top, args)?;
    let mut found: Vec<PathBuf> = Vec::new();
    for record in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        if let Some((_, path)) = text.split_once('\t')
            && found.last().is_none_or(|last| last.as_path() != Path::new(path))
        {
            found.push(PathBuf::from(path));
        }
    }
    Ok(found)
}

/// Returns the `merge` attribute git gives each of `paths` (relative to
/// `top`): `unspecified`, `set`, `unset` or a driver name.
///
/// Errors: as the git call.
pub fn merge_attributes(
    top: &Path,
    paths: &[PathBuf],
) -> Result<Vec<(PathBuf, String)>, CommandError> {
    let mut args: Vec<&OsStr> =
        vec![OsStr::new("check-attr"), OsStr::new("-z"), OsStr::new("merge"), OsStr::new("--")];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    let out = git(top, args)?;
    let fields: Vec<&[u8]> = out.split(|&b| b == 0).collect();
    Ok(fields
        .chunks(3)
        .filter(|chunk| chunk.len() == 3)
        .map(|chunk| {
            (
                PathBuf::from(String::from_utf8_lossy(chunk[0]).into_owned()),
                String::from_utf8_lossy(chunk[2]).into_owned(),
            )
        })
        .collect())
}

/// Returns the last commit (full hash and subject) that changed `path`
/// (relative to `top`), `None` when there is none or git cannot tell.
pub fn last_change(top: &Path, path: &Path) -> Option<(String, String)> {
    let out = git(
        top,
        [
            OsStr::new("log"),
            OsStr::new("-1"),
            OsStr::new("--format=%H %s"),
            OsStr::new("--"),
            path.as_os_str(),
        ],
    )
    .ok()?;
    let text = String::from_utf8(out).ok()?;
    let (hash, subject) = text.trim_end().split_once(' ').unwrap_or((text.trim_end(), ""));
    (!hash.is_empty()).then(|| (hash.to_owned(), subject.to_owned()))
}

/// Returns the content of `path` (relative to `top`) at revision `rev`.
pub fn show(top: &Path, rev: &str, path: &Path) -> Option<Vec<u8>> {
    git(top, ["show".to_owned(), format!("{rev}:{}", path.display())]).ok()
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

/// Returns the memory files of `ws` whose `merge` attribute no longer
/// routes them to workmem's driver (a branch that rewrote
/// `.workmem/.gitattributes`, e.g. `* merge=union`), with the attribute git
/// gives them; `None` when the memory is not shared (no pin) or not in a
/// git work tree. Checked with `git check-attr` on the daily logs, the
/// audit stream, curated.json, conflicts.json, the corrections stream once
/// it exists (a memory shared by an earlier version routes it after
/// `workmem share`) and (for the default memory directory) the pin.
pub fn misrouted(ws: &workmem::ReadOnlyWorkspace) -> Option<Vec<(PathBuf, String)>> {
    // Shared: pinned, and `share` wrote its git files (next to the memory
    // files, or in `.workmem/`).
    if !ws.is_pinned() || !ws.has_sharing_files() {
        return None;
    }
    let (top, _) = repository(ws.project())?;
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let memory = ws.memory_dir().strip_prefix(&top).ok()?.to_path_buf();
    let routed = ws
        .routed_files()
        .into_iter()
        .map(|(kind, path)| Some((kind, path.strip_prefix(&top).ok()?.to_path_buf())))
        .collect::<Option<Vec<_>>>()?;
    let paths: Vec<PathBuf> = routed.iter().map(|(_, path)| path.clone()).collect();
    let attributes = merge_attributes(&top, &paths).ok()?;
    Some(
        attributes
            .into_iter()
            .filter(|(_, value)| value != workmem::MERGE_DRIVER)
            .map(|(path, value)| {
                // One daily log stood for them all: name them all.
                let daily = workmem::MemoryFile::DailyLog;
                let shown = if routed.iter().any(|(kind, p)| *kind == daily && *p == path) {
                    memory.join(daily.pattern())
                } else {
                    path
                };
                (shown, value)
            })
            .collect(),
    )
}

/// Returns the `merge` attribute git gives `path` (absolute), `None`
/// outside a git work tree or when git cannot tell.
pub fn merge_attribute_of(path: &Path) -> Option<String> {
    let (top, _) = repository(path.parent()?)?;
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let relative = path.strip_prefix(&top).ok()?.to_path_buf();
    merge_attributes(&top, &[relative]).ok()?.pop().map(|(_, value)| value)
}

/// The sentence that says how to restore the routing of memory files to
/// workmem's driver.
pub const REROUTE: &str = "a branch may have rewritten .workmem/.gitattributes: remove the line \
     that overrides workmem's (e.g. `* merge=union`); `workmem share` adds back any missing line";
