//! The memory directory and the one handle that owns it.
//!
//! [`MemoryDir`] is how the rest of the library reaches the files of a
//! memory directory: it reads them, replaces canonical files atomically,
//! writes caches and creates the directory. [`ReadOnlyMemoryDir`] is the
//! same directory opened for reading: it has no method that writes, so a
//! write on a handle opened read-only does not compile. Every name below is
//! defined once, in [`crate::store::names`].
//!
//! # The files
//!
//! Evidence and canonical state (committed and merged by workmem's driver
//! once the memory is shared):
//!
//! - `daily/YYYY-MM-DD.jsonl`: the append-only fact log, one fact a line
//!   ([`crate::store::fact_log`]);
//! - `curated.json`, `conflicts.json`: the curated state and the review
//!   queue, replaced atomically ([`crate::store::curated_file`],
//!   [`crate::store::conflict_queue`]);
//! - `conflict-adjudications.jsonl`: the audit stream of decisions, and
//!   `conflict-resolution-transactions.jsonl`, the journal of resolutions
//!   in flight (git-ignored) ([`crate::store::journal`]);
//! - `MEMORY.md`: the prompt view rendered from curated.json (git-ignored);
//! - `.distill-pending.json`: the intent of a distill that changes
//!   curated.json, present only between its first and last write.
//!
//! Records of this clone (git-ignored, never trusted when they arrive from
//! elsewhere): `.lock`, the workspace lock; `.journal-owner` and
//! `.distill-owner`, which transaction and which distill intent this clone
//! prepared, by the identity (device, inode) of the file they name
//! ([`crate::store::journal_owner`]).
//!
//! # The caches
//!
//! Every cache is git-ignored, never evidence, and rebuilt from the files
//! above when it cannot vouch for its answer: losing one, or finding it
//! damaged, only costs time. Each is trusted only while what it describes
//! still has the identity (inode, size, modification time on this
//! machine) it recorded; a copy from elsewhere never has it.
//!
//! | cache | holds | invariant, and how it is checked |
//! |---|---|---|
//! | `.checked-state` | the identities curated.json and conflicts.json had when this clone last wrote or checked them | a state file with another identity came from elsewhere and is checked in full before it is served ([`crate::store::checked_state`]) |
//! | `.hash-checkpoints` | SHA-256 states part way through the last version of each state file | keyed by the whole file's hash, which the reader holds; each line carries its own check ([`crate::store::hash_checkpoints`]) |
//! | `.valid-hashes` | hashes of state files checked whole or written by workmem, with the identity they had | a hash is used only while the file keeps that identity, or after hashing it again ([`crate::store::valid_hashes`]) |
//! | `.conflicts-layout` | where each case of the last conflicts.json written starts and ends | names the hash of the file it describes, ends with a check of its lines, and is checked whole before use ([`crate::store::layout_cache`]) |
//! | `.projection.json` | what `context` needs of curated.json | bound to curated.json's identity; rebuilt when it differs |
//! | `.pending.json` | the newest pending keyed facts | bound to the identities of curated.json and of the daily files it read |
//! | `.domain-index` | the keyed fact ids of each daily file, by memory key | each file's entry is used only while the file keeps the stamp it had before it was read; ends with `end`; read, checked and saved only through [`MemoryDir::domain_index`] ([`crate::store::domain_index`]) |
//! | `.append-trail` | the appends workmem made under the lock, as stamps before and after | each line carries a checksum; a cache follows it only from the stamp it read to the stamp the file has ([`crate::store::append_trail`]) |
//! | `.id-index/` | where every fact id of the log is written | bound to the folder's inode and a generation; per daily file, its stamp and the fingerprint of the bytes read ([`crate::store::id_index`], [`crate::store::block_chain`]) |
//! | `.distill-cache`, `.distill-cache.units`, `.distill-cache.ids`, `.distill-cache.places` | what a distill leaves for the next one | bound together by a token and to the directory's inode; per daily file, its stamp and fingerprint; the policy and `as_of` of its run ([`crate::store::distill_cache`]) |
//! | `.search-index/` (updated under `.search-index.lock`) | a full-text index of the active entries and the facts | its state file binds it to the directory's inode, the workspace id, the stamps of its own files, of curated.json, of the corrections stream (with the documents of the facts it retracts) and of every daily file read ([`crate::store::search_index`]); a search without a usable one reads the records and leaves a mark, the next builds it |
//!
//! Temporary files (`.<name>.<random>.tmp`) are left only by a replace that
//! crashed; the next writer that takes the lock removes them.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use std::io::Read as _;

