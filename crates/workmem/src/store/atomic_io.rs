//! Durable file primitives: atomic replace, durable append with torn-tail
//! repair, directory fsync, and symlink-refusing reads.
//!
//! Every whole-file write of the library goes through [`replace`]; every
//! JSONL record goes through [`append`]. Nothing here knows the record
//! formats: callers pass a validator for torn-tail repair.
//!
//! Concurrency of appends: appenders hold a *shared* `flock` on the log file
//! while they write, so many processes append at once. Repairing a torn tail
//! needs the *exclusive* lock, which is granted only when no append is in
//! flight: a fragment seen under it is a crashed writer's, never a live one's.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Damage, Error, IoContext, Location, Result};
use crate::store::failpoint;

/// Creates `dir` and its missing parents with mode 0700, refusing a symlink
/// at `dir` itself.
///
/// Errors: [`Error::Io`], or [`Error::Corrupt`] for a symlink.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    refuse_symlink(dir)?;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).at(dir)
}

/// Fails when `path` exists and is a symbolic link: a cloned repository may
/// carry a hostile memory directory, and workmem never writes through links.
///
/// Errors: [`Error::Corrupt`] naming the path.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(symlink_error(path)),
        Ok(_) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err).at(path),
    }
}

fn symlink_error(path: &Path) -> Error {
    Error::corrupt(Location::file(path), Damage::Symlink)
}

/// Reads a whole file without following a symlink; `None` when it does not
/// exist.
///
/// Errors: [`Error::Io`], or [`Error::Corrupt`] for a symlink.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    let Some(mut file) = open_optional(path)? else { return Ok(None) };
    let mut data = Vec::new();
    file.read_to_end(&mut data).at(path)?;
    Ok(Some(data))
}

/// Reads a whole file like [`read_optional`], with the identity the file
/// had *before* the read: a write racing the read can only make the data
/// newer than the stamp, so a cache keyed by the stamp is never newer than
/// what it was built from.
///
/// Errors: as [`read_optional`].
pub fn read_stamped(path: &Path) -> Result<Option<(Vec<u8>, FileStamp)>> {
    let Some(mut file) = open_optional(path)? else { return Ok(None) };
    let stamp = stamp_of(&file.metadata().at(path)?);
    let mut data = Vec::new();
    file.read_to_end(&mut data).at(path)?;
    Ok(Some((data, stamp)))
}

/// Opens a file for reading without following a symlink and without
/// blocking; `None` when it does not exist. Anything but a regular file (a
/// FIFO, a device, a directory, a socket) is refused: a hostile memory
/// directory must not hang a reader on a pipe nobody writes to.
///
/// Errors: [`Error::Io`], or [`Error::Corrupt`] for a symlink or a file
/// that is not regular.
pub fn open_optional(path: &Path) -> Result<Option<File>> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
    // writer. It changes nothing for the regular files that pass the check.
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(file) => {
            ensure_regular(&file, path)?;
            Ok(Some(file))
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            refuse_symlink(path)?;
            Err(err).at(path)
        }
        Err(err) => Err(err).at(path),
    }
}

/// Reads a whole file like [`read_optional`] but following a symlink: for
/// files the user owns outside any workspace (their configuration), where
/// links are common. Anything but a regular file is still refused, without
/// blocking.
///
/// Errors: [`Error::Io`], or [`Error::Corrupt`] for a file that is not
/// regular.
pub fn read_optional_following(path: &Path) -> Result<Option<Vec<u8>>> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).at(path),
    };
    ensure_regular(&file, path)?;
    let mut data = Vec::new();
    (&file).read_to_end(&mut data).at(path)?;
    Ok(Some(data))
}

/// Fails unless the opened `file` (at `path`) is a regular file, checked on
/// the descriptor itself so that nothing can be swapped in after the check.
///
/// Errors: [`Error::Corrupt`] naming the path and what is there instead;
/// [`Error::Io`].
pub fn ensure_regular(file: &File, path: &Path) -> Result<()> {
    let kind = file.metadata().at(path)?.file_type();
    if kind.is_file() { Ok(()) } else { Err(not_regular_error(path, kind)) }
}

fn not_regular_error(path: &Path, kind: fs::FileType) -> Error {
    Error::corrupt(Location::file(path), Damage::NotRegularFile { kind: kind_name(kind) })
}

/// Returns what a file of `meta` is, in words (`"a directory"`, `"a
/// symbolic link"`, ...), for messages about a file that should be regular.
pub(crate) fn kind_of(meta: &fs::Metadata) -> &'static str {
    kind_name(meta.file_type())
}

