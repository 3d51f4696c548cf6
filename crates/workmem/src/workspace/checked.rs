//! The check of derived state this clone did not write (docs/trust.md):
//! before any command serves curated.json or conflicts.json, or builds on
//! them, their identities are compared with the ones this clone recorded
//! when it last wrote or checked them (`store::checked_state`). Equal
//! identities cost two `stat` calls and a small read. Any other pair (a
//! `git pull`, a checkout, a copy, a hand edit) is checked in full, with
//! every invariant and every cross-check `verify` makes against the daily
//! logs and the audit stream, and recorded only when it passes. A failing
//! check is a corruption error naming the file: nothing of it is served.
//!
//! It never checks the journal, MEMORY.md or the caches: the journal is
//! recovery's, MEMORY.md is never served from disk, and a cache is used
//! only while it matches the identity of what it describes.

use crate::error::{Damage, Error, Location, Result};
use crate::store::checked_state::{self, StatePair};
use crate::store::names::{AUDIT_FILE, CONFLICTS_FILE, CURATED_FILE};
use crate::store::valid_hashes;
use crate::workspace::Workspace;
use crate::workspace::verify::Problem;

impl Workspace {
    /// Returns the identities curated.json and conflicts.json have now.
    ///
    /// Errors: [`Error::Io`].
    fn state_pair(&self) -> Result<StatePair> {
        Ok(StatePair {
            curated: self.dir.stamp(CURATED_FILE)?,
            conflicts: self.dir.stamp(CONFLICTS_FILE)?,
        })
    }

    /// Checks curated.json and conflicts.json in full unless this clone
    /// wrote or checked them as they are; records them when they pass.
    ///
    /// Errors: [`Error::Corrupt`] naming the file and the first problem
    /// (a file deleted since this clone wrote it included); [`Error::Io`].
    ///
    /// First applies every correction that arrived through git and is not
    /// in the derived state yet (see `workspace::arrived`). The files it
    /// then writes are this clone's, but what they were made from was not:
    /// when the state was not checked before, it is checked in full after.
    pub(crate) fn check_state(&self) -> Result<()> {
        let recorded = checked_state::load(self.memory_dir());
        let before = self.state_pair()?;
        // Derived files this clone did not write may hold what a record it
        // applied took out (a merge with another side's state): every
        // record is planned against them then.
        let elsewhere = recorded != Some(before);
        if self.apply_arrived_corrections(elsewhere)? > 0 && elsewhere {
            checked_state::record(
                self.memory_dir(),
                recorded.unwrap_or(StatePair { curated: None, conflicts: None }),
            );
        }
        let current = self.state_pair()?;
        let recorded = checked_state::load(self.memory_dir());
        if recorded == Some(current) {
            return Ok(());
        }
        if current.curated.is_none()
            && current.conflicts.is_none()
            && recorded.is_none_or(|r| r.curated.is_none() && r.conflicts.is_none())
            && self.dir.stamp(AUDIT_FILE)?.is_none_or(|s| s[1] == 0)
        {
            // Nothing derived and no decision: nothing to check.
            return Ok(());
        }
        let deleted = self.deleted_state(recorded, current);
        let mut problems = Vec::new();
        if deleted.is_empty() {
            // A file that does not load fails as it always did, with its
            // own error (scope, version, the first broken invariant).
            self.curated_unchecked()?;
            self.conflicts_unchecked()?;
        }
        problems.extend(self.verify()?.into_iter().filter(|p| self.is_state_problem(p, current)));
        if let Some(first) = problems.first() {
            return Err(Error::corrupt(
                Location { path: first.file.clone().into(), line: first.line },
                Damage::Unchecked {
                    problem: first.message.clone(),
                    more: problems.len() - 1,
                    deleted: !deleted.is_empty(),
                },
            ));
        }
        self.record_checked_state(current);
        Ok(())
    }

    /// Records the identity the state file `name` has now as written by
    /// this clone: see [`MemoryDir::record_written`].
    ///
    /// [`MemoryDir::record_written`]: crate::store::memory_dir::MemoryDir::record_written
    pub(crate) fn record_written(&self, name: &str) {
        self.dir.record_written(name);
    }

    fn record_checked_state(&self, pair: StatePair) {
        if self.read_only {
            return;
        }
        // A checked file is as good as one written here: writers may take
        // its layout without decoding it again.
        for (name, stamp) in [(CURATED_FILE, pair.curated), (CONFLICTS_FILE, pair.conflicts)] {
            if let Some(stamp) = stamp
                && let Ok(Some(data)) = self.dir.read(name)
            {
                let sha256 = crate::model::canon::sha256_hex(&data);
                valid_hashes::record(self.memory_dir(), name, &sha256, Some(stamp));
            }
        }
        checked_state::record(self.memory_dir(), pair);
    }

    /// The state files this clone wrote or checked that no longer exist
    /// (what `verify` reports; it only reads the record).
    pub(crate) fn deleted_state_problems(&self) -> Vec<Problem> {
        match self.state_pair() {
            Ok(current) => self.deleted_state(checked_state::load(self.memory_dir()), current),
            Err(_) => Vec::new(),
        }
    }

    /// A state file this clone wrote or checked that no longer exists: a
    /// checkout or a merge deleted it, and with it the decisions it held.
    fn deleted_state(&self, recorded: Option<StatePair>, current: StatePair) -> Vec<Problem> {
        let Some(recorded) = recorded else { return Vec::new() };
        let mut problems = Vec::new();
        for (name, then, now) in [
            (CURATED_FILE, recorded.curated, current.curated),
            (CONFLICTS_FILE, recorded.conflicts, current.conflicts),
        ] {
            if then.is_some() && now.is_none() {
                problems.push(Problem {
                    file: self.file(name).display().to_string(),
                    line: None,
                    message: format!(
                        "{name} is missing, though this clone wrote it: a checkout, a merge or a \
                         hand deleted it"
                    ),
                    damage: None,
                });
            }
        }
        problems
    }

    /// Whether a problem `verify` found concerns the derived state: its
    /// two files, or, when conflicts.json is missing, decisions whose cases
    /// went with it. (With conflicts.json present, a decision that closes
    /// no case changes nothing that is served: `verify` reports it.)
    fn is_state_problem(&self, problem: &Problem, current: StatePair) -> bool {
        let is = |name: &str| problem.file == self.file(name).display().to_string();
        is(CURATED_FILE) || is(CONFLICTS_FILE) || (current.conflicts.is_none() && is(AUDIT_FILE))
    }
}
