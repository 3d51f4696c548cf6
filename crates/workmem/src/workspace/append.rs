//! Appending facts: one fact ([`Workspace::remember`]) or a whole input
//! ([`Workspace::import`]), each validated before a byte is written,
//! checked against the workspace id of the state it joins, and, when an id
//! could already be taken, checked and appended under the lock.

use std::path::Path;

use crate::error::{Error, Invalid, Result};
use crate::model::canon;
use crate::model::fact::{Fact, NewFact};
use crate::store::append_trail;
use crate::store::fact_log::Written;
use crate::store::id_index::{self, IdIndex};
use crate::store::names::CURATED_FILE;
use crate::workspace::{IMPORT_BATCH, Workspace};

impl Workspace {
    /// Validates `new` and returns the fact it would append, without writing.
    ///
    /// Errors: [`Error::InvalidInput`] naming the field.
    pub fn prepare(&self, new: NewFact) -> Result<Fact> {
        Fact::from_new(new, &self.workspace_id, self.clock.now(), || self.clock.fresh_id())
    }

    /// Appends one fact durably and returns it as stored.
    ///
    /// A fact with an explicit id is checked and appended under the
    /// workspace lock, so two writers can never store different facts under
    /// one id. When the id is already stored with the same content, kind,
    /// importance, memory_key, source and evidence (and instant, when
    /// `recorded_at` was given), the append is a retry: nothing is written
    /// and the stored fact is returned. Facts without an id get a fresh
    /// random one and append without the lock.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{NewFact, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// ws.init()?;
    /// let new = NewFact { fact_id: Some("ci-42".into()), ..NewFact::new("The nightly build passed") };
    /// let stored = ws.remember(new.clone())?;
    /// // A retry of the same fact returns what is stored and writes nothing.
    /// assert_eq!(ws.remember(new)?, stored);
    /// assert_eq!(ws.facts()?.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: [`Error::InvalidInput`] (nothing written), including an id
    /// already used by another fact; [`Error::Scope`] when the existing
    /// state belongs to another workspace (nothing written); [`Error::Io`].
    pub fn remember(&self, new: NewFact) -> Result<Fact> {
        self.writable()?;
        let explicit_id = new.fact_id.is_some();
        let recorded_at_given = new.recorded_at.is_some();
        let fact = self.prepare(new)?;
        let facts = std::slice::from_ref(&fact);
        if !explicit_id {
            // The scope is checked on the append's own descriptor.
            self.append_creating_dirs(facts)?;
            return Ok(fact);
        }
        self.check_append_scope([fact.recorded_at.utc_day()])?;
        id_index::prefetch(self.dir.path(), &[fact.fact_id.as_str()]);
        let _lock = self.lock_to_append()?;
        let (mut stored, index) = self.stored_under(facts)?;
        match stored.pop().flatten() {
            Some(stored) if fact.repeats(&stored, recorded_at_given) => Ok(stored),
            Some(_) => Err(Error::invalid("fact_id", Invalid::IdTaken { id: fact.fact_id })),
            None => {
                let written = self.log.append(facts, true, None)?;
                self.appended(index, &written);
                Ok(fact)
            }
        }
    }