fn kind_name(kind: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// The identity of a file's contents as caches see it: inode, size and
/// modification time (seconds, nanoseconds). Appends change the size,
/// replacements the inode.
pub type FileStamp = [i64; 4];

/// Returns the stamp of the file at `path` (not following a symlink), or
/// `None` when it does not exist.
///
/// Errors: [`Error::Io`].
pub fn file_stamp(path: &Path) -> Result<Option<FileStamp>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(stamp_of(&meta))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).at(path),
    }
}

/// Returns the stamp of a file's metadata.
pub(crate) fn stamp_of(meta: &std::fs::Metadata) -> FileStamp {
    use std::os::unix::fs::MetadataExt;
    [meta.ino() as i64, meta.size() as i64, meta.mtime(), meta.mtime_nsec()]
}

/// Flushes the directory entry list of `dir` to stable storage.
///
/// Errors: [`Error::Io`].
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

#[cfg(test)]
thread_local! {
    /// Test seam: when set, [`replace`] fails after the temporary file is
    /// durable and before the rename.
    pub(crate) static FAIL_BEFORE_RENAME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Atomically replaces `path` with `data`: a temporary file in the same
/// directory (`.<name>.*.tmp`, mode 0600) is written and fsynced, renamed
/// over the target, and the directory is fsynced. On any error the temporary
/// file is removed and the previous target is untouched.
///
/// Errors: [`Error::Io`], or [`Error::Corrupt`] when the target is a symlink.
pub fn replace(path: &Path, data: &[u8]) -> Result<()> {
    replace_with(path, data, true)
}

/// Replaces a cache file atomically like [`replace`] but without making it
/// durable: after a crash a reader finds the old file, the new one, or one
/// it cannot parse. Only for files that are checked on every read against
/// what they describe (never for state).
///
/// Errors: as [`replace`].
pub fn replace_cache(path: &Path, data: &[u8]) -> Result<()> {
    replace_with(path, data, false)
}

/// Writes `data` into an existing cache file at offset `at`, cutting off
/// whatever followed: how a cache that grows by sections is extended. Not
/// durable, and not atomic: only for files whose reader knows, from
/// another file written after this one, how many bytes to trust. The bytes
/// are written over what was there and the file is cut after them: only
/// the blocks past the new end are freed, not those the bytes are written
/// over (on a file system mounted with `discard`, a freed block is
/// discarded by the device before the journal's next commit).
///
/// Errors: [`Error::Io`] (a missing file included), or [`Error::Corrupt`]
/// when the target is a symlink.
pub fn extend_cache(path: &Path, at: u64, data: &[u8]) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    refuse_symlink(path)?;
    let mut file = OpenOptions::new().write(true).open(path).at(path)?;
    file.seek(SeekFrom::Start(at)).at(path)?;
    file.write_all(data).at(path)?;
    file.set_len(at + data.len() as u64).at(path)
}

/// Replaces a cache file like [`replace_cache`] with what `write` writes
/// to it (buffered), for a file too large to hold in memory twice; when
/// `write` returns false the file is left as it was.
///
/// Errors: as [`replace`].
pub(crate) fn replace_cache_streamed(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<bool>,
) -> Result<bool> {
    let temp = temporary(path)?;
    let mut out = io::BufWriter::with_capacity(1 << 20, temp);
    if !write(&mut out).at(path)? {
        // Dropping the temporary file removes it.
        return Ok(false);
    }
    let temp = out.into_inner().map_err(io::IntoInnerError::into_error).at(path)?;
    persist(temp, path)?;
    Ok(true)
}

fn replace_with(path: &Path, data: &[u8], durable: bool) -> Result<()> {
    if durable {
        return stage(path, |file| file.write_all(data))?.commit();
    }
    let mut temp = temporary(path)?;
    temp.write_all(data).at(temp.path())?;
    persist(temp, path)
}

