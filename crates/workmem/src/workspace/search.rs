//! Full-text search over the active curated entries and the facts
//! (docs/search.md): the query and its filters, the index brought up to
//! date ([`crate::store::search_index`]), and hits built from the records
//! themselves, paged with an opaque cursor.

use std::collections::BTreeSet;
use std::path::PathBuf;

use foldhash::{HashMap, HashSet};
use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::error::{Error, Invalid, Result};
use crate::model::canon;
use crate::model::fact::{Fact, Kind};
use crate::model::fact_line::{FactRecord as _, FactSummary};
use crate::model::search_rank::{self, CONTENT, FieldRead, KEY, PartStats, Ranking, Reader};
use crate::model::search_text::{self, Query};
use crate::model::stamp::Stamp;
use crate::model::text::is_refused_char;
use crate::policy::retractions::Retractions;
use crate::store::atomic_io;
use crate::store::conflict_queue::{CaseStatus, ConflictQueue};
use crate::store::corrections::StreamSeen;
use crate::store::curated_file::EntryHead;
use crate::store::curated_state::Entry;
use crate::store::fact_log::map_in_parallel;
use crate::store::memory_dir::ReadOnlyMemoryDir;
use crate::store::memory_dir::Stored;
use crate::store::names::CURATED_FILE;
use crate::store::search_index::{Build, Filters, Located, Part, SearchIndex, Sources};
use crate::workspace::Workspace;

/// Hits of one page when none is asked for.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
/// The most hits of one page.
pub const MAX_SEARCH_LIMIT: usize = 50;
/// The deepest a cursor may point into the hits.
pub const MAX_SEARCH_OFFSET: usize = 10_000_000;

/// Which items a search looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchScope {
    /// The active curated entries.
    Memory,
    /// The facts of the log.
    Facts,
    /// Both, active entries first.
    #[default]
    All,
}

impl SearchScope {
    /// Parses `memory`, `facts` or `all`.
    ///
    /// Errors: [`Error::InvalidInput`] naming `in`.
    pub fn parse(name: &str) -> Result<SearchScope> {
        match name {
            "memory" => Ok(SearchScope::Memory),
            "facts" => Ok(SearchScope::Facts),
            "all" => Ok(SearchScope::All),
            _ => {
                Err(Error::invalid("in", Invalid::Malformed { rule: "one of memory, facts, all" }))
            }
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            SearchScope::Memory => "memory",
            SearchScope::Facts => "facts",
            SearchScope::All => "all",
        }
    }
}

/// The filters and the page of a search; see [`Workspace::search`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchOptions {
    /// Only items of this kind.
    pub kind: Option<Kind>,
    /// Only items whose memory key starts with this.
    pub key_prefix: Option<String>,
    /// Only facts recorded, and entries last seen, at or after this.
    pub since: Option<Stamp>,
    /// ... and at or before this.
    pub until: Option<Stamp>,
    /// Entries, facts or both.
    pub scope: SearchScope,
    /// Hits per page, 1 to [`MAX_SEARCH_LIMIT`] (`None`:
    /// [`DEFAULT_SEARCH_LIMIT`]).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page of the same search.
    pub cursor: Option<String>,
    /// When not 0, the page ends before the JSON of its hits would pass
    /// this many characters (it holds at least one hit).
    pub max_chars: usize,
}

impl SearchOptions {
    /// Returns options with no filter, the first page, the default limit.
    pub fn new() -> SearchOptions {
        SearchOptions::default()
    }
}

/// What a hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HitType {
    /// An active curated entry.
    Entry,
    /// A fact of the log.
    Fact,
}

