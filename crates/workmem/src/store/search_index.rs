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
//! - the length, SHA-256 and stamp of the corrections stream whose
//!   retracted facts it leaves out (a retracted fact is never indexed; any
//!   other stream rebuilds the index, so a restored fact is found again);
//! - for each daily file, what it read of it (stamp, length and the
//!   fingerprint of those bytes: [`crate::store::coverage`]);
//! - the boot id of the system that wrote it.
//!
//! The index's files are written without fsync ([`CacheDir`]): a process
//! that dies mid-update leaves files that no longer match the state file,
//! written last, and a system crash that could leave files torn on disk is
//! followed by a boot under another boot id; either way the index is
//! rebuilt before it is used. Where the system has no boot id, the files
//! are made durable as tantivy does it.
//!
//! Anything else (a missing, unreadable or foreign state, an index file
//! replaced, a daily file rewritten or removed) rebuilds the index from
//! the logs. Bytes appended to a daily file since are read and indexed on
//! the next search (appending pays nothing), a changed curated.json has
//! its active entries indexed again. The index holds no text anyone reads:
//! only terms, and where each item is (an entry key, a daily file and the
//! offset of a fact's line); what a search shows comes from the records
//! themselves, and a hit whose record does not match is never shown.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::File;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use tantivy::collector::{Count, TopDocs};
use tantivy::directory::error::{DeleteError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, FileHandle, MmapDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};
use tantivy::indexer::NoMergePolicy;
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
    Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, TantivyDocument, Term,
};

use crate::error::{Error, IoContext, Result};
use crate::model::fact::{Fact, Kind};
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
const HEADER: &str = "workmem-search-index 4";
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

/// The fields of the index.
#[derive(Debug, Clone, Copy)]
struct Fields {
    /// [`ENTRY`] or [`FACT`].
    doc_type: Field,
    /// The content's terms, with positions.
    content: Field,
    /// The memory key's terms, with positions.
    key_words: Field,
    /// The memory key as one term (for the prefix filter).
    key: Field,
    /// The kind's name.
    kind: Field,
    /// Microseconds since the epoch: a fact's `recorded_at`, an entry's
    /// `last_seen` (a column, not terms: one value per item).
    at: Field,
    /// An entry's key (stored).
    entry: Field,
    /// A fact's daily file, `YYYY-MM-DD` (stored).
    day: Field,
    /// The offset of a fact's line in it (stored).
    offset: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let mut builder = Schema::builder();
        let words = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(TOKENIZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let fields = Fields {
            doc_type: builder.add_u64_field("type", INDEXED),
            content: builder.add_text_field("content", words.clone()),
            key_words: builder.add_text_field("key_words", words),
            key: builder.add_text_field("key", STRING),
            kind: builder.add_text_field("kind", STRING),
            at: builder.add_i64_field("at", FAST),
            entry: builder.add_text_field("entry", STORED),
            day: builder.add_text_field("day", STORED),
            offset: builder.add_u64_field("offset", STORED),
        };
        (builder.build(), fields)
    }

    /// Returns the fields of `schema` when it is the one this code writes.
    fn of(schema: &Schema) -> Option<Fields> {
        let (expected, fields) = Fields::schema();
        (*schema == expected).then_some(fields)
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
/// module docs). A handle opened for reading keeps the index in memory
/// for one search and writes nothing.
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

/// An index brought up to date with the logs and curated.json.
pub(crate) struct SearchIndex {
    reader: IndexReader,
    fields: Fields,
    dir: PathBuf,
}

/// The state file's content (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct State {
    curated: Option<FileStamp>,
    corrections: Option<StreamSeen>,
    index_files: Vec<(String, FileStamp)>,
    covered: Vec<(String, Covered)>,
}

/// Maps a tantivy error to an I/O error on `path`.
fn io_error(path: &Path, err: impl std::fmt::Display) -> Error {
    Error::Io { path: path.to_owned(), source: std::io::Error::other(err.to_string()) }
}

impl SearchIndexDir {
    /// The index of the memory directory `memory_dir` of `workspace_id`;
    /// kept on disk when `writable`, in memory otherwise.
    pub(crate) fn new(memory_dir: PathBuf, workspace_id: String, writable: bool) -> SearchIndexDir {
        SearchIndexDir { memory_dir, workspace_id, writable }
    }

    /// The index's directory.
    pub(crate) fn path(&self) -> PathBuf {
        self.memory_dir.join(SEARCH_INDEX_DIR)
    }

