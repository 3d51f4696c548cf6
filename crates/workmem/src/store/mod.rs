//! The store: every file of a memory directory and the only code that
//! writes one. Canonical files are replaced atomically, logs are appended
//! one fsynced write at a time, caches are rebuilt when stale, and the lock
//! serialises read-modify-write across processes.

pub(crate) mod append_trail;
pub mod atomic_io;
pub(crate) mod checked_state;
pub mod conflict_queue;
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
pub(crate) mod journal_owner;
pub(crate) mod layout_cache;
pub(crate) mod lock;
pub(crate) mod search_index;
pub(crate) mod state_file;
pub(crate) mod valid_hashes;

/// One violated invariant of a state file, and the record it is about (an
/// entry key or a conflict id), so that `verify` can name its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// The entry key or conflict id, when the problem is about one record.
    pub(crate) subject: Option<String>,
    /// What is wrong.
    pub(crate) message: String,
}