/// Creates the temporary file (`.<name>.*.tmp`, mode 0600) beside `path`
/// that will replace it, refusing a symlink at `path`.
fn temporary(path: &Path) -> Result<tempfile::NamedTempFile> {
    refuse_symlink(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(dir).at(dir)
}

/// Renames `temp` over `target` (dropping `temp` on the error path removes
/// the temporary file). The file replaced is held open across the rename
/// and closed later ([`close_later`]): see there.
fn persist(temp: tempfile::NamedTempFile, target: &Path) -> Result<()> {
    let replaced = open_optional(target).ok().flatten();
    temp.persist(target).map_err(|err| err.error).at(target)?;
    if let Some(file) = replaced {
        close_later(file);
    }
    Ok(())
}

/// Closes `file`, whose last name may be gone, on a thread that does
/// nothing else: the last close of a file without a name frees its pages
/// and blocks, and on a file system mounted with `discard` waits for the
/// device to discard them (a rename over a 2.1 MB curated.json took 1 ms
/// here, 0.02 ms with the file held open). While a [`HoldReplaced`] lives,
/// the file is kept open until it drops. The closing thread is started
/// once per process; without it the file is closed here. Whatever is not
/// closed yet when the process exits is closed by its exit.
pub(crate) fn close_later(file: File) {
    let file = {
        let mut held = held_replaced();
        if held.holders > 0 {
            held.files.push(file);
            return;
        }
        file
    };
    close_on_thread(file);
}

/// Hands `file` to the closing thread ([`close_later`]).
fn close_on_thread(file: File) {
    use std::sync::OnceLock;
    use std::sync::mpsc::{self, Sender};
    static CLOSER: OnceLock<Option<Sender<File>>> = OnceLock::new();
    let closer = CLOSER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<File>();
        let spawned = std::thread::Builder::new()
            .name("workmem-close".into())
            .spawn(move || receiver.into_iter().for_each(drop));
        spawned.ok().map(|_| sender)
    });
    // A send fails only when the thread is gone; the file is then closed
    // here.
    if let Some(sender) = closer {
        let _ = sender.send(file);
    }
}

/// The files replaced while a [`HoldReplaced`] lives, and how many live.
struct Replaced {
    holders: usize,
    files: Vec<File>,
}

static REPLACED: std::sync::Mutex<Replaced> =
    std::sync::Mutex::new(Replaced { holders: 0, files: Vec::new() });

fn held_replaced() -> std::sync::MutexGuard<'static, Replaced> {
    // Nothing panics while the list is held; a poisoned one is whole.
    REPLACED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// While it lives, the files that replacements in this process put out of
/// their place stay open; when the last one drops they go to the closing
/// thread ([`close_later`]). For a writer that makes several files durable
/// in turn: on a file system mounted with `discard`, the blocks a close
/// frees hold up the journal's next commit, which is the writer's next
/// `fsync` (the 2.1 MB curated.json a distill replaced held up the
/// directory `fsync` of MEMORY.md that followed by 2.2 ms at 100,000
/// facts, the 19 MB one by 12 ms at 1,000,000). Held until the last
/// `fsync`, the discard goes on while the writer finishes its caches (a
/// process that exits then still waits for what is left of it).
#[derive(Debug)]
pub(crate) struct HoldReplaced(());

impl HoldReplaced {
    pub(crate) fn new() -> HoldReplaced {
        held_replaced().holders += 1;
        HoldReplaced(())
    }
}

impl Drop for HoldReplaced {
    fn drop(&mut self) {
        let files = {
            let mut held = held_replaced();
            held.holders -= 1;
            if held.holders > 0 {
                return;
            }
            std::mem::take(&mut held.files)
        };
        files.into_iter().for_each(close_on_thread);
    }
}

/// The next version of a file, written beside it and durable (or being
/// made durable: [`stage_reading_back`]), not yet in its place: how a
/// writer replaces a file too large to hold in memory (it writes as it
/// goes) and learns what it wrote (a hash for its intent) before the
/// replacement counts. Dropped without [`Staged::commit`], the
/// temporary file is removed and the target is untouched.
#[derive(Debug)]
pub(crate) struct Staged {
    temp: tempfile::NamedTempFile,
    target: PathBuf,
    /// The fsync of the temporary file when it goes on on another thread
    /// ([`stage_reading_back`]), waited for by [`Staged::commit`].
    syncing: Option<std::thread::JoinHandle<io::Result<()>>>,
}