/// One hit of a search. Every text comes from the record itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// Entry or fact.
    #[serde(rename = "type")]
    pub hit_type: HitType,
    /// The entry key, or the fact id.
    pub id: String,
    /// The entry's revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
    /// Its kind.
    pub kind: Kind,
    /// Its memory key.
    pub memory_key: Option<String>,
    /// Its content, whole.
    pub content: String,
    /// Up to 200 characters of the content around the first match, each
    /// match between `**`.
    pub snippet: String,
    /// Relevance (BM25); comparable within one search only.
    pub score: f32,
    /// `active` for an entry; for a fact: `curated` (evidence of an
    /// active entry), `superseded` (evidence of replaced revisions only),
    /// `under review` (evidence of a candidate of an open conflict case),
    /// `rejected` (a value a human decision did not choose), `pending` (a
    /// keyed fact no entry holds yet) or `recorded` (an unkeyed fact no
    /// entry holds).
    pub status: &'static str,
    /// The open conflict case, for a fact under review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict_id: Option<String>,
    /// The active entry a fact is evidence of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_key: Option<String>,
    /// When a fact was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<Stamp>,
    /// An entry's earliest evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<Stamp>,
    /// An entry's latest evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Stamp>,
}

/// One page of hits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchPage {
    /// The hits, active entries first, each part best first.
    pub hits: Vec<SearchHit>,
    /// The cursor of the next page; `None` on the last.
    pub next_cursor: Option<String>,
    /// How many items match in all.
    pub total: usize,
}