    /// Validates every item first, then appends those not yet stored in
    /// batches of [`IMPORT_BATCH`], one write and one fsync per batch and
    /// daily file, under the workspace lock. `progress` is called with the
    /// number appended so far.
    ///
    /// An item without `fact_id` gets a deterministic id (see
    /// [`canon::import_fact_id`]), so an import that was interrupted (a
    /// killed process) can be run again: it appends only what is missing.
    /// An item whose id is stored with the same fields (the retry rule of
    /// [`Workspace::remember`]) counts as already present.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{NewFact, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// ws.init()?;
    /// let items = vec![NewFact::new("Tests take 4 minutes"), NewFact::new("Docs build with mdbook")];
    /// let first = ws.import(items[..1].to_vec(), &mut |_| {})?;
    /// // Running the whole input again adds only what is missing.
    /// let again = ws.import(items, &mut |_| {})?;
    /// assert_eq!((first.facts.len(), again.facts.len(), again.already_present), (1, 1, 1));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: [`Error::InvalidInput`] naming the 1-based item (nothing
    /// written), including an id given twice or stored with other fields;
    /// [`Error::Scope`] (nothing written); [`Error::Io`].
    pub fn import(&self, items: Vec<NewFact>, progress: &mut dyn FnMut(usize)) -> Result<Imported> {
        self.writable()?;
        let mut facts = Vec::with_capacity(items.len());
        let mut times_given = Vec::with_capacity(items.len());
        let mut ids = std::collections::HashSet::new();
        let mut occurrences: std::collections::HashMap<String, usize> =
            std::collections::HashMap::new();
        for (index, mut new) in items.into_iter().enumerate() {
            if new.fact_id.is_none() {
                let json = new.canonical_json();
                let seen = occurrences
                    .entry(canon::import_fact_id(&self.workspace_id, &json, 0))
                    .or_insert(0);
                new.fact_id = Some(canon::import_fact_id(&self.workspace_id, &json, *seen));
                *seen += 1;
            }
            times_given.push(new.recorded_at.is_some());
            let fact = self.prepare(new).map_err(|err| err.at_item(index + 1))?;
            if !ids.insert(fact.fact_id.clone()) {
                return Err(Error::invalid("fact_id", Invalid::IdRepeated).at_item(index + 1));
            }
            facts.push(fact);
        }
        let days: std::collections::BTreeSet<String> =
            facts.iter().map(|f| f.recorded_at.utc_day()).collect();
        self.check_append_scope(days)?;
        let ids: Vec<&str> = facts.iter().map(|f| f.fact_id.as_str()).collect();
        id_index::prefetch(self.dir.path(), &ids);
        let _lock = self.lock_to_append()?;
        let (stored, index) = self.stored_under(&facts)?;
        let mut already_present = 0;
        let mut missing = Vec::with_capacity(facts.len());
        for (index, (fact, stored)) in facts.into_iter().zip(stored).enumerate() {
            match stored {
                None => missing.push(fact),
                Some(stored) if fact.repeats(&stored, times_given[index]) => already_present += 1,
                Some(_) => {
                    return Err(Error::invalid("fact_id", Invalid::IdTaken { id: fact.fact_id })
                        .at_item(index + 1));
                }
            }
        }
        let mut done = 0;
        let mut written = Vec::new();
        for batch in missing.chunks(IMPORT_BATCH) {
            written.extend(self.log.append(batch, true, None)?);
            done += batch.len();
            progress(done);
        }
        if !missing.is_empty() {
            self.appended(index, &written);
        }
        Ok(Imported { facts: missing, already_present })
    }

