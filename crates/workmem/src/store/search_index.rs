//! The search index: a tantivy index of the active curated entries and of
//! every fact of the daily logs, in `.search-index/` of the memory
//! directory (docs/search.md).
//!
//! A cache, never evidence, and never trusted by its content alone: a
//! branch can commit one (`git add -f`), so it is used only while its state
//! file binds it to this machine's identity of everything it covers and
//! holds:
//!
//! - the memory directory's inode and the workspace id;
//! - the stamp (inode, size, modification time) of every file of the index
//!   itself, as the last update left them;
//! - the stamp of the curated.json whose active entries it holds;
//! - for each daily file, what it read of it (stamp, length and the
//!   fingerprint of those bytes: [`crate::store::coverage`]);
//! - the boot id of the system that wrote it.
//!
//! It holds every fact, retracted or not: the state file also records the
//! length, SHA-256 and stamp of the corrections stream and which of the
//! index's documents are the facts that stream retracts. A search leaves
//! those out of its hits and of the statistics that rank them, so a
//! retraction or a restore costs a look-up of the retracted ids (when the
//! stream changed), never a rebuild.
//!
//! The index's files are written without fsync ([`CacheDir`]): a process
//! that dies mid-update leaves files that no longer match the state file,
//! written last, and a system crash that could leave files torn on disk is
//! followed by a boot under another boot id; either way the index is
//! rebuilt before it is used. Where the system has no boot id, the files
//! are made durable as tantivy does it.
//!
//! Anything else (a missing, unreadable or foreign state, an index file
//! replaced, a daily file rewritten or removed) makes the index unusable.
//! It is not rebuilt on the spot: a search answers by reading the records
//! (`crate::workspace::search`), as exactly, and leaves a mark; the next
//! search that finds no usable index and the mark builds it. Bytes
//! appended to a daily file since are read and indexed on the next search
//! (appending pays nothing), a changed curated.json has its active entries
//! indexed again. The index holds no text anyone reads: only terms, the
//! lengths and places that rank them, and where each item is (an entry
//! key, a daily file and the offset of a fact's line); what a search shows
//! comes from the records themselves, and a hit whose record does not
//! match is never shown.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs::File;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::directory::error::{DeleteError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, FileHandle, MmapDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};
use tantivy::indexer::NoMergePolicy;
use tantivy::postings::{Postings as _, SegmentPostings};
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, InvertedIndexRangeQuery, Occur, PhraseQuery, RangeQuery,
    TermQuery,
};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions, Value as _,
};
use tantivy::tokenizer::{Token as IndexToken, TokenStream, Tokenizer};
use tantivy::{
    DocAddress, DocId, DocSet as _, Index, IndexReader, IndexSettings, IndexWriter,
    InvertedIndexReader, ReloadPolicy, Score, Searcher, SegmentOrdinal, SegmentReader, TERMINATED,
    TantivyDocument, Term,
};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, IoContext, Result};
use crate::model::fact::Kind;
use crate::model::fact_line::{FactRecord as _, FactSummary};
use crate::model::search_rank::{self, CONTENT, KEY, PartStats, Ranking};
use crate::model::search_text::{self, Clause, Query};
use crate::store::atomic_io::{self, FileStamp, file_stamp};
use crate::store::block_chain::Covered;
use crate::store::corrections::{CORRECTIONS_FILE, StreamSeen};
use crate::store::coverage::{self, Scan};
use crate::store::curated_state::Entry;
use crate::store::fact_log::FactLog;
use crate::store::names::{SEARCH_INDEX_DIR, SEARCH_INDEX_LOCK_FILE};

/// The state file, in the index directory.
const STATE_FILE: &str = "workmem-state";
/// The mark a search answered by reading the records leaves, in the index
/// directory: the next search without a usable index builds one.
const SCANNED_FILE: &str = "workmem-scanned";
const HEADER: &str = "workmem-search-index 5";
/// Where Linux gives the id of the current boot.
const BOOT_ID_FILE: &str = "/proc/sys/kernel/random/boot_id";
/// Memory of the index writer's threads, in all: tantivy's minimum per
/// thread is 15 MB. A thread writes a segment when its part is full, so
/// the more memory, the fewer segments a build leaves (one per thread
/// still at 1,000,000 facts); the memory is used only as it fills.
const WRITER_HEAP: usize = 400_000_000;
/// The name under which the index knows [`Words`].
const TOKENIZER: &str = "workmem";

const ENTRY: u64 = 0;
const FACT: u64 = 1;

/// The fast fields, by name.
const PLACE: &str = "place";
const CONTENT_LEN: &str = "content_len";
const KEY_LEN: &str = "key_len";
const FACT_ID: &str = "fact_id";

