//! Pending keyed facts: the most recent keyed facts that are not evidence
//! of any curated entry (docs/policy.md), for the agent context, and the
//! pending index, the cache that keeps finding them cheap.
//!
//! A keyed fact recorded after the latest evidence of every entry of its
//! memory key (kept per key in the projection index) is evidence of none;
//! only for an older one must the evidence ids be looked up, and
//! curated.json, which lists them, grows with the log: it is parsed only
//! then, once. The answer is kept in `.pending.json`: for the curated.json it was
//! computed against (its stamp), the daily files read from the newest back
//! to the first that brought the count to what was asked (or to the oldest
//! file), each with its stamp, its number of facts and its pending keyed
//! facts (the newest of them, as many as were asked).
//!
//! While curated.json keeps its stamp, a fact's standing can only change by
//! the fact being new: a fact appended since the index was written is not
//! evidence (nothing has distilled it). So a reader walks the daily files
//! from the newest, as the recent facts are found, and for each:
//!
//! - a file the index lists with the same stamp: its listed pending facts;
//! - a listed file that only grew (same inode, larger): its listed pending
//!   facts plus the keyed facts after the first `facts` of it;
//! - a file the index does not list, being newer or created since: all its
//!   keyed facts;
//!
//! stopping after the file that brings the count to what is asked. Anything
//! else (a listed file replaced, shrunk or gone, more facts asked for than
//! the index covers, a stale or unreadable index) sends the reader the slow
//! way: parse curated.json, read the files from the newest with its
//! evidence ids, and write the index again. The
//! index is a cache: never evidence, always rebuildable, written like
//! `.projection.json` and not at all by a read-only handle.

use std::cell::OnceCell;

use foldhash::{HashMap, HashMapExt};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::fact::Fact;
use crate::policy::projection::{MAX_PENDING_FACTS, PendingFact};
use crate::policy::retractions::Retractions;
use crate::store::conflict_queue::CaseStatus;
use crate::store::corrections::StreamSeen;
use crate::store::curated_state::{CuratedState, Entry};
use crate::store::memory_dir::FileStamp;
use crate::store::names::{CURATED_FILE, PENDING_INDEX_FILE};
use crate::workspace::Workspace;
use crate::workspace::memory::CuratedView;

/// Version of the `.pending.json` layout.
const SCHEMA_VERSION: u32 = 3;

/// The pending index (see the module docs).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PendingIndex {
    schema_version: u32,
    workspace_id: String,
    /// Stamp of the curated.json whose evidence ids decided; `None` when
    /// there was none (then every keyed fact is pending).
    curated: Option<FileStamp>,
    /// The corrections stream whose retracted facts were left out: the
    /// index is not used once it changed.
    corrections: StreamSeen,
    /// Whether the files go back to the oldest daily file there was and
    /// every pending keyed fact of them is listed.
    complete: bool,
    /// The files read, newest first.
    files: Vec<IndexedFile>,
}

/// One daily file of the pending index.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexedFile {
    /// `YYYY-MM-DD`.
    day: String,
    /// Its stamp before it was read.
    stamp: FileStamp,
    /// How many facts it held ([`crate::store::fact_log::FactLog::read_file`]'s count).
    facts: usize,
    /// Its pending keyed facts, oldest first; only the newest of the whole
    /// index, as many as were asked, are kept.
    pending: Vec<PendingFact>,
    /// Whether older pending facts of the file were left out of `pending`.
    cut: bool,
}

impl Workspace {
    /// Returns up to `limit` most recent keyed facts that are not evidence
    /// of any curated entry, oldest of them first, from the pending index
    /// while it holds (see the module docs), else from curated.json and the
    /// newest daily files, rewriting the index.
    ///
    /// Errors: [`Error::Corrupt`], [`Error::Scope`], [`Error::Io`] for the
    /// files read.
    pub(super) fn pending_facts(
        &self,
        limit: usize,
        view: &CuratedView,
        corrections: &(Retractions, StreamSeen),
    ) -> Result<Vec<PendingFact>> {
        let limit = limit.min(MAX_PENDING_FACTS);
        if limit == 0 {
            return Ok(Vec::new());
        }
        // Identify curated.json before reading anything: an index built
        // against a state replaced meanwhile then never matches.
        let curated = self.dir.stamp(CURATED_FILE)?;
        if let Some(index) = self.read_pending_index(curated, &corrections.1)
            && let Some(found) = self.pending_from_index(&index, limit, &corrections.0)?
        {
            return Ok(found);
        }
        let index = self.build_pending_index(curated, limit, view, corrections)?;
        if !self.read_only {
            // Only a cache: a reader that cannot write it still answers.
            let _ = self.write_pending_index(&index);
        }
        let mut found: Vec<PendingFact> =
            index.files.into_iter().flat_map(|file| file.pending).collect();
        Ok(newest(&mut found, limit))
    }