impl Workspace {
    /// Searches the active curated entries (first) and the facts for
    /// `query`: words (all must match, in the content or the memory key),
    /// `"phrases"`, `prefix*`; Chinese and Japanese text by its characters.
    /// Hits are ranked by BM25 within each part and built from the records
    /// themselves. The index is a cache under the memory directory,
    /// brought up to date first; a search that finds none it can use reads
    /// the records instead (the same page) and the next one builds it
    /// (docs/search.md).
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{NewFact, SearchOptions, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// ws.init()?;
    /// ws.remember(NewFact::new("The parser rejects tabs"))?;
    /// let page = ws.search("pars*", &SearchOptions::new())?;
    /// assert_eq!(page.hits[0].snippet, "The **parser** rejects tabs");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: [`Error::InvalidInput`] for a query, limit or cursor that
    /// cannot be used (naming it); [`Error::Corrupt`], [`Error::Scope`],
    /// [`Error::Io`] as [`Workspace::facts`] and [`Workspace::curated`].
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchPage> {
        let limit = options.limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        if !(1..=MAX_SEARCH_LIMIT).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                Invalid::OutOfRange { value: limit as i64, min: 1, max: MAX_SEARCH_LIMIT as i64 },
            ));
        }
        self.search_page(query, options, limit)
    }

    /// [`Workspace::search`] with a page of `limit` hits (not checked).
    fn search_page(
        &self,
        query: &str,
        options: &SearchOptions,
        limit: usize,
    ) -> Result<SearchPage> {
        let parsed = search_text::parse_query(query)?;
        if let Some(prefix) = &options.key_prefix
            && let Some(c) = prefix.chars().find(|&c| c.is_control() || is_refused_char(c))
        {
            return Err(Error::invalid(
                "key",
                Invalid::ControlCharacter { code_point: u32::from(c) },
            ));
        }
        let filters = Filters {
            kind: options.kind,
            key_prefix: options.key_prefix.clone(),
            since: options.since.as_ref().map(|s| s.instant().as_microsecond()),
            until: options.until.as_ref().map(|s| s.instant().as_microsecond()),
        };
        let fingerprint = fingerprint(query, options);
        let offset = match &options.cursor {
            Some(cursor) => decode_cursor(cursor, fingerprint)?,
            None => 0,
        };
        if !self.dir.path().is_dir() {
            return Ok(SearchPage { hits: Vec::new(), next_cursor: None, total: 0 });
        }
        // A page reads only the entries its hits need: curated.json's
        // layout says where each one is (the file checked first, as every
        // read of it is). The whole state is read only to build the index
        // or to search without it.
        self.check_state()?;
        let stored = std::cell::OnceCell::new();
        let curated = || -> Result<&Stored<Entry>> {
            if stored.get().is_none() {
                let _ = stored.set(self.dir.stored_curated()?);
            }
            Ok(stored.get().expect("set above"))
        };
        let lookup = |wanted: &dyn Fn(&EntryHead) -> bool| -> Result<Vec<Entry>> {
            curated()?.file.records(&self.dir.file(CURATED_FILE), wanted)
        };
        let active = || -> Result<Vec<Entry>> { lookup(&|head| head.is_active()) };
        let retracted = || -> Result<(BTreeSet<String>, StreamSeen)> {
            let (retractions, seen) = self.retractions_seen()?;
            Ok((retractions.facts().map(str::to_owned).collect(), seen))
        };
        let sources =
            Sources { log: &self.log, active_entries: &active, retracted_facts: &retracted };
        let search_index = if self.read_only {
            ReadOnlyMemoryDir::search_index(&self.dir)
        } else {
            self.dir.search_index()
        };
        let page = Page { query: &parsed, filters: &filters, options, offset, limit, fingerprint };
        let disagrees = |path: PathBuf| Error::Io {
            path,
            source: std::io::Error::other(
                "the search index disagrees with the records it was built from",
            ),
        };
        let Some(index) = search_index.current(&sources, Build::WhenRepeated)? else {
            // No index to use: the records themselves, read once, give
            // the same page the index would.
            let scanned = self.scan_for(&parsed, &filters, options.scope, &active)?;
            return self
                .page_of(&Ranker::Scan(&scanned), &page, &lookup)?
                .ok_or_else(|| disagrees(self.dir.path().to_owned()));
        };
        if let Some(found) = self.page_of(&Ranker::Index(&index), &page, &lookup)? {
            return Ok(found);
        }
        // A hit whose record does not match: the index is not what it
        // claims to be. Build it again from the records.
        drop(index);
        match search_index.rebuilt(&sources)? {
            Some(index) => self.page_of(&Ranker::Index(&index), &page, &lookup)?,
            None => None,
        }
        .ok_or_else(|| disagrees(search_index.path()))
    }

    /// Returns the page `page` asks for; `None` when a hit's record does
    /// not match the query (the index must be rebuilt).
    fn page_of(
        &self,
        ranker: &Ranker<'_>,
        page: &Page<'_>,
        lookup: &Lookup<'_>,
    ) -> Result<Option<SearchPage>> {
        let (query, filters, scope) = (page.query, page.filters, page.options.scope);
        let (entries, mut located) = if scope == SearchScope::Facts {
            (0, Vec::new())
        } else {
            ranker.rank(Part::Entries, query, filters, page.offset, page.limit)?
        };
        let facts = if scope == SearchScope::Memory {
            0
        } else {
            let from = page.offset.saturating_sub(entries);
            let left = page.limit - located.len();
            let (facts, found) = ranker.rank(Part::Facts, query, filters, from, left)?;
            located.extend(found);
            facts
        };
        let total = entries + facts;
        let mut hits = Vec::with_capacity(located.len());
        let mut conflicts: Option<ConflictQueue> = None;
        let mut retractions: Option<Retractions> = None;
        // The entries that may hold a fact, read once per key or group.
        let mut holders: HashMap<(Option<String>, String), Vec<Entry>> = HashMap::default();
        // The page's active entries, and the entries of the keys and
        // groups its facts belong to: read once each.
        let keys: HashSet<&str> = located
            .iter()
            .filter_map(|(_, place)| match place {
                Located::Entry(key) => Some(key.as_str()),
                Located::Fact { .. } => None,
            })
            .collect();
        let page_entries = if keys.is_empty() {
            Vec::new()
        } else {
            lookup(&|head| keys.contains(head.key.as_str()) && head.is_active())?
        };
        let by_key: HashMap<&str, &Entry> =
            page_entries.iter().map(|e| (e.key.as_str(), e)).collect();
        // The hits as a JSON array: its brackets, each hit and a comma.
        let mut chars = 1;
        for (score, place) in &located {
            let (score, place) = (*score, place);
            let hit = match place {
                Located::Entry(key) => {
                    let Some(entry) = by_key.get(key.as_str()) else { return Ok(None) };
                    if !query.matches(&entry.content, entry.memory_key.as_deref())
                        || !filters_match(
                            filters,
                            entry.kind,
                            entry.memory_key.as_deref(),
                            &entry.last_seen,
                        )
                    {
                        return Ok(None);
                    }
                    entry_hit(entry, query, score)
                }
                Located::Fact { day, offset } => {
                    let Some(fact) =
                        self.fact_hit_record(day, *offset, query, filters, &mut retractions)?
                    else {
                        return Ok(None);
                    };
                    if fact.memory_key.is_some() && conflicts.is_none() {
                        conflicts = Some(self.conflicts()?);
                    }
                    let held = holders_in(&mut holders, &fact, lookup)?;
                    fact_hit(fact, query, score, held, conflicts.as_ref())
                }
            };
            if page.options.max_chars > 0 {
                chars += serde_json::to_string(&hit).map_or(0, |text| text.chars().count() + 1);
                if chars > page.options.max_chars && !hits.is_empty() {
                    break;
                }
            }
            hits.push(hit);
        }
        let next = page.offset + hits.len();
        let next_cursor =
            (next < total && !hits.is_empty()).then(|| encode_cursor(next, page.fingerprint));
        Ok(Some(SearchPage { hits, next_cursor, total }))
    }

    /// Returns the fact at `offset` of `day`'s file when it matches the
    /// query and filters and is not retracted; `None` when the index
    /// located something else there (it must be rebuilt). `retractions`
    /// is read once per page.
    fn fact_hit_record(
        &self,
        day: &str,
        offset: u64,
        query: &Query,
        filters: &Filters,
        retractions: &mut Option<Retractions>,
    ) -> Result<Option<Fact>> {
        let Some(fact) = self.log.read_at::<Fact>(day, offset)? else { return Ok(None) };
        if !query.matches(&fact.content, fact.memory_key.as_deref())
            || !filters_match(filters, fact.kind, fact.memory_key.as_deref(), &fact.recorded_at)
        {
            return Ok(None);
        }
        // The index never holds a retracted fact: one found here is an
        // index that does not reflect the corrections stream.
        if retractions.is_none() {
            *retractions = Some(self.retractions()?);
        }
        if retractions.as_ref().is_some_and(|r| r.is_retracted(&fact.fact_id)) {
            return Ok(None);
        }
        Ok(Some(fact))
    }
}