/// The fields of the index. Entries and facts have text fields of their
/// own, so each part's statistics are its fields' own; facts are never
/// deleted from the index (a catch-up only adds them), entries are all
/// replaced when curated.json changes.
#[derive(Debug, Clone, Copy)]
struct Fields {
    /// [`ENTRY`] or [`FACT`].
    doc_type: Field,
    /// A fact's content and memory key terms, with positions.
    fact_text: [Field; 2],
    /// An entry's content and memory key terms, with positions.
    entry_text: [Field; 2],
    /// The memory key as one term (for the prefix filter).
    key: Field,
    /// The kind's name.
    kind: Field,
    /// Microseconds since the epoch: a fact's `recorded_at`, an entry's
    /// `last_seen` (a column, not terms: one value per item).
    at: Field,
    /// An entry's key (stored).
    entry: Field,
    /// Where the item is, which orders hits of equal score (a column):
    /// [`search_rank::fact_place`] of a fact, an entry's position among
    /// the active entries.
    place: Field,
    /// How many terms the content and the memory key hold (columns).
    lens: [Field; 2],
    /// The hash of a fact's id (a column): where a retracted fact is.
    fact_id: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let mut builder = Schema::builder();
        let words = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(TOKENIZER)
                .set_fieldnorms(false)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let fields = Fields {
            doc_type: builder.add_u64_field("type", INDEXED),
            fact_text: [
                builder.add_text_field("content", words.clone()),
                builder.add_text_field("key_words", words.clone()),
            ],
            entry_text: [
                builder.add_text_field("entry_content", words.clone()),
                builder.add_text_field("entry_key_words", words),
            ],
            key: builder.add_text_field("key", STRING),
            kind: builder.add_text_field("kind", STRING),
            at: builder.add_i64_field("at", FAST),
            entry: builder.add_text_field("entry", STORED),
            place: builder.add_u64_field(PLACE, FAST),
            lens: [builder.add_u64_field(CONTENT_LEN, FAST), builder.add_u64_field(KEY_LEN, FAST)],
            fact_id: builder.add_u64_field(FACT_ID, FAST),
        };
        (builder.build(), fields)
    }

    /// Returns the fields of `schema` when it is the one this code writes.
    fn of(schema: &Schema) -> Option<Fields> {
        let (expected, fields) = Fields::schema();
        (*schema == expected).then_some(fields)
    }

    /// The text fields of a part.
    fn text(&self, part: Part) -> [Field; 2] {
        match part {
            Part::Entries => self.entry_text,
            Part::Facts => self.fact_text,
        }
    }
}

/// Where a hit's record is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Located {
    /// The active entry with this key.
    Entry(String),
    /// The fact whose line starts at `offset` of the daily file of `day`.
    Fact { day: String, offset: u64 },
}

/// The filters of a search (each `None`: any).
#[derive(Debug, Clone, Default)]
pub(crate) struct Filters {
    pub(crate) kind: Option<Kind>,
    pub(crate) key_prefix: Option<String>,
    /// Microseconds, inclusive.
    pub(crate) since: Option<i64>,
    /// Microseconds, inclusive.
    pub(crate) until: Option<i64>,
}

/// Which items a search looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Entries,
    Facts,
}

/// The search index of one memory directory: `.search-index/`, the lock
/// file that serialises its updates and the state file that binds it to
/// the directory, the workspace and the stamps of what it covers (see the
/// module docs). A handle opened for reading never has one: its searches
/// read the records.
#[derive(Debug, Clone)]
pub(crate) struct SearchIndexDir {
    memory_dir: PathBuf,
    workspace_id: String,
    writable: bool,
}

/// What the index is built from: the records, read only when the index
/// needs them.
pub(crate) struct Sources<'a> {
    pub(crate) log: &'a FactLog,
    /// The active entries of the current curated.json.
    pub(crate) active_entries: &'a dyn Fn() -> Result<Vec<Entry>>,
    /// The facts the corrections stream retracts now, with what the
    /// index records of the stream they were read from (one read).
    pub(crate) retracted_facts: &'a dyn Fn() -> Result<(BTreeSet<String>, StreamSeen)>,
}

/// An index brought up to date with the logs, curated.json and the
/// corrections stream.
pub(crate) struct SearchIndex {
    reader: IndexReader,
    fields: Fields,
    dir: PathBuf,
    /// The statistics of the facts and of the entries it holds (the
    /// retracted facts included).
    facts: PartStats,
    entries: PartStats,
    /// The documents of the retracted facts, by segment id.
    hidden: Arc<HashMap<String, Vec<DocId>>>,
}

/// The state file's content (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct State {
    curated: Option<FileStamp>,
    /// The stream whose retracted facts `hidden` names.
    corrections: Option<StreamSeen>,
    facts: PartStats,
    entries: PartStats,
    /// The documents of the retracted facts: segment id and document.
    hidden: Vec<(String, DocId)>,
    index_files: Vec<(String, FileStamp)>,
    covered: Vec<(String, Covered)>,
}

/// Maps a tantivy error to an I/O error on `path`.
fn io_error(path: &Path, err: impl std::fmt::Display) -> Error {
    Error::Io { path: path.to_owned(), source: std::io::Error::other(err.to_string()) }
}

/// Whether an index that cannot be used as it is gets built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Build {
    /// Only when a search answered by reading the records left its mark
    /// since: a search that repeats pays for the index, a lone one does
    /// not.
    WhenRepeated,
    /// Now.
    Now,
}

impl SearchIndexDir {
    /// The index of the memory directory `memory_dir` of `workspace_id`;
    /// none for a handle that is not `writable`.
    pub(crate) fn new(memory_dir: PathBuf, workspace_id: String, writable: bool) -> SearchIndexDir {
        SearchIndexDir { memory_dir, workspace_id, writable }
    }

    /// The index's directory.
    pub(crate) fn path(&self) -> PathBuf {
        self.memory_dir.join(SEARCH_INDEX_DIR)
    }

    /// Returns the index of `sources`, brought up to date: the one on disk
    /// while its state binds it (see the module docs), caught up with what
    /// was appended, a changed curated.json and corrections stream. When
    /// there is none to use, builds one as `build` says, and returns
    /// `None` otherwise (the search reads the records: for a handle that
    /// is not writable, always).
    ///
    /// Errors: [`Error::Corrupt`] for a daily file that does not parse;
    /// [`Error::Io`].
    pub(crate) fn current(
        &self,
        sources: &Sources<'_>,
        build: Build,
    ) -> Result<Option<SearchIndex>> {
        if !self.writable {
            return Ok(None);
        }
        let dir = self.path();
        let lock_path = self.memory_dir.join(SEARCH_INDEX_LOCK_FILE);
        let lock = open_lock(&lock_path)?;
        lock.lock().at(&lock_path)?;
        let boot = boot_id();
        let mut current = load_state(&dir, self, boot.as_deref()).and_then(|state| {
            let index = with_words(Index::open(CacheDir::open(&dir, boot.is_none()).ok()?).ok()?);
            let fields = Fields::of(&index.schema())?;
            Some((index, fields, state))
        });
        if let Some((index, fields, mut state)) = current.take()
            && update(&index, fields, &mut state, self, sources, &dir, boot.as_deref())?
        {
            return SearchIndex::reading(&index, fields, dir, &state).map(Some);
        }
        if build == Build::WhenRepeated && !dir.join(SCANNED_FILE).exists() {
            // The first search without a usable index reads the records;
            // the mark makes the next one build it.
            clear(&dir)?;
            atomic_io::create_private_dir(&dir)?;
            atomic_io::replace_cache(&dir.join(SCANNED_FILE), format!("{HEADER}\n").as_bytes())?;
            return Ok(None);
        }
        let (index, fields, mut state) = fresh(&dir, boot.is_none())?;
        if update(&index, fields, &mut state, self, sources, &dir, boot.as_deref())? {
            return SearchIndex::reading(&index, fields, dir, &state).map(Some);
        }
        Err(io_error(&dir, "the search index could not be brought up to date; remove it and retry"))
    }

