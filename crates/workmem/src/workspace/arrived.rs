//! Corrections that arrive through git (docs/corrections.md,
//! "Corrections through git"): the merge driver keeps every record of
//! both sides' corrections streams, but it merges each file alone, so the
//! merged curated.json and conflicts.json do not show a correction the
//! other side made. Before a command serves the derived state, every
//! record in force whose effect is not in it yet is applied, as a
//! transaction of this clone (the one `retract` and `restore` run, with the
//! record already in the stream).
//!
//! A record is waiting when its plan, made with the facts the whole stream
//! retracts, changes something. Planning is idempotent (an applied
//! record's plan changes nothing), so the answer depends on the records
//! and the state only, never on the order the records arrived in. What
//! this clone last applied is kept in `.valid-hashes` as the stream's
//! length, SHA-256 and identity: while the stream keeps that identity,
//! nothing is read; when it grew past a prefix that still hashes as
//! recorded, only the records after it are planned; otherwise (a lost
//! cache, a merge that rewrote the stream) every record is.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::error::{Damage, Error, Location, Result};
use crate::model::fact::Fact;
use crate::model::stamp::Stamp;
use crate::policy::retractions::Retractions;
use crate::store::conflict_queue::{Case, ConflictQueue};
use crate::store::corrections::{self, Action, CORRECTIONS_FILE, Correction};
use crate::store::curated_state::{CuratedState, Entry};
use crate::store::journal::Numbered;
use crate::store::lock;
use crate::store::valid_hashes::{self, CheckedPrefix};
use crate::workspace::Workspace;
use crate::workspace::retract::Scope;

/// The name under which `.valid-hashes` keeps the corrections stream as
/// this clone last applied it.
const APPLIED: &str = "applied:memory-corrections.jsonl";

/// The corrections stream as read for applying.
struct StreamRead {
    /// Its records.
    records: Vec<Numbered<Correction>>,
    /// The first line not known to be applied.
    from_line: usize,
    /// What to record once every waiting record is applied.
    applied: CheckedPrefix,
}

impl Workspace {
    /// Applies every correction record in force whose effect is not in
    /// the derived state (one that arrived through git): see the module
    /// documentation. Takes the workspace lock only when one is waiting
    /// (or uses it when this thread holds it). A read-only handle applies
    /// nothing. Returns how many records it applied.
    ///
    /// Errors: [`crate::Error::Corrupt`] for a stream or state file that
    /// does not decode, or a journal holding a transaction this clone did
    /// not prepare (named with `workmem journal`); [`crate::Error::Io`].
    ///
    /// With `every`, plans every record of the stream, not only those after
    /// the prefix this clone last applied: for derived files that did not
    /// come from this clone (a merge may have brought back what an applied
    /// record took out).
    pub(crate) fn apply_arrived_corrections(&self, every: bool) -> Result<usize> {
        let Some(read) = self.read_unapplied(every)? else { return Ok(0) };
        if self.read_only {
            // Nothing is written; nothing a waiting record retracts is
            // served either.
            let waiting = self.waiting_in(&read.records, read.from_line)?;
            return match waiting.first() {
                None => Ok(0),
                Some((line, record)) => Err(Error::corrupt(
                    Location::line(&self.file(CORRECTIONS_FILE), *line),
                    Damage::CorrectionWaiting {
                        action: record.action.to_string(),
                        event_id: record.event_id.clone(),
                    },
                )),
            };
        }
        if lock::held_here(self.dir.path()) {
            return self.apply_waiting(read);
        }
        // A redaction that arrived also removes this clone's caches, which
        // may hold its text: that takes the lock even when nothing waits.
        let redaction = read
            .records
            .iter()
            .any(|n| n.line >= read.from_line && n.record.action == Action::Redact);
        if !redaction && self.waiting_in(&read.records, read.from_line)?.is_empty() {
            valid_hashes::record_prefix(self.dir.path(), APPLIED, &read.applied);
            return Ok(0);
        }
        let _lock = self.lock()?;
        self.finish_pending_locked()?;
        let Some(read) = self.read_unapplied(every)? else { return Ok(0) };
        self.apply_waiting(read)
    }

