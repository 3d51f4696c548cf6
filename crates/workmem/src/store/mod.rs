//! The store: every file of a memory directory and the only code that
//! writes one. Canonical files are replaced atomically, logs are appended
//! one fsynced write at a time, caches are rebuilt when stale, and the lock
//! serialises read-modify-write across processes.

pub mod atomic_io;
pub mod conflict_queue;
pub mod curated_state;
pub(crate) mod domain_index;
pub(crate) mod fact_log;
pub(crate) mod failpoint;
pub mod journal;
pub(crate) mod lock;
