//! `overview`: one read-only look at where a workspace stands — facts,
//! what waits for the age gate and when the first becomes eligible, the
//! curated entries, open conflicts and unfinished work. Writes nothing.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::error::Result;
use crate::model::fact::Kind;
use crate::model::fact_line::FactRecord;
use crate::model::stamp::Stamp;
use crate::policy::distill::{self, Policy};
use crate::policy::report::Reason;
use crate::store::block_chain::Covered;
use crate::store::coverage::{self, Scan};
use crate::store::distill_cache::{Header, StoredIds};
use crate::store::fact_log::map_in_parallel;
use crate::store::id_index::Place;
use crate::store::names::{CURATED_FILE, DISTILL_CACHE_FILE, DISTILL_IDS_FILE};
use crate::workspace::{DaySummary, DistillOptions, Workspace};

/// Where a workspace stands, as [`Workspace::overview`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overview {
    /// The workspace id.
    pub workspace_id: String,
    /// Whether `.workmem/workspace.toml` pins the id (a shared or adopted
    /// memory), rather than the project's path deriving it.
    pub pinned: bool,
    /// Whether the memory is shared through git: a `.gitattributes` routes
    /// its files to workmem's merge driver.
    pub shared: bool,
    /// The facts of the log.
    pub facts: FactCounts,
    /// Active curated entries by kind.
    pub curated: BTreeMap<Kind, usize>,
    /// Open conflict cases, waiting for a human.
    pub open_conflicts: usize,
    /// Memory keys whose values a merge put in dispute (contested
    /// entries) and that have no open case yet: the next distill opens it.
    pub awaiting_review: Vec<String>,
    /// Memory keys whose active value a correction retracted and that no
    /// value has replaced yet (their latest revision is retracted): the
    /// next distill judges them again from their remaining facts, and
    /// they stay without a value when nothing qualifies.
    pub without_value: Vec<String>,
    /// When curated.json last changed (the last distill or resolution that
    /// changed the memory), if it exists.
    pub curated_changed_at: Option<Stamp>,
    /// Resolutions a crash left unfinished (the next writing command
    /// finishes them).
    pub unfinished_transactions: usize,
    /// Whether a distill was interrupted between its writes.
    pub distill_interrupted: bool,
    /// Decisions of the audit stream that do not close their case: two
    /// people decided one case on two machines, and a merge kept both
    /// (the case is open again, or the earlier of two equal decisions
    /// closed it).
    pub set_aside_decisions: usize,
    /// The records of the corrections stream and the facts they retract.
    pub corrections: CorrectionCounts,
}

/// Correction counts of an [`Overview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CorrectionCounts {
    /// Records of the corrections stream (retractions, restores and
    /// redactions).
    pub records: usize,
    /// Facts retracted now: named by a retraction not restored, or by a
    /// redaction.
    pub retracted_facts: usize,
    /// Of those, the facts redacted.
    pub redacted_facts: usize,
    /// Decisions and corrections whose actor and rationale a redaction
    /// replaced.
    pub redacted_records: usize,
}

/// Fact counts of an [`Overview`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FactCounts {
    /// Every fact in the log.
    pub total: usize,
    /// Facts recorded on the current UTC day.
    pub today: usize,
    /// Facts the policy will judge once they are old enough.
    pub waiting_for_age: usize,
    /// When the first of those becomes old enough.
    pub first_eligible_at: Option<Stamp>,
}

