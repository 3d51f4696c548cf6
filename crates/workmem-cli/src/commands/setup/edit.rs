//! The files `setup` edits, the parts of them it owns, and how a plan is
//! shown (a unified diff), written and undone.
//!
//! A [`FilePlan`] is a path and the parts `setup` puts in that file; its
//! text comes from folding each part over the file's current text, so a
//! re-run that finds every part in place produces the same text and
//! writes nothing. `--remove` takes the parts out again and keeps the
//! result only when setting up again would give back exactly the current
//! file: then the file is byte for byte what it was before `setup` (or it
//! is deleted, when `setup` created it). When the user edited the file
//! since, the parts are taken out structurally and everything else stays.
//!
//! Files are read whole and replaced atomically (a temporary file in the
//! same directory, synced, renamed over the old one, the directory
//! synced), keeping the old file's permissions; a symbolic link is
//! followed, so a dotfile managed elsewhere is edited where it lives.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::format::{EditError, Prune};
use super::{block, json, toml};

/// One thing `setup` writes into a file.
#[derive(Debug, Clone)]
pub enum Part {
    /// An entry of a JSON object of servers.
    JsonEntry(json::Entry),
    /// A session-start hook group in a JSON `hooks` object.
    JsonHook(json::Hook),
    /// Codex's TOML server table (and its tool approval).
    Toml(toml::CodexServer),
    /// The managed block of an instruction file.
    Block(block::Block),
}

impl Part {
    fn apply(&self, text: Option<&str>) -> Result<String, EditError> {
        match self {
            Part::JsonEntry(p) => p.apply(text),
            Part::JsonHook(p) => p.apply(text),
            Part::Toml(p) => p.apply(text),
            Part::Block(p) => Ok(p.apply(text)),
        }
    }

    fn remove(&self, text: &str, prune: Prune) -> Result<Option<String>, EditError> {
        match self {
            Part::JsonEntry(p) => p.remove(text, prune),
            Part::JsonHook(p) => p.remove(text, prune),
            Part::Toml(p) => p.remove(text, prune),
            Part::Block(p) => Ok(p.remove(text, prune)),
        }
    }
}

/// What happens to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The file is new.
    Create,
    /// The file changes.
    Update,
    /// The file goes away (`--remove` of a file `setup` created).
    Delete,
    /// Nothing to do.
    Unchanged,
}

impl Action {
    /// Returns the action's name in `--json` output.
    pub fn name(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::Unchanged => "unchanged",
        }
    }
}

/// A file and the parts `setup` owns in it.
#[derive(Debug, Clone)]
pub struct FilePlan {
    /// Where the file is.
    pub path: PathBuf,
    /// The parts, in the order they are applied.
    pub parts: Vec<Part>,
}

/// A file's text before and after, and the action between them.
#[derive(Debug)]
pub struct Change {
    /// The path as planned (not following links).
    pub path: PathBuf,
    /// The file's text now (`None`: absent).
    pub before: Option<String>,
    /// The text to leave (`None`: no file).
    pub after: Option<String>,
}

impl Change {
    /// Returns what the change does.
    pub fn action(&self) -> Action {
        match (&self.before, &self.after) {
            (None, None) => Action::Unchanged,
            (None, Some(_)) => Action::Create,
            (Some(_), None) => Action::Delete,
            (Some(a), Some(b)) if a == b => Action::Unchanged,
            (Some(_), Some(_)) => Action::Update,
        }
    }

    /// Returns the change as a unified diff (empty when there is none).
    pub fn diff(&self, shown: &str) -> String {
        if self.action() == Action::Unchanged {
            return String::new();
        }
        let old = self.before.as_deref().unwrap_or("");
        let new = self.after.as_deref().unwrap_or("");
        let a = if self.before.is_some() { format!("a/{shown}") } else { "/dev/null".to_owned() };
        let b = if self.after.is_some() { format!("b/{shown}") } else { "/dev/null".to_owned() };
        similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .to_string()
    }
}

/// Why a plan could not be made for a file.
#[derive(Debug)]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: FileErrorKind,
}

/// What went wrong with a file.
#[derive(Debug)]
pub enum FileErrorKind {
    /// It could not be read.
    Read(std::io::Error),
    /// It is not valid UTF-8.
    NotText,
    /// It could not be edited.
    Edit(EditError),
}

