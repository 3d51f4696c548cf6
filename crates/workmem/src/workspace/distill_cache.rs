//! Incremental distill: a run that starts from the distill cache
//! ([`crate::store::distill_cache`]) reads only the bytes appended to the
//! log since, and the facts the move of `as_of` ages, and judges only the
//! memory keys and unkeyed groups they belong to. Its result is the result
//! of a run over the whole log (a property test compares every file).
//!
//! What the cache assumes, and what sends a run back to the whole log:
//! - the policy is the one the cache was written with;
//! - `as_of` did not move back;
//! - curated.json and conflicts.json are the files the last distill left
//!   (a resolve, a merge or a hand edit changes them);
//! - the daily files only grew (a file rewritten or removed does not);
//! - no appended record has an id the log already holds (the first
//!   record of an id counts): the id filter answers, and an id it may
//!   hold is looked up in the id index;
//! - when the cache was written, the log held no id twice, and every id
//!   the curated state cites was a fact of the log, aged, of its entry's
//!   memory key.
//!
//! Why judging only the units that changed is enough: the policy judges
//! each memory key and each unkeyed group on its own (its candidates, its
//! entries, its cases, the ids of its facts), and a unit whose inputs did
//! not change is at the fixpoint the last run left it in (docs/policy.md):
//! judged again, it changes nothing and counts what the cache recorded.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::thread::ScopedJoinHandle;

use crate::error::Result;
use crate::model::canon;
use crate::model::fact_line::{FactRecord, FactSummary};
use crate::model::stamp::Stamp;
use crate::policy::distill::{self, Known, Policy, Report};
use crate::policy::projection::Projection;
use crate::policy::retractions::Retractions;
use crate::store::append_trail;
use crate::store::block_chain::Covered;
use crate::store::conflict_queue::{Case, CaseHead, ConflictQueue};
use crate::store::corrections::StreamSeen;
use crate::store::coverage::{self, Scan};
use crate::store::curated_file::EntryHead;
use crate::store::curated_state::{CURATED_SCHEMA_VERSION, CuratedState, Entry};
use crate::store::day_stamps::ListingStamp;
use crate::store::distill_cache::{
    self, DayFacts, Header, IdFilter, KeyFacts, KeyedFacts, StoredIds, UnitKey, Units,
};
use crate::store::fact_log::{LogRead, map_in_parallel};
use crate::store::id_index::{self, Place};
use crate::store::memory_dir::FileStamp;
use crate::store::memory_dir::Stored;
use crate::store::names::{
    CONFLICTS_FILE, CURATED_FILE, DISTILL_CACHE_FILE, DISTILL_IDS_FILE, DISTILL_PLACES_FILE,
    DISTILL_UNITS_FILE, MEMORY_FILE, PROJECTION_INDEX_FILE,
};
use crate::store::state_file::Output;
use crate::workspace::Workspace;
use crate::workspace::distilled::{CuratedOutcome, Distilled, allocations_of, drop_in_background};

/// What a whole read of the log tells the cache beyond the facts.
#[derive(Debug)]
pub(super) struct ReadLog {
    files: BTreeMap<String, DayFacts>,
    /// The stamp of `daily/` taken before it was listed, when every file
    /// listed was read with its coverage.
    listing: Option<ListingStamp>,
    /// Whether a record was dropped for an id written before it.
    duplicates: bool,
    records: usize,
    /// The ids of the facts the run left out because a correction
    /// retracted them (in the id filter, never a unit's fact).
    retracted: Vec<String>,
    /// The corrections stream the run read.
    corrections: StreamSeen,
}

impl ReadLog {
    /// Returns what `files` (read with coverage, after `listing` was
    /// taken) tell the cache.
    pub(super) fn of(read: &LogRead<FactSummary>, listing: Option<ListingStamp>) -> ReadLog {
        let files = read.files();
        let mut out = ReadLog {
            files: BTreeMap::new(),
            listing,
            duplicates: false,
            records: 0,
            retracted: Vec::new(),
            corrections: StreamSeen::absent(),
        };
        for file in &files {
            out.duplicates |= file.dropped > 0;
            out.records += file.records.len();
            if let Some(covered) = &file.covered {
                out.files.insert(
                    file.day.day.clone(),
                    DayFacts {
                        covered: (*covered).clone(),
                        span: span(file.records),
                        records: file.records.len(),
                    },
                );
            }
        }
        if out.files.len() != files.len() {
            out.listing = None;
        }
        out
    }

    /// Records that the run read `corrections` and left out the facts of
    /// `retracted`.
    pub(super) fn withheld(
        &mut self,
        retracted: impl Iterator<Item = String>,
        corrections: StreamSeen,
    ) {
        self.retracted = retracted.collect();
        self.corrections = corrections;
    }
}

/// The small file of a cache whose units and ids are written, to write
/// once the run's state is saved: the header, and its table of daily
/// files, the bulk of it, already encoded (by the thread that wrote the
/// units, while the state was saved).
pub(super) struct NextHeader {
    header: Header,
    files: String,
}

impl From<Header> for NextHeader {
    fn from(header: Header) -> NextHeader {
        let files = header.encode_files();
        NextHeader { header, files }
    }
}