    /// Returns the index of `sources` built again from the records: the
    /// one on disk (if any) is removed first.
    ///
    /// Errors: as [`SearchIndexDir::current`].
    pub(crate) fn rebuilt(&self, sources: &Sources<'_>) -> Result<Option<SearchIndex>> {
        if self.writable {
            clear(&self.path())?;
        }
        self.current(sources, Build::Now)
    }
}

/// A hit found through the index: its score, its place and its document.
type Found = (Score, u64, DocAddress);

impl SearchIndex {
    fn reading(index: &Index, fields: Fields, dir: PathBuf, state: &State) -> Result<SearchIndex> {
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|err| io_error(&dir, err))?;
        let mut hidden: HashMap<String, Vec<DocId>> = HashMap::new();
        for (segment, doc) in &state.hidden {
            hidden.entry(segment.clone()).or_default().push(*doc);
        }
        for docs in hidden.values_mut() {
            docs.sort_unstable();
        }
        Ok(SearchIndex {
            reader,
            fields,
            dir,
            facts: state.facts,
            entries: state.entries,
            hidden: Arc::new(hidden),
        })
    }

    /// Returns how many items of `part` match, and those of them from
    /// `offset` (at most `limit`) in ranked order ([`search_rank`]), with
    /// their scores.
    pub(crate) fn rank(
        &self,
        part: Part,
        query: &Query,
        filters: &Filters,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<(f32, Located)>)> {
        let searcher = self.reader.searcher();
        let built = self.build(part, query, filters);
        let ranking = if limit == 0 {
            None
        } else {
            let (stats, doc_freq) = self.statistics(&searcher, part, query)?;
            Some(Arc::new(Ranking::new(query, &stats, &doc_freq)))
        };
        let collector = Ranked {
            query: Arc::new(query.clone()),
            ranking,
            keep: offset.saturating_add(limit),
            text: self.fields.text(part),
            hidden: Arc::clone(&self.hidden),
        };
        let (total, mut found) =
            searcher.search(&built, &collector).map_err(|err| io_error(&self.dir, err))?;
        search_rank::page_of(&mut found, offset, limit);
        let mut out = Vec::with_capacity(found.len());
        for (score, place, address) in found {
            let located = match part {
                Part::Facts => {
                    let (day, offset) = search_rank::fact_at(place);
                    Located::Fact { day, offset }
                }
                Part::Entries => {
                    let doc: TantivyDocument =
                        searcher.doc(address).map_err(|err| io_error(&self.dir, err))?;
                    match doc.get_first(self.fields.entry).and_then(|v| v.as_str()) {
                        Some(key) => Located::Entry(key.to_owned()),
                        // A document without its place cannot be shown:
                        // the caller finds one hit short and rebuilds.
                        None => continue,
                    }
                }
            };
            out.push((score, located));
        }
        Ok((total, out))
    }

    /// Returns the statistics of `part` as it is now (the retracted facts
    /// left out) and how many of its items hold each of the query's
    /// [`search_rank::words`] in each field.
    fn statistics(
        &self,
        searcher: &Searcher,
        part: Part,
        query: &Query,
    ) -> Result<(PartStats, Vec<[u64; 2]>)> {
        let words = search_rank::words(query);
        let text = self.fields.text(part);
        let mut stats = match part {
            Part::Facts => self.facts,
            Part::Entries => self.entries,
        };
        let mut doc_freq = vec![[0u64; 2]; words.len()];
        let err = |err: &dyn std::fmt::Display| io_error(&self.dir, err);
        for segment in searcher.segment_readers() {
            let hidden = match part {
                Part::Facts => self.hidden_in(segment),
                Part::Entries => &[],
            };
            for field in [CONTENT, KEY] {
                let inverted = segment.inverted_index(text[field]).map_err(|e| err(&e))?;
                for (word, freq) in words.iter().zip(doc_freq.iter_mut()) {
                    let term = Term::from_field_text(text[field], word);
                    freq[field] += match part {
                        // Facts are never deleted: the term's own count,
                        // less the retracted facts that hold it.
                        Part::Facts => {
                            let mut count =
                                u64::from(inverted.doc_freq(&term).map_err(|e| err(&e))?);
                            for &doc in hidden {
                                if holds(&inverted, &term, doc).map_err(|e| err(&e))? {
                                    count -= 1;
                                }
                            }
                            count
                        }
                        Part::Entries => {
                            alive_with(&inverted, &term, segment).map_err(|e| err(&e))?
                        }
                    };
                }
            }
            if !hidden.is_empty() {
                let lens = lens_of(segment).map_err(|e| err(&e))?;
                for &doc in hidden {
                    stats.remove([CONTENT, KEY].map(|field| lens[field].first(doc).unwrap_or(0)));
                }
            }
        }
        Ok((stats, doc_freq))
    }

    /// The retracted facts' documents of `segment`, sorted.
    fn hidden_in(&self, segment: &SegmentReader) -> &[DocId] {
        self.hidden.get(&segment.segment_id().uuid_string()).map_or(&[], Vec::as_slice)
    }

    fn build(&self, part: Part, query: &Query, filters: &Filters) -> BooleanQuery {
        let f = self.fields;
        let exact = |term: Term| -> Box<dyn tantivy::query::Query> {
            Box::new(ConstScoreQuery::new(
                Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
                0.0,
            ))
        };
        let mut clauses: Vec<(Occur, Box<dyn tantivy::query::Query>)> = Vec::new();
        for clause in &query.clauses {
            let either = f
                .text(part)
                .into_iter()
                .map(|field| (Occur::Should, clause_query(field, clause)))
                .collect();
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(either))));
        }
        if let Some(kind) = filters.kind {
            clauses.push((Occur::Must, exact(Term::from_field_text(f.kind, kind.as_str()))));
        }
        if let Some(prefix) = filters.key_prefix.as_deref().filter(|p| !p.is_empty()) {
            clauses.push((Occur::Must, prefix_query(f.key, prefix)));
        }
        if filters.since.is_some() || filters.until.is_some() {
            let bound = |value: Option<i64>| {
                value.map_or(Bound::Unbounded, |v| Bound::Included(Term::from_field_i64(f.at, v)))
            };
            let range = RangeQuery::new(bound(filters.since), bound(filters.until));
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(Box::new(range), 0.0))));
        }
        BooleanQuery::new(clauses)
    }
}