    /// Returns the index when it exists, parses and was built against the
    /// curated.json with stamp `curated` and the corrections stream
    /// `corrections`.
    fn read_pending_index(
        &self,
        curated: Option<FileStamp>,
        corrections: &StreamSeen,
    ) -> Option<PendingIndex> {
        // Any trouble with the cache is a miss, never an error.
        let data = self.dir.read(PENDING_INDEX_FILE).ok()??;
        let index: PendingIndex = serde_json::from_slice(&data).ok()?;
        (index.schema_version == SCHEMA_VERSION
            && index.workspace_id == self.workspace_id
            && index.curated == curated
            && index.corrections.same_content(corrections))
        .then_some(index)
    }

    /// Answers from `index` and the daily files that changed since it was
    /// written; `None` when the index cannot answer.
    fn pending_from_index(
        &self,
        index: &PendingIndex,
        limit: usize,
        retracted: &Retractions,
    ) -> Result<Option<Vec<PendingFact>>> {
        // A fact appended since the index may carry an id a correction
        // named before it arrived.
        let pending = |fact: &Fact| {
            if retracted.is_retracted(&fact.fact_id) { None } else { PendingFact::of(fact) }
        };
        let days = self.log.days()?;
        if index.files.iter().any(|listed| days.iter().all(|day| day.day != listed.day)) {
            // A listed file is gone: what it held may have been needed.
            return Ok(None);
        }
        let oldest_listed = index.files.last().map(|f| f.day.as_str());
        let mut found: Vec<PendingFact> = Vec::new();
        for day in days.iter().rev() {
            if found.len() >= limit {
                break;
            }
            let listed = index.files.iter().find(|f| f.day == day.day);
            let Some(listed) = listed else {
                if !index.complete && oldest_listed.is_some_and(|oldest| day.day.as_str() < oldest)
                {
                    // Older than what the index covers, and still short:
                    // it was there when the index was written, unread.
                    return Ok(None);
                }
                // Created since the index was written: nothing in it is
                // evidence yet.
                found.extend(self.log.read_file(&day.path)?.iter().filter_map(pending));
                continue;
            };
            let Some(stamp) = self.dir.stamp_path(&day.path)? else { return Ok(None) };
            if stamp == listed.stamp {
                found.extend(listed.pending.iter().cloned());
                continue;
            }
            let grew = stamp[0] == listed.stamp[0] && stamp[1] > listed.stamp[1];
            // A fact appended since may be older (its `recorded_at`) than
            // the pending facts the index left out of this file.
            if !grew || listed.cut {
                return Ok(None);
            }
            let facts = self.log.read_file(&day.path)?;
            if facts.len() < listed.facts {
                return Ok(None);
            }
            found.extend(listed.pending.iter().cloned());
            found.extend(facts[listed.facts..].iter().filter_map(pending));
        }
        if found.len() < limit && !index.complete {
            // More asked for than the index keeps.
            return Ok(None);
        }
        Ok(Some(newest(&mut found, limit)))
    }