use crate::error::{IoContext, Result};
use crate::model::canon;
use crate::store::atomic_io;
pub(crate) use crate::store::atomic_io::{FileStamp, HoldReplaced, Placement, Staged, lines};
use crate::store::checked_state::{self, StatePair};
use crate::store::conflict_queue::ConflictsFile;
use crate::store::conflict_queue::{Case, ConflictQueue};
use crate::store::curated_file::CuratedFile;
use crate::store::curated_state::{CuratedState, Entry};
use crate::store::domain_index::DomainIndexFile;
use crate::store::hash_checkpoints::{self, Checkpoints};
use crate::store::journal_file::JournalFile;
use crate::store::lock::WorkspaceLock;
use crate::store::names::{
    CACHE_DIRS, CACHE_FILES, CONFLICTS_FILE, CONFLICTS_LAYOUT_FILE, CURATED_FILE, DAILY_DIR,
    DISTILL_CACHE_FILES, DOMAIN_INDEX_FILE, workmem_dir,
};
use crate::store::search_index::SearchIndexDir;
use crate::store::state_file::{Body, Record, StateFile};
use crate::store::{layout_cache, valid_hashes};

/// A memory directory opened for reading: every read of its files, and no
/// write.
#[derive(Debug, Clone)]
pub(crate) struct ReadOnlyMemoryDir {
    path: PathBuf,
    /// The workspace id every record of the directory must carry.
    workspace_id: String,
}

impl ReadOnlyMemoryDir {
    /// The memory directory at `path` (which need not exist), of the
    /// workspace `workspace_id`.
    pub(crate) fn new(path: PathBuf, workspace_id: String) -> ReadOnlyMemoryDir {
        ReadOnlyMemoryDir { path, workspace_id }
    }

    /// Returns the directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Returns the search index of this directory as a reader sees it:
    /// none (a search reads the records), nothing written.
    pub(crate) fn search_index(&self) -> SearchIndexDir {
        SearchIndexDir::new(self.path.clone(), self.workspace_id.clone(), false)
    }

    /// Returns the workspace id every record of the directory must carry.
    pub(crate) fn workspace_id(&self) -> &str {
        &self.workspace_id
    }

    /// Returns the path of the file `name` of the directory.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Returns the folder of the daily logs.
    pub(crate) fn daily_dir(&self) -> PathBuf {
        self.path.join(DAILY_DIR)
    }