impl Workspace {
    /// Returns where the workspace stands at `as_of` (default now); never
    /// writes. The facts and those waiting for their age are counted from
    /// the distill cache and what was appended since it was written (the
    /// daily files are stamped, only appended bytes and the files recent
    /// enough to hold a waiting fact are read); without a cache that can
    /// answer, the policy runs as a dry run over the whole log (the cost of
    /// `distill --dry-run`).
    ///
    /// Errors: as [`Workspace::distill`] and [`Workspace::conflicts`].
    pub fn overview(&self, as_of: Option<Stamp>) -> Result<Overview> {
        let as_of = as_of.unwrap_or_else(|| self.now());
        self.check_state()?;
        let policy = &self.config.policy;
        let counts = match self.counts_from_cache(policy, &as_of)? {
            Some(counts) => counts,
            None => self.counts_from_log(policy, &as_of)?,
        };
        // Only the entries' heads: the evidence lists are not decoded.
        let mut curated = BTreeMap::new();
        let mut contested = std::collections::BTreeSet::new();
        // Each memory key's latest revision: (revision, retracted).
        let mut latest: BTreeMap<String, (u32, bool)> = BTreeMap::new();
        for head in self.dir.stored_curated()?.file.heads() {
            if head.is_active() {
                *curated.entry(head.kind).or_insert(0) += 1;
            } else if head.status == crate::store::curated_state::Status::Contested {
                contested.extend(head.memory_key.clone());
                continue;
            }
            if let Some(key) = &head.memory_key {
                let retracted = head.status == crate::store::curated_state::Status::Retracted;
                let slot = latest.entry(key.clone()).or_insert((head.revision, retracted));
                if head.revision > slot.0 {
                    *slot = (head.revision, retracted);
                }
            }
        }
        let without_value =
            latest.into_iter().filter(|(_, (_, retracted))| *retracted).map(|(k, _)| k).collect();
        let queue = self.conflicts()?;
        let open_conflicts = queue.cases.iter().filter(|case| case.is_open()).count();
        let awaiting_review = contested
            .into_iter()
            .filter(|key| !queue.cases.iter().any(|c| c.is_open() && &c.memory_key == key))
            .collect();
        let set_aside_decisions = self
            .adjudications()?
            .iter()
            .filter(|record| {
                queue.get(&record.conflict_id).and_then(|case| case.resolution_event_id.as_deref())
                    != Some(record.event_id.as_str())
            })
            .count();
        let records = self.corrections()?;
        let retracted = crate::policy::retractions::Retractions::from_records(&records);
        let corrections = CorrectionCounts {
            records: records.len(),
            retracted_facts: retracted.len(),
            redacted_facts: retracted.redacted_len(),
            redacted_records: records
                .iter()
                .filter(|r| r.action == crate::store::corrections::Action::Redact)
                .flat_map(|r| r.event_ids.iter().flatten())
                .collect::<std::collections::HashSet<_>>()
                .len(),
        };
        let curated_changed_at = self.dir.stamp(CURATED_FILE)?.and_then(|[_, _, secs, nanos]| {
            jiff::Timestamp::new(secs, i32::try_from(nanos).ok()?).ok().map(Stamp::from_timestamp)
        });
        // Only the journal's last transaction can be unfinished: when it
        // committed (or the journal is empty, as at rest) nothing else is read.
        let journal = self.dir.journal();
        let unfinished_transactions = if journal.last_is_committed()? {
            0
        } else {
            journal.transactions()?.iter().filter(|transaction| !transaction.committed()).count()
        };
        Ok(Overview {
            workspace_id: self.workspace_id().to_owned(),
            pinned: self.is_pinned(),
            shared: self.shared_attributes()?.is_some(),
            facts: FactCounts {
                total: counts.total,
                today: self.facts_on(&as_of.utc_day())?.len(),
                waiting_for_age: counts.waiting_for_age,
                first_eligible_at: counts.first_eligible_at,
            },
            curated,
            open_conflicts,
            awaiting_review,
            without_value,
            curated_changed_at,
            unfinished_transactions,
            distill_interrupted: self.distill_pending(),
            set_aside_decisions,
            corrections,
        })
    }
}

/// What the log tells an [`Overview`]: distinct facts, those waiting for
/// their age, and when the first of those becomes old enough.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogCounts {
    pub total: usize,
    pub waiting_for_age: usize,
    pub first_eligible_at: Option<Stamp>,
}