/// Whether `doc` holds `term`.
fn holds(inverted: &InvertedIndexReader, term: &Term, doc: DocId) -> std::io::Result<bool> {
    let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? else {
        return Ok(false);
    };
    Ok(postings.doc() <= doc && postings.seek(doc) == doc)
}

/// How many live documents of `segment` hold `term`.
fn alive_with(
    inverted: &InvertedIndexReader,
    term: &Term,
    segment: &SegmentReader,
) -> std::io::Result<u64> {
    let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? else {
        return Ok(0);
    };
    let mut count = 0;
    let mut doc = postings.doc();
    while doc != TERMINATED {
        if !segment.is_deleted(doc) {
            count += 1;
        }
        doc = postings.advance();
    }
    Ok(count)
}

/// The columns of the content's and the memory key's lengths.
fn lens_of(segment: &SegmentReader) -> tantivy::Result<[Column<u64>; 2]> {
    let fast = segment.fast_fields();
    Ok([fast.u64(CONTENT_LEN)?, fast.u64(KEY_LEN)?])
}

/// The collector of a search: counts the matching documents that are not
/// retracted facts and, with a ranking, scores each ([`search_rank`]).
struct Ranked {
    query: Arc<Query>,
    ranking: Option<Arc<Ranking>>,
    /// How many of the best hits the page needs.
    keep: usize,
    text: [Field; 2],
    hidden: Arc<HashMap<String, Vec<DocId>>>,
}

/// Where one field of a segment holds a clause.
enum Cursor {
    /// Nowhere.
    Missing,
    Term(Box<SegmentPostings>),
    /// The phrase's words with their offsets.
    Phrase(Vec<(u32, SegmentPostings)>),
    /// The documents holding a term with the prefix, as a bit set.
    Prefix(Vec<u64>),
}

impl Cursor {
    fn open(
        inverted: &InvertedIndexReader,
        field: Field,
        clause: &Clause,
        max_doc: DocId,
    ) -> std::io::Result<Cursor> {
        Ok(match clause {
            Clause::Term(term) => inverted
                .read_postings(&Term::from_field_text(field, term), IndexRecordOption::WithFreqs)?
                .map_or(Cursor::Missing, |postings| Cursor::Term(Box::new(postings))),
            Clause::Phrase(terms) => {
                let mut postings = Vec::with_capacity(terms.len());
                for (offset, term) in terms {
                    let term = Term::from_field_text(field, term);
                    match inverted.read_postings(&term, IndexRecordOption::WithFreqsAndPositions)? {
                        Some(found) => postings.push((*offset, found)),
                        None => return Ok(Cursor::Missing),
                    }
                }
                Cursor::Phrase(postings)
            }
            Clause::Prefix(prefix) => {
                let mut bits = vec![0u64; (max_doc as usize).div_ceil(64)];
                let mut upper = prefix.as_bytes().to_vec();
                upper.push(0xFF);
                let mut terms =
                    inverted.terms().range().ge(prefix.as_bytes()).lt(&upper).into_stream()?;
                while terms.advance() {
                    let mut postings = inverted
                        .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                    let mut doc = postings.doc();
                    while doc != TERMINATED {
                        bits[doc as usize / 64] |= 1 << (doc % 64);
                        doc = postings.advance();
                    }
                }
                Cursor::Prefix(bits)
            }
        })
    }

    /// How often the clause occurs in `doc` (documents come in increasing
    /// order).
    fn count(&mut self, doc: DocId, positions: &mut Vec<Vec<u32>>) -> u32 {
        let at = |postings: &mut SegmentPostings| {
            if postings.doc() < doc {
                postings.seek(doc);
            }
            postings.doc() == doc
        };
        match self {
            Cursor::Missing => 0,
            Cursor::Term(postings) => {
                if at(postings) {
                    postings.term_freq()
                } else {
                    0
                }
            }
            Cursor::Phrase(words) => {
                if !words.iter_mut().all(|(_, postings)| at(postings)) {
                    return 0;
                }
                positions.resize_with(words.len(), Vec::new);
                let mut offsets = Vec::with_capacity(words.len());
                for ((offset, postings), into) in words.iter_mut().zip(positions.iter_mut()) {
                    postings.positions(into);
                    offsets.push(*offset);
                }
                search_rank::phrase_count(&offsets, &positions[..words.len()])
            }
            Cursor::Prefix(bits) => {
                u32::from(bits.get(doc as usize / 64).is_some_and(|w| w >> (doc % 64) & 1 == 1))
            }
        }
    }
}

