//! The workspace lock: an exclusive advisory `flock` on `<memory dir>/.lock`
//! that serialises every read-modify-write of the canonical files (distill,
//! resolve, recovery) across processes. Appends and pure reads never take
//! it: appends are single `O_APPEND` writes, and canonical files are only
//! ever replaced atomically, so readers always see a whole file.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::store::names::LOCK_FILE;

/// A held workspace lock; released on drop.
#[derive(Debug)]
pub(crate) struct WorkspaceLock {
    file: File,
    /// The memory directory it locks.
    dir: PathBuf,
    /// Not `Send`: the lock is recorded as held by the thread that took it
    /// (`held_here`), so it must be released on that thread too.
    _thread_bound: std::marker::PhantomData<*const ()>,
}

impl WorkspaceLock {
    /// Blocks until the exclusive lock on `memory_dir/.lock` is held. The
    /// memory directory must exist.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn acquire(memory_dir: &Path) -> Result<WorkspaceLock> {
        let path = memory_dir.join(LOCK_FILE);
        crate::store::atomic_io::refuse_symlink(&path)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
            .at(&path)?;
        crate::store::atomic_io::ensure_regular(&file, &path)?;
        file.lock().at(&path)?;
        let dir = memory_dir.to_path_buf();
        HELD.with(|held| held.borrow_mut().push(dir.clone()));
        Ok(WorkspaceLock { file, dir, _thread_bound: std::marker::PhantomData })
    }
}

thread_local! {
    /// The memory directories whose lock this thread holds: a reader that
    /// must write under the lock takes it only when its thread does not
    /// hold it already (a second `flock` of the same file would wait
    /// forever).
    static HELD: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Returns whether this thread holds the lock of `memory_dir`.
pub(crate) fn held_here(memory_dir: &Path) -> bool {
    HELD.with(|held| held.borrow().iter().any(|dir| dir == memory_dir))
}

impl Drop for WorkspaceLock {
    fn drop(&mut self) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(at) = held.iter().position(|dir| *dir == self.dir) {
                held.swap_remove(at);
            }
        });
        let _ = self.file.unlock();
    }
}