impl LogCounts {
    /// Counts a fact that waits until `until`.
    fn wait(&mut self, until: Stamp) {
        self.waiting_for_age += 1;
        if self.first_eligible_at.as_ref().is_none_or(|first| until.instant() < first.instant()) {
            self.first_eligible_at = Some(until);
        }
    }
}

impl Workspace {
    /// Counts the log's facts by running `policy` over the whole log as a
    /// dry run: every fact gets a decision, the waiting ones say until
    /// when.
    pub(crate) fn counts_from_log(&self, policy: &Policy, as_of: &Stamp) -> Result<LogCounts> {
        let options =
            DistillOptions::new().policy(policy.clone()).dry_run().explain().as_of(as_of.clone());
        let decisions = self.distill(&options)?.decisions;
        let mut counts =
            LogCounts { total: decisions.len(), waiting_for_age: 0, first_eligible_at: None };
        for decision in decisions {
            if let Reason::WaitingForAge { until } = decision.reason {
                counts.wait(until);
            }
        }
        Ok(counts)
    }

    /// Counts the log's facts as [`Workspace::counts_from_log`] does, from
    /// the distill cache: it holds how many distinct facts the log held and
    /// the span of `recorded_at` in each daily file. The daily files are
    /// stamped; only the bytes appended since and the files whose span
    /// reaches the earliest instant a fact may still wait from are read.
    /// `None` when the cache cannot answer: there is none, a file was
    /// rewritten or removed, or an appended record's id repeats one (the
    /// first record of an id counts, which only the whole log tells; see
    /// [`Workspace::appended_ids_are_new`]). A cache describes a log that
    /// held no id twice, so every record it covers is the first of its id.
    pub(crate) fn counts_from_cache(
        &self,
        policy: &Policy,
        as_of: &Stamp,
    ) -> Result<Option<LogCounts>> {
        let Some((header, changed)) = self.cache_and_changes()? else { return Ok(None) };
        // A fact waits while it is recorded at or after its source's cutoff.
        let earliest = policy
            .sources
            .keys()
            .map(|source| policy.cutoff_for(source, as_of))
            .chain([policy.cutoff_for("", as_of)])
            .min()
            .map_or(i128::MIN, jiff::Timestamp::as_nanosecond);
        let recent = |day: &str| {
            header.files.get(day).and_then(|f| f.span).is_some_and(|(_, last)| last >= earliest)
        };
        let changed_days: HashSet<&str> = changed.iter().map(|c| c.day.day.as_str()).collect();
        let unchanged_recent: Vec<&String> = header
            .files
            .keys()
            .filter(|day| !changed_days.contains(day.as_str()) && recent(day))
            .collect();
        let grown = map_in_parallel(&changed, |change| {
            self.parse_read(coverage::read_appended(change, recent(&change.day.day))?)
        });
        let unchanged =
            map_in_parallel(&unchanged_recent, |day| self.read_covered_day(&header, day));
        let Some(stored_ids) =
            StoredIds::open(&self.file(DISTILL_IDS_FILE), header.token, header.ids_len)
        else {
            return Ok(None);
        };
        let mut counts =
            LogCounts { total: header.ids, waiting_for_age: 0, first_eligible_at: None };
        let mut young: Vec<(String, Stamp)> = Vec::new();
        let mut appended: Vec<(Place, String)> = Vec::new();
        for (read, grew) in
            grown.into_iter().map(|r| (r, true)).chain(unchanged.into_iter().map(|r| (r, false)))
        {
            let Some((file, records, _)) = read? else { return Ok(None) };
            for (offset, record) in records {
                if grew && offset as usize >= file.from {
                    let place = Place { day: file.day.day.clone(), offset };
                    appended.push((place, record.fact_id().to_owned()));
                }
                if record.instant() >= policy.cutoff_for(record.source(), as_of) {
                    young
                        .push((record.fact_id().to_owned(), distill::eligible_at(&record, policy)));
                }
            }
        }
        let ids = appended.iter().map(|(place, id)| (place, id.as_str()));
        if !self.appended_ids_are_new(&stored_ids, ids)? {
            return Ok(None);
        }
        counts.total += appended.len();
        // A retracted fact does not wait: the policy never sees it.
        if !young.is_empty() {
            let retracted = self.retractions()?;
            young.retain(|(id, _)| !retracted.is_retracted(id));
        }
        let judged = self.young_judged(young.iter().map(|(id, _)| id.as_str()), earliest)?;
        for (id, until) in &young {
            if !judged.contains(id.as_str()) {
                counts.wait(until.clone());
            }
        }
        Ok(Some(counts))
    }