/// What [`Ranked`] does in one segment.
struct RankedSegment {
    segment: SegmentOrdinal,
    keep: usize,
    hidden: Vec<DocId>,
    count: usize,
    scoring: Option<Scoring>,
    found: Vec<Found>,
}

struct Scoring {
    ranking: Arc<Ranking>,
    cursors: Vec<[Cursor; 2]>,
    lens: [Column<u64>; 2],
    place: Column<u64>,
    counts: Vec<[u32; 2]>,
    positions: Vec<Vec<u32>>,
}

impl Collector for Ranked {
    type Fruit = (usize, Vec<Found>);
    type Child = RankedSegment;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<RankedSegment> {
        let hidden =
            self.hidden.get(&reader.segment_id().uuid_string()).cloned().unwrap_or_default();
        let scoring = match &self.ranking {
            None => None,
            Some(ranking) => {
                let inverted = [
                    reader.inverted_index(self.text[CONTENT])?,
                    reader.inverted_index(self.text[KEY])?,
                ];
                let mut cursors = Vec::with_capacity(self.query.clauses.len());
                for clause in &self.query.clauses {
                    cursors.push([
                        Cursor::open(
                            &inverted[CONTENT],
                            self.text[CONTENT],
                            clause,
                            reader.max_doc(),
                        )?,
                        Cursor::open(&inverted[KEY], self.text[KEY], clause, reader.max_doc())?,
                    ]);
                }
                Some(Scoring {
                    ranking: Arc::clone(ranking),
                    counts: vec![[0; 2]; cursors.len()],
                    cursors,
                    lens: lens_of(reader)?,
                    place: reader.fast_fields().u64(PLACE)?,
                    positions: Vec::new(),
                })
            }
        };
        Ok(RankedSegment { segment, keep: self.keep, hidden, count: 0, scoring, found: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(
        &self,
        fruits: Vec<(usize, Vec<Found>)>,
    ) -> tantivy::Result<(usize, Vec<Found>)> {
        let mut total = 0;
        let mut all = Vec::with_capacity(fruits.iter().map(|(_, found)| found.len()).sum());
        for (count, found) in fruits {
            total += count;
            all.extend(found);
        }
        Ok((total, all))
    }
}

impl SegmentCollector for RankedSegment {
    type Fruit = (usize, Vec<Found>);

    fn collect(&mut self, doc: DocId, _: Score) {
        if self.hidden.binary_search(&doc).is_ok() {
            return;
        }
        self.count += 1;
        let Some(scoring) = &mut self.scoring else { return };
        for (cursors, counts) in scoring.cursors.iter_mut().zip(scoring.counts.iter_mut()) {
            for field in [CONTENT, KEY] {
                counts[field] = cursors[field].count(doc, &mut scoring.positions);
            }
        }
        let lens = [
            scoring.lens[CONTENT].first(doc).unwrap_or(0),
            scoring.lens[KEY].first(doc).unwrap_or(0),
        ];
        let score = scoring.ranking.score(&scoring.counts, lens);
        let place = scoring.place.first(doc).unwrap_or(u64::MAX);
        self.found.push((score, place, DocAddress::new(self.segment, doc)));
        // Only the best `keep` can be on the page: the others are dropped
        // as they pile up, so memory stays within twice the page's depth.
        if self.found.len() >= self.keep.max(1024).saturating_mul(2) {
            search_rank::page_of(&mut self.found, 0, self.keep);
        }
    }

    fn harvest(self) -> (usize, Vec<Found>) {
        (self.count, self.found)
    }
}

/// Returns the query of one clause on one field.
fn clause_query(field: Field, clause: &Clause) -> Box<dyn tantivy::query::Query> {
    match clause {
        Clause::Term(term) => {
            Box::new(TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::Basic))
        }
        Clause::Prefix(prefix) => prefix_query(field, prefix),
        Clause::Phrase(terms) => Box::new(PhraseQuery::new_with_offset(
            terms
                .iter()
                .map(|(offset, term)| (*offset as usize, Term::from_field_text(field, term)))
                .collect(),
        )),
    }
}

/// Returns the query of every term of `field` that starts with `prefix`:
/// the terms from `prefix` up to `prefix` followed by the byte 0xFF, which
/// no UTF-8 text holds.
fn prefix_query(field: Field, prefix: &str) -> Box<dyn tantivy::query::Query> {
    let mut upper = prefix.as_bytes().to_vec();
    upper.push(0xFF);
    let range = InvertedIndexRangeQuery::new(
        Bound::Included(Term::from_field_text(field, prefix)),
        Bound::Excluded(Term::from_field_bytes(field, &upper)),
    );
    Box::new(ConstScoreQuery::new(Box::new(range), 1.0))
}

fn open_lock(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    atomic_io::refuse_symlink(path)?;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .at(path)
}

/// Returns the id of the current boot, `None` where the system has none.
fn boot_id() -> Option<String> {
    let text = std::fs::read_to_string(BOOT_ID_FILE).ok()?;
    let id = text.trim();
    let valid = !id.is_empty() && id.bytes().all(|byte| byte.is_ascii_hexdigit() || byte == b'-');
    valid.then(|| id.to_owned())
}

/// tantivy's directory of the index, without the fsyncs of its files and
/// of the directory unless `sync` (see the module docs for why an index
/// written this way is never used torn).
#[derive(Debug, Clone)]
struct CacheDir {
    inner: MmapDirectory,
    root: PathBuf,
    sync: bool,
}

impl CacheDir {
    fn open(root: &Path, sync: bool) -> Result<CacheDir> {
        let inner = MmapDirectory::open(root).map_err(|err| io_error(root, err))?;
        Ok(CacheDir { inner, root: root.to_owned(), sync })
    }
}

/// A file of the index, flushed but not synced when it is complete.
struct Unsynced(File);

impl std::io::Write for Unsynced {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl TerminatingWrite for Unsynced {
    fn terminate_ref(&mut self, _: AntiCallToken) -> std::io::Result<()> {
        std::io::Write::flush(&mut self.0)
    }
}

impl Directory for CacheDir {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        if self.sync {
            return self.inner.open_write(path);
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.root.join(path))
            .map_err(|err| match err.kind() {
                std::io::ErrorKind::AlreadyExists => {
                    OpenWriteError::FileAlreadyExists(path.to_owned())
                }
                _ => OpenWriteError::wrap_io_error(err, path.to_owned()),
            })?;
        Ok(std::io::BufWriter::new(Box::new(Unsynced(file))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        if self.sync {
            return self.inner.atomic_write(path, data);
        }
        atomic_io::replace_cache(&self.root.join(path), data).map_err(std::io::Error::other)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        if self.sync { self.inner.sync_directory() } else { Ok(()) }
    }

    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(callback)
    }
}

/// Removes whatever is at `dir`.
fn clear(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(dir).at(dir),
        Ok(_) => std::fs::remove_file(dir).at(dir),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err).at(dir),
    }
}

/// Removes whatever is at `dir` and creates an empty index there.
fn fresh(dir: &Path, sync: bool) -> Result<(Index, Fields, State)> {
    clear(dir)?;
    atomic_io::create_private_dir(dir)?;
    let (schema, fields) = Fields::schema();
    let index = Index::create(CacheDir::open(dir, sync)?, schema, IndexSettings::default())
        .map_err(|err| io_error(dir, err))?;
    Ok((with_words(index), fields, State::default()))
}

/// Returns the index's files as an update leaves them: every file of the
/// directory but the state file and tantivy's lock files, sorted.
fn index_files(dir: &Path) -> Result<Vec<(String, FileStamp)>> {
    let mut out = Vec::new();
    for item in std::fs::read_dir(dir).at(dir)? {
        let item = item.at(dir)?;
        let name = item.file_name().to_string_lossy().into_owned();
        if name == STATE_FILE || name == SCANNED_FILE || name.starts_with(".tantivy-") {
            continue;
        }
        let meta = std::fs::symlink_metadata(item.path()).at(&item.path())?;
        out.push((name, atomic_io::stamp_of(&meta)));
    }
    out.sort();
    Ok(out)
}

/// Returns the memory directory's inode.
fn dir_inode(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(dir).ok().map(|meta| meta.ino())
}

/// Reads the state file; `None` when it is missing, malformed, of another
/// workspace, memory directory or boot (`boot`, the current one's id), or
/// when a file of the index is not the one it recorded.
fn load_state(dir: &Path, at: &SearchIndexDir, boot: Option<&str>) -> Option<State> {
    let data = atomic_io::read_optional(&dir.join(STATE_FILE)).ok()??;
    let text = String::from_utf8(data).ok()?;
    let mut lines = text.lines();
    if lines.next()? != HEADER
        || lines.next()?.strip_prefix("workspace ")? != at.workspace_id
        || lines.next()?.strip_prefix("memory-dir ")?.parse::<u64>().ok()?
            != dir_inode(&at.memory_dir)?
        || lines.next()?.strip_prefix("boot ")? != boot.unwrap_or("-")
    {
        return None;
    }
    let curated = match lines.next()?.strip_prefix("curated ")? {
        "-" => None,
        stamp => Some(parse_stamp(&mut stamp.split(' '))?),
    };
    let corrections = match lines.next()?.strip_prefix("corrections ")? {
        "-" => None,
        seen => {
            let mut fields = seen.split(' ');
            let len = fields.next()?.parse().ok()?;
            let sha256 = fields.next()?;
            let valid = sha256.len() == 64
                && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !valid {
                return None;
            }
            let stamp = match fields.clone().next()? {
                "-" => None,
                _ => Some(parse_stamp(&mut fields)?),
            };
            Some(StreamSeen { len, sha256: sha256.to_owned(), stamp })
        }
    };
    let mut state = State { curated, corrections, ..State::default() };
    state.facts = parse_part(lines.next()?.strip_prefix("facts ")?)?;
    state.entries = parse_part(lines.next()?.strip_prefix("entries ")?)?;
    for line in lines {
        if let Some(rest) = line.strip_prefix("hidden ") {
            let (segment, doc) = rest.split_once(' ')?;
            state.hidden.push((segment.to_owned(), doc.parse().ok()?));
        } else if let Some(rest) = line.strip_prefix("index ") {
            let mut fields = rest.split(' ');
            let name = fields.next()?.to_owned();
            state.index_files.push((name, parse_stamp(&mut fields)?));
        } else if let Some(rest) = line.strip_prefix("file ") {
            let (day, covered) = Covered::parse_line(rest)?;
            state.covered.push((day.to_owned(), covered));
        } else {
            return None;
        }
    }
    let sorted = state.covered.windows(2).all(|pair| pair[0].0 < pair[1].0);
    (sorted && index_files(dir).ok()? == state.index_files).then_some(state)
}

fn parse_part(text: &str) -> Option<PartStats> {
    let mut fields = text.split(' ').map(str::parse::<u64>);
    let stats = PartStats {
        items: fields.next()?.ok()?,
        tokens: [fields.next()?.ok()?, fields.next()?.ok()?],
    };
    fields.next().is_none().then_some(stats)
}

fn parse_stamp<'a>(fields: &mut impl Iterator<Item = &'a str>) -> Option<FileStamp> {
    let mut stamp: FileStamp = [0; 4];
    for slot in &mut stamp {
        *slot = fields.next()?.parse().ok()?;
    }
    fields.next().is_none().then_some(stamp)
}