/// What the cache of a whole-log run takes from the log alone
/// ([`Workspace::prepare_distill_units`]).
pub(super) struct UnitsPrep<'f> {
    read: ReadLog,
    /// The token of the cache's files.
    token: u64,
    /// The length of the id filter file written.
    ids_len: u64,
    /// The keyed facts of the log, by memory key.
    keyed: KeyedFacts<'f>,
}

/// The earliest and latest instant of `records` (nanoseconds).
fn span<'a>(records: impl IntoIterator<Item = &'a FactSummary>) -> Option<(i128, i128)> {
    records.into_iter().map(|f| f.instant().as_nanosecond()).fold(None, |acc, at| match acc {
        None => Some((at, at)),
        Some((lo, hi)) => Some((lo.min(at), hi.max(at))),
    })
}

fn widen(a: Option<(i128, i128)>, b: Option<(i128, i128)>) -> Option<(i128, i128)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (x, None) | (None, x) => x,
    }
}

fn policy_text(policy: &Policy) -> String {
    serde_json::to_string(policy).unwrap_or_default()
}

/// Every age, in nanoseconds, a fact may need under `policy`.
fn ages(policy: &Policy) -> BTreeSet<i128> {
    let day = 86_400 * 1_000_000_000i128;
    std::iter::once(policy.minimum_age_days)
        .chain(policy.sources.values().filter_map(|s| s.minimum_age_days))
        .map(|days| i128::from(days) * day)
        .collect()
}

/// Whether `fact` is aged at `as_of` (nanoseconds) under `policy`.
fn aged(policy: &Policy, fact: &FactSummary, as_of: i128) -> bool {
    let age = i128::from(policy.age_days_for(fact.source())) * 86_400 * 1_000_000_000;
    fact.instant().as_nanosecond() + age < as_of
}

/// Whether facts recorded over `span` may have aged, under one of `ages`,
/// between the instants `since` and `now` (nanoseconds): a fact recorded
/// at `t` ages then when `since <= t + age < now`, so nothing does when
/// the two instants are one.
fn crosses(ages: &BTreeSet<i128>, span: Option<(i128, i128)>, since: i128, now: i128) -> bool {
    span.is_some_and(|(lo, hi)| {
        since < now && ages.iter().any(|age| lo + age < now && hi + age >= since)
    })
}

/// The unit a candidate belongs to.
fn unit_of(fact: &FactSummary) -> UnitKey {
    match fact.memory_key() {
        Some(key) => UnitKey::Domain(key.to_owned()),
        None => UnitKey::Group(canon::unkeyed_entry_key(fact.kind().as_str(), fact.content())),
    }
}

fn random_token() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}

/// A daily file read since the cache: what was read, its records with
/// their offsets, and how far they reach.
pub(super) type ParsedRead = (coverage::Appended, Vec<(u64, FactSummary)>, usize);

/// What the scan of the daily files found for an incremental run to read.
struct Scanned<'a> {
    /// The files that grew or are new.
    changed: &'a [coverage::Changed],
    /// The unchanged files whose facts may have aged since the cache's run.
    band: Vec<&'a String>,
    /// The stamp of `daily/` under which its files were listed.
    listing: Option<ListingStamp>,
}

/// The units an incremental run judged, as its cache records them.
struct Judged<'a> {
    /// Their keys.
    touched: &'a BTreeSet<UnitKey>,
    /// The candidates the policy saw (those it left pending stay).
    candidates: &'a [FactSummary],
    /// What the policy collected of them.
    collected: &'a distill::Collected,
    /// The ids of each memory key.
    known: &'a Known,
    /// Each memory key's facts counted stale and conflict case.
    counts: &'a BTreeMap<&'a String, (usize, Option<String>)>,
}

/// How a run writes the units file.
#[derive(Debug, Clone, Copy)]
enum UnitsWrite {
    /// Whole, replacing it.
    Whole,
    /// By appending a section at this offset (the end of what the cache
    /// describes).
    Append(u64),
}

/// How a run writes the id filter file.
enum IdsWrite<'a> {
    /// Whole, replacing it.
    Whole(IdFilter),
    /// By appending a line of these new ids at this offset.
    Append(u64, Vec<&'a str>),
}

/// Ids appended to the filter file from which the next run that adds
/// some rewrites it whole (they are held in memory by every run that
/// checks an id).
const MAX_ADDED_IDS: usize = 50_000;

/// A unit being written: its counts and its lines.
struct UnitOut<'a> {
    stale: usize,
    conflict: Option<String>,
    block: Cow<'a, str>,
}

impl Workspace {
    /// Stamps of the files a cache binds to: curated.json, conflicts.json,
    /// MEMORY.md, the projection index.
    fn state_stamps(&self) -> Result<[Option<FileStamp>; 4]> {
        Ok([
            self.dir.stamp(CURATED_FILE)?,
            self.dir.stamp(CONFLICTS_FILE)?,
            self.dir.stamp(MEMORY_FILE)?,
            self.dir.stamp(PROJECTION_INDEX_FILE)?,
        ])
    }

    /// Removes the distill cache (the next distill reads the whole log).
    pub(super) fn drop_distill_cache(&self) {
        self.dir.drop_distill_cache();
    }