    /// Returns the index of `sources`, brought up to date: the one on disk
    /// while its state binds it (see the module docs), caught up with what
    /// was appended and with a changed curated.json; rebuilt otherwise.
    ///
    /// Errors: [`Error::Corrupt`] for a daily file that does not parse;
    /// [`Error::Io`].
    pub(crate) fn current(&self, sources: &Sources<'_>) -> Result<SearchIndex> {
        let dir = self.path();
        if !self.writable {
            let (schema, fields) = Fields::schema();
            let index = with_words(Index::create_in_ram(schema));
            let mut state = State::default();
            update(&index, fields, &mut state, self, sources, &dir, Kept::InMemory)?;
            return SearchIndex::reading(&index, fields, dir);
        }
        let lock_path = self.memory_dir.join(SEARCH_INDEX_LOCK_FILE);
        let lock = open_lock(&lock_path)?;
        lock.lock().at(&lock_path)?;
        let boot = boot_id();
        let mut current = load_state(&dir, self, boot.as_deref()).and_then(|state| {
            let index = with_words(Index::open(CacheDir::open(&dir, boot.is_none()).ok()?).ok()?);
            let fields = Fields::of(&index.schema())?;
            Some((index, fields, state))
        });
        for _ in 0..2 {
            let (index, fields, mut state) = match current.take() {
                Some(found) => found,
                None => fresh(&dir, boot.is_none())?,
            };
            if update(
                &index,
                fields,
                &mut state,
                self,
                sources,
                &dir,
                Kept::OnDisk { boot: boot.as_deref() },
            )? {
                return SearchIndex::reading(&index, fields, dir);
            }
        }
        Err(io_error(&dir, "the search index could not be brought up to date; remove it and retry"))
    }

    /// Returns the index of `sources` built again from the records: the
    /// one on disk (if any) is removed first.
    ///
    /// Errors: as [`SearchIndexDir::current`].
    pub(crate) fn rebuilt(&self, sources: &Sources<'_>) -> Result<SearchIndex> {
        if self.writable {
            let dir = self.path();
            std::fs::remove_dir_all(&dir).at(&dir)?;
        }
        self.current(sources)
    }
}

impl SearchIndex {
    fn reading(index: &Index, fields: Fields, dir: PathBuf) -> Result<SearchIndex> {
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|err| io_error(&dir, err))?;
        Ok(SearchIndex { reader, fields, dir })
    }

    /// Returns how many items of `part` match.
    pub(crate) fn count(&self, part: Part, query: &Query, filters: &Filters) -> Result<usize> {
        let built = self.build(part, query, filters);
        self.reader.searcher().search(&built, &Count).map_err(|err| io_error(&self.dir, err))
    }

    /// Returns the items of `part` that match, best first, from `offset`,
    /// at most `limit`.
    pub(crate) fn top(
        &self,
        part: Part,
        query: &Query,
        filters: &Filters,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<(f32, Located)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let built = self.build(part, query, filters);
        let searcher = self.reader.searcher();
        let found = searcher
            .search(&built, &TopDocs::with_limit(limit).and_offset(offset).order_by_score())
            .map_err(|err| io_error(&self.dir, err))?;
        let mut out = Vec::with_capacity(found.len());
        for (score, address) in found {
            let doc: TantivyDocument =
                searcher.doc(address).map_err(|err| io_error(&self.dir, err))?;
            let text = |field| doc.get_first(field).and_then(|v| v.as_str()).map(str::to_owned);
            let located = match part {
                Part::Entries => text(self.fields.entry).map(Located::Entry),
                Part::Facts => text(self.fields.day)
                    .zip(doc.get_first(self.fields.offset).and_then(|v| v.as_u64()))
                    .map(|(day, offset)| Located::Fact { day, offset }),
            };
            // A document without its place cannot be shown: the caller
            // finds one hit short and rebuilds.
            if let Some(located) = located {
                out.push((score, located));
            }
        }
        Ok(out)
    }

