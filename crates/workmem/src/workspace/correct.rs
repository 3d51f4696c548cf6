//! Reading the corrections stream (docs/corrections.md). Read-only; the stream's owner is
//! `store::corrections`.

use crate::error::Result;
use crate::policy::retractions::Retractions;
use crate::store::corrections::{self, CORRECTIONS_FILE, Correction};
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
}