fn write_state(dir: &Path, state: &State, at: &SearchIndexDir, boot: Option<&str>) -> Result<()> {
    let mut out = String::new();
    let _ = writeln!(out, "{HEADER}");
    let _ = writeln!(out, "workspace {}", at.workspace_id);
    let _ = writeln!(out, "memory-dir {}", dir_inode(&at.memory_dir).unwrap_or(0));
    let _ = writeln!(out, "boot {}", boot.unwrap_or("-"));
    match state.curated {
        Some([a, b, c, d]) => {
            let _ = writeln!(out, "curated {a} {b} {c} {d}");
        }
        None => out.push_str("curated -\n"),
    }
    match &state.corrections {
        Some(seen) => {
            let _ = write!(out, "corrections {} {}", seen.len, seen.sha256);
            match seen.stamp {
                Some([a, b, c, d]) => {
                    let _ = writeln!(out, " {a} {b} {c} {d}");
                }
                None => out.push_str(" -\n"),
            }
        }
        None => out.push_str("corrections -\n"),
    }
    for (name, part) in [("facts", &state.facts), ("entries", &state.entries)] {
        let _ =
            writeln!(out, "{name} {} {} {}", part.items, part.tokens[CONTENT], part.tokens[KEY]);
    }
    for (segment, doc) in &state.hidden {
        let _ = writeln!(out, "hidden {segment} {doc}");
    }
    for (name, [a, b, c, d]) in &state.index_files {
        let _ = writeln!(out, "index {name} {a} {b} {c} {d}");
    }
    for (day, covered) in &state.covered {
        covered.write_line(day, &mut out);
    }
    atomic_io::replace_cache(&dir.join(STATE_FILE), out.as_bytes())
}