    /// Reads the file `name` whole; `None` when it does not exist.
    ///
    /// Errors: [`crate::Error::Io`], or [`crate::Error::Corrupt`] for a
    /// symlink.
    pub(crate) fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        atomic_io::read_optional(&self.file(name))
    }

    /// Reads the file at `path`, one of this directory's (a daily file, a
    /// file named in a finding), whole; `None` when it does not exist.
    ///
    /// Errors: as [`ReadOnlyMemoryDir::read`].
    pub(crate) fn read_path(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        atomic_io::read_optional(path)
    }

    /// Reads the file `name` whole with the stamp it had when read; `None`
    /// when it does not exist.
    ///
    /// Errors: as [`ReadOnlyMemoryDir::read`].
    pub(crate) fn read_stamped(&self, name: &str) -> Result<Option<(Vec<u8>, FileStamp)>> {
        atomic_io::read_stamped(&self.file(name))
    }

    /// Opens the file `name` for reading, with its stamp; `None` when it
    /// does not exist.
    ///
    /// Errors: as [`ReadOnlyMemoryDir::read`].
    pub(crate) fn open(&self, name: &str) -> Result<Option<(File, FileStamp)>> {
        let path = self.file(name);
        let Some(file) = atomic_io::open_optional(&path)? else { return Ok(None) };
        let meta = file.metadata().at(&path)?;
        Ok(Some((file, atomic_io::stamp_of(&meta))))
    }

    /// Returns the stamp (inode, size, modification time) of the file
    /// `name`; `None` when it does not exist.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn stamp(&self, name: &str) -> Result<Option<FileStamp>> {
        atomic_io::file_stamp(&self.file(name))
    }

    /// Returns the stamp of the file at `path`, one of this directory's;
    /// `None` when it does not exist.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn stamp_path(&self, path: &Path) -> Result<Option<FileStamp>> {
        atomic_io::file_stamp(path)
    }

    /// Returns the first complete line of the file at `path` (a daily
    /// file); `None` when it has none.
    ///
    /// Errors: as [`ReadOnlyMemoryDir::read`].
    pub(crate) fn first_complete_line(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        atomic_io::first_complete_line(path)
    }

    /// Returns whether the file `name` exists (a symlink counts).
    pub(crate) fn exists(&self, name: &str) -> bool {
        std::fs::symlink_metadata(self.file(name)).is_ok()
    }

    /// Returns the metadata of the file `name` itself (a symlink is not
    /// followed).
    ///
    /// Errors: the operating system's.
    pub(crate) fn symlink_metadata(&self, name: &str) -> io::Result<std::fs::Metadata> {
        std::fs::symlink_metadata(self.file(name))
    }

    /// Reads the file `name` whole, with the operating system's error (for
    /// a check that reports it rather than fails).
    ///
    /// Errors: the operating system's.
    pub(crate) fn read_raw(&self, name: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.file(name))
    }

    /// Returns curated.json decoded and checked (empty when it does not
    /// exist), with the bytes read.
    ///
    /// Errors: [`crate::Error::Corrupt`] naming the entry,
    /// [`crate::Error::Scope`], [`crate::Error::Io`].
    pub(crate) fn curated_with_bytes(&self) -> Result<(CuratedState, Option<Vec<u8>>)> {
        let path = self.file(CURATED_FILE);
        match self.read_path(&path)? {
            None => Ok((CuratedState::new(), None)),
            Some(data) => Ok((CuratedState::decode(&data, &path, &self.workspace_id)?, Some(data))),
        }
    }

    /// Returns curated.json as stored, for a writer that replaces some of
    /// its entries: see [`ReadOnlyMemoryDir::stored`].
    ///
    /// Errors: as `Workspace::curated`.
    pub(crate) fn stored_curated(&self) -> Result<Stored<Entry>> {
        let path = self.file(CURATED_FILE);
        self.stored(CURATED_FILE, |data| {
            let state = match data {
                Some(data) => CuratedState::decode(data, &path, &self.workspace_id)?,
                None => CuratedState::new(),
            };
            CuratedFile::encode(&state, &path, &self.workspace_id)
        })
    }

    /// Returns conflicts.json as stored, for a writer that replaces some of
    /// its cases: see [`ReadOnlyMemoryDir::stored`].
    ///
    /// Errors: as `Workspace::conflicts`.
    pub(crate) fn stored_conflicts(&self) -> Result<Stored<Case>> {
        let path = self.file(CONFLICTS_FILE);
        self.stored(CONFLICTS_FILE, |data| {
            let queue = match data {
                Some(data) => ConflictQueue::decode(data, &path, &self.workspace_id)?,
                None => ConflictQueue::default(),
            };
            ConflictsFile::encode(&queue, &path, &self.workspace_id)
        })
    }

    /// Returns the state file `name` as stored: when its hash is among the
    /// known-valid ones (`store::valid_hashes`, found by its identity or by
    /// hashing it), only its layout is read; otherwise `whole` decodes and
    /// checks it and encodes it again. Writes nothing: a writer records the
    /// hash of what it writes. `whole(None)` is the file of the empty
    /// state, what a missing file counts as.
    pub(crate) fn stored<R: Record>(
        &self,
        name: &str,
        whole: impl Fn(Option<&[u8]>) -> Result<StateFile<R>>,
    ) -> Result<Stored<R>> {
        let path = self.file(name);
        let Some((mut file, stamp)) = self.open(name)? else {
            let file = whole(None)?;
            return Ok(Stored { sha256: file.sha256().to_owned(), file, exists: false });
        };
        // A file whose identity is recorded with its hash is only read as
        // needed (see `store::valid_hashes`); any other is read whole,
        // hashed and decoded. A hash alone is no proof: a branch can carry
        // a cache that lists the hash of the file it forged.
        let (body, sha256, known) =
            if let Some(sha256) = valid_hashes::hash_of(self.path(), name, stamp) {
                (Body::File(file), sha256, true)
            } else {
                let mut data = Vec::new();
                file.read_to_end(&mut data).at(&path)?;
                let sha256 = canon::sha256_hex(&data);
                (Body::Held(data), sha256, false)
            };
        // The layout of a known file is taken from its cache when that
        // holds it, and read from the file otherwise.
        let cached = R::LAYOUT_CACHE
            .filter(|_| known)
            .and_then(|cache| layout_cache::load(&self.file(cache), name, &sha256));
        let body = match cached {
            Some(lines) => {
                match StateFile::with_layout(body, sha256.clone(), &self.workspace_id, &lines)
                    .at(&path)?
                {
                    Ok(file) => return Ok(self.known_stored(name, file, sha256)),
                    Err(body) => body,
                }
            }
            None => body,
        };
        let body = if known {
            match StateFile::known_valid(body, sha256.clone(), &self.workspace_id).at(&path)? {
                Ok(file) => return Ok(self.known_stored(name, file, sha256)),
                Err(body) => body,
            }
        } else {
            body
        };
        let file = whole(Some(&body.into_bytes().at(&path)?))?;
        Ok(Stored { file, sha256, exists: true })
    }

    /// The stored file `name`, known valid with hash `sha256` and laid out
    /// as `file`, with the hash checkpoints recorded for it (read if it is
    /// spliced).
    fn known_stored<R: Record>(&self, name: &str, file: StateFile<R>, sha256: String) -> Stored<R> {
        Stored { file: file.with_recorded_checkpoints(self.path(), name), sha256, exists: true }
    }

    /// Returns the conflict queue for a writer that needs every case (a
    /// whole-log distill): a file that still has the identity recorded with
    /// a known-valid hash ([`valid_hashes`]) is decoded without its
    /// invariants checked again, which costs about as much as the decoding
    /// (a fingerprint and the ids of each case, closed ones included).
    ///
    /// Errors: as `Workspace::conflicts`.
    pub(crate) fn conflicts_for_writer(&self) -> Result<ConflictQueue> {
        let path = self.file(CONFLICTS_FILE);
        let Some((data, stamp)) = self.read_stamped(CONFLICTS_FILE)? else {
            return Ok(ConflictQueue::default());
        };
        if valid_hashes::hash_of(self.path(), CONFLICTS_FILE, stamp).is_some() {
            ConflictQueue::decode_known(&data, &path, &self.workspace_id)
        } else {
            ConflictQueue::decode(&data, &path, &self.workspace_id)
        }
    }

    /// Returns conflicts.json decoded and checked (empty when it does not
    /// exist), with the bytes read.
    ///
    /// Errors: [`crate::Error::Corrupt`] naming the case,
    /// [`crate::Error::Scope`], [`crate::Error::Io`].
    pub(crate) fn conflicts_with_bytes(&self) -> Result<(ConflictQueue, Option<Vec<u8>>)> {
        let path = self.file(CONFLICTS_FILE);
        match self.read_path(&path)? {
            None => Ok((ConflictQueue::default(), None)),
            Some(data) => {
                Ok((ConflictQueue::decode(&data, &path, &self.workspace_id)?, Some(data)))
            }
        }
    }

    /// Returns what kind of file `meta` describes, for a message.
    pub(crate) fn kind_of(meta: &std::fs::Metadata) -> &'static str {
        atomic_io::kind_of(meta)
    }

    /// Fails when `path` (the project's `.workmem/`, or the default memory
    /// directory in it) is a symbolic link.
    ///
    /// Errors: [`crate::Error::Corrupt`] naming the path, [`crate::Error::Io`].
    pub(crate) fn refuse_symlink(path: &Path) -> Result<()> {
        atomic_io::refuse_symlink(path)
    }

    /// Reads the file `name` of `project`'s `.workmem/` whole, refusing a
    /// symlinked `.workmem/` or file and a file that is not a regular file
    /// (the folder belongs to the checkout, so it may be hostile); `None`
    /// when it does not exist.
    ///
    /// Errors: [`crate::Error::Corrupt`] naming the link or the file,
    /// [`crate::Error::Io`].
    pub(crate) fn read_project_file(project: &Path, name: &str) -> Result<Option<Vec<u8>>> {
        let dir = workmem_dir(project);
        atomic_io::refuse_symlink(&dir)?;
        atomic_io::read_optional(&dir.join(name))
    }

    /// Reads a file of the user's own (a configuration file, which may be
    /// a link) whole, refusing one that is not a regular file; `None` when
    /// it does not exist. It is no file of a memory directory, but read
    /// with the same care.
    ///
    /// Errors: [`crate::Error::Corrupt`] for a non-regular file,
    /// [`crate::Error::Io`].
    pub(crate) fn read_user_file(path: &Path) -> Result<Option<Vec<u8>>> {
        atomic_io::read_optional_following(path)
    }
}