/// Reads the curated entries whose head a filter selects.
type Lookup<'a> = dyn Fn(&dyn Fn(&EntryHead) -> bool) -> Result<Vec<Entry>> + 'a;

/// Where the entries that may hold `fact` as evidence are: its key's
/// revisions, or the one unkeyed entry of its wording (its entry key).
fn holders_unit(fact: &Fact) -> (Option<String>, String) {
    match &fact.memory_key {
        Some(key) => (Some(key.clone()), String::new()),
        None => (None, canon::unkeyed_entry_key(fact.kind.as_str(), &fact.content)),
    }
}

/// The entries that may hold `fact`, read once per unit into `read`.
fn holders_in<'r>(
    read: &'r mut HashMap<(Option<String>, String), Vec<Entry>>,
    fact: &Fact,
    lookup: &Lookup<'_>,
) -> Result<&'r [Entry]> {
    let unit = holders_unit(fact);
    if !read.contains_key(&unit) {
        let entries = match &unit {
            (Some(key), _) => lookup(&|head| head.memory_key.as_ref() == Some(key))?,
            (None, group) => lookup(&|head| head.memory_key.is_none() && &head.key == group)?,
        };
        read.insert(unit.clone(), entries);
    }
    Ok(&read[&unit])
}

/// What one search asks.
struct Page<'a> {
    query: &'a Query,
    filters: &'a Filters,
    options: &'a SearchOptions,
    offset: usize,
    limit: usize,
    fingerprint: u64,
}

fn filters_match(filters: &Filters, kind: Kind, memory_key: Option<&str>, at: &Stamp) -> bool {
    filters_match_at(filters, kind, memory_key, at.instant().as_microsecond())
}

/// [`filters_match`] of an item's time in microseconds since the epoch.
fn filters_match_at(filters: &Filters, kind: Kind, memory_key: Option<&str>, at: i64) -> bool {
    filters.kind.is_none_or(|k| k == kind)
        && filters.key_prefix.as_deref().is_none_or(|prefix| {
            prefix.is_empty() || memory_key.is_some_and(|key| key.starts_with(prefix))
        })
        && filters.since.is_none_or(|since| at >= since)
        && filters.until.is_none_or(|until| at <= until)
}