    /// Records the corrections stream as applied after this clone
    /// appended a record of its own (its effect is in the derived state),
    /// when every record before it was applied already; otherwise the next
    /// command plans the records it has not applied, as it would.
    ///
    /// Errors: as [`Workspace::apply_arrived_corrections`].
    pub(crate) fn record_own_correction(&self) -> Result<()> {
        let Some(read) = self.read_unapplied(false)? else { return Ok(()) };
        let unapplied = read.records.iter().filter(|n| n.line >= read.from_line).count();
        if unapplied <= 1 {
            valid_hashes::record_prefix(self.dir.path(), APPLIED, &read.applied);
        }
        Ok(())
    }

    /// Applies each waiting record in turn (the lock is held), then records
    /// the stream as applied.
    fn apply_waiting(&self, read: StreamRead) -> Result<usize> {
        let after = Retractions::from_records(read.records.iter().map(|n| &n.record));
        let mut applied = 0;
        let all: Vec<&Correction> = read.records.iter().map(|n| &n.record).collect();
        for numbered in read.records.iter().filter(|n| n.line >= read.from_line) {
            let record = &numbered.record;
            if record.action == Action::Redact {
                if matches!(arrival(record, &all), Arrival::Never) {
                    continue;
                }
                let (planned, files) = self.plan_arrived_redaction(record, &after, true)?;
                if planned.is_empty() && files.is_empty() {
                    // The merge brought the redacted files and state; this
                    // clone's caches may still hold the text.
                    self.dir.remove_caches()?;
                    continue;
                }
                self.run_correction(record.clone(), planned, true, Some(files))?;
                applied += 1;
                continue;
            }
            let Some(planned) = self.plan_arrived(record, &read.records, &after)? else {
                continue;
            };
            if planned.is_empty() {
                continue;
            }
            self.run_correction(record.clone(), planned, true, None)?;
            applied += 1;
        }
        valid_hashes::record_prefix(self.dir.path(), APPLIED, &read.applied);
        Ok(applied)
    }