/// A state file as a writer reads it ([`ReadOnlyMemoryDir::stored`]).
#[derive(Debug)]
pub(crate) struct Stored<R: Record> {
    /// The file, canonical (re-encoded when the stored bytes were not).
    pub(crate) file: StateFile<R>,
    /// The SHA-256 of the bytes stored (of the empty state's encoding when
    /// there is no file).
    pub(crate) sha256: String,
    /// Whether the file exists.
    pub(crate) exists: bool,
}

/// A memory directory opened for reading and writing: the reads of
/// [`ReadOnlyMemoryDir`] (through `Deref`) and every write.
#[derive(Debug, Clone)]
pub(crate) struct MemoryDir {
    read: ReadOnlyMemoryDir,
}

impl Deref for MemoryDir {
    type Target = ReadOnlyMemoryDir;

    fn deref(&self) -> &ReadOnlyMemoryDir {
        &self.read
    }
}

impl MemoryDir {
    /// The memory directory at `path` (which need not exist), of the
    /// workspace `workspace_id`.
    pub(crate) fn new(path: PathBuf, workspace_id: String) -> MemoryDir {
        MemoryDir { read: ReadOnlyMemoryDir::new(path, workspace_id) }
    }

    /// Creates the directory and `daily/` (mode 0700) if missing.
    ///
    /// Errors: [`crate::Error::Io`], [`crate::Error::Corrupt`] for a
    /// symlinked directory.
    pub(crate) fn create(&self) -> Result<()> {
        atomic_io::create_private_dir(self.path())?;
        atomic_io::create_private_dir(&self.daily_dir())
    }

