//! The store: every file of a memory directory and the only code that
//! writes one. Canonical files are replaced atomically, logs are appended
//! one fsynced write at a time, caches are rebuilt when stale, and the lock
//! serialises read-modify-write across processes.

pub(crate) mod append_trail;
pub mod atomic_io;
pub(crate) mod audit;
pub(crate) mod block_chain;
pub(crate) mod checked_state;
pub mod conflict_queue;
pub mod corrections;
pub(crate) mod coverage;
pub(crate) mod curated_file;
pub mod curated_state;
pub(crate) mod day_stamps;
pub(crate) mod distill_cache;
pub(crate) mod domain_index;
pub(crate) mod fact_log;
pub(crate) mod failpoint;
pub(crate) mod hash_checkpoints;
pub(crate) mod id_index;
pub(crate) mod identity;
pub mod journal;
pub(crate) mod journal_file;
pub(crate) mod journal_owner;
pub(crate) mod layout_cache;
pub(crate) mod lock;
pub(crate) mod memory_dir;
pub(crate) mod names;
pub(crate) mod search_index;
pub(crate) mod state_file;
pub(crate) mod stream;
pub(crate) mod valid_hashes;

use crate::error::{Damage, Error, Location};

/// One violated invariant of a state file, and the record it is about (an
/// entry key or a conflict id), so that `verify` can name its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// The entry key or conflict id, when the problem is about one record.
    pub(crate) subject: Option<String>,
    /// What is wrong.
    pub(crate) message: String,
}

/// Returns whether `data` holds a line that git writes around a conflict
/// (`<<<<<<< `, `=======`, `>>>>>>> `): the sign of a merge git could not
/// finish with workmem's driver.
pub fn has_conflict_markers(data: &[u8]) -> bool {
    data.split(|&b| b == b'\n').any(|line| {
        line.starts_with(b"<<<<<<< ") || line.starts_with(b">>>>>>> ") || line == b"======="
    })
}

/// Returns the corruption error of `damage` found at `location` in `data`,
/// or, when `data` holds git's conflict markers, the error that says so
/// about the whole file: a merge that did not finish explains any damage
/// in it.
pub(crate) fn corrupt_in(data: &[u8], location: Location, damage: Damage) -> Error {
    if has_conflict_markers(data) {
        Error::corrupt(Location::file(&location.path), Damage::MergeMarkers)
    } else {
        Error::corrupt(location, damage)
    }
}