    /// Returns the records of `records` (the stream's, with their line)
    /// whose effect is not in `curated` and `queue`: what `verify` reports.
    ///
    /// Errors: as [`Workspace::facts_with_ids`].
    pub(crate) fn waiting_over<'r>(
        &self,
        records: &'r [(usize, Correction)],
        curated: Option<&CuratedState>,
        queue: &ConflictQueue,
    ) -> Result<Vec<(usize, &'r Correction)>> {
        // A record of another workspace is not a record of this stream.
        let ours = records.iter().filter(|(_, r)| r.workspace_id == self.workspace_id());
        let all: Vec<&Correction> = ours.clone().map(|(_, r)| r).collect();
        let after = Retractions::from_records(all.iter().copied());
        let mut waiting = Vec::new();
        for (line, record) in ours {
            let retracted_at = match arrival(record, &all) {
                Arrival::Never => continue,
                Arrival::Takes => None,
                Arrival::Restores(at) => Some(at),
            };
            if record.action == Action::Redact {
                if self.redaction_waits(record, &after)? {
                    waiting.push((*line, record));
                }
                continue;
            }
            let named: Vec<&str> = record.fact_ids.iter().collect();
            let scope = Scope::of(&self.facts_with_ids(&named)?);
            let entries: Vec<Entry> = curated
                .map(|state| state.entries.as_slice())
                .unwrap_or_default()
                .iter()
                .filter(|e| scope.touches(e.memory_key.as_deref(), &e.key))
                .cloned()
                .collect();
            let cases: Vec<Case> = queue
                .cases
                .iter()
                .filter(|c| scope.domains.contains(&c.memory_key))
                .cloned()
                .collect();
            let plan =
                self.plan_entries(record, &after, retracted_at.as_ref(), &entries, &cases)?;
            if !plan.entries.is_empty() || !plan.cases.is_empty() {
                waiting.push((*line, record));
            }
        }
        Ok(waiting)
    }

    /// The records of `records` from line `from_line` on that are waiting.
    fn waiting_in(
        &self,
        records: &[Numbered<Correction>],
        from_line: usize,
    ) -> Result<Vec<(usize, Correction)>> {
        let mut waiting = Vec::new();
        if records.iter().all(|n| n.line < from_line) {
            return Ok(waiting);
        }
        let after = Retractions::from_records(records.iter().map(|n| &n.record));
        let all: Vec<&Correction> = records.iter().map(|n| &n.record).collect();
        for numbered in records.iter().filter(|n| n.line >= from_line) {
            let record = &numbered.record;
            if record.action == Action::Redact {
                let applies = !matches!(arrival(record, &all), Arrival::Never);
                if applies && self.redaction_waits(record, &after)? {
                    waiting.push((numbered.line, record.clone()));
                }
                continue;
            }
            let planned = self.plan_arrived(record, records, &after)?;
            if planned.is_some_and(|p| !p.is_empty()) {
                waiting.push((numbered.line, numbered.record.clone()));
            }
        }
        Ok(waiting)
    }

    /// Whether the redact record `record` (one that applies) is waiting:
    /// planned against the state as stored, it changes an entry or a case
    /// or a daily file still holds a line it redacts. Takes no file lock.
    fn redaction_waits(&self, record: &Correction, after: &Retractions) -> Result<bool> {
        let (planned, files) = self.plan_arrived_redaction(record, after, false)?;
        Ok(!planned.is_empty() || !files.is_empty())
    }

    /// Plans one record of the stream against the state as stored; `None`
    /// for a record that cannot apply (a second record under an event id
    /// already used, or a restore naming no record): `verify` reports
    /// those.
    fn plan_arrived(
        &self,
        record: &Correction,
        records: &[Numbered<Correction>],
        after: &Retractions,
    ) -> Result<Option<super::retract::Planned>> {
        let all: Vec<&Correction> = records.iter().map(|n| &n.record).collect();
        let retracted_at = match arrival(record, &all) {
            Arrival::Never => return Ok(None),
            Arrival::Takes => None,
            Arrival::Restores(at) => Some(at),
        };
        let named: Vec<&str> = record.fact_ids.iter().collect();
        let facts: HashMap<String, Fact> = self.facts_with_ids(&named)?;
        self.plan_correction(record, after, retracted_at.as_ref(), &facts).map(Some)
    }

    /// Reads the corrections stream unless it has the identity recorded
    /// when this clone last applied it (`every`: whatever is recorded);
    /// `None` when there is nothing to read (no stream, or the stream as
    /// applied).
    fn read_unapplied(&self, every: bool) -> Result<Option<StreamRead>> {
        let recorded =
            if every { None } else { valid_hashes::checked_prefix(self.dir.path(), APPLIED) };
        let Some(stamp) = self.dir.stamp(CORRECTIONS_FILE)? else { return Ok(None) };
        if let Some(CheckedPrefix { at: Some((at, _)), .. }) = &recorded
            && *at == stamp
        {
            return Ok(None);
        }
        let Some((data, stamp)) = self.dir.read_stamped(CORRECTIONS_FILE)? else {
            return Ok(None);
        };
        let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
        let from_line = match recorded {
            Some(prefix)
                if usize::try_from(prefix.len).is_ok_and(|len| len <= complete)
                    && hex::encode(Sha256::digest(&data[..prefix.len as usize]))
                        == prefix.sha256 =>
            {
                1 + memchr::memchr_iter(b'\n', &data[..prefix.len as usize]).count()
            }
            _ => 1,
        };
        let records = corrections::read(&self.file(CORRECTIONS_FILE), self.workspace_id())?;
        let mut hasher = Sha256::new();
        hasher.update(&data[..complete]);
        let at = (complete == data.len()).then(|| (stamp, hasher.clone()));
        let applied =
            CheckedPrefix { len: complete as u64, sha256: hex::encode(hasher.finalize()), at };
        Ok(Some(StreamRead { records, from_line, applied }))
    }
}

/// How a record of the stream applies.
enum Arrival {
    /// It cannot: a second record under an event id already used, or a
    /// restore naming no retraction (`verify` reports those).
    Never,
    /// A retraction (or redaction).
    Takes,
    /// A restore of the retraction recorded at this time.
    Restores(Stamp),
}

/// How `record` of the stream `records` applies.
fn arrival(record: &Correction, records: &[&Correction]) -> Arrival {
    let first = records.iter().find(|r| r.event_id == record.event_id);
    if first.is_some_and(|r| *r != record) {
        return Arrival::Never;
    }
    match (&record.action, &record.restores) {
        (Action::Restore, Some(target)) => match records.iter().find(|r| r.event_id == *target) {
            Some(r) if r.action == Action::Retract => Arrival::Restores(r.recorded_at.clone()),
            _ => Arrival::Never,
        },
        (Action::Restore, None) => Arrival::Never,
        _ => Arrival::Takes,
    }
}