/// Writes the next version of `path` with `write` (on the temporary file,
/// unbuffered) and makes it durable; see [`Staged`].
///
/// Errors: [`Error::Io`] (what `write` returns included, named after the
/// temporary file), or [`Error::Corrupt`] when the target is a symlink.
pub(crate) fn stage(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<Staged> {
    let mut temp = temporary(path)?;
    write(temp.as_file_mut()).at(temp.path())?;
    temp.as_file().sync_all().at(temp.path())?;
    Ok(Staged { temp, target: path.to_owned(), syncing: None })
}

/// Writes the next version of `path` with `write` (on the temporary file,
/// unbuffered), then makes it durable on another thread while `meanwhile`
/// reads it (the fsync waits on the disk, not on the processor: a writer
/// hashes what it wrote meanwhile). The fsync goes on after this returns,
/// until [`Staged::commit`] waits for it: what the writer must make durable
/// before the replacement (its intent) is written while the disk is busy
/// with this file. See [`Staged`].
///
/// Errors: as [`stage`], and what `meanwhile` returns.
pub(crate) fn stage_reading_back<T>(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
    meanwhile: impl FnOnce(&File) -> io::Result<T>,
) -> Result<(Staged, T)> {
    let mut temp = temporary(path)?;
    write(temp.as_file_mut()).at(temp.path())?;
    let copy = temp.as_file().try_clone().at(temp.path())?;
    // When no thread can be started, the fsync is made here.
    let syncing = std::thread::Builder::new().spawn(move || copy.sync_all()).ok();
    if syncing.is_none() {
        temp.as_file().sync_all().at(temp.path())?;
    }
    let value = meanwhile(temp.as_file()).at(temp.path())?;
    Ok((Staged { temp, target: path.to_owned(), syncing }, value))
}

impl Staged {
    /// The temporary file, for reading back what was written.
    pub(crate) fn file(&self) -> &File {
        self.temp.as_file()
    }

    /// Waits until the temporary file is durable, renames it over the
    /// target and fsyncs the directory.
    ///
    /// Errors: [`Error::Io`] (the temporary file is then removed).
    pub(crate) fn commit(mut self) -> Result<()> {
        if let Some(syncing) = self.syncing.take() {
            let synced = syncing.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            synced.at(self.temp.path())?;
        }
        #[cfg(test)]
        if FAIL_BEFORE_RENAME.with(std::cell::Cell::get) {
            return Err(io::Error::other("injected failure before rename")).at(&self.target);
        }
        persist(self.temp, &self.target)?;
        sync_dir(self.target.parent().unwrap_or(Path::new(".")))
    }
}

/// Removes the temporary files that [`replace`] left in `dir` when a crash
/// stopped it between creating and renaming them (`.` + name + `.tmp`).
/// Only for a caller holding the workspace lock: the lock holder's own
/// replaces have not started yet, and a reader's replace (a derived file or
/// a cache) that loses its temporary merely fails a best-effort repair.
/// Best effort: a temporary that cannot be removed stays for the next time.
///
/// Returns the number removed.
pub fn remove_temporaries(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // Never a directory: only what `replace` creates is removed.
        let is_temporary = name.starts_with('.')
            && std::path::Path::new(name).extension().is_some_and(|ext| ext == "tmp")
            && entry.file_type().is_ok_and(|kind| !kind.is_dir());
        if is_temporary && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        let _ = sync_dir(dir);
    }
    removed
}

/// Appends `record` (one or more whole lines, each ending in `\n`) to the
/// JSONL file at `path` with a single `write` on an `O_APPEND` descriptor,
/// then fsyncs. A torn final fragment left by a crash is repaired first:
/// kept and terminated when `is_complete_record` accepts it, else truncated.
/// A newly created file is made durable by an fsync of its directory.
///
/// Errors: [`Error::Io`] (including short writes), or [`Error::Corrupt`] for
/// a symlink.
pub fn append(
    path: &Path,
    record: &[u8],
    is_complete_record: &dyn Fn(&[u8]) -> bool,
) -> Result<()> {
    append_durably(path, record, is_complete_record, false).map(drop)
}

/// Appends `record` like [`append`] and returns where it landed
/// ([`Placement`]): two more system calls.
///
/// Errors: as [`append`].
pub(crate) fn append_placed(
    path: &Path,
    record: &[u8],
    is_complete_record: &dyn Fn(&[u8]) -> bool,
) -> Result<Option<Placement>> {
    append_durably(path, record, is_complete_record, true)
}

fn append_durably(
    path: &Path,
    record: &[u8],
    is_complete_record: &dyn Fn(&[u8]) -> bool,
    place: bool,
) -> Result<Option<Placement>> {
    let pending = append_unsynced(
        path,
        record,
        is_complete_record,
        AppendOptions { place, ..AppendOptions::default() },
    )?;
    let (created, placement) = (pending.created, pending.placement);
    pending.sync()?;
    if created {
        sync_dir(path.parent().unwrap_or(Path::new(".")))?;
    }
    Ok(placement)
}

/// An append whose bytes are written but not yet durable. The shared lock
/// on the file is held until [`PendingAppend::sync`].
#[derive(Debug)]
pub struct PendingAppend {
    file: File,
    path: PathBuf,
    /// Whether the file was created by this append: its directory entry
    /// needs a directory fsync.
    pub created: bool,
    /// Where the bytes landed, for a cache that continues what it read of
    /// the file (when asked: [`AppendOptions::place`]).
    pub placement: Option<Placement>,
}

/// Where an append's bytes landed in its file, as its descriptor saw it:
/// a cache that read the file with stamp `before` (up to its end) can
/// count the appended bytes as read when `offset` is that end and the
/// file is `offset` plus the bytes long with stamp `after`, so nobody else
/// wrote between the two stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The file's stamp right before the write (after any torn-tail repair).
    pub before: FileStamp,
    /// The offset of the first byte written.
    pub offset: u64,
    /// The file's stamp right after the write.
    pub after: FileStamp,
}