impl FilePlan {
    /// Returns the change that sets the file up.
    ///
    /// Errors: the file cannot be read or parsed.
    pub fn setup(&self) -> Result<Change, FileError> {
        let before = self.read()?;
        let after = self.fold(before.as_deref()).map_err(|e| self.error(FileErrorKind::Edit(e)))?;
        Ok(Change { path: self.path.clone(), before, after: Some(after) })
    }

    /// Returns the change that takes the parts out again.
    ///
    /// Errors: the file cannot be read or parsed.
    pub fn remove(&self) -> Result<Change, FileError> {
        let before = self.read()?;
        let Some(current) = before.as_deref() else {
            return Ok(Change { path: self.path.clone(), before: None, after: None });
        };
        let edit = |e| self.error(FileErrorKind::Edit(e));
        let mut fallback = Some(current.to_owned());
        for prune in [Prune::File, Prune::Containers, Prune::Nothing] {
            let mut text = Some(current.to_owned());
            for part in self.parts.iter().rev() {
                text = match text {
                    Some(t) => part.remove(&t, prune).map_err(edit)?,
                    None => None,
                };
            }
            // The original is the text that setting up again turns into
            // exactly the current file.
            if self.fold(text.as_deref()).map_err(edit)? == current {
                return Ok(Change { path: self.path.clone(), before, after: text });
            }
            fallback = text;
        }
        Ok(Change { path: self.path.clone(), before, after: fallback })
    }

    fn fold(&self, text: Option<&str>) -> Result<String, EditError> {
        let mut text = text.map(str::to_owned);
        for part in &self.parts {
            text = Some(part.apply(text.as_deref())?);
        }
        Ok(text.unwrap_or_default())
    }

    fn read(&self) -> Result<Option<String>, FileError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => {
                String::from_utf8(bytes).map(Some).map_err(|_| self.error(FileErrorKind::NotText))
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(self.error(FileErrorKind::Read(err))),
        }
    }

    fn error(&self, kind: FileErrorKind) -> FileError {
        FileError { path: self.path.clone(), kind }
    }
}

/// Carries out `change` on disk; `stop` is the directory whose empty
/// subdirectories a deletion may remove (the project or the home
/// directory), never itself.
///
/// Errors: the I/O error, with the path it concerns.
pub fn write(change: &Change, stop: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    let target = std::fs::canonicalize(&change.path).unwrap_or_else(|_| change.path.clone());
    let at = |err| (target.clone(), err);
    // A link the user made (CLAUDE.md -> AGENTS.md) stays, and so does
    // the file it points to, emptied rather than deleted under it.
    let linked = std::fs::symlink_metadata(&change.path).is_ok_and(|m| m.file_type().is_symlink());
    let emptied = Some(String::new());
    let after = if linked && change.after.is_none() { &emptied } else { &change.after };
    match (&change.before, after) {
        (Some(_), None) => {
            std::fs::remove_file(&target).map_err(at)?;
            remove_empty_parents(&change.path, stop);
            Ok(())
        }
        (None, Some(text)) => {
            let dir = target.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).map_err(|e| (dir.to_path_buf(), e))?;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
                .map_err(at)?;
            file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(at)?;
            sync_dir(dir);
            Ok(())
        }
        (Some(_), Some(text)) => {
            let dir = target.parent().unwrap_or(Path::new("."));
            let permissions = std::fs::metadata(&target).map_err(at)?.permissions();
            let mut temp =
                tempfile::NamedTempFile::new_in(dir).map_err(|e| (dir.to_path_buf(), e))?;
            temp.write_all(text.as_bytes()).and_then(|()| temp.as_file().sync_all()).map_err(at)?;
            temp.as_file().set_permissions(permissions).map_err(at)?;
            temp.persist(&target).map_err(|e| at(e.error))?;
            sync_dir(dir);
            Ok(())
        }
        (None, None) => Ok(()),
    }
}

/// Syncs a directory so a new or renamed entry survives a crash; a
/// failure here loses nothing the user had, so it is not reported.
fn sync_dir(dir: &Path) {
    if let Ok(handle) = std::fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// Removes the directories above `path` that a deletion left empty, up to
/// (not including) `stop`.
fn remove_empty_parents(path: &Path, stop: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == stop || !d.starts_with(stop) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}
