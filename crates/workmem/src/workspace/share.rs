//! Memory that travels: pinning the workspace id in
//! `.workmem/workspace.toml` (`share`), taking over a memory written at
//! another path (`adopt`), and the files that tell git what to commit and
//! how to merge the memory files (docs/sharing.md).

use std::path::{Path, PathBuf};

use crate::error::{Damage, Error, Invalid, Location, Result};
use crate::store::identity;
use crate::store::memory_dir::MemoryDir;
use crate::store::names::{
    DEFAULT_MEMORY_DIR, GITATTRIBUTES_FILE, GITIGNORE_FILE, JOURNAL_FILE, MEMORY_FILE, SAMPLE_DAY,
    SEARCH_INDEX_DIR, default_memory_dir, pin_file, workmem_dir,
};
use crate::workspace::{MemoryFile, Workspace, WorkspaceBuilder};

/// What [`Workspace::share`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shared {
    /// The pinned workspace id.
    pub workspace_id: String,
    /// The files written or updated (the pin, the ignore and attribute
    /// files); empty when everything was already in place.
    pub files: Vec<PathBuf>,
    /// The directory whose `.gitattributes` routes the memory files to the
    /// merge driver.
    pub attributes: PathBuf,
    /// The memory files that are never committed ([`NOT_COMMITTED`]), as
    /// paths: the caller untracks those git still tracks.
    pub not_committed: Vec<PathBuf>,
}

/// What [`WorkspaceBuilder::adopt`] found and pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adopted {
    /// The id every record carries, now pinned.
    pub workspace_id: String,
    /// The id the project's current path derives, which the memory did not
    /// carry (equal to `workspace_id` when nothing had moved).
    pub previous_path_id: String,
    /// Whether the pin was written now (false: it was already in place).
    pub pinned_now: bool,
}

/// The memory files that `share` keeps out of commits (listed in the
/// ignore file, and untracked by the caller when tracked): the transaction
/// journal and MEMORY.md.
pub const NOT_COMMITTED: [&str; 2] = [JOURNAL_FILE, MEMORY_FILE];

/// The name of workmem's merge driver in `.gitattributes` and git's
/// configuration (`merge.workmem.driver`).
pub const MERGE_DRIVER: &str = "workmem";

impl Workspace {
    /// Pins the workspace id in `.workmem/workspace.toml` and writes the
    /// files that share the memory through git: a `.gitignore` that keeps
    /// the lock, caches and temporary files out of commits, and a
    /// `.gitattributes` that routes every memory file to the merge driver
    /// named [`MERGE_DRIVER`]. Both go to `.workmem/` for the default
    /// memory directory, else into the memory directory; existing files
    /// keep their lines and gain the missing ones. Idempotent. Configuring
    /// the driver itself in git is the caller's part.
    ///
    /// Every record already in the memory directory must carry this
    /// workspace's id: sharing pins the id in use, and a memory written at
    /// another path is taken over with [`WorkspaceBuilder::adopt`] first.
    ///
    /// Errors: [`Error::Scope`] for a record of another workspace,
    /// [`Error::MixedWorkspaces`], [`Error::InvalidInput`] naming
    /// `memory_dir` when it lies outside the project, [`Error::Corrupt`],
    /// [`Error::Io`].
    pub fn share(&self) -> Result<Shared> {
        self.writable()?;
        let (dir, prefix) = self.sharing_dir()?;
        let ids = identity::census(self.dir.path(), &self.log)?;
        if let Some((found, seen)) = ids.iter().find(|(id, _)| **id != self.workspace_id) {
            if ids.len() > 1 {
                return Err(mixed(ids));
            }
            return Err(Error::Scope {
                location: seen.first.clone(),
                found: found.clone(),
                expected: self.workspace_id.clone(),
            });
        }
        let mut files = Vec::new();
        if !self.pinned {
            files.extend(self.write_pin(&self.workspace_id)?);
        }
        self.dir.create_dir(self.dir.path())?;
        // `.*` covers every cache; the search index is named as well, as
        // the largest of them (a narrowed pattern must still leave it out).
        let search_index = SEARCH_INDEX_DIR;
        let mut ignore: Vec<String> = if prefix.is_empty() {
            vec![
                ".*".into(),
                format!("!/{GITIGNORE_FILE}"),
                format!("!/{GITATTRIBUTES_FILE}"),
                format!("/{search_index}/"),
            ]
        } else {
            vec![format!("{prefix}.*"), format!("{prefix}{search_index}/")]
        };
        // The journal holds this clone's work in flight, never anyone
        // else's; MEMORY.md is rendered from the checked curated.json by
        // every clone (a merge could not keep a committed one in step).
        ignore.extend(NOT_COMMITTED.iter().map(|file| format!("/{prefix}{file}")));
        files.extend(merge_lines(
            &self.dir,
            &dir.join(GITIGNORE_FILE),
            "# workmem: the lock, caches and temporary files stay out of commits",
            &ignore,
        )?);
        let mut attributes: Vec<String> = MemoryFile::ROUTED
            .iter()
            .map(|file| format!("{prefix}{} merge={MERGE_DRIVER}", file.pattern()))
            .collect();
        if prefix.is_empty() {
            // The pin lives in `.workmem/`, outside this directory.
        } else {
            attributes.push(format!("{} merge={MERGE_DRIVER}", MemoryFile::Pin.pattern()));
        }
        files.extend(merge_lines(
            &self.dir,
            &dir.join(GITATTRIBUTES_FILE),
            "# workmem: memory files merge with workmem's driver (`workmem share` configures it)",
            &attributes,
        )?);
        let not_committed = NOT_COMMITTED.iter().map(|file| self.file(file)).collect();
        Ok(Shared {
            workspace_id: self.workspace_id.clone(),
            files,
            attributes: dir,
            not_committed,
        })
    }