impl Placement {
    /// Whether nobody else wrote to the file between the two stamps, for
    /// an append of `len` bytes: the same inode, the bytes written where
    /// the file ended, and the file as long after the write as before plus
    /// them.
    pub(crate) fn alone(&self, len: usize) -> bool {
        let (before, after) = (self.before, self.after);
        before[0] == after[0]
            && before[1] == self.offset as i64
            && after[1] == before[1] + len as i64
    }
}

impl PendingAppend {
    /// Makes the appended bytes durable (`fdatasync`) and releases the file.
    ///
    /// Errors: [`Error::Io`].
    pub fn sync(self) -> Result<()> {
        self.file.sync_data().at(&self.path)
    }
}

/// What an unsynced append does besides its write ([`append_unsynced`]).
#[derive(Clone, Copy, Default)]
pub struct AppendOptions<'a> {
    /// Return where the bytes landed ([`PendingAppend::placement`]): two
    /// more system calls.
    pub place: bool,
    /// Judges the file's first complete line (blank lines skipped; `None`
    /// when it has none or does not exist), read from the append's own
    /// descriptor under its lock, before anything is written: an error
    /// stops the append, and a file that did not exist is not created.
    /// Saves a caller that checks what a file holds (its scope) opening
    /// and reading it apart.
    pub head: Option<HeadCheck<'a>>,
}

/// A judge of a file's first complete line ([`AppendOptions::head`]).
pub type HeadCheck<'a> = &'a dyn Fn(Option<&[u8]>) -> Result<()>;

/// Opens the existing file `path` and takes its exclusive `flock`: it
/// waits for every append in flight, and holds new ones off until the
/// returned file is dropped. For the one rewrite of an append-only file
/// (a redaction), made by [`replace`] while the lock is held: an appender
/// that waited then finds its file without a name, and opens the name
/// again ([`append_unsynced`]).
///
/// Errors: [`Error::Io`], or [`Error::Corrupt`] for a symlink.
pub fn lock_for_rewrite(path: &Path) -> Result<File> {
    refuse_symlink(path)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .at(path)?;
    file.lock().at(path)?;
    Ok(file)
}

/// Writes `record` like [`append`] (torn-tail repair, one `write`) but leaves
/// the fsync to the caller, so a batch touching many files can sync them
/// together. The caller must call [`PendingAppend::sync`] on every pending
/// append, and fsync the directory of any created file, before reporting
/// success.
///
/// Errors: as [`append`], and what [`AppendOptions::head`] returns.
pub fn append_unsynced(
    path: &Path,
    record: &[u8],
    is_complete_record: &dyn Fn(&[u8]) -> bool,
    options: AppendOptions<'_>,
) -> Result<PendingAppend> {
    let existed = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(symlink_error(path)),
        Ok(meta) if !meta.file_type().is_file() => {
            return Err(not_regular_error(path, meta.file_type()));
        }
        Ok(_) => true,
        Err(err) if err.kind() == io::ErrorKind::NotFound => false,
        Err(err) => return Err(err).at(path),
    };
    if let (Some(check), false) = (options.head, existed) {
        check(None)?;
    }
    let (file, mut meta) = loop {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .at(path)?;
        file.lock_shared().at(path)?;
        // Checked on the descriptor: the name may have changed since.
        let meta = file.metadata().at(path)?;
        // The one rewrite of a log file (a redaction) replaces it under
        // its exclusive lock: a file with no name left was replaced while
        // this append waited for the lock, and the name is opened again.
        if std::os::unix::fs::MetadataExt::nlink(&meta) > 0 {
            break (file, meta);
        }
    };
    if !meta.file_type().is_file() {
        return Err(not_regular_error(path, meta.file_type()));
    }
    if let (Some(check), true) = (options.head, existed) {
        check(first_line_at(&file).at(path)?.as_deref())?;
    }
    if has_torn_tail(&file, meta.len()).at(path)? {
        // Upgrade: wait until no append is in flight, then look again.
        file.unlock().at(path)?;
        file.lock().at(path)?;
        repair_tail(&file, is_complete_record).at(path)?;
        meta = file.metadata().at(path)?;
    }
    let before = stamp_of(&meta);
    let written = (&file).write(record).at(path)?;
    if written != record.len() {
        // A full disk or a file-size limit stopped the write part-way: take
        // the fragment back so that a failed append leaves the file as it
        // was (a reader would skip it as a torn tail, but it is not ours to
        // leave behind).
        discard_fragment(&file, written);
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write: {written} of {} bytes", record.len()),
        ))
        .at(path);
    }
    failpoint::hit("append_after_write");
    let placement = if options.place {
        // On an `O_APPEND` descriptor the position is the end of this write.
        let end = std::io::Seek::stream_position(&mut &file).at(path)?;
        let after = stamp_of(&file.metadata().at(path)?);
        Some(Placement { before, offset: end.saturating_sub(record.len() as u64), after })
    } else {
        None
    };
    Ok(PendingAppend { file, path: path.to_path_buf(), created: !existed, placement })
}