/// Returns `index` with [`Words`] registered as the tokenizer of its
/// text fields.
fn with_words(index: Index) -> Index {
    index.tokenizers().register(TOKENIZER, Words::default());
    index
}

/// The tokenizer of the index: the terms of [`search_text::each_token`],
/// cut in the writer's threads, into tokens whose buffers are reused from
/// one text to the next.
#[derive(Debug, Clone, Default)]
struct Words {
    tokens: Vec<IndexToken>,
}

/// The tokens of one text.
struct WordStream<'a> {
    tokens: &'a mut [IndexToken],
    /// How many tokens [`TokenStream::advance`] went through.
    next: usize,
}

impl Tokenizer for Words {
    type TokenStream<'a> = WordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordStream<'a> {
        let mut count = 0;
        search_text::each_token(text, |term, position, start, end| {
            if count == self.tokens.len() {
                self.tokens.push(IndexToken::default());
            }
            let token = &mut self.tokens[count];
            token.text.clear();
            token.text.push_str(term);
            token.position = position as usize;
            token.offset_from = start;
            token.offset_to = end;
            token.position_length = 1;
            count += 1;
        });
        WordStream { tokens: &mut self.tokens[..count], next: 0 }
    }
}

impl TokenStream for WordStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    // Called only after `advance` returned true: `next` is at least 1.
    fn token(&self) -> &IndexToken {
        &self.tokens[self.next.saturating_sub(1)]
    }

    fn token_mut(&mut self) -> &mut IndexToken {
        &mut self.tokens[self.next.saturating_sub(1)]
    }
}

/// The hash of a fact id, by which the index finds a retracted fact.
pub(crate) fn fact_id_hash(fact_id: &str) -> u64 {
    xxh3_64(fact_id.as_bytes())
}

/// One item of the index, as [`item_doc`] writes it.
struct Item<'a> {
    part: Part,
    content: &'a str,
    memory_key: Option<&'a str>,
    kind: Kind,
    /// Microseconds since the epoch.
    at: i64,
    place: u64,
}

/// Returns the document of `item`, and the lengths of its fields.
fn item_doc(fields: Fields, item: &Item<'_>) -> (TantivyDocument, [u64; 2]) {
    let text = fields.text(item.part);
    let mut doc = TantivyDocument::new();
    doc.add_text(text[CONTENT], item.content);
    let mut lens = [search_rank::term_count(item.content), 0];
    if let Some(key) = item.memory_key {
        doc.add_text(text[KEY], key);
        doc.add_text(fields.key, key);
        lens[KEY] = search_rank::term_count(key);
    }
    doc.add_text(fields.kind, item.kind.as_str());
    doc.add_i64(fields.at, item.at);
    doc.add_u64(fields.place, item.place);
    doc.add_u64(fields.lens[CONTENT], lens[CONTENT]);
    doc.add_u64(fields.lens[KEY], lens[KEY]);
    doc.add_u64(
        fields.doc_type,
        match item.part {
            Part::Entries => ENTRY,
            Part::Facts => FACT,
        },
    );
    (doc, lens)
}

/// Brings `index` up to date with `sources` from `state`, which it
/// updates, commits and writes in the state file (under the boot id
/// `boot`). Returns `false` when the index cannot be caught up (a covered
/// daily file was rewritten or removed): it must be rebuilt.
fn update(
    index: &Index,
    fields: Fields,
    state: &mut State,
    at: &SearchIndexDir,
    sources: &Sources<'_>,
    dir: &Path,
    boot: Option<&str>,
) -> Result<bool> {
    let built = state.index_files.is_empty();
    let covered: Vec<(&str, &Covered)> =
        state.covered.iter().map(|(day, covered)| (day.as_str(), covered)).collect();
    let (scan, _) = coverage::scan(sources.log, &covered, None, &at.memory_dir)?;
    let Scan::Changed(changed) = scan else { return Ok(false) };
    let curated_stamp = file_stamp(&at.memory_dir.join(crate::store::names::CURATED_FILE))?;
    let curated_changed = curated_stamp != state.curated || built;
    let stream = at.memory_dir.join(CORRECTIONS_FILE);
    let stream_holds = match &state.corrections {
        Some(seen) => seen.holds(&stream)?,
        None => false,
    };
    if changed.is_empty() && !curated_changed && stream_holds {
        return Ok(true);
    }
    // The segments whose retracted facts the state names already.
    let seen_segments: BTreeSet<String> = if stream_holds {
        state
            .index_files
            .iter()
            .filter_map(|(name, _)| Some(name.split_once('.')?.0.to_owned()))
            .collect()
    } else {
        BTreeSet::new()
    };
    if built || !changed.is_empty() || curated_changed {
        if !index_items(
            index,
            fields,
            state,
            sources,
            dir,
            &changed,
            curated_changed.then_some(Curated(curated_stamp)),
        )? {
            return Ok(false);
        }
        state.index_files = index_files(dir)?;
    }
    // Which documents are the facts the stream retracts now: looked up
    // in the segments the state does not cover yet (all of them when the
    // stream changed). A segment's documents keep their numbers.
    let (retracted, seen) = (sources.retracted_facts)()?;
    let kept = std::mem::take(&mut state.hidden);
    state.hidden = retracted_docs(index, &retracted, sources.log, &seen_segments, kept)
        .map_err(|err| io_error(dir, err))?;
    state.corrections = Some(seen);
    write_state(dir, state, at, boot)?;
    Ok(true)
}