    /// Reads the daily files from the newest until `limit` pending keyed
    /// facts are found or the log ends, and keeps the newest `limit`. A
    /// keyed fact no later than the latest evidence of its memory key
    /// (`view.domains`) is looked up among the evidence ids of the curated
    /// state (`view.state`, else curated.json, read once, then). A
    /// retracted fact is never pending.
    fn build_pending_index(
        &self,
        curated: Option<FileStamp>,
        limit: usize,
        view: &CuratedView,
        (retracted, seen): &(Retractions, StreamSeen),
    ) -> Result<PendingIndex> {
        // The keyed entries by memory key, from the curated state read only
        // when a fact needs it; entries list their evidence ids sorted
        // (checked on load).
        let loaded: OnceCell<CuratedState> = OnceCell::new();
        let by_key: OnceCell<HashMap<&str, Vec<&Entry>>> = OnceCell::new();
        let is_evidence = |fact: &Fact| -> Result<bool> {
            let Some(key) = fact.memory_key.as_deref() else { return Ok(false) };
            if view
                .domains
                .get(key)
                .is_none_or(|latest| fact.recorded_at.instant() > latest.instant())
            {
                return Ok(false);
            }
            if by_key.get().is_none() {
                if view.state.is_none() && loaded.get().is_none() {
                    let _ = loaded.set(self.curated()?);
                }
                let state = view.state.as_ref().or(loaded.get()).expect("one of them is set");
                let mut map: HashMap<&str, Vec<&Entry>> = HashMap::new();
                for entry in &state.entries {
                    if let Some(key) = entry.memory_key.as_deref() {
                        map.entry(key).or_default().push(entry);
                    }
                }
                let _ = by_key.set(map);
            }
            Ok(by_key.get().and_then(|map| map.get(key)).is_some_and(|entries| {
                entries.iter().any(|entry| entry.evidence_ids.binary_search(&fact.fact_id).is_ok())
            }))
        };
        let days = self.log.days()?;
        let mut files: Vec<IndexedFile> = Vec::new();
        let mut count = 0;
        for day in days.iter().rev() {
            if count >= limit {
                break;
            }
            let Some((facts, stamp)) = self.log.read_file_stamped(&day.path)? else { continue };
            let mut pending: Vec<PendingFact> = Vec::new();
            for fact in &facts {
                if fact.memory_key.is_some()
                    && !retracted.is_retracted(&fact.fact_id)
                    && !is_evidence(fact)?
                {
                    pending.extend(PendingFact::of(fact));
                }
            }
            pending.sort_by(|a, b| a.order().cmp(&b.order()));
            count += pending.len();
            files.push(IndexedFile {
                day: day.day.clone(),
                stamp,
                facts: facts.len(),
                pending,
                cut: false,
            });
        }
        let complete = count < limit;
        // Keep the newest `limit`: drop from the oldest file up.
        let mut excess = count.saturating_sub(limit);
        for file in files.iter_mut().rev() {
            if excess == 0 {
                break;
            }
            let cut = excess.min(file.pending.len());
            file.pending.drain(..cut);
            file.cut = cut > 0;
            excess -= cut;
        }
        Ok(PendingIndex {
            schema_version: SCHEMA_VERSION,
            workspace_id: self.workspace_id.clone(),
            curated,
            corrections: seen.clone(),
            complete,
            files,
        })
    }

    fn write_pending_index(&self, index: &PendingIndex) -> Result<()> {
        let path = self.file(PENDING_INDEX_FILE);
        let text = serde_json::to_string(index)
            .map_err(|err| Error::Io { path: path.clone(), source: std::io::Error::other(err) })?;
        self.dir.replace_cache(PENDING_INDEX_FILE, text.as_bytes())
    }
}

/// Returns the newest `limit` of `found` (any order), oldest first.
fn newest(found: &mut Vec<PendingFact>, limit: usize) -> Vec<PendingFact> {
    found.sort_by(|a, b| a.order().cmp(&b.order()));
    found.dedup_by(|a, b| a.fact_id == b.fact_id);
    let start = found.len().saturating_sub(limit);
    found.split_off(start)
}

impl Workspace {
    /// Returns the `limit` most recent pending keyed facts as the context
    /// shows them: without the facts whose value a human decision rejected
    /// (so maybe fewer: the pending index stays the one of `limit` facts),
    /// and with the open conflict case of those under review.
    ///
    /// Errors: as [`Workspace::pending_facts`] and [`Workspace::conflicts`].
    pub(super) fn reviewed_pending(
        &self,
        limit: usize,
        view: &CuratedView,
        corrections: &(Retractions, StreamSeen),
    ) -> Result<Vec<PendingFact>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut found = self.pending_facts(limit, view, corrections)?;
        if !found.is_empty() && self.file(crate::store::names::CONFLICTS_FILE).exists() {
            let queue = self.conflicts()?;
            found.retain_mut(|fact| {
                let mut rejected = false;
                for case in queue.cases.iter().filter(|c| c.memory_key == fact.memory_key) {
                    let Some(candidate) = case
                        .candidates
                        .iter()
                        .find(|c| c.evidence_ids.binary_search(&fact.fact_id).is_ok())
                    else {
                        continue;
                    };
                    match case.status {
                        CaseStatus::Open => fact.under_review = Some(case.conflict_id.clone()),
                        CaseStatus::Resolved => {
                            rejected |= case.selected_candidate_id.as_deref()
                                != Some(candidate.candidate_id.as_str());
                        }
                        CaseStatus::Superseded => {}
                    }
                }
                fact.under_review.is_some() || !rejected
            });
        }
        Ok(found)
    }
}