    /// Returns the `.gitattributes` that [`Workspace::share`] writes, when
    /// it exists and routes a memory file to the merge driver: how a clone
    /// tells that its memory is shared.
    ///
    /// Errors: [`Error::Corrupt`] for a symlink or non-regular file,
    /// [`Error::Io`].
    pub fn shared_attributes(&self) -> Result<Option<PathBuf>> {
        let Ok((dir, _)) = self.sharing_dir() else { return Ok(None) };
        let path = dir.join(GITATTRIBUTES_FILE);
        let routed = self.dir.read_path(&path)?.is_some_and(|data| {
            String::from_utf8_lossy(&data)
                .lines()
                .any(|line| line.trim_end().ends_with(&format!(" merge={MERGE_DRIVER}")))
        });
        Ok(routed.then_some(path))
    }

    /// Returns whether a `.gitignore` or `.gitattributes` that
    /// [`Workspace::share`] writes is present, in `.workmem/` or in the
    /// memory directory: the sign that the memory was shared, whatever
    /// the lines in it say now.
    pub fn has_sharing_files(&self) -> bool {
        [workmem_dir(&self.project), self.dir.path().to_path_buf()]
            .iter()
            .any(|dir| dir.join(GITATTRIBUTES_FILE).exists() || dir.join(GITIGNORE_FILE).exists())
    }

    /// Returns the committed memory files that [`Workspace::share`] routes
    /// to the merge driver, each with its kind and path: one daily log
    /// that stands for all of them (it need not exist), curated.json,
    /// conflicts.json, the audit stream, the corrections stream once it
    /// exists (a memory shared by an earlier version routes it only after
    /// `share` runs again) and, for the default memory directory, the pin.
    /// What git's attributes say of each is the caller's question.
    pub fn routed_files(&self) -> Vec<(MemoryFile, PathBuf)> {
        let mut files: Vec<(MemoryFile, PathBuf)> = MemoryFile::ROUTED
            .iter()
            .filter(|file| !NOT_COMMITTED.contains(&file.pattern()))
            .filter_map(|&file| match file {
                MemoryFile::DailyLog => Some((file, self.dir.daily_dir().join(SAMPLE_DAY))),
                MemoryFile::Corrections => {
                    let path = self.file(file.pattern());
                    path.exists().then_some((file, path))
                }
                _ => Some((file, self.file(file.pattern()))),
            })
            .collect();
        if self.dir.path() == default_memory_dir(&self.project) {
            files.push((MemoryFile::Pin, pin_file(&self.project)));
        }
        files
    }

