//! Showing the transaction journal and discarding what this clone did not
//! prepare (`workmem journal`, docs/sharing.md): the way out when a journal
//! arrived through git or was copied from another machine.

use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, IoContext, Result};
use crate::store::corrections::Correction;
use crate::store::journal::{Adjudication, Transaction};
use crate::store::journal_file::JournalFile;
use crate::store::journal_owner;
use crate::workspace::Workspace;

/// The journal as [`Workspace::journal`] shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JournalReport {
    /// The journal's path.
    pub path: PathBuf,
    /// Its transactions, in journal order.
    pub transactions: Vec<JournalTransaction>,
    /// Why the journal could not be read, when it could not (then
    /// `transactions` is empty).
    pub unreadable: Option<String>,
    /// Whether the file is the one this clone last prepared a transaction
    /// in (false for a journal that arrived through git or was copied).
    pub written_here: bool,
    /// The intent a distill leaves between its writes, when there is one:
    /// whether this clone wrote it (else it is never applied).
    pub distill_intent: Option<DistillIntentShown>,
}

/// The intent of an interrupted distill, as [`Workspace::journal`] shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DistillIntentShown {
    /// Its path.
    pub path: PathBuf,
    /// Whether this clone wrote it.
    pub written_here: bool,
}

impl JournalReport {
    /// Returns whether the journal holds work this clone did not prepare:
    /// an unfinished transaction, or unreadable lines, of a file this clone
    /// did not write.
    pub fn has_foreign(&self) -> bool {
        self.distill_intent.as_ref().is_some_and(|intent| !intent.written_here)
            || (self.unreadable.is_some() && !self.written_here)
            || self.transactions.iter().any(|t| !t.committed && !t.prepared_here)
    }
}

/// One transaction of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JournalTransaction {
    /// The transaction id.
    pub transaction_id: String,
    /// The line of its `prepared` record.
    pub line: usize,
    /// The phases recorded, in order (`prepared` ... `committed`).
    pub phases: Vec<String>,
    /// Whether it committed.
    pub committed: bool,
    /// Whether this clone prepared it (a committed transaction counts as
    /// such: there is nothing left to apply).
    pub prepared_here: bool,
    /// The decision it records, for an unfinished resolution.
    pub adjudication: Option<Adjudication>,
    /// The correction it records, for an unfinished correction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correction: Option<Correction>,
}

impl Workspace {
    /// Returns the transaction journal: every transaction with its phases,
    /// whether this clone prepared it, and the decision an unfinished one
    /// would record. At rest the journal is empty. Reads only.
    ///
    /// Errors: [`crate::Error::Io`], [`crate::Error::Corrupt`] for a journal
    /// that is a symlink or not a regular file.
    pub fn journal(&self) -> Result<JournalReport> {
        let journal = self.dir.journal();
        let path = journal.path().to_owned();
        let written_here = journal.is_own()?;
        let intent_path = self.file(crate::store::names::DISTILL_INTENT_FILE);
        let distill_intent = match self.dir.read_path(&intent_path) {
            Ok(Some(data)) => Some(DistillIntentShown {
                written_here: journal_owner::is_own_distill_intent(
                    self.dir.path(),
                    &intent_path,
                    &data,
                )?,
                path: intent_path,
            }),
            Ok(None) => None,
            // A symlink or special file: not this clone's.
            Err(_) => Some(DistillIntentShown { path: intent_path, written_here: false }),
        };
        if journal.is_empty()? {
            return Ok(JournalReport {
                path,
                transactions: Vec::new(),
                unreadable: None,
                written_here,
                distill_intent,
            });
        }
        let (transactions, unreadable) = match journal.transactions() {
            Ok(found) => (found, None),
            Err(err @ Error::Io { .. }) => return Err(err),
            Err(err) => (Vec::new(), Some(err.to_string())),
        };
        let mut shown = Vec::with_capacity(transactions.len());
        for t in &transactions {
            shown.push(self.shown(&journal, t)?);
        }
        Ok(JournalReport { path, transactions: shown, unreadable, written_here, distill_intent })
    }

    fn shown(&self, journal: &JournalFile, t: &Transaction) -> Result<JournalTransaction> {
        let prepared_here = t.committed() || journal.prepared_here(&t.transaction_id, &t.digest)?;
        Ok(JournalTransaction {
            transaction_id: t.transaction_id.clone(),
            line: t.first_line,
            phases: t.done.iter().map(ToString::to_string).collect(),
            committed: t.committed(),
            prepared_here,
            adjudication: t.intent.as_ref().map(|intent| intent.adjudication.clone()),
            correction: t.correction.as_ref().map(|intent| intent.correction.clone()),
        })
    }

    /// Discards what the journal holds that this clone did not prepare:
    /// every unfinished transaction it did not prepare, or the whole file
    /// when this clone did not write it and it cannot be read. This
    /// clone's own unfinished work is kept (and finished by the next
    /// command). Returns the journal as it was, before the discard, for the
    /// caller to show what went; holds the workspace lock.
    ///
    /// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a journal
    /// of this clone that cannot be read (nothing is discarded then).
    pub fn discard_foreign_transactions(&self) -> Result<JournalReport> {
        self.writable()?;
        let _lock = self.lock()?;
        let report = self.journal()?;
        let journal = self.dir.journal();
        if !report.has_foreign() {
            return Ok(report);
        }
        if let Some(intent) = report.distill_intent.as_ref().filter(|i| !i.written_here) {
            match std::fs::remove_file(&intent.path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    return Err(err).at(&intent.path);
                }
                _ => {}
            }
        }
        if report.unreadable.is_some() && !report.written_here {
            journal.clear()?;
            return Ok(report);
        }
        if report.unreadable.is_some() {
            return Ok(report);
        }
        let mut transactions = journal.transactions()?;
        for (t, shown) in transactions.iter_mut().zip(&report.transactions) {
            if !shown.prepared_here {
                // Dropped by the compaction, like a committed one.
                t.done = crate::store::journal::Phase::ALL.to_vec();
            }
        }
        journal.compact(&transactions)?;
        Ok(report)
    }
}
