//! The journal of one memory directory as a handle: its path, the
//! workspace its records must carry and the record of which clone wrote
//! it, so that a caller asks the journal and never spells its path.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::store::atomic_io;
use crate::store::journal::{self, JournalLine, Transaction};
use crate::store::journal_owner;
use crate::store::names::JOURNAL_FILE;

/// The journal (`journal.jsonl`) of a memory directory, with the
/// ownership record beside it ([`crate::store::journal_owner`]).
#[derive(Debug, Clone)]
pub(crate) struct JournalFile {
    memory_dir: PathBuf,
    path: PathBuf,
    workspace_id: String,
}

impl JournalFile {
    /// The journal of the memory directory `memory_dir` of `workspace_id`.
    pub(crate) fn new(memory_dir: &Path, workspace_id: &str) -> JournalFile {
        JournalFile {
            memory_dir: memory_dir.to_owned(),
            path: memory_dir.join(JOURNAL_FILE),
            workspace_id: workspace_id.to_owned(),
        }
    }

    /// Returns the journal's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Returns whether the journal holds nothing: absent or empty (its
    /// state at rest).
    ///
    /// Errors: as [`journal::is_empty`].
    pub(crate) fn is_empty(&self) -> Result<bool> {
        journal::is_empty(&self.path)
    }

    /// Returns the journal's transactions, checked.
    ///
    /// Errors: as [`journal::transactions`].
    pub(crate) fn transactions(&self) -> Result<Vec<Transaction>> {
        journal::transactions(&self.path, &self.workspace_id)
    }

    /// Returns whether the journal's last transaction is finished, reading
    /// only the end of the file.
    ///
    /// Errors: as [`journal::last_is_committed`].
    pub(crate) fn last_is_committed(&self) -> Result<bool> {
        journal::last_is_committed(&self.path, &self.workspace_id)
    }

    /// Keeps only the lines of the transactions of `transactions` that did
    /// not commit.
    ///
    /// Errors: as [`journal::compact`].
    pub(crate) fn compact(&self, transactions: &[Transaction]) -> Result<()> {
        journal::compact(&self.path, transactions)
    }

    /// Appends the journal line `line` (newline included), repairing a
    /// torn tail first.
    ///
    /// Errors: as [`journal::append_record`].
    pub(crate) fn append(&self, line: &str) -> Result<()> {
        journal::append_record::<JournalLine>(&self.path, line)
    }

    /// Empties the journal, atomically and durably.
    ///
    /// Errors: [`crate::Error::Io`], [`crate::Error::Corrupt`] for a
    /// symlink.
    pub(crate) fn clear(&self) -> Result<()> {
        atomic_io::replace(&self.path, b"")
    }

    /// Repairs a torn tail without appending.
    ///
    /// Errors: as [`journal::repair_stream`].
    pub(crate) fn repair(&self) -> Result<()> {
        journal::repair_stream::<JournalLine>(&self.path)
    }

    /// Returns whether this clone wrote the journal (the ownership record
    /// names this very file).
    ///
    /// Errors: as [`journal_owner::is_own_file`].
    pub(crate) fn is_own(&self) -> Result<bool> {
        journal_owner::is_own_file(&self.memory_dir, &self.path)
    }

    /// Returns whether this clone prepared transaction `transaction_id`
    /// with intent digest `digest`.
    ///
    /// Errors: as [`journal_owner::prepared_here`].
    pub(crate) fn prepared_here(&self, transaction_id: &str, digest: &str) -> Result<bool> {
        journal_owner::prepared_here(&self.memory_dir, &self.path, transaction_id, digest)
    }

    /// Records that this clone prepares transaction `transaction_id`
    /// (intent digest `digest`), creating the journal when missing: under
    /// the workspace lock, before the `prepared` line is appended.
    ///
    /// Errors: as [`journal_owner::claim`].
    pub(crate) fn claim(&self, transaction_id: &str, digest: &str) -> Result<()> {
        journal_owner::claim(&self.memory_dir, &self.path, transaction_id, digest)
    }
}