/// Truncates the `written` bytes a short append just left at the end of
/// `file`, under the exclusive lock and only if nothing was appended after
/// them. Best effort: the caller reports the short write either way, and a
/// fragment that stays is repaired as a torn tail by the next append.
fn discard_fragment(file: &File, written: usize) {
    use std::io::Seek;
    let Ok(end) = (&*file).stream_position() else { return };
    let start = end.saturating_sub(written as u64);
    if file.unlock().is_err() || file.lock().is_err() {
        return;
    }
    if file.metadata().is_ok_and(|meta| meta.len() == end) && file.set_len(start).is_ok() {
        let _ = file.sync_data();
    }
}

/// Syncs every pending append, several at once: concurrent fsyncs of
/// different files share journal commits on common file systems, so a batch
/// over many daily files costs far less than syncing them one by one.
///
/// Errors: the first [`Error::Io`].
pub fn sync_all(pending: Vec<PendingAppend>) -> Result<()> {
    const THREADS: usize = 16;
    if pending.len() <= 1 {
        return pending.into_iter().try_for_each(PendingAppend::sync);
    }
    let per_thread = pending.len().div_ceil(THREADS);
    let mut chunks: Vec<Vec<PendingAppend>> = Vec::new();
    let mut rest = pending.into_iter().peekable();
    while rest.peek().is_some() {
        chunks.push(rest.by_ref().take(per_thread).collect());
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| scope.spawn(move || chunk.into_iter().try_for_each(PendingAppend::sync)))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// Repairs a torn tail of an existing JSONL file without appending, under
/// the exclusive lock. Used before reading a stream whose decisions depend
/// on every complete record (the journal and the audit stream).
///
/// Errors: [`Error::Io`].
pub fn repair(path: &Path, is_complete_record: &dyn Fn(&[u8]) -> bool) -> Result<()> {
    refuse_symlink(path)?;
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let file = match OpenOptions::new().read(true).append(true).custom_flags(flags).open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) if err.raw_os_error() == Some(libc::EISDIR) => {
            return Err(not_regular_error(path, fs::symlink_metadata(path).at(path)?.file_type()));
        }
        Err(err) => return Err(err).at(path),
    };
    ensure_regular(&file, path)?;
    if !has_torn_tail(&file, file.metadata().at(path)?.len()).at(path)? {
        return Ok(());
    }
    file.lock().at(path)?;
    repair_tail(&file, is_complete_record).at(path)
}

/// Returns whether `file`, `len` bytes long, does not end in a newline.
fn has_torn_tail(file: &File, len: u64) -> io::Result<bool> {
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
}

fn repair_tail(file: &File, is_complete_record: &dyn Fn(&[u8]) -> bool) -> io::Result<()> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let start = last_line_start(file, len)?;
    let mut fragment = vec![0u8; (len - start) as usize];
    file.read_exact_at(&mut fragment, start)?;
    if fragment.last() == Some(&b'\n') {
        return Ok(());
    }
    if is_complete_record(&fragment) {
        (&*file).write_all(b"\n")?;
    } else {
        file.set_len(start)?;
    }
    file.sync_data()
}

/// Returns the offset just after the last `\n` before `len` (0 if none).
fn last_line_start(file: &File, len: u64) -> io::Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = len;
    let mut buf = vec![0u8; CHUNK as usize];
    while end > 0 {
        let begin = end.saturating_sub(CHUNK);
        let chunk = &mut buf[..(end - begin) as usize];
        file.read_exact_at(chunk, begin)?;
        if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(begin + pos as u64 + 1);
        }
        end = begin;
    }
    Ok(0)
}

/// Returns the last newline-terminated line of the file at `path` (without
/// its newline), reading only the end of the file; `None` when the file is
/// absent or holds no complete line. A torn final fragment is skipped.
///
/// Errors: [`Error::Io`], [`Error::Corrupt`] for a symlink.
pub fn last_complete_line(path: &Path) -> Result<Option<Vec<u8>>> {
    let Some(file) = open_optional(path)? else { return Ok(None) };
    let len = file.metadata().at(path)?.len();
    // `end` is just after a newline; the line before it ends at `end - 1`.
    let mut end = last_line_start(&file, len).at(path)?;
    while end > 0 {
        let start = last_line_start(&file, end - 1).at(path)?;
        let mut line = vec![0u8; (end - 1 - start) as usize];
        file.read_exact_at(&mut line, start).at(path)?;
        if !line.iter().all(u8::is_ascii_whitespace) {
            return Ok(Some(line));
        }
        end = start;
    }
    Ok(None)
}