    /// The ids among `young` that the state already judged, as an explained
    /// run reports them (see [`distill::young_fact_ids_judged`]): only the
    /// entries whose last evidence is at or after `earliest`, the earliest
    /// instant a fact may still wait from, are decoded.
    fn young_judged<'a>(
        &self,
        young: impl Iterator<Item = &'a str> + Clone,
        earliest: i128,
    ) -> Result<HashSet<&'a str>> {
        if young.clone().next().is_none() {
            return Ok(HashSet::new());
        }
        let stored = self.dir.stored_curated()?;
        let recent = stored.file.records(&self.file(CURATED_FILE), |head| {
            head.last_seen.instant().as_nanosecond() >= earliest
        })?;
        let cited: HashSet<&str> =
            recent.iter().flat_map(|entry| entry.evidence_ids.iter()).collect();
        let queue = self.conflicts()?;
        Ok(distill::young_fact_ids_judged(young, |id| cited.contains(id), &queue))
    }
}

impl Workspace {
    /// The distill cache's header and the daily files that changed since
    /// it was written (each stamped); `None` when there is no cache, or a
    /// file it covers was rewritten or removed.
    fn cache_and_changes(&self) -> Result<Option<(Header, Vec<coverage::Changed>)>> {
        let Some(header) =
            Header::load(&self.file(DISTILL_CACHE_FILE), self.workspace_id(), self.dir.path())
        else {
            return Ok(None);
        };
        let covered: Vec<(&str, &Covered)> =
            header.files.iter().map(|(day, f)| (day.as_str(), &f.covered)).collect();
        match coverage::scan(&self.log, &covered, header.listing, self.dir.path())? {
            (Scan::Changed(changed), _) => Ok(Some((header, changed))),
            (Scan::Rewritten, _) => Ok(None),
        }
    }

    /// The facts of each daily file, as [`Workspace::log_days`] counts
    /// them, from the distill cache (which holds each file's count) and
    /// the records appended since it was written: the daily files are
    /// stamped and only the appended bytes read. `None` when the cache
    /// cannot answer, as for [`Workspace::counts_from_cache`].
    ///
    /// Errors: as [`Workspace::facts`], for the bytes it reads.
    pub(crate) fn day_counts_from_cache(&self) -> Result<Option<Vec<DaySummary>>> {
        let Some((header, changed)) = self.cache_and_changes()? else { return Ok(None) };
        let grown = map_in_parallel(&changed, |change| {
            self.parse_read(coverage::read_appended(change, false)?)
        });
        let Some(stored_ids) =
            StoredIds::open(&self.file(DISTILL_IDS_FILE), header.token, header.ids_len)
        else {
            return Ok(None);
        };
        let mut counts: BTreeMap<String, usize> =
            header.files.iter().map(|(day, f)| (day.clone(), f.records)).collect();
        let mut appended: Vec<(Place, String)> = Vec::new();
        for read in grown {
            let Some((file, records, _)) = read? else { return Ok(None) };
            *counts.entry(file.day.day.clone()).or_default() += records.len();
            for (offset, record) in records {
                appended.push((
                    Place { day: file.day.day.clone(), offset },
                    record.fact_id().to_owned(),
                ));
            }
        }
        let ids = appended.iter().map(|(place, id)| (place, id.as_str()));
        if !self.appended_ids_are_new(&stored_ids, ids)? {
            return Ok(None);
        }
        Ok(Some(counts.into_iter().map(|(day, facts)| DaySummary { day, facts }).collect()))
    }
}