    /// Creates the directory at `path` (the project's `.workmem/`, the
    /// folder of a memory file a merge writes) with mode 0700 if missing.
    ///
    /// Errors: as [`MemoryDir::create`].
    pub(crate) fn create_dir(&self, path: &Path) -> Result<()> {
        atomic_io::create_private_dir(path)
    }

    /// Takes the workspace lock.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn lock(&self) -> Result<WorkspaceLock> {
        WorkspaceLock::acquire(self.path())
    }

    /// Returns the domain index of this directory (`.domain-index`), which
    /// reads, checks and saves itself.
    pub(crate) fn domain_index(&self) -> DomainIndexFile {
        DomainIndexFile::new(self.file(DOMAIN_INDEX_FILE), self.workspace_id().to_owned())
    }

    /// Returns the journal of this directory (`journal.jsonl`), which
    /// reads, checks, appends to and compacts itself and knows whether this
    /// clone wrote it.
    pub(crate) fn journal(&self) -> JournalFile {
        JournalFile::new(self.path(), self.workspace_id())
    }

    /// Returns the search index of this directory (`.search-index/`), which
    /// takes its lock, checks its state and updates itself on disk.
    pub(crate) fn search_index(&self) -> SearchIndexDir {
        SearchIndexDir::new(self.path().to_owned(), self.workspace_id().to_owned(), true)
    }

    /// Removes the temporary files a crashed replace left behind.
    pub(crate) fn remove_temporaries(&self) {
        atomic_io::remove_temporaries(self.path());
    }

    /// Records the identity the state file `name` (curated.json or
    /// conflicts.json) has now as written by this clone, in
    /// `.checked-state`: what every writer of either file does once its
    /// write is durable. The other file keeps the identity recorded for it,
    /// so a file that changed meanwhile by other hands is still checked.
    pub(crate) fn record_written(&self, name: &str) {
        let Ok(stamp) = self.stamp(name) else { return };
        let mut pair = checked_state::load(self.path())
            .unwrap_or(StatePair { curated: None, conflicts: None });
        if name == CURATED_FILE {
            pair.curated = stamp;
        } else {
            pair.conflicts = stamp;
        }
        checked_state::record(self.path(), pair);
    }

    /// Keeps the caches of the state file `name` that a writer just put in
    /// place with `stamp`: its hash as known valid (`.valid-hashes`), its
    /// identity as written here (`.checked-state`) and the checkpoints of
    /// its hash (`.hash-checkpoints`).
    pub(crate) fn record_state(
        &self,
        name: &str,
        sha256: &str,
        checkpoints: Option<&Checkpoints>,
        stamp: Option<FileStamp>,
    ) {
        valid_hashes::record(self.path(), name, sha256, stamp);
        self.record_written(name);
        if let Some(checkpoints) = checkpoints {
            hash_checkpoints::record(self.path(), name, sha256, checkpoints);
        }
    }

    /// Replaces conflicts.json with `file` and keeps its caches: those of
    /// [`MemoryDir::record_state`] and its layout (`.conflicts-layout`).
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn write_conflicts(&self, file: ConflictsFile) -> Result<()> {
        let path = self.file(CONFLICTS_FILE);
        let sha256 = file.sha256().to_owned();
        let checkpoints = file.checkpoints().cloned();
        let layout = file.layout_lines();
        file.save(&path)?;
        self.record_state(
            CONFLICTS_FILE,
            &sha256,
            checkpoints.as_ref(),
            self.stamp(CONFLICTS_FILE)?,
        );
        if let Some(layout) = layout {
            let cache = self.file(CONFLICTS_LAYOUT_FILE);
            layout_cache::record(&cache, CONFLICTS_FILE, &sha256, &layout);
        }
        Ok(())
    }

    /// Removes the file `name`; a missing file is no error.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn remove(&self, name: &str) -> Result<()> {
        let path = self.file(name);
        match std::fs::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err).at(&path),
            _ => Ok(()),
        }
    }

    /// Removes the distill cache: the next distill reads the whole log.
    pub(crate) fn drop_distill_cache(&self) {
        for name in DISTILL_CACHE_FILES {
            let _ = self.remove(name);
        }
    }

    /// Removes every cache and temporary file of the directory (a
    /// redaction's last rewrite: some hold text, and all describe bytes
    /// that changed). Later commands rebuild each from the files. The
    /// records of what this clone wrote and checked (`.checked-state`,
    /// `.valid-hashes`) stay: they hold identities and hashes, no text, and
    /// the writer records the files it rewrote there.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn remove_caches(&self) -> Result<()> {
        for name in CACHE_FILES.into_iter().chain(DISTILL_CACHE_FILES) {
            self.remove(name)?;
        }
        for dir in CACHE_DIRS {
            let path = self.file(dir);
            match std::fs::remove_dir_all(&path) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err).at(&path),
                _ => {}
            }
        }
        self.remove_temporaries();
        atomic_io::sync_dir(self.path())
    }

    /// Removes the id index's manifest: the next use rebuilds the index.
    pub(crate) fn drop_id_index(&self) {
        crate::store::id_index::discard(self.path());
    }

    /// Replaces the file `name` atomically and durably with `data`.
    ///
    /// Errors: [`crate::Error::Io`], or [`crate::Error::Corrupt`] for a
    /// symlink.
    pub(crate) fn replace(&self, name: &str, data: &[u8]) -> Result<()> {
        atomic_io::replace(&self.file(name), data)
    }

    /// Replaces the file at `path` (a memory file a merge writes, the pin)
    /// atomically and durably with `data`.
    ///
    /// Errors: as [`MemoryDir::replace`].
    pub(crate) fn replace_path(&self, path: &Path, data: &[u8]) -> Result<()> {
        atomic_io::replace(path, data)
    }

    /// Replaces the cache `name` atomically, without waiting for the disk.
    ///
    /// Errors: as [`MemoryDir::replace`].
    pub(crate) fn replace_cache(&self, name: &str, data: &[u8]) -> Result<()> {
        atomic_io::replace_cache(&self.file(name), data)
    }

    /// Replaces the cache `name` with what `write` writes; when `write`
    /// returns false the cache is left as it was.
    ///
    /// Errors: as [`MemoryDir::replace`].
    pub(crate) fn replace_cache_streamed(
        &self,
        name: &str,
        write: impl FnOnce(&mut dyn io::Write) -> io::Result<bool>,
    ) -> Result<bool> {
        atomic_io::replace_cache_streamed(&self.file(name), write)
    }

    /// Writes `data` at offset `at` of the cache `name`, cutting what
    /// followed.
    ///
    /// Errors: as [`MemoryDir::replace`].
    pub(crate) fn extend_cache(&self, name: &str, at: u64, data: &[u8]) -> Result<()> {
        atomic_io::extend_cache(&self.file(name), at, data)
    }

    /// Writes the next version of the file `name` with `write` and makes
    /// it durable, not yet in its place (see [`Staged`]).
    ///
    /// Errors: [`crate::Error::Io`], or [`crate::Error::Corrupt`] for a
    /// symlink.
    pub(crate) fn stage(
        &self,
        name: &str,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<Staged> {
        atomic_io::stage(&self.file(name), write)
    }

    /// Holds the old versions of the files replaced from now on until the
    /// value is dropped (see [`HoldReplaced`]).
    pub(crate) fn hold_replaced(&self) -> HoldReplaced {
        HoldReplaced::new()
    }
}