/// Returns the first non-blank newline-terminated line of the file at
/// `path` (without its newline), reading only the beginning of the file;
/// `None` when the file is absent or holds no complete line.
///
/// Errors: as [`open_optional`].
pub fn first_complete_line(path: &Path) -> Result<Option<Vec<u8>>> {
    let Some(file) = open_optional(path)? else { return Ok(None) };
    first_line_at(&file).at(path)
}

/// The first complete line of `file`, read from its start whatever its
/// position (see [`first_complete_line`]).
fn first_line_at(file: &File) -> io::Result<Option<Vec<u8>>> {
    // A record is a few hundred bytes: the first read is small (each
    // append makes this read), the next ones grow.
    let mut chunk = 1024;
    let mut data = Vec::new();
    let mut start = 0;
    loop {
        let read = data.len();
        data.resize(read + chunk, 0);
        chunk = (chunk * 2).min(64 * 1024);
        let n = file.read_at(&mut data[read..], read as u64)?;
        data.truncate(read + n);
        while let Some(end) = memchr::memchr(b'\n', &data[start..]) {
            let line = &data[start..start + end];
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(line.to_vec()));
            }
            start += end + 1;
        }
        if n == 0 {
            return Ok(None);
        }
    }
}

/// Splits JSONL `data` into `(line number, line bytes, terminated)` for each
/// non-empty line, in order.
pub fn lines(data: &[u8]) -> impl Iterator<Item = (usize, &[u8], bool)> {
    let mut offset = 0;
    let mut number = 0;
    std::iter::from_fn(move || {
        loop {
            if offset >= data.len() {
                return None;
            }
            number += 1;
            let rest = &data[offset..];
            let (line, terminated) = if let Some(pos) = memchr::memchr(b'\n', rest) {
                offset += pos + 1;
                (&rest[..pos], true)
            } else {
                offset = data.len();
                (rest, false)
            };
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some((number, line, terminated));
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build fixtures directly
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replace_failure_before_rename_keeps_target_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("curated.json");
        replace(&target, b"old\n").unwrap();
        FAIL_BEFORE_RENAME.with(|flag| flag.set(true));
        let result = replace(&target, b"new\n");
        FAIL_BEFORE_RENAME.with(|flag| flag.set(false));
        assert!(result.is_err());
        assert_eq!(fs::read(&target).unwrap(), b"old\n");
        assert_eq!(entries(dir.path()), vec!["curated.json"]);
        replace(&target, b"new\n").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new\n");
        assert_eq!(entries(dir.path()), vec!["curated.json"]);
    }

    #[test]
    fn a_cache_extended_over_its_old_end_keeps_only_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        fs::write(&path, b"header|old section that was longer").unwrap();
        extend_cache(&path, 7, b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"header|new");
        extend_cache(&path, 10, b" and more").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"header|new and more");
    }

    /// Whether this process holds a file open that was `path` and has lost
    /// its last name.
    #[cfg(target_os = "linux")]
    fn holds_removed(path: &Path) -> bool {
        let removed = format!("{} (deleted)", path.display());
        fs::read_dir("/proc/self/fd").unwrap().flatten().any(|fd| {
            fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == removed.as_str())
        })
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_file_replaced_while_held_stays_open_until_the_hold_drops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        replace(&path, b"before").unwrap();
        let held = HoldReplaced::new();
        replace(&path, b"after").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"after");
        assert!(holds_removed(&path), "the replaced file was closed while held");
        drop(held);
        // The closing thread closes it soon after (another test of this
        // process may hold a little longer).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while holds_removed(&path) {
            assert!(std::time::Instant::now() < deadline, "the replaced file was never closed");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn a_file_handed_to_be_closed_later_is_closed() {
        use std::io::Read as _;
        // The write end of a pipe: its reader sees the end of the stream
        // only once every copy of it is closed.
        for _ in 0..3 {
            let (mut reader, writer) = io::pipe().unwrap();
            let (sender, ended) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut rest = Vec::new();
                let _ = sender.send(reader.read_to_end(&mut rest).map(|_| rest));
            });
            close_later(File::from(std::os::fd::OwnedFd::from(writer)));
            let got = ended.recv_timeout(std::time::Duration::from_secs(30));
            assert_eq!(got.expect("the file was not closed").unwrap(), b"");
        }
    }

    #[test]
    fn a_staged_file_is_durable_when_committed_and_gone_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("curated.json");
        replace(&target, b"old\n").unwrap();
        let stage_new = || {
            stage_reading_back(
                &target,
                |out| out.write_all(b"new\n"),
                |file| {
                    let mut read = vec![0; 4];
                    file.read_exact_at(&mut read, 0)?;
                    Ok(read)
                },
            )
            .unwrap()
        };
        // Dropped while its fsync may still run: the target is untouched
        // and the temporary file removed.
        let (staged, read) = stage_new();
        assert_eq!(read, b"new\n");
        drop(staged);
        assert_eq!(fs::read(&target).unwrap(), b"old\n");
        assert_eq!(entries(dir.path()), vec!["curated.json"]);
        // A failure before the rename (after the fsync) leaves it as it was.
        let (staged, _) = stage_new();
        FAIL_BEFORE_RENAME.with(|flag| flag.set(true));
        let result = staged.commit();
        FAIL_BEFORE_RENAME.with(|flag| flag.set(false));
        assert!(result.is_err());
        assert_eq!(entries(dir.path()), vec!["curated.json"]);
        let (staged, _) = stage_new();
        staged.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new\n");
        assert_eq!(entries(dir.path()), vec!["curated.json"]);
    }

    #[test]
    fn replace_refuses_symlink_target() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::write(&outside, b"keep").unwrap();
        let link = dir.path().join("curated.json");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert!(matches!(replace(&link, b"x"), Err(Error::Corrupt { .. })));
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
    }

    #[test]
    fn append_repairs_torn_tails() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        let valid = |line: &[u8]| line.starts_with(b"{") && line.ends_with(b"}");
        append(&log, b"{1}\n", &valid).unwrap();
        // A torn, invalid fragment is truncated away.
        fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"{2").unwrap();
        append(&log, b"{3}\n", &valid).unwrap();
        assert_eq!(fs::read(&log).unwrap(), b"{1}\n{3}\n");
        // A complete record missing only its newline is kept.
        fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"{4}").unwrap();
        append(&log, b"{5}\n", &valid).unwrap();
        assert_eq!(fs::read(&log).unwrap(), b"{1}\n{3}\n{4}\n{5}\n");
    }

    /// The head check sees what `first_complete_line` sees, read in
    /// chunks from the append's descriptor, and a refusal writes nothing:
    /// not to an existing file, and no file where there was none.
    #[test]
    fn an_append_checks_the_first_complete_line_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        let valid = |_: &[u8]| true;
        let seen = std::cell::RefCell::new(Vec::new());
        let refuse = |line: Option<&[u8]>| {
            seen.borrow_mut().push(line.map(<[u8]>::to_vec));
            Err(Error::corrupt(Location::file(&log), Damage::record("refused")))
        };
        let options = AppendOptions { place: false, head: Some(&refuse) };
        assert!(append_unsynced(&log, b"x\n", &valid, options).is_err());
        assert!(!log.exists(), "a refused append created its file");
        let long = "y".repeat(20_000);
        for (contents, first) in [
            (format!("\n  \n{long}\nz\n"), Some(long.as_str())),
            ("\n \nunterminated".to_owned(), None),
            (String::new(), None),
        ] {
            fs::write(&log, &contents).unwrap();
            seen.borrow_mut().clear();
            assert!(append_unsynced(&log, b"x\n", &valid, options).is_err());
            assert_eq!(fs::read(&log).unwrap(), contents.as_bytes(), "a refused append wrote");
            assert_eq!(*seen.borrow(), vec![first.map(|f| f.as_bytes().to_vec())]);
            assert_eq!(first_complete_line(&log).unwrap().as_deref(), first.map(str::as_bytes));
        }
        let accept = |_: Option<&[u8]>| Ok(());
        let options = AppendOptions { place: false, head: Some(&accept) };
        append_unsynced(&log, b"x\n", &valid, options).unwrap().sync().unwrap();
        assert_eq!(fs::read(&log).unwrap(), b"x\n");
    }

    /// An append that waits for the lock while the file is rewritten (a
    /// redaction: exclusive lock, then an atomic replace) lands in the new
    /// file, never in the one the rewrite replaced.
    #[test]
    fn an_append_waiting_on_a_rewrite_lands_in_the_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, b"old\n").unwrap();
        let lock = lock_for_rewrite(&path).unwrap();
        let appender = {
            let path = path.clone();
            std::thread::spawn(move || append(&path, b"appended\n", &|_| true).unwrap())
        };
        // The appender has opened the old file and waits for its lock.
        std::thread::sleep(std::time::Duration::from_millis(200));
        replace(&path, b"rewritten\n").unwrap();
        drop(lock);
        appender.join().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"rewritten\nappended\n");
    }

    #[test]
    fn lines_reports_numbers_and_termination() {
        let data = b"a\n\n  \nb\nc";
        let got: Vec<_> = lines(data).collect();
        assert_eq!(got, vec![(1, &b"a"[..], true), (4, &b"b"[..], true), (5, &b"c"[..], false)]);
    }
}