    fn build(&self, part: Part, query: &Query, filters: &Filters) -> BooleanQuery {
        let f = self.fields;
        let exact = |term: Term| -> Box<dyn tantivy::query::Query> {
            Box::new(ConstScoreQuery::new(
                Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
                0.0,
            ))
        };
        let type_id = if part == Part::Entries { ENTRY } else { FACT };
        let mut clauses: Vec<(Occur, Box<dyn tantivy::query::Query>)> =
            vec![(Occur::Must, exact(Term::from_field_u64(f.doc_type, type_id)))];
        for clause in &query.clauses {
            let either = [f.content, f.key_words]
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

/// Returns the query of one clause on one field.
fn clause_query(field: Field, clause: &Clause) -> Box<dyn tantivy::query::Query> {
    match clause {
        Clause::Term(term) => Box::new(TermQuery::new(
            Term::from_field_text(field, term),
            IndexRecordOption::WithFreqs,
        )),
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

/// Removes whatever is at `dir` and creates an empty index there.
fn fresh(dir: &Path, sync: bool) -> Result<(Index, Fields, State)> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(dir).at(dir)?,
        Ok(_) => std::fs::remove_file(dir).at(dir)?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err).at(dir),
    }
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
        if name == STATE_FILE || name.starts_with(".tantivy-") {
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
    for line in lines {
        if let Some(rest) = line.strip_prefix("index ") {
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

fn micros(stamp: &crate::model::stamp::Stamp) -> i64 {
    stamp.instant().as_microsecond()
}

fn item_doc(
    fields: Fields,
    content: &str,
    memory_key: Option<&str>,
    kind: Kind,
    at: i64,
) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(fields.content, content);
    if let Some(key) = memory_key {
        doc.add_text(fields.key_words, key);
        doc.add_text(fields.key, key);
    }
    doc.add_text(fields.kind, kind.as_str());
    doc.add_i64(fields.at, at);
    doc
}

/// Where an updated index is kept.
#[derive(Debug, Clone, Copy)]
enum Kept<'a> {
    /// In memory only (a read-only handle).
    InMemory,
    /// In the index directory, under the current boot's id (if any).
    OnDisk { boot: Option<&'a str> },
}

/// Brings `index` up to date with `sources` from `state`, which it
/// updates; [`Kept::OnDisk`] commits and writes the state file. Returns
/// `false` when the index cannot be caught up (a covered daily file was
/// rewritten or removed): it must be rebuilt.
fn update(
    index: &Index,
    fields: Fields,
    state: &mut State,
    at: &SearchIndexDir,
    sources: &Sources<'_>,
    dir: &Path,
    kept: Kept<'_>,
) -> Result<bool> {
    let built = state.index_files.is_empty();
    // An index holds no retracted fact: one built against another
    // corrections stream is rebuilt (a restored fact is not in it).
    if !built {
        let path = at.memory_dir.join(CORRECTIONS_FILE);
        match &state.corrections {
            Some(seen) if seen.holds(&path)? => {}
            _ => return Ok(false),
        }
    }
    let covered: Vec<(&str, &Covered)> =
        state.covered.iter().map(|(day, covered)| (day.as_str(), covered)).collect();
    let (scan, _) = coverage::scan(sources.log, &covered, None, &at.memory_dir)?;
    let Scan::Changed(changed) = scan else { return Ok(false) };
    let curated_stamp = file_stamp(&at.memory_dir.join(crate::store::names::CURATED_FILE))?;
    let curated_changed = curated_stamp != state.curated || built;
    if changed.is_empty() && !curated_changed {
        return Ok(true);
    }
    // Facts appended since are checked against the stream as it is now:
    // should it have changed since the check above, the state keeps the
    // stream the older items reflect, and the next search rebuilds.
    let retracted = if built || !changed.is_empty() {
        let (retracted, seen) = (sources.retracted_facts)()?;
        if built {
            state.corrections = Some(seen);
        }
        retracted
    } else {
        BTreeSet::new()
    };
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
    for change in &changed {
        let Some(appended) = coverage::read_appended(change, false)? else { return Ok(false) };
        let tail = &appended.data[appended.from - appended.base..];
        let (records, reach) =
            sources.log.parse_tail::<Fact>(&appended.day.path, tail, appended.from, None)?;
        for (offset, fact) in records {
            // A retracted fact counts as not recorded: never a hit.
            if retracted.contains(&fact.fact_id) {
                continue;
            }
            let mut doc = item_doc(
                fields,
                &fact.content,
                fact.memory_key.as_deref(),
                fact.kind,
                micros(&fact.recorded_at),
            );
            doc.add_u64(fields.doc_type, FACT);
            doc.add_text(fields.day, &appended.day.day);
            doc.add_u64(fields.offset, offset);
            writer.add_document(doc).map_err(|err| io_error(dir, err))?;
        }
        let covered = Covered::of_appended(&appended, reach);
        match state.covered.binary_search_by(|(day, _)| day.as_str().cmp(&appended.day.day)) {
            Ok(at) => state.covered[at].1 = covered,
            Err(at) => state.covered.insert(at, (appended.day.day.clone(), covered)),
        }
    }
    if curated_changed {
        writer.delete_term(Term::from_field_u64(fields.doc_type, ENTRY));
        for entry in (sources.active_entries)()? {
            let mut doc = item_doc(
                fields,
                &entry.content,
                entry.memory_key.as_deref(),
                entry.kind,
                micros(&entry.last_seen),
            );
            doc.add_u64(fields.doc_type, ENTRY);
            doc.add_text(fields.entry, &entry.key);
            writer.add_document(doc).map_err(|err| io_error(dir, err))?;
        }
        state.curated = curated_stamp;
    }
    writer.commit().map_err(|err| io_error(dir, err))?;
    writer.wait_merging_threads().map_err(|err| io_error(dir, err))?;
    if let Kept::OnDisk { boot } = kept {
        state.index_files = index_files(dir)?;
        write_state(dir, state, at, boot)?;
    }
    Ok(true)
}