    /// Appends to the log, creating the memory and `daily/` directories
    /// only when the append finds them missing (the hot path makes no
    /// directory calls). The scope is checked as by
    /// [`Workspace::check_append_scope`], on the target file's first line
    /// read through the append's own descriptor.
    fn append_creating_dirs(&self, facts: &[Fact]) -> Result<()> {
        let scope = |path: &Path, head: Option<&[u8]>| {
            if self.line_in_scope(path, head)? { Ok(()) } else { self.check_scope_elsewhere() }
        };
        match self.log.append(facts, false, Some(&scope)) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                self.init()?;
                self.log.append(facts, false, Some(&scope)).map(drop)
            }
            other => other.map(drop),
        }
    }

    /// Records what an append under the lock `written`, once durable: in
    /// the append trail, and in the id index the check refreshed (saved
    /// counting it as read when nobody else wrote to its files meanwhile),
    /// whose stamps then let the trail be compacted. Only caches: a
    /// failure costs the next reader a read of the daily files that
    /// changed.
    fn appended(&self, index: Option<IdIndex>, written: &[Written]) {
        append_trail::record(self.dir.path(), written);
        if let Some(mut index) = index {
            index.record_append(&self.log, written);
            let _ = index.save();
            append_trail::compact(self.dir.path(), |day| index.stamp(day));
        }
    }

    /// Returns, for each of `facts`, the fact already stored under its id:
    /// the first record of the id in (file name, line) order. The caller
    /// holds the lock, so the answer stays true until it appends.
    ///
    /// The id index answers without reading the log (only the daily files
    /// that changed since it last read them); every place it names is read
    /// back and must hold the id, else the index is rebuilt once, and
    /// without a usable index the whole log is read as before. Also
    /// returns the index, for the caller to save once it appended.
    fn stored_under(&self, facts: &[Fact]) -> Result<(Vec<Option<Fact>>, Option<IdIndex>)> {
        for _ in 0..2 {
            match self.stored_under_indexed(facts) {
                Ok(Some(found)) => return Ok(found),
                // A place that does not hold its id: rebuild and ask again.
                Ok(None) => self.drop_id_index(),
                // The index could not be written (a read-only or full disk):
                // the log itself still answers.
                Err(Error::Io { .. }) => break,
                Err(err) => return Err(err),
            }
        }
        let ids: Vec<&str> = facts.iter().map(|f| f.fact_id.as_str()).collect();
        Ok((self.facts_from_log(&ids)?, None))
    }

    /// Answers [`Workspace::stored_under`] through the id index; `None`
    /// when the index named a place that does not hold the id.
    #[allow(clippy::type_complexity)]
    fn stored_under_indexed(
        &self,
        facts: &[Fact],
    ) -> Result<Option<(Vec<Option<Fact>>, Option<IdIndex>)>> {
        let index = id_index::refresh(&self.log, self.dir.path(), &self.workspace_id)?.index;
        let ids: Vec<&str> = facts.iter().map(|f| f.fact_id.as_str()).collect();
        Ok(self.facts_at_places(&index, &ids)?.map(|stored| (stored, Some(index))))
    }

    /// Returns, for each of `ids`, the fact at the first place `index`
    /// names for it (`None` for an id it does not hold), read back; `None`
    /// when a shard is unusable or a place does not hold its id (the index
    /// is stale in a way its stamps did not show).
    ///
    /// Errors: [`Error::Scope`] for a record of another workspace;
    /// [`Error::Io`].
    pub(crate) fn facts_at_places(
        &self,
        index: &IdIndex,
        ids: &[&str],
    ) -> Result<Option<Vec<Option<Fact>>>> {
        let Some(places) = index.lookup(ids) else { return Ok(None) };
        let mut found = Vec::with_capacity(ids.len());
        for (id, places) in ids.iter().zip(places) {
            let Some(first) = places.first() else {
                found.push(None);
                continue;
            };
            match self.log.read_at::<Fact>(&first.day, first.offset)? {
                Some(fact) if fact.fact_id == *id => found.push(Some(fact)),
                _ => return Ok(None),
            }
        }
        Ok(Some(found))
    }

    /// Returns, for each of `ids`, the fact the log holds under it (the
    /// first record of the id), by reading the whole log.
    ///
    /// Errors: as [`Workspace::facts`].
    pub(crate) fn facts_from_log(&self, ids: &[&str]) -> Result<Vec<Option<Fact>>> {
        let wanted: std::collections::HashMap<&str, usize> =
            ids.iter().enumerate().map(|(index, id)| (*id, index)).collect();
        let mut found = vec![None; ids.len()];
        for fact in self.log.read_all()? {
            if let Some(&index) = wanted.get(fact.fact_id.as_str()) {
                found[index] = Some(fact);
            }
        }
        Ok(found)
    }

    /// Removes the id index's manifest, so the next use rebuilds it.
    pub(crate) fn drop_id_index(&self) {
        self.dir.drop_id_index();
    }

    /// Refuses an append that would join state of another workspace (a
    /// moved or copied checkout, whose path gives another id): the
    /// workspace id of each existing target daily file's first complete
    /// line, else of the newest daily file's, else of curated.json, must be
    /// this workspace's. Reads only the first line of those files.
    ///
    /// Errors: [`Error::Scope`] naming the file and both ids; [`Error::Io`].
    fn check_append_scope(&self, days: impl IntoIterator<Item = String>) -> Result<()> {
        let mut checked = false;
        for day in days {
            let path = self.log.path_for_day(&day);
            checked |= self.line_in_scope(&path, self.dir.first_complete_line(&path)?)?;
        }
        if checked {
            return Ok(());
        }
        self.check_scope_elsewhere()
    }

    /// The rest of [`Workspace::check_append_scope`] when no target file
    /// holds a complete line: the newest daily file's first line, else
    /// curated.json, must name this workspace.
    fn check_scope_elsewhere(&self) -> Result<()> {
        if let Some(newest) = self.log.days()?.pop()
            && self.line_in_scope(&newest.path, self.dir.first_complete_line(&newest.path)?)?
        {
            return Ok(());
        }
        let path = self.file(CURATED_FILE);
        self.line_in_scope(&path, self.dir.read_path(&path)?).map(drop)
    }

    /// Checks the workspace id that `record` (from the file at `path`)
    /// names; `false` when there is no record or it names none.
    ///
    /// Errors: [`Error::Scope`] for another workspace's id.
    fn line_in_scope(&self, path: &Path, record: Option<impl AsRef<[u8]>>) -> Result<bool> {
        let Some(found) = record.and_then(|record| recorded_workspace(record.as_ref())) else {
            return Ok(false);
        };
        if found == self.workspace_id {
            return Ok(true);
        }
        Err(Error::Scope {
            location: crate::error::Location::file(path),
            found,
            expected: self.workspace_id.clone(),
        })
    }

    /// Returns what happens next to `fact`, just written by a model's
    /// `write_memory`, under this workspace's policy: the note the tool's
    /// result carries, so the model knows where the fact will show and
    /// need not write it again. A keyed fact is a claim the policy reviews
    /// once it is old enough; until then the context lists it under
    /// "Pending Keyed Facts".
    pub fn write_memory_note(&self, fact: &Fact) -> String {
        let policy = &self.config.policy;
        let days = policy.age_days_for(fact.source());
        let stable = policy.stable_kinds.contains(&fact.kind());
        match (fact.memory_key(), stable) {
            (Some(key), true) => format!(
                "Recorded as a claim about {key}, not yet its value. The memory policy (distill) reviews it \
                 once it is {days} days old: it becomes the curated value only if it wins there, and a tie \
                 with another value waits for a human. Until then get_context lists it under \"Pending Keyed \
                 Facts\"; do not write it again."
            ),
            (Some(key), false) => format!(
                "Recorded as a claim about {key}. The memory policy never promotes {} facts, so it stays a \
                 claim: get_context lists it under \"Pending Keyed Facts\" while it is among the newest.",
                fact.kind()
            ),
            (None, true) => format!(
                "Recorded. get_context lists it among the recent facts; the memory policy (distill) may \
                 promote it into the curated memory once it is {days} days old."
            ),
            (None, false) => format!(
                "Recorded. get_context lists it among the recent facts; the memory policy never promotes {} \
                 facts.",
                fact.kind()
            ),
        }
    }
}

