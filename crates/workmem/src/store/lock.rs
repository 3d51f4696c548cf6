//! The workspace lock: an exclusive advisory `flock` on `<memory dir>/.lock`
//! that serialises every read-modify-write of the canonical files (distill,
//! resolve, recovery) across processes. Appends and pure reads never take
//! it: appends are single `O_APPEND` writes, and canonical files are only
//! ever replaced atomically, so readers always see a whole file.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{IoContext, Result};
use crate::store::names::LOCK_FILE;

/// A held workspace lock; released on drop.
#[derive(Debug)]
pub(crate) struct WorkspaceLock {
    file: File,
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
        Ok(WorkspaceLock { file })
    }
}

impl Drop for WorkspaceLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