    /// Returns the directory that holds the sharing files and the prefix of
    /// the memory files' paths relative to it.
    fn sharing_dir(&self) -> Result<(PathBuf, String)> {
        if self.dir.path() == default_memory_dir(&self.project) {
            let memory = Path::new(DEFAULT_MEMORY_DIR).file_name().unwrap_or_default();
            return Ok((workmem_dir(&self.project), format!("{}/", memory.to_string_lossy())));
        }
        let canonical =
            std::fs::canonicalize(self.dir.path()).unwrap_or(self.dir.path().to_path_buf());
        if canonical.starts_with(&self.project) {
            Ok((self.dir.path().to_path_buf(), String::new()))
        } else {
            Err(Error::invalid(
                "memory_dir",
                Invalid::Project {
                    path: self.dir.path().to_path_buf(),
                    problem: "outside the project, so git cannot carry it",
                },
            ))
        }
    }

    /// Writes `.workmem/workspace.toml` pinning `id`; returns its path.
    fn write_pin(&self, id: &str) -> Result<Option<PathBuf>> {
        let dot = workmem_dir(&self.project);
        self.dir.create_dir(&dot)?;
        let path = pin_file(&self.project);
        self.dir.replace_path(&path, identity::pin_text(id).as_bytes())?;
        Ok(Some(path))
    }
}

impl WorkspaceBuilder {
    /// Takes over a memory directory written at another path (a moved,
    /// copied or re-mounted project whose id was never pinned): checks that
    /// every record carries one and the same workspace id, pins it in
    /// `.workmem/workspace.toml`, and opens the workspace with it. Nothing
    /// else is written. With the id already pinned and carried by every
    /// record, it only opens.
    ///
    /// Errors: [`Error::MixedWorkspaces`] when the records carry several ids
    /// (or another one than the pin); [`Error::InvalidInput`] naming
    /// `memory_dir` when there is no record to adopt; [`Error::Corrupt`] for
    /// a record without a workspace id; as [`WorkspaceBuilder::open`].
    pub fn adopt(self) -> Result<(Workspace, Adopted)> {
        let unopened = self.clone().resolve(false)?;
        let mut ids = identity::census(unopened.dir.path(), &unopened.log)?;
        if unopened.pinned && !ids.contains_key(&unopened.workspace_id) {
            let pin = pin_file(&unopened.project);
            ids.insert(
                unopened.workspace_id.clone(),
                identity::Sighting { records: 1, first: Location::file(&pin) },
            );
        }
        let mut found = ids.keys();
        let (Some(id), None) = (found.next(), found.next()) else {
            if ids.is_empty() {
                return Err(Error::invalid(
                    "memory_dir",
                    Invalid::Project {
                        path: unopened.dir.path().to_path_buf(),
                        problem: "holds no record to adopt (`init` and `share` start a new memory)",
                    },
                ));
            }
            return Err(mixed(ids));
        };
        let pinned_now = !unopened.pinned;
        if pinned_now {
            unopened.writable()?;
            unopened.write_pin(id)?;
        }
        let adopted = Adopted {
            workspace_id: id.clone(),
            previous_path_id: unopened.path_id.clone(),
            pinned_now,
        };
        Ok((self.open()?, adopted))
    }
}

/// Returns the error for records of several workspaces.
fn mixed(ids: std::collections::BTreeMap<String, identity::Sighting>) -> Error {
    Error::MixedWorkspaces {
        found: ids
            .into_iter()
            .map(|(id, seen)| crate::error::WorkspaceSighting {
                workspace_id: id,
                records: seen.records,
                first: seen.first,
            })
            .collect(),
    }
}

/// Adds the `lines` missing from the text file at `path` (creating it with
/// `header` first), atomically; returns the path when it changed.
fn merge_lines(
    dir: &MemoryDir,
    path: &Path,
    header: &str,
    lines: &[String],
) -> Result<Option<PathBuf>> {
    let existing = dir.read_path(path)?.map(|data| {
        String::from_utf8(data).map_err(|_| Error::corrupt(Location::file(path), Damage::NotUtf8))
    });
    let mut text = existing.transpose()?.unwrap_or_default();
    let missing: Vec<&String> =
        lines.iter().filter(|line| !text.lines().any(|have| have.trim_end() == *line)).collect();
    if missing.is_empty() {
        return Ok(None);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.lines().any(|have| have == header) {
        text.push_str(header);
        text.push('\n');
    }
    for line in missing {
        text.push_str(line);
        text.push('\n');
    }
    dir.replace_path(path, text.as_bytes())?;
    Ok(Some(path.to_path_buf()))
}