fn entry_hit(entry: &Entry, query: &Query, score: f32) -> SearchHit {
    SearchHit {
        hit_type: HitType::Entry,
        id: entry.key.clone(),
        revision: Some(entry.revision),
        kind: entry.kind,
        memory_key: entry.memory_key.clone(),
        snippet: query.snippet(&entry.content),
        content: entry.content.clone(),
        score,
        status: "active",
        conflict_id: None,
        entry_key: None,
        recorded_at: None,
        first_seen: Some(entry.first_seen.clone()),
        last_seen: Some(entry.last_seen.clone()),
    }
}

fn fact_hit(
    fact: Fact,
    query: &Query,
    score: f32,
    entries: &[Entry],
    conflicts: Option<&ConflictQueue>,
) -> SearchHit {
    let id = fact.fact_id.as_str();
    let holds = |entry: &&Entry| {
        entry.memory_key == fact.memory_key && entry.evidence_ids.binary_search(id).is_ok()
    };
    let active = entries.iter().filter(|e| e.is_active()).find(holds);
    let mut conflict_id = None;
    let status = if active.is_some() {
        "curated"
    } else if entries.iter().any(|e| holds(&e)) {
        "superseded"
    } else if let (Some(key), Some(queue)) = (fact.memory_key.as_deref(), conflicts) {
        let mut status = "pending";
        for case in queue.cases.iter().filter(|case| case.memory_key == key) {
            let Some(candidate) =
                case.candidates.iter().find(|c| c.evidence_ids.binary_search(id).is_ok())
            else {
                continue;
            };
            match case.status {
                CaseStatus::Open => {
                    status = "under review";
                    conflict_id = Some(case.conflict_id.clone());
                    break;
                }
                CaseStatus::Resolved
                    if case.selected_candidate_id.as_deref() != Some(&candidate.candidate_id) =>
                {
                    status = "rejected";
                }
                _ => {}
            }
        }
        status
    } else {
        "recorded"
    };
    SearchHit {
        hit_type: HitType::Fact,
        id: fact.fact_id.clone(),
        revision: None,
        kind: fact.kind,
        memory_key: fact.memory_key.clone(),
        snippet: query.snippet(&fact.content),
        content: fact.content,
        score,
        status,
        conflict_id,
        entry_key: active.map(|e| e.key.clone()),
        recorded_at: Some(fact.recorded_at),
        first_seen: None,
        last_seen: None,
    }
}

/// Returns what a cursor is bound to: the query and every filter.
fn fingerprint(query: &str, options: &SearchOptions) -> u64 {
    let text = format!(
        "{query}\0{}\0{}\0{}\0{}\0{}",
        options.kind.map_or("", Kind::as_str),
        options.key_prefix.as_deref().unwrap_or(""),
        options.since.as_ref().map_or("", Stamp::as_str),
        options.until.as_ref().map_or("", Stamp::as_str),
        options.scope.as_str(),
    );
    xxh3_64_with_seed(text.as_bytes(), 0x5345_4152_4348_0001)
}

/// Returns the cursor of the page from `offset`: `c`, the offset and a
/// check of it and the search, in hexadecimal.
fn encode_cursor(offset: usize, fingerprint: u64) -> String {
    let check = xxh3_64_with_seed(&(offset as u64).to_le_bytes(), fingerprint);
    format!("c{offset:08x}{check:016x}")
}

fn decode_cursor(cursor: &str, fingerprint: u64) -> Result<usize> {
    let bad = || {
        Error::invalid(
            "cursor",
            Invalid::Malformed {
                rule: "the next_cursor of a search with the same query and filters",
            },
        )
    };
    let hex = cursor
        .strip_prefix('c')
        .filter(|h| h.len() > 16 && h.len() <= 32 && h.is_ascii())
        .ok_or_else(bad)?;
    let (offset, check) = hex.split_at(hex.len() - 16);
    let offset = usize::from_str_radix(offset, 16).map_err(|_| bad())?;
    let check = u64::from_str_radix(check, 16).map_err(|_| bad())?;
    if offset > MAX_SEARCH_OFFSET
        || encode_cursor(offset, fingerprint) != cursor
        || check == 0 && offset == 0
    {
        return Err(bad());
    }
    Ok(offset)
}