/// The stamp of a curated.json whose active entries are indexed again.
struct Curated(Option<FileStamp>);

/// Indexes the facts of `changed` and, with the stamp of a changed
/// curated.json, the active entries again; commits. Returns `false` as
/// [`update`] does.
fn index_items(
    index: &Index,
    fields: Fields,
    state: &mut State,
    sources: &Sources<'_>,
    dir: &Path,
    changed: &[coverage::Changed],
    curated: Option<Curated>,
) -> Result<bool> {
    let built = state.index_files.is_empty();
    // The writer's threads cut the texts into terms and index them while
    // this one reads the logs. A build leaves its segments as they are
    // (merging them would cost more than a query gains); a catch-up adds a
    // small segment, which tantivy's default policy merges in time.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let mut writer: IndexWriter =
        index.writer_with_num_threads(threads, WRITER_HEAP).map_err(|err| io_error(dir, err))?;
    if built {
        writer.set_merge_policy(Box::new(NoMergePolicy));
    }
    for change in changed {
        let Some(appended) = coverage::read_appended(change, false)? else { return Ok(false) };
        let tail = &appended.data[appended.from - appended.base..];
        let (records, reach) =
            sources.log.parse_tail::<FactSummary>(&appended.day.path, tail, appended.from, None)?;
        for (offset, fact) in records {
            // Every fact is indexed, a retracted one too: the search
            // leaves it out ([`retracted_docs`]), and finds it again once
            // restored.
            let place = search_rank::fact_place(&appended.day.day, offset).ok_or_else(|| {
                io_error(&appended.day.path, "a daily file too large to search (64 GiB or more)")
            })?;
            let item = Item {
                part: Part::Facts,
                content: fact.content(),
                memory_key: fact.memory_key(),
                kind: fact.kind(),
                at: fact.instant().as_microsecond(),
                place,
            };
            let (mut doc, lens) = item_doc(fields, &item);
            doc.add_u64(fields.fact_id, fact_id_hash(fact.fact_id()));
            state.facts.add(lens);
            writer.add_document(doc).map_err(|err| io_error(dir, err))?;
        }
        let covered = Covered::of_appended(&appended, reach);
        match state.covered.binary_search_by(|(day, _)| day.as_str().cmp(&appended.day.day)) {
            Ok(at) => state.covered[at].1 = covered,
            Err(at) => state.covered.insert(at, (appended.day.day.clone(), covered)),
        }
    }
    if let Some(Curated(curated_stamp)) = curated {
        writer.delete_term(Term::from_field_u64(fields.doc_type, ENTRY));
        state.entries = PartStats::default();
        for (position, entry) in (sources.active_entries)()?.iter().enumerate() {
            let item = Item {
                part: Part::Entries,
                content: &entry.content,
                memory_key: entry.memory_key.as_deref(),
                kind: entry.kind,
                at: micros(&entry.last_seen),
                place: position as u64,
            };
            let (mut doc, lens) = item_doc(fields, &item);
            doc.add_text(fields.entry, &entry.key);
            state.entries.add(lens);
            writer.add_document(doc).map_err(|err| io_error(dir, err))?;
        }
        state.curated = curated_stamp;
    }
    writer.commit().map_err(|err| io_error(dir, err))?;
    writer.wait_merging_threads().map_err(|err| io_error(dir, err))?;
    Ok(true)
}

/// Returns the documents of the facts in `retracted` (segment id and
/// document, sorted): `kept`'s in the segments of `seen` (which were
/// looked up against the same stream), found by the hash of their ids in
/// the others, each checked against its record.
fn retracted_docs(
    index: &Index,
    retracted: &BTreeSet<String>,
    log: &FactLog,
    seen: &BTreeSet<String>,
    kept: Vec<(String, DocId)>,
) -> std::result::Result<Vec<(String, DocId)>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    if retracted.is_empty() {
        return Ok(out);
    }
    let hashes: std::collections::HashSet<u64> =
        retracted.iter().map(|id| fact_id_hash(id)).collect();
    let reader: IndexReader =
        index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    let searcher = reader.searcher();
    for segment in searcher.segment_readers() {
        let uuid = segment.segment_id().uuid_string();
        if seen.contains(&uuid) {
            out.extend(kept.iter().filter(|(of, _)| *of == uuid).cloned());
            continue;
        }
        let ids = segment.fast_fields().u64(FACT_ID)?;
        let places = segment.fast_fields().u64(PLACE)?;
        for doc in 0..segment.max_doc() {
            let Some(hash) = ids.first(doc) else { continue };
            if !hashes.contains(&hash) || segment.is_deleted(doc) {
                continue;
            }
            let Some(place) = places.first(doc) else { continue };
            let (day, offset) = search_rank::fact_at(place);
            let record = log.read_at::<FactSummary>(&day, offset)?;
            if record.is_some_and(|fact| retracted.contains(fact.fact_id())) {
                out.push((uuid.clone(), doc));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn micros(stamp: &crate::model::stamp::Stamp) -> i64 {
    stamp.instant().as_microsecond()
}