    /// Prepares the cache a whole-log run leaves from what the log alone
    /// tells, while the policy runs: writes its id filter, and groups the
    /// keyed facts by memory key for the lines of ids the units file will
    /// hold. `facts` are the log, `read` what its files told. `None`, writing nothing,
    /// when the log is not one a cache may describe (it held an id twice).
    /// Until a header names its token, the file written here is not used.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(super) fn prepare_distill_units<'f>(
        &self,
        facts: &'f [FactSummary],
        read: ReadLog,
    ) -> Result<Option<UnitsPrep<'f>>> {
        if read.duplicates || read.records != facts.len() + read.retracted.len() {
            return Ok(None);
        }
        // A retracted fact is no unit's fact, but its id is the log's: a
        // record appended later with the same id is a repeat.
        let (mut filter, keyed) = KeyedFacts::of(facts);
        for id in &read.retracted {
            filter.insert(id);
        }
        let token = random_token();
        self.dir.replace_cache_streamed(DISTILL_IDS_FILE, |out| {
            filter.write_to(token, out).map(|()| true)
        })?;
        drop(filter);
        let Some(ids_len) = self.dir.stamp(DISTILL_IDS_FILE)?.map(|stamp| stamp[1]) else {
            return Ok(None);
        };
        Ok(Some(UnitsPrep {
            read,
            token,
            ids_len: u64::try_from(ids_len).unwrap_or_default(),
            keyed,
        }))
    }

    /// Writes the units file of the cache a whole-log run leaves, from
    /// what [`Workspace::prepare_distill_units`] prepared of the log and the
    /// run's `outcome` (collected). Returns the header to write once the run's
    /// state is saved ([`Workspace::write_distill_header`]); `None` when
    /// the run's state is not one a cache may start from (the caller
    /// removes the cache). It can run while the outcome is saved: until
    /// the header names their new token, the files written here are not
    /// used.
    ///
    /// Errors: [`crate::Error::Io`].
    #[expect(
        clippy::too_many_lines,
        reason = "one streamed write of the units file: the key and group records are encoded as the file is written, sharing one buffer and its running offsets"
    )]
    pub(super) fn write_distill_units(
        &self,
        policy: &Policy,
        as_of: &Stamp,
        prep: UnitsPrep<'_>,
        outcome: &distill::Outcome,
    ) -> Result<Option<NextHeader>> {
        let Some(collected) = outcome.collected.as_ref() else { return Ok(None) };
        let facts = prep.keyed.facts();
        if !collected.cacheable {
            return Ok(None);
        }
        let at = |positions: &[usize]| -> Option<Vec<&FactSummary>> {
            positions.iter().map(|&at| facts.get(at)).collect()
        };
        // Every memory key has its ids (in key order) and may have pending
        // candidates; the unkeyed groups only have candidates, and come
        // after (the order of `UnitKey`).
        let mut keyed = collected.pending_keyed.iter().peekable();
        let mut units: Vec<(UnitKey, Option<KeyFacts<'_, '_>>, Vec<&FactSummary>)> =
            Vec::with_capacity(prep.keyed.len() + collected.pending_unkeyed.len());
        for (key, ids) in prep.keyed.iter() {
            if keyed.peek().is_some_and(|(pending, _)| pending.as_str() < key) {
                // Candidates of a key the log has no fact of.
                return Ok(None);
            }
            let pending = match keyed.next_if(|(pending, _)| pending.as_str() == key) {
                Some((_, positions)) => {
                    let Some(pending) = at(positions) else { return Ok(None) };
                    pending
                }
                None => Vec::new(),
            };
            units.push((UnitKey::Domain(key.to_owned()), Some(ids), pending));
        }
        if keyed.next().is_some() {
            return Ok(None);
        }
        let mut groups: BTreeMap<&str, Vec<&FactSummary>> = BTreeMap::new();
        for (key, positions) in &collected.pending_unkeyed {
            let Some(pending) = at(positions) else { return Ok(None) };
            groups.entry(key.as_str()).or_default().extend(pending);
        }
        units.extend(
            groups
                .into_iter()
                .map(|(key, pending)| (UnitKey::Group(key.to_owned()), None, pending)),
        );
        let token = prep.token;
        let mut places = Vec::with_capacity(units.len());
        // Streamed: the file grows with the log (26 MB at 1,000,000 facts).
        let written = self.dir.replace_cache_streamed(DISTILL_UNITS_FILE, |out| {
            let opening = distill_cache::section_opening(token, 0);
            out.write_all(opening.as_bytes())?;
            let mut at = opening.len() as u64;
            let mut block = String::new();
            let mut line = String::new();
            for (key, ids, pending) in &units {
                block.clear();
                if let Some(ids) = ids {
                    ids.write_ids_line(&mut block);
                }
                if !distill_cache::write_facts(pending, &mut block) {
                    return Ok(false);
                }
                let (stale, conflict) = match key {
                    UnitKey::Domain(memory_key) => {
                        collected.domains.get(memory_key).cloned().unwrap_or_default()
                    }
                    UnitKey::Group(_) => (0, None),
                };
                line.clear();
                distill_cache::push_unit_line(
                    &mut line,
                    key,
                    stale,
                    conflict.as_deref(),
                    block.len(),
                );
                out.write_all(line.as_bytes())?;
                out.write_all(block.as_bytes())?;
                places.push(distill_cache::place(key, at));
                at += (line.len() + block.len()) as u64;
            }
            out.write_all(b"end\n")?;
            Ok(true)
        })?;
        if !written {
            return Ok(None);
        }
        drop(units);
        // The header names how much of the units file to read.
        let Some(units_len) = self.dir.stamp(DISTILL_UNITS_FILE)?.map(|stamp| stamp[1]) else {
            return Ok(None);
        };
        let units_len = u64::try_from(units_len).unwrap_or_default();
        let places = distill_cache::encode_places(token, units_len, &places);
        self.dir.replace_cache(DISTILL_PLACES_FILE, &places)?;
        let header = Header {
            token,
            policy: policy_text(policy),
            as_of: as_of.instant().as_nanosecond(),
            state: [None; 4],
            scanned: outcome.report.scanned,
            already_evidence: outcome.already_evidence + outcome.report.eligible,
            active_entries: outcome.curated.active_entries().count(),
            stale: outcome.report.stale,
            conflicts: collected
                .domains
                .iter()
                .filter_map(|(key, (_, case))| Some((key.clone(), case.clone()?)))
                .collect(),
            ids: facts.len() + prep.read.retracted.len(),
            units_len,
            ids_len: prep.ids_len,
            places_len: places.len() as u64,
            corrections: prep.read.corrections,
            listing: prep.read.listing,
            files: prep.read.files,
        };
        Ok(Some(header.into()))
    }

    /// Writes the small file of a cache whose units and ids
    /// [`Workspace::write_distill_units`] or an incremental run wrote, once
    /// the run's state files are saved (it binds their stamps). It names
    /// the token of the other two and how much of them to read. The cache
    /// then covers every daily file as it is: the append trail is emptied.
    ///
    /// Errors: [`crate::Error::Io`].
    pub(super) fn write_distill_header(&self, next: NextHeader) -> Result<()> {
        let NextHeader { mut header, files } = next;
        header.state = self.state_stamps()?;
        self.dir.replace_cache(
            DISTILL_CACHE_FILE,
            header.encode_with(&self.workspace_id, self.dir.path(), &files).as_bytes(),
        )?;
        append_trail::clear(self.dir.path());
        Ok(())
    }

    /// Writes the units and ids an incremental run keeps, as `write` and
    /// `ids` say, and records their new lengths in `header`.
    fn write_cache_files(
        &self,
        header: &mut Header,
        write: UnitsWrite,
        units: &[(UnitKey, UnitOut<'_>)],
        ids: IdsWrite<'_>,
    ) -> Result<()> {
        let records = units
            .iter()
            .map(|(key, unit)| (key, unit.stale, unit.conflict.as_deref(), unit.block.as_ref()));
        let at = match write {
            UnitsWrite::Whole => 0,
            UnitsWrite::Append(at) => at,
        };
        let (text, places) = distill_cache::encode_section(header.token, at, records);
        let units_len = at + text.len() as u64;
        let places = distill_cache::encode_places(header.token, units_len, &places);
        if at == 0 {
            self.dir.replace_cache(DISTILL_UNITS_FILE, text.as_bytes())?;
            self.dir.replace_cache(DISTILL_PLACES_FILE, &places)?;
            header.places_len = places.len() as u64;
        } else {
            self.dir.extend_cache(DISTILL_UNITS_FILE, at, text.as_bytes())?;
            self.dir.extend_cache(DISTILL_PLACES_FILE, header.places_len, &places)?;
            header.places_len += places.len() as u64;
        }
        header.units_len = units_len;
        header.ids_len = match ids {
            IdsWrite::Whole(filter) => {
                let data = filter.encode(header.token);
                self.dir.replace_cache(DISTILL_IDS_FILE, &data)?;
                data.len() as u64
            }
            IdsWrite::Append(at, new_ids) => {
                let line = distill_cache::encode_added_ids(header.token, new_ids.into_iter());
                self.dir.extend_cache(DISTILL_IDS_FILE, at, line.as_bytes())?;
                at + line.len() as u64
            }
        };
        Ok(())
    }

    /// Runs distill from the cache; `None` when the cache cannot be used
    /// (the caller reads the whole log). The lock is held.
    ///
    /// Errors: as [`Workspace::distill`].
    pub(super) fn distill_incremental(
        &self,
        policy: &Policy,
        as_of: &Stamp,
    ) -> Result<Option<Distilled>> {
        let Some(header) =
            Header::load(&self.file(DISTILL_CACHE_FILE), &self.workspace_id, self.dir.path())
        else {
            return Ok(None);
        };
        let now = as_of.instant().as_nanosecond();
        let state = self.state_stamps()?;
        if header.policy != policy_text(policy)
            || now < header.as_of
            || state[..2] != header.state[..2]
            || !self.corrections_hold(&header.corrections)?
        {
            return Ok(None);
        }
        let covered: Vec<(&str, &Covered)> =
            header.files.iter().map(|(day, f)| (day.as_str(), &f.covered)).collect();
        let (scan, listing) = coverage::scan(&self.log, &covered, header.listing, self.dir.path())?;
        let Scan::Changed(changed) = scan else {
            return Ok(None);
        };
        // Files whose facts may have aged between the two instants.
        let ages = ages(policy);
        let changed_days: HashSet<&str> = changed.iter().map(|c| c.day.day.as_str()).collect();
        let band: Vec<&String> = header
            .files
            .iter()
            .filter(|(day, f)| {
                !changed_days.contains(day.as_str()) && crosses(&ages, f.span, header.as_of, now)
            })
            .map(|(day, _)| day)
            .collect();
        if changed.is_empty() && band.is_empty() {
            return self.distill_unchanged(&header, state).map(Some);
        }
        // The run decodes some records of curated.json and conflicts.json:
        // their layouts are read on another thread while it reads the log.
        let scanned = Scanned { changed: &changed, band, listing };
        std::thread::scope(|scope| {
            let layouts =
                scope.spawn(|| Ok((self.dir.stored_curated()?, self.dir.stored_conflicts()?)));
            self.distill_changed(policy, as_of, &header, scanned, layouts)
        })
    }

    /// The incremental run once files changed or facts aged: `scanned` says
    /// which files to read, `layouts` is the thread that reads curated.json
    /// and conflicts.json as stored.
    #[expect(
        clippy::too_many_lines,
        reason = "the incremental run's phases in order (read what changed, locate it, judge the touched units, save); each phase uses the facts, positions and layouts the earlier ones hold"
    )]
    fn distill_changed(
        &self,
        policy: &Policy,
        as_of: &Stamp,
        header: &Header,
        scanned: Scanned<'_>,
        layouts: ScopedJoinHandle<'_, Result<(Stored<Entry>, Stored<Case>)>>,
    ) -> Result<Option<Distilled>> {
        let Scanned { changed, band, listing } = scanned;
        let now = as_of.instant().as_nanosecond();
        let ages = ages(policy);
        let crosses = |span| crosses(&ages, span, header.as_of, now);

        // Read what changed: appended records, and the facts that aged.
        let mut files = header.files.clone();
        let mut new_records: Vec<FactSummary> = Vec::new();
        // Where each of them is.
        let mut new_places: Vec<Place> = Vec::new();
        let mut newly_aged: Vec<FactSummary> = Vec::new();
        // Files that grew, and files whose facts may have aged (unchanged),
        // read and parsed on every core.
        let to_read: Vec<(&coverage::Changed, bool)> = changed
            .iter()
            .map(|change| {
                // The old part of a file is parsed again only when its
                // facts may have aged since; else it is only hashed.
                (change, crosses(header.files.get(&change.day.day).and_then(|f| f.span)))
            })
            .collect();
        // (`None`: changed since the scan; the next run sees it.)
        let grown = map_in_parallel(&to_read, |&(change, keep_old)| {
            self.parse_read(coverage::read_appended(change, keep_old)?)
        });
        let aging = map_in_parallel(&band, |day| self.read_covered_day(header, day));
        let reads = grown.into_iter().map(|read| (read, true));
        for (read, grew) in reads.chain(aging.into_iter().map(|read| (read, false))) {
            let Some((file, records, reach)) = read? else {
                return Ok(None);
            };
            let (day, from) = (&file.day, file.from);
            let mut appended = Vec::new();
            for (offset, record) in records {
                if offset as usize >= from {
                    new_places.push(Place { day: day.day.clone(), offset });
                    appended.push(record);
                } else if !aged(policy, &record, header.as_of) && aged(policy, &record, now) {
                    newly_aged.push(record);
                }
            }
            if grew {
                let entry = files.entry(day.day.clone()).or_insert(DayFacts {
                    covered: Covered::of_appended(&file, from),
                    span: None,
                    records: 0,
                });
                entry.span = widen(entry.span, span(&appended));
                entry.records += appended.len();
                entry.covered = Covered::of_appended(&file, reach);
            }
            new_records.extend(appended);
        }
        // A new record whose id the log holds: the first record counts,
        // which only the whole log tells.
        let Some(stored_ids) =
            StoredIds::open(&self.file(DISTILL_IDS_FILE), header.token, header.ids_len)
        else {
            return Ok(None);
        };
        let appended = new_places.iter().zip(new_records.iter().map(FactSummary::fact_id));
        if !self.appended_ids_are_new(&stored_ids, appended)? {
            return Ok(None);
        }
        // A retracted fact takes no part, whether it aged or was appended
        // (its id may be one a correction named before it arrived). The
        // stream is read only when it holds records; it is the one the
        // cache was built against (checked before the run started).
        let retracted = if header.corrections.is_empty() {
            Retractions::default()
        } else {
            let (retracted, seen) = self.retractions_seen()?;
            if !seen.same_content(&header.corrections) {
                return Ok(None);
            }
            retracted
        };
        let counts = |record: &FactSummary| !retracted.is_retracted(record.fact_id());
        newly_aged.retain(counts);

        // The units to judge, with their new candidates and new ids.
        let stable = |f: &FactSummary| policy.stable_kinds.contains(&f.kind());
        let mut delta_aged = newly_aged.len();
        let mut candidates: Vec<FactSummary> = Vec::new();
        let mut new_ids: BTreeMap<String, Vec<(String, u8)>> = BTreeMap::new();
        let mut touched: BTreeSet<UnitKey> = BTreeSet::new();
        for record in new_records.iter().filter(|r| counts(r)) {
            if let Some(key) = record.memory_key() {
                new_ids
                    .entry(key.to_owned())
                    .or_default()
                    .push((record.fact_id().to_owned(), record.importance()));
                touched.insert(UnitKey::Domain(key.to_owned()));
            }
            delta_aged += usize::from(aged(policy, record, now));
        }
        for record in
            new_records.iter().filter(|r| counts(r) && aged(policy, r, now)).chain(&newly_aged)
        {
            if stable(record) {
                touched.insert(unit_of(record));
                candidates.push(record.clone());
            }
        }
        // The units judged, by memory key and by unkeyed group, so that a
        // record's head is tested without building a key.
        let (mut judged_keys, mut judged_groups): (HashSet<&str>, HashSet<&str>) =
            (HashSet::new(), HashSet::new());
        for key in &touched {
            match key {
                UnitKey::Domain(memory_key) => judged_keys.insert(memory_key.as_str()),
                UnitKey::Group(entry_key) => judged_groups.insert(entry_key.as_str()),
            };
        }
        let judged_here = |head: &EntryHead| match &head.memory_key {
            Some(key) => judged_keys.contains(key.as_str()),
            None => judged_groups.contains(head.key.as_str()),
        };
        let judged_cases = |head: &CaseHead| judged_keys.contains(head.memory_key.as_str());
        let (curated_path, conflicts_path) = (self.file(CURATED_FILE), self.file(CONFLICTS_FILE));
        // Only the entries and cases of the units judged are decoded (the
        // others' bytes are copied as they are), on another thread while
        // their facts are read from the units file.
        let (decoded, units) = std::thread::scope(|scope| {
            let decoding = scope.spawn(|| -> Result<_> {
                let (on_disk, stored_queue) =
                    layouts.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                let entries = on_disk.file.records(&curated_path, judged_here)?;
                let cases = stored_queue.file.records(&conflicts_path, judged_cases)?;
                Ok((on_disk, stored_queue, entries, cases))
            });
            let units = self.judged_unit_facts(header, &touched, new_ids);
            (decoding.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), units)
        });
        let Some((stored, known, pending)) = units else {
            return Ok(None);
        };
        let (on_disk, stored_queue, entries, cases) = decoded?;
        candidates.extend(pending);
        candidates
            .sort_unstable_by(|a, b| (a.instant(), a.fact_id()).cmp(&(b.instant(), b.fact_id())));
        let partial = CuratedState { schema_version: CURATED_SCHEMA_VERSION, entries };
        let queue = ConflictQueue::of(cases);
        let outcome = distill::distill_with(
            &candidates,
            partial,
            &queue,
            policy,
            as_of,
            &self.workspace_id,
            distill::RunOptions::partial(&known),
        )
        .map_err(|err| self.placed(err))?;
        let Some(collected) = &outcome.collected else {
            return Ok(None);
        };

        // The report of a run over the whole log: the units judged now, and
        // what the others count (the cache's).
        let mut stale = header.stale;
        let mut conflicts: BTreeMap<String, String> = header.conflicts.iter().cloned().collect();
        let mut judged: BTreeMap<&String, (usize, Option<String>)> = BTreeMap::new();
        for key in &touched {
            let UnitKey::Domain(memory_key) = key else { continue };
            if let Some(unit) = stored.units.get(key) {
                stale = stale.saturating_sub(unit.stale);
            }
            conflicts.remove(memory_key);
            let (unit_stale, conflict) =
                collected.domains.get(memory_key).cloned().unwrap_or_default();
            stale += unit_stale;
            if let Some(conflict) = &conflict {
                conflicts.insert(memory_key.clone(), conflict.clone());
            }
            judged.insert(memory_key, (unit_stale, conflict));
        }
        let conflicts: Vec<(String, String)> = conflicts.into_iter().collect();
        let case_ids: Vec<String> = conflicts.iter().map(|(_, id)| id.clone()).collect();
        let scanned = header.scanned + delta_aged;
        let report = Report {
            scanned,
            eligible: outcome.report.eligible,
            created: outcome.report.created,
            updated: outcome.report.updated,
            skipped: scanned - outcome.report.eligible,
            superseded: outcome.report.superseded,
            conflicts: case_ids.len(),
            stale,
            queued_conflicts: outcome.report.queued_conflicts,
            conflict_case_ids: case_ids,
        };
        let next = Header {
            token: random_token(),
            policy: header.policy.clone(),
            as_of: now,
            state: [None; 4],
            scanned,
            already_evidence: header.already_evidence + outcome.report.eligible,
            // Counted in the new curated.json, once it is spliced.
            active_entries: 0,
            stale,
            conflicts,
            ids: header.ids + new_records.len(),
            // Where this run's sections go; writing them sets the new
            // lengths.
            units_len: header.units_len,
            ids_len: header.ids_len,
            places_len: header.places_len,
            corrections: header.corrections.clone(),
            listing,
            files,
        };
        // The cache's units and ids are written on another thread while the
        // state is saved; its small file, which makes them count, after.
        let (active_entries, cached) = std::thread::scope(|scope| -> Result<_> {
            let cached = scope.spawn(|| {
                let judged = Judged {
                    touched: &touched,
                    candidates: &candidates,
                    collected,
                    known: &known,
                    counts: &judged,
                };
                self.write_incremental_units(
                    next,
                    &stored,
                    judged,
                    new_records.iter().map(FactSummary::fact_id),
                    &stored_ids,
                )
            });
            let file = if outcome.curated_changed {
                on_disk.file.splice(
                    &curated_path,
                    &self.workspace_id,
                    judged_here,
                    &outcome.curated.entries,
                    Output::Staged,
                )?
            } else {
                on_disk.file
            };
            let active_entries = file.heads().filter(|head| head.is_active()).count();
            let curated = if outcome.curated_changed {
                CuratedOutcome::Changed(file)
            } else if on_disk.exists {
                CuratedOutcome::Unchanged(Projection::of_heads(file.heads()))
            } else {
                CuratedOutcome::Missing
            };
            // A changed queue is spliced in memory: the distill's intent holds
            // the whole file.
            let queue_file = if outcome.queue_changed {
                Some(stored_queue.file.splice(
                    &conflicts_path,
                    &self.workspace_id,
                    judged_cases,
                    &outcome.queue.cases,
                    Output::Held,
                )?)
            } else {
                None
            };
            self.save_outcome(curated, queue_file)?;
            Ok((active_entries, cached.join()))
        })?;
        // Only a cache: failing to write it costs the next distill a whole
        // read.
        match cached.unwrap_or_else(|panic| std::panic::resume_unwind(panic)) {
            Ok(Some(mut next)) => {
                next.header.active_entries = active_entries;
                if self.write_distill_header(next).is_err() {
                    self.drop_distill_cache();
                }
            }
            Ok(None) | Err(_) => self.drop_distill_cache(),
        }
        // What the run decoded (the judged entries and cases, with their
        // evidence lists) and read of the cache is freed on another
        // thread, as a whole-log run's state is.
        let allocations = allocations_of(&outcome.curated, &outcome.queue)
            + candidates.len()
            + known.domains.len();
        drop_in_background((outcome, stored, known, candidates), allocations);
        Ok(Some(Distilled {
            report,
            decisions: Vec::new(),
            already_evidence: header.already_evidence,
            active_entries,
        }))
    }

    /// Reads the units file's records of the units `touched` (through its
    /// places, or whole when its appended sections are worn): what a
    /// partial run knows of each judged memory key (its ids in the log,
    /// with `new_ids` added) and the pending candidates of every judged
    /// unit. `None` when the file cannot be read as the header says.
    fn judged_unit_facts(
        &self,
        header: &Header,
        touched: &BTreeSet<UnitKey>,
        mut new_ids: BTreeMap<String, Vec<(String, u8)>>,
    ) -> Option<(Units, Known, Vec<FactSummary>)> {
        let units_path = self.file(DISTILL_UNITS_FILE);
        let mut stored = Units::load_kept(
            &units_path,
            &self.file(DISTILL_PLACES_FILE),
            header.token,
            header.units_len,
            header.places_len,
            touched,
        )?;
        if stored.worn() {
            stored = Units::load(&units_path, header.token, header.units_len)?;
        }
        let mut known = Known::default();
        let mut pending = Vec::new();
        for key in touched {
            let facts = match stored.units.get(key) {
                Some(unit) => stored.facts(unit)?,
                None => distill_cache::UnitFacts::default(),
            };
            pending.extend(facts.pending);
            if let UnitKey::Domain(memory_key) = key {
                let mut ids = facts.ids;
                ids.extend(new_ids.remove(memory_key).unwrap_or_default());
                known.domains.insert(memory_key.clone(), ids);
            }
        }
        Some((stored, known, pending))
    }

    /// Whether each record appended since the cache was written (its place
    /// and id) is the only record of its id in the log: no two of them
    /// share an id, and an id the cache's filter may hold (a false
    /// positive, about one in a few thousand at 100,000 facts, or a real
    /// repeat) is looked up in the id index, brought up to date in memory
    /// and never written, which must place it there alone. `false` also
    /// when the index cannot tell without being rebuilt.
    ///
    /// Errors: as [`id_index::peek`].
    pub(super) fn appended_ids_are_new<'a>(
        &self,
        filter: &StoredIds,
        appended: impl IntoIterator<Item = (&'a Place, &'a str)>,
    ) -> Result<bool> {
        let mut seen = HashSet::new();
        let mut maybe_repeated = Vec::new();
        for (place, id) in appended {
            if !seen.insert(id) {
                return Ok(false);
            }
            if filter.may_contain(id) {
                maybe_repeated.push((place, id));
            }
        }
        if maybe_repeated.is_empty() {
            return Ok(true);
        }
        let Some(index) = id_index::peek(&self.log, self.dir.path(), &self.workspace_id)? else {
            return Ok(false);
        };
        let ids: Vec<&str> = maybe_repeated.iter().map(|(_, id)| *id).collect();
        let Some(found) = index.lookup(&ids) else { return Ok(false) };
        Ok(maybe_repeated
            .iter()
            .zip(found)
            .all(|((place, _), places)| places == [(*place).clone()]))
    }

    /// Parses what was read of a daily file (`None`: it changed since the
    /// scan), with each record's offset and how far the records reach.
    /// The old part of a file is kept only when it is to be parsed: what
    /// was read is what is parsed.
    pub(super) fn parse_read(
        &self,
        file: Option<coverage::Appended>,
    ) -> Result<Option<ParsedRead>> {
        let Some(file) = file else { return Ok(None) };
        let (records, reach) = self.log.parse_tail::<FactSummary>(
            &file.day.path,
            &file.data,
            file.base,
            file.lines_before,
        )?;
        Ok(Some((file, records, reach)))
    }

    /// Reads and parses a daily file the cache `header` covers whole and
    /// whose stamp did not change (`None`: it changed since).
    pub(super) fn read_covered_day(
        &self,
        header: &Header,
        day: &str,
    ) -> Result<Option<ParsedRead>> {
        let day_file = crate::store::fact_log::DayFile {
            day: day.to_owned(),
            path: self.log.path_for_day(day),
        };
        self.parse_read(coverage::read_covered(day_file, &header.files[day].covered)?)
    }

    /// Writes the units and ids of the cache an incremental run leaves,
    /// into `next` (the header, written once the run's state is saved):
    /// the units `judged` are appended to the units file, or, once its
    /// appended sections wore it, the file is rewritten with the others
    /// kept as `stored`; `new_ids` go to the id filter. `None`, when the
    /// cache must be dropped instead (the next run reads the whole log).
    ///
    /// Errors: [`crate::Error::Io`].
    fn write_incremental_units<'a>(
        &self,
        mut next: Header,
        stored: &Units,
        judged: Judged<'_>,
        new_ids: impl ExactSizeIterator<Item = &'a str>,
        stored_ids: &StoredIds,
    ) -> Result<Option<NextHeader>> {
        let Judged { touched, candidates, collected, known, counts } = judged;
        let append = !stored.worn();
        let pending: HashSet<&str> = collected.pending.iter().map(String::as_str).collect();
        let mut touched_pending: BTreeMap<&UnitKey, Vec<&FactSummary>> = BTreeMap::new();
        for fact in candidates {
            if pending.contains(fact.fact_id()) {
                let key = touched.get(&unit_of(fact)).expect("a candidate's unit is touched");
                touched_pending.entry(key).or_default().push(fact);
            }
        }
        let mut units: Vec<(UnitKey, UnitOut<'_>)> = Vec::new();
        let all: BTreeSet<&UnitKey> = if append {
            touched.iter().collect()
        } else {
            stored.units.keys().chain(touched).collect()
        };
        for key in all {
            if let Some(unit) = stored.units.get(key).filter(|_| !touched.contains(key)) {
                if stored.block(unit).is_empty() && matches!(key, UnitKey::Group(_)) {
                    // A group an appended section emptied.
                    continue;
                }
                units.push((
                    key.clone(),
                    UnitOut {
                        stale: unit.stale,
                        conflict: unit.conflict.clone(),
                        block: Cow::Borrowed(stored.block(unit)),
                    },
                ));
                continue;
            }
            let pending = touched_pending.remove(key).unwrap_or_default();
            let (ids, (unit_stale, conflict)) = match key {
                UnitKey::Domain(memory_key) => (
                    known.domains.get(memory_key).map(Vec::as_slice),
                    counts.get(memory_key).cloned().unwrap_or_default(),
                ),
                UnitKey::Group(_) => (None, (0, None)),
            };
            if pending.is_empty() && ids.is_none() && !append {
                continue;
            }
            // (Appended, an empty block says the unit has nothing left.)
            let Some(block) = distill_cache::unit_block(&pending, ids) else {
                return Ok(None);
            };
            units.push((
                key.clone(),
                UnitOut { stale: unit_stale, conflict, block: Cow::Owned(block) },
            ));
        }
        if next.ids > stored_ids.capacity() {
            // Too many false positives ahead: the next run starts over.
            return Ok(None);
        }
        let write = if append { UnitsWrite::Append(next.units_len) } else { UnitsWrite::Whole };
        // The new ids are appended to the filter file, which is rewritten
        // with the units file.
        let ids_write = if append && stored_ids.added() + new_ids.len() <= MAX_ADDED_IDS {
            IdsWrite::Append(next.ids_len, new_ids.collect())
        } else {
            let Some(mut filter) = stored_ids.load() else {
                return Ok(None);
            };
            new_ids.for_each(|id| filter.insert(id));
            IdsWrite::Whole(filter)
        };
        self.write_cache_files(&mut next, write, &units, ids_write)?;
        Ok(Some(next.into()))
    }

    /// A run with nothing new: the report the cache recorded, and only the
    /// derived files repaired when they changed.
    fn distill_unchanged(
        &self,
        header: &Header,
        state: [Option<FileStamp>; 4],
    ) -> Result<Distilled> {
        if state[2..] != header.state[2..] && state[0].is_some() {
            let stored = self.dir.stored_curated()?;
            self.repair_projection(&Projection::of_heads(stored.file.heads()))?;
            let mut next = header.clone();
            next.state = self.state_stamps()?;
            // Only the small file changes; the token stays.
            let _ = self.dir.replace_cache(
                DISTILL_CACHE_FILE,
                next.encode(&self.workspace_id, self.dir.path()).as_bytes(),
            );
        }
        Ok(Distilled {
            report: Report {
                scanned: header.scanned,
                skipped: header.scanned,
                conflicts: header.conflicts.len(),
                stale: header.stale,
                conflict_case_ids: header.conflicts.iter().map(|(_, id)| id.clone()).collect(),
                ..Report::default()
            },
            decisions: Vec::new(),
            already_evidence: header.already_evidence,
            active_entries: header.active_entries,
        })
    }
}