/// The most entries a context's query puts first.
const RELEVANT_ENTRIES: usize = 4 * MAX_SEARCH_LIMIT;

impl Workspace {
    /// Returns the keys of the active entries most relevant to `query`,
    /// most relevant first (at most [`RELEVANT_ENTRIES`]).
    ///
    /// Errors: as [`Workspace::search`].
    pub(super) fn relevant_entries(&self, query: &str) -> Result<Vec<String>> {
        // One search of all of them: a lone context needs no index.
        let mut options = SearchOptions::new();
        options.scope = SearchScope::Memory;
        let page = self.search_page(query, &options, RELEVANT_ENTRIES)?;
        Ok(page.hits.into_iter().map(|hit| hit.id).collect())
    }

    /// Reads the items of `scope` for a search without the index: every
    /// active entry (`active`) and every fact of the log not retracted,
    /// each part's statistics and the items that match `query` and
    /// `filters`, with what ranks them ([`search_rank`]).
    ///
    /// Errors: as [`Workspace::search`].
    fn scan_for(
        &self,
        query: &Query,
        filters: &Filters,
        scope: SearchScope,
        active: &dyn Fn() -> Result<Vec<Entry>>,
    ) -> Result<Scanned> {
        let reader = Reader::new(query);
        let mut scanned = Scanned {
            entries: ScannedPart::new(&reader, Part::Entries),
            facts: ScannedPart::new(&reader, Part::Facts),
        };
        if scope != SearchScope::Facts {
            let mut read = ItemRead::new(query);
            for (position, entry) in active()?.into_iter().enumerate() {
                let item = ScanItem {
                    content: &entry.content,
                    memory_key: entry.memory_key.as_deref(),
                    kind: entry.kind,
                    at: entry.last_seen.instant().as_microsecond(),
                    place: position as u64,
                };
                if scanned.entries.add(&reader, &mut read, filters, &item) {
                    scanned.entries.keys.push(entry.key.clone());
                }
            }
        }
        if scope != SearchScope::Memory {
            let retractions = self.retractions()?;
            let days = self.log.days()?;
            let parts = map_in_parallel(&days, |day| -> Result<ScannedPart> {
                let mut part = ScannedPart::new(&reader, Part::Facts);
                let Some(data) = atomic_io::read_optional(&day.path)? else { return Ok(part) };
                let (records, _) =
                    self.log.parse_tail::<FactSummary>(&day.path, &data, 0, Some(0))?;
                let mut read = ItemRead::new(query);
                for (offset, fact) in records {
                    if retractions.is_retracted(fact.fact_id()) {
                        continue;
                    }
                    let place =
                        search_rank::fact_place(&day.day, offset).ok_or_else(|| Error::Io {
                            path: day.path.clone(),
                            source: std::io::Error::other(
                                "a daily file too large to search (64 GiB or more)",
                            ),
                        })?;
                    let item = ScanItem {
                        content: fact.content(),
                        memory_key: fact.memory_key(),
                        kind: fact.kind(),
                        at: fact.instant().as_microsecond(),
                        place,
                    };
                    part.add(&reader, &mut read, filters, &item);
                }
                Ok(part)
            });
            for part in parts {
                scanned.facts.join(part?);
            }
        }
        Ok(scanned)
    }
}

/// Where the hits of a search come from.
enum Ranker<'a> {
    Index(&'a SearchIndex),
    Scan(&'a Scanned),
}

impl Ranker<'_> {
    /// Returns how many items of `part` match, and those from `offset`
    /// (at most `limit`), ranked.
    fn rank(
        &self,
        part: Part,
        query: &Query,
        filters: &Filters,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<(f32, Located)>)> {
        match self {
            Ranker::Index(index) => index.rank(part, query, filters, offset, limit),
            Ranker::Scan(scanned) => {
                let part = match part {
                    Part::Entries => &scanned.entries,
                    Part::Facts => &scanned.facts,
                };
                Ok(part.rank(query, offset, limit))
            }
        }
    }
}

/// The items of a search read without the index.
struct Scanned {
    entries: ScannedPart,
    facts: ScannedPart,
}

/// One item as the scan reads it.
struct ScanItem<'a> {
    content: &'a str,
    memory_key: Option<&'a str>,
    kind: Kind,
    /// Microseconds since the epoch.
    at: i64,
    place: u64,
}

