//! Reading the corrections stream (docs/corrections.md). Read-only; the stream's owner is
//! `store::corrections`.

use crate::error::Result;
use crate::policy::retractions::Retractions;
use crate::store::corrections::{self, CORRECTIONS_FILE, Correction, StreamSeen};
use crate::workspace::Workspace;

impl Workspace {
    /// Returns every record of the corrections stream
    /// (`memory-corrections.jsonl`), oldest first; none when it does not
    /// exist.
    ///
    /// Errors: [`crate::Error::Corrupt`] naming the file and line of a
    /// record that is not a valid correction, [`crate::Error::Scope`],
    /// [`crate::Error::Io`].
    pub fn corrections(&self) -> Result<Vec<Correction>> {
        Ok(corrections::read(&self.file(CORRECTIONS_FILE), self.workspace_id())?
            .into_iter()
            .map(|numbered| numbered.record)
            .collect())
    }

    /// Returns which facts the corrections stream retracts, each with the
    /// records in force that retract it.
    ///
    /// Errors: as [`Workspace::corrections`].
    pub fn retractions(&self) -> Result<Retractions> {
        Ok(Retractions::from_records(&self.corrections()?))
    }

    /// Returns which facts the corrections stream retracts, with what a
    /// cache built against the stream records of it (one read).
    ///
    /// Errors: as [`Workspace::corrections`].
    pub(crate) fn retractions_seen(&self) -> Result<(Retractions, StreamSeen)> {
        let (records, seen) =
            corrections::read_seen(&self.file(CORRECTIONS_FILE), self.workspace_id())?;
        Ok((Retractions::from_records(&records), seen))
    }

    /// Returns whether the corrections stream still holds what `seen`
    /// records: a stat while it did not change.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn corrections_hold(&self, seen: &StreamSeen) -> Result<bool> {
        seen.holds(&self.file(CORRECTIONS_FILE))
    }
}