/// What an import appended and what it found already stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The facts appended, in input order.
    pub facts: Vec<Fact>,
    /// How many items were already stored (an earlier run of the same
    /// import, or a retry).
    pub already_present: usize,
}

/// Returns the `workspace_id` field of a JSON record (a fact line or a
/// state file), or `None` when the record does not parse or has none: the
/// readers report such a record, the append scope check only looks for
/// evidence of another workspace.
fn recorded_workspace(record: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Scoped {
        workspace_id: String,
    }
    serde_json::from_slice::<Scoped>(record).ok().map(|scoped| scoped.workspace_id)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write fixtures directly
mod tests {
    use std::io::Write;

    use super::*;
    use crate::model::fact::NewFact;

    fn new_fact(id: &str, content: &str, day: &str) -> NewFact {
        NewFact {
            fact_id: Some(id.to_owned()),
            recorded_at: Some(format!("{day}T10:00:00Z")),
            ..NewFact::new(content)
        }
    }

    fn append_outside(ws: &Workspace, fact: &NewFact) {
        let line = ws.prepare(fact.clone()).unwrap().to_line();
        let day = fact.recorded_at.as_deref().unwrap()[..10].to_owned();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(ws.log.path_for_day(&day))
            .unwrap();
        file.write_all(line.as_bytes()).unwrap();
    }

    /// Another writer appends between an id check and the append it
    /// allowed (to a file the index read, and to a file it did not know):
    /// the append must not count the other writer's record as read.
    #[test]
    fn an_outside_append_between_the_check_and_the_append_stays_visible() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path(), None).unwrap();
        ws.init().unwrap();
        ws.remember(new_fact("a-1", "First.", "2026-01-01")).unwrap();
        let facts = [
            ws.prepare(new_fact("b-1", "Second.", "2026-01-01")).unwrap(),
            ws.prepare(new_fact("b-2", "Third.", "2026-01-02")).unwrap(),
        ];
        {
            let _lock = ws.lock().unwrap();
            let (stored, index) = ws.stored_under(&facts).unwrap();
            assert_eq!(stored, vec![None, None]);
            append_outside(&ws, &new_fact("x-1", "Outside.", "2026-01-01"));
            append_outside(&ws, &new_fact("x-2", "Outside.", "2026-01-02"));
            let written = ws.log.append(&facts, true, None).unwrap();
            ws.appended(index, &written);
        }
        for id in ["x-1", "x-2", "b-1"] {
            match ws.remember(new_fact(id, "Another value.", "2026-01-01")) {
                Err(Error::InvalidInput { reason: Invalid::IdTaken { .. }, .. }) => {}
                other => panic!("{id}: expected the id to be taken, got {other:?}"),
            }
        }
    }
}