/// The scratch of reading one item's fields.
struct ItemRead {
    fields: [FieldRead; 2],
    counts: Vec<[u32; 2]>,
}

impl ItemRead {
    fn new(query: &Query) -> ItemRead {
        ItemRead { fields: Default::default(), counts: vec![[0; 2]; query.clauses.len()] }
    }
}

/// One part's statistics and matching items, read without the index.
struct ScannedPart {
    stats: PartStats,
    doc_freq: Vec<[u64; 2]>,
    /// Each matching item: how often it holds each clause in each field
    /// (`clauses` pairs each), its fields' lengths, its place.
    counts: Vec<[u32; 2]>,
    hits: Vec<([u64; 2], u64)>,
    /// The entry key of each hit of the entries (a fact's place says
    /// where it is).
    keys: Vec<String>,
    clauses: usize,
    part: Part,
}

impl ScannedPart {
    fn new(reader: &Reader<'_>, part: Part) -> ScannedPart {
        ScannedPart {
            stats: PartStats::default(),
            doc_freq: vec![[0; 2]; reader.word_count()],
            counts: Vec::new(),
            hits: Vec::new(),
            keys: Vec::new(),
            clauses: reader.clause_count(),
            part,
        }
    }

    /// Counts `item` in the statistics, and keeps it when it matches the
    /// query and the filters (returns whether it does).
    fn add(
        &mut self,
        reader: &Reader<'_>,
        read: &mut ItemRead,
        filters: &Filters,
        item: &ScanItem<'_>,
    ) -> bool {
        reader.read(item.content, &mut read.fields[CONTENT]);
        match item.memory_key {
            Some(key) => reader.read(key, &mut read.fields[KEY]),
            None => reader.read("", &mut read.fields[KEY]),
        }
        let lens = [read.fields[CONTENT].len, read.fields[KEY].len];
        self.stats.add(lens);
        for field in [CONTENT, KEY] {
            for (freq, count) in self.doc_freq.iter_mut().zip(&read.fields[field].counts) {
                freq[field] += u64::from(*count > 0);
            }
            reader.clause_counts(&read.fields[field], field, &mut read.counts);
        }
        let matches = read.counts.iter().all(|c| c[CONTENT] > 0 || c[KEY] > 0)
            && filters_match_at(filters, item.kind, item.memory_key, item.at);
        if matches {
            self.counts.extend_from_slice(&read.counts);
            self.hits.push((lens, item.place));
        }
        matches
    }

    /// Adds what another run of items read.
    fn join(&mut self, other: ScannedPart) {
        self.stats.items += other.stats.items;
        for field in [CONTENT, KEY] {
            self.stats.tokens[field] += other.stats.tokens[field];
        }
        for (freq, more) in self.doc_freq.iter_mut().zip(&other.doc_freq) {
            freq[CONTENT] += more[CONTENT];
            freq[KEY] += more[KEY];
        }
        self.counts.extend(other.counts);
        self.hits.extend(other.hits);
        self.keys.extend(other.keys);
    }

    /// As [`SearchIndex::rank`], from the items read.
    fn rank(&self, query: &Query, offset: usize, limit: usize) -> (usize, Vec<(f32, Located)>) {
        let total = self.hits.len();
        if limit == 0 {
            return (total, Vec::new());
        }
        let ranking = Ranking::new(query, &self.stats, &self.doc_freq);
        let mut ranked: Vec<(f32, u64, usize)> = self
            .hits
            .iter()
            .enumerate()
            .map(|(n, (lens, place))| {
                let counts = &self.counts[n * self.clauses..(n + 1) * self.clauses];
                (ranking.score(counts, *lens), *place, n)
            })
            .collect();
        search_rank::page_of(&mut ranked, offset, limit);
        let located = |place: u64, n: usize| match self.part {
            Part::Entries => Located::Entry(self.keys[n].clone()),
            Part::Facts => {
                let (day, offset) = search_rank::fact_at(place);
                Located::Fact { day, offset }
            }
        };
        (total, ranked.into_iter().map(|(score, place, n)| (score, located(place, n))).collect())
    }
}
