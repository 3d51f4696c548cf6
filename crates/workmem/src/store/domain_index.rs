//! The domain index: a cache, per daily file, of the ids of the keyed facts
//! of each memory_key, so that `resolve` can compute a domain's observed
//! fact ids (docs/policy.md) without parsing the whole log.
//!
//! Each daily file's entry is trusted only while the file keeps the stamp
//! (inode, size, modification time) it had *before* it was read; a file
//! that changed, appeared or is not in the index is read and validated
//! again, so an append or an edit is always seen, and a corrupt line in a
//! changed file is still refused. Files that disappeared are dropped. The
//! index is written by distill (which reads the whole log anyway) and
//! brought up to date by `resolve`; losing it, or finding it unreadable,
//! only costs a full read. When it describes every daily file as it is
//! (the usual case after a distill), a lookup reads the domain's ids in one
//! pass over the stored bytes, a chunk at a time, without building the
//! index: the index grows with the log (13 MB at 1,000,000 facts).
//!
//! The file is text, one record per line, and ends with `end` so a torn
//! write is never mistaken for a complete index:
//!
//! ```text
//! workmem-domain-index 1 <workspace_id>
//! file <day> <inode> <size> <mtime_s> <mtime_ns>
//! key <memory_key> <fact_id> <fact_id> ...
//! end
//! ```
//!
//! Memory keys and fact ids never hold whitespace (docs/format.md).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::model::fact_line::{FactRecord, FactSummary};
use crate::store::atomic_io::{self, FileStamp};
use crate::store::day_stamps;
use crate::store::fact_log::{DayFile, FactLog, FileRecords, map_in_parallel};

const HEADER: &str = "workmem-domain-index 1";

/// The indexed keyed facts of one daily file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IndexedFile {
    stamp: FileStamp,
    /// The file's `key` lines, newline-terminated, as stored.
    keys: String,
}

impl IndexedFile {
    fn of(file: &FileRecords<'_, FactSummary>) -> IndexedFile {
        // Keyed facts by key, each key's in file order (a stable sort).
        let mut keyed: Vec<(&str, &str)> = file
            .records
            .iter()
            .filter_map(|fact| Some((fact.memory_key()?, fact.fact_id())))
            .collect();
        keyed.sort_by_key(|(key, _)| *key);
        let mut keys = String::with_capacity(
            keyed.iter().map(|(key, id)| key.len() + id.len() + 6).sum::<usize>(),
        );
        for group in keyed.chunk_by(|a, b| a.0 == b.0) {
            keys.push_str("key ");
            keys.push_str(group[0].0);
            for (_, id) in group {
                keys.push(' ');
                keys.push_str(id);
            }
            keys.push('\n');
        }
        IndexedFile { stamp: file.stamp, keys }
    }

    fn ids_of<'a>(&'a self, memory_key: &str) -> impl Iterator<Item = &'a str> {
        let mut wanted = self.keys.lines().filter_map(move |line| {
            let rest = line.strip_prefix("key ")?;
            let ids = rest.strip_prefix(memory_key)?;
            ids.strip_prefix(' ').or(ids.is_empty().then_some(""))
        });
        wanted.next().into_iter().flat_map(str::split_ascii_whitespace)
    }
}

/// The index of a workspace: indexed files by day.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DomainIndex {
    files: BTreeMap<String, IndexedFile>,
}

impl DomainIndex {
    /// Builds the index of files just read.
    pub(crate) fn of(files: &[FileRecords<'_, FactSummary>]) -> DomainIndex {
        let indexed = map_in_parallel(files, |f| (f.day.day.clone(), IndexedFile::of(f)));
        DomainIndex { files: indexed.into_iter().collect() }
    }

    /// Returns whether the index stored at `path` describes exactly these
    /// files (in day order, as it lists them) with these stamps, reading
    /// it a chunk at a time.
    fn describes(path: &Path, workspace_id: &str, files: &[FileRecords<'_, FactSummary>]) -> bool {
        let mut next = files.iter();
        walk(path, workspace_id, |line| match line {
            Line::File(day, stamp) => {
                next.next().is_some_and(|file| file.day.day == day && file.stamp == stamp)
            }
            Line::Key(_) => true,
        }) && next.next().is_none()
    }

    /// Reads the index at `path`; `None` when it is missing, unreadable,
    /// torn or of another workspace (a cache miss, never an error).
    fn load(path: &Path, workspace_id: &str) -> Option<DomainIndex> {
        let mut files: Vec<(String, IndexedFile)> = Vec::new();
        let complete = walk(path, workspace_id, |line| match line {
            Line::File(day, stamp) => {
                files.push((day.to_owned(), IndexedFile { stamp, keys: String::new() }));
                true
            }
            Line::Key(text) => files.last_mut().map(|(_, file)| file.keys.push_str(text)).is_some(),
        });
        let count = files.len();
        let files: BTreeMap<String, IndexedFile> = files.into_iter().collect();
        // A day listed twice is not an index workmem wrote.
        let complete = complete && files.len() == count;
        complete.then_some(DomainIndex { files })
    }

    /// Writes the index to `path` atomically (a cache: not fsynced, see
    /// [`atomic_io::replace_cache`]).
    ///
    /// Errors: [`crate::Error::Io`].
    fn save(&self, path: &Path, workspace_id: &str) -> Result<()> {
        let mut text = String::with_capacity(
            self.files.values().map(|f| f.keys.len() + 64).sum::<usize>() + 64,
        );
        let _ = writeln!(text, "{HEADER} {workspace_id}");
        for (day, file) in &self.files {
            let [inode, size, seconds, nanos] = file.stamp;
            let _ = writeln!(text, "file {day} {inode} {size} {seconds} {nanos}");
            text.push_str(&file.keys);
        }
        text.push_str("end\n");
        atomic_io::replace_cache(path, text.as_bytes())
    }
}

/// A line of a stored index.
enum Line<'a> {
    /// `file <day> <stamp>`.
    File(&'a str, FileStamp),
    /// A `key` line, newline included.
    Key(&'a str),
}

/// How much of a stored index is read at a time: it grows with the log,
/// and each page of a fresh buffer costs a page fault. (Tests read a few
/// bytes at a time, so that lines straddle reads.)
const READ_CHUNK: usize = if cfg!(test) { 5 } else { 64 * 1024 };

/// Walks the index stored at `path` line by line, a chunk at a time.
/// Returns false when it is missing or unreadable, its header, a line or
/// the final `end` is wrong, or `on_line` refuses a line.
fn walk(path: &Path, workspace_id: &str, mut on_line: impl FnMut(Line<'_>) -> bool) -> bool {
    let Ok(Some(mut file)) = atomic_io::open_optional(path) else { return false };
    let header = format!("{HEADER} {workspace_id}\n");
    let (mut pending, mut chunk) = (Vec::new(), vec![0; READ_CHUNK]);
    let (mut started, mut ended) = (false, false);
    loop {
        let read = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        pending.extend_from_slice(&chunk[..read]);
        // Whole lines only (a newline never falls inside a character).
        let Some(last) = memchr::memrchr(b'\n', &pending) else { continue };
        let Ok(text) = std::str::from_utf8(&pending[..=last]) else { return false };
        // (The `memchr` crate's search, vectorised: `str::split_inclusive`
        // searched each of the index's lines apart, 35,000 at 100k facts,
        // and cost a resolution about 0.7 ms.)
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
            let line = &text[start..=end];
            start = end + 1;
            let fine = if !started {
                started = true;
                line == header
            } else if ended {
                // `end` must be the last line: a torn file never ends so.
                false
            } else if line == "end\n" {
                ended = true;
                true
            } else {
                match line.strip_prefix("file ") {
                    Some(rest) => {
                        file_line(rest).is_some_and(|(day, stamp)| on_line(Line::File(day, stamp)))
                    }
                    None => line.starts_with("key ") && on_line(Line::Key(line)),
                }
            };
            if !fine {
                return false;
            }
        }
        pending.drain(..=last);
    }
    ended && pending.is_empty()
}

/// Parses `<day> <inode> <size> <mtime_s> <mtime_ns>`.
fn file_line(rest: &str) -> Option<(&str, FileStamp)> {
    let mut fields = rest.split_ascii_whitespace();
    let day = fields.next()?;
    let mut stamp: FileStamp = [0; 4];
    for slot in &mut stamp {
        *slot = fields.next()?.parse().ok()?;
    }
    fields.next().is_none().then_some((day, stamp))
}

/// The domain index of one memory directory, `.domain-index`: what the
/// rest of the library asks of it (whether it describes the files just
/// read, a domain's ids, a save). It holds the file's path and the
/// workspace id its header must name, and keeps the index's invariant
/// itself: an entry is trusted only while its daily file keeps the stamp
/// it recorded, an index of another workspace or without its `end` line
/// is no index, and a save is a cache write (never fsynced, never an
/// error: losing the index only costs a full read).
#[derive(Debug, Clone)]
pub(crate) struct DomainIndexFile {
    path: PathBuf,
    workspace_id: String,
}

impl DomainIndexFile {
    /// The index at `path`, of the workspace `workspace_id`.
    pub(crate) fn new(path: PathBuf, workspace_id: String) -> DomainIndexFile {
        DomainIndexFile { path, workspace_id }
    }

    /// Returns whether the stored index describes exactly `files` (in day
    /// order) with their stamps.
    pub(crate) fn describes(&self, files: &[FileRecords<'_, FactSummary>]) -> bool {
        DomainIndex::describes(&self.path, &self.workspace_id, files)
    }

    /// Returns the ids of every fact in `log` with `memory_key`, reading
    /// only the daily files the stored index does not describe as they are
    /// now; see [`Lookup`].
    ///
    /// Errors: as [`FactLog::read_file`] for the files it reads.
    pub(crate) fn lookup(&self, log: &FactLog, memory_key: &str) -> Result<Lookup> {
        domain_fact_ids(log, &self.path, &self.workspace_id, memory_key)
    }

    /// Saves `index` in place of the stored one. Only a cache: a failure
    /// to write it is not an error, the next reader reads the log instead.
    pub(crate) fn save(&self, index: &DomainIndex) {
        let _ = index.save(&self.path, &self.workspace_id);
    }
}

/// The ids of a domain's facts, and the index brought up to date when
/// files had to be read.
#[derive(Debug)]
pub(crate) struct Lookup {
    /// Every fact id in the log with the memory key (unsorted; an id
    /// repeated across files appears once per file).
    pub ids: Vec<String>,
    /// The index to save when it changed ([`DomainIndexFile::save`]); the
    /// caller saves it only once its own work succeeded, so a refused
    /// operation writes nothing.
    pub updated: Option<DomainIndex>,
}

/// Returns the ids of every fact in `log` with `memory_key`, reading only
/// the daily files the index at `index_path` does not describe as they are
/// now.
///
/// Errors: as [`FactLog::read_file`] for the files it reads.
fn domain_fact_ids(
    log: &FactLog,
    index_path: &Path,
    workspace_id: &str,
    memory_key: &str,
) -> Result<Lookup> {
    let stamped = day_stamps::scan(log, None)?.map(|stamped| stamped.days).unwrap_or_default();
    let days: Vec<DayFile> = stamped
        .iter()
        .map(|(day, _)| {
            let day = String::from_utf8_lossy(day).into_owned();
            DayFile { path: log.path_for_day(&day), day }
        })
        .collect();
    let current: HashMap<&str, Option<FileStamp>> =
        days.iter().zip(&stamped).map(|(file, (_, stamp))| (file.day.as_str(), *stamp)).collect();
    if let Some(ids) = fresh_ids(index_path, workspace_id, &current, memory_key) {
        return Ok(Lookup { ids, updated: None });
    }
    let index = DomainIndex::load(index_path, workspace_id).unwrap_or_default();
    refresh(log, index, &days, &current, memory_key)
}

/// Returns the ids of `memory_key` straight from the index stored at
/// `path` when it describes exactly the daily files `current` lists, each
/// with its current stamp: nothing but the domain's `key` lines is kept.
/// `None` when any file changed, appeared or went away, or the index is
/// not complete.
fn fresh_ids<'a>(
    path: &Path,
    workspace_id: &str,
    current: &HashMap<&'a str, Option<FileStamp>>,
    memory_key: &str,
) -> Option<Vec<String>> {
    let mut described: HashSet<&'a str> = HashSet::with_capacity(current.len());
    let mut ids = Vec::new();
    let complete = walk(path, workspace_id, |line| match line {
        // (Each day once: an index listing a day twice is not one workmem
        // wrote.)
        Line::File(day, stamp) => current
            .get_key_value(day)
            .is_some_and(|(listed, now)| *now == Some(stamp) && described.insert(listed)),
        Line::Key(line) => {
            if let Some(found) = key_ids(line, memory_key) {
                ids.extend(found.map(str::to_owned));
            }
            true
        }
    });
    (complete && described.len() == current.len()).then_some(ids)
}

/// Returns the fact ids of a `key` line (newline included) when it is the
/// line of `memory_key`.
fn key_ids<'a>(line: &'a str, memory_key: &str) -> Option<std::str::SplitAsciiWhitespace<'a>> {
    let rest = line.strip_prefix("key ")?.strip_prefix(memory_key)?;
    let ids = rest.strip_suffix('\n').unwrap_or(rest);
    (ids.is_empty() || ids.starts_with(' ')).then(|| ids.split_ascii_whitespace())
}

/// Brings `index` up to date with the daily files (reading those whose
/// stamp in `current` it does not hold) and returns the ids of
/// `memory_key` with the index to save.
///
/// Errors: as [`FactLog::read_file`] for the files it reads.
fn refresh(
    log: &FactLog,
    mut index: DomainIndex,
    days: &[DayFile],
    current: &HashMap<&str, Option<FileStamp>>,
    memory_key: &str,
) -> Result<Lookup> {
    let mut stale: Vec<DayFile> = Vec::new();
    for day in days {
        let now = current.get(day.day.as_str()).copied().flatten();
        if index.files.get(&day.day).map(|f| f.stamp) != now {
            stale.push(day.clone());
        }
    }
    let listed: HashSet<&str> = days.iter().map(|d| d.day.as_str()).collect();
    let before = index.files.len();
    index.files.retain(|day, _| listed.contains(day.as_str()));
    let mut changed = index.files.len() != before;
    for day in &stale {
        // Read below, or gone since the listing.
        changed |= index.files.remove(&day.day).is_some();
    }
    let read = log.read_files::<FactSummary>(&stale)?;
    for file in read.files() {
        index.files.insert(file.day.day.clone(), IndexedFile::of(&file));
        changed = true;
    }
    let ids = index.files.values().flat_map(|f| f.ids_of(memory_key)).map(str::to_owned).collect();
    Ok(Lookup { ids, updated: changed.then_some(index) })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn indexed(keys: &str) -> IndexedFile {
        IndexedFile { stamp: [1, 2, 3, 4], keys: keys.to_owned() }
    }

    #[test]
    fn a_file_is_indexed_by_key_in_key_order_with_its_ids_in_file_order() {
        use crate::model::fact::Kind;
        use crate::store::fact_log::DayFile;
        let at = jiff::Timestamp::from_second(1_700_000_000).unwrap();
        let fact = |id: &str, key: Option<&str>| {
            FactSummary::from_fields(id, "c", key, "", at, "agent", Kind::Decision, 3).unwrap()
        };
        let records = vec![
            fact("f1", Some("db")),
            fact("f2", None),
            fact("f3", Some("api")),
            fact("f4", Some("db")),
            fact("f5", Some("api.v2")),
            fact("f6", Some("api")),
        ];
        let day = DayFile { day: "2026-01-01".to_owned(), path: "2026-01-01.jsonl".into() };
        let file = FileRecords {
            day: &day,
            stamp: [1, 2, 3, 4],
            records: &records,
            covered: None,
            dropped: 0,
        };
        let indexed = IndexedFile::of(&file);
        assert_eq!(indexed.keys, "key api f3 f6\nkey api.v2 f5\nkey db f1 f4\n");
        assert_eq!(indexed.ids_of("api").collect::<Vec<_>>(), ["f3", "f6"]);
        let unkeyed = FileRecords { records: &[fact("f7", None)], ..file };
        assert_eq!(IndexedFile::of(&unkeyed).keys, "");
    }

    #[test]
    fn a_key_is_matched_whole_never_by_prefix() {
        let file = indexed("key db a1 a2\nkey db.engine b1\nkey dbx c1\n");
        assert_eq!(file.ids_of("db").collect::<Vec<_>>(), ["a1", "a2"]);
        assert_eq!(file.ids_of("db.engine").collect::<Vec<_>>(), ["b1"]);
        assert_eq!(file.ids_of("d").count(), 0);
    }

    #[test]
    fn save_then_load_round_trips_and_torn_or_foreign_files_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let mut index = DomainIndex::default();
        index.files.insert("2026-01-01".into(), indexed("key db a1 a2\n"));
        index.files.insert("2026-01-02".into(), indexed(""));
        index.save(&path, "ws").unwrap();
        assert_eq!(DomainIndex::load(&path, "ws"), Some(index));
        assert_eq!(DomainIndex::load(&path, "other"), None);
        let full = std::fs::read(&path).unwrap();
        for cut in 0..full.len() {
            std::fs::write(&path, &full[..cut]).unwrap();
            assert_eq!(DomainIndex::load(&path, "ws"), None, "a cut at {cut} was accepted");
        }
    }

    #[test]
    fn a_fresh_index_answers_from_its_bytes_only_when_it_describes_every_file_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let mut index = DomainIndex::default();
        index.files.insert("2026-01-01".into(), indexed("key db a1 a2\nkey db.engine b1\n"));
        index.files.insert("2026-01-02".into(), indexed("key db a3\nkey dbx c1\n"));
        index.save(&path, "ws").unwrap();
        let same = Some([1, 2, 3, 4]);
        let current: HashMap<&str, Option<FileStamp>> =
            [("2026-01-01", same), ("2026-01-02", same)].into();
        assert_eq!(fresh_ids(&path, "ws", &current, "db").unwrap(), ["a1", "a2", "a3"]);
        assert_eq!(fresh_ids(&path, "ws", &current, "db.engine").unwrap(), ["b1"]);
        assert_eq!(fresh_ids(&path, "ws", &current, "d").unwrap(), Vec::<String>::new());
        assert_eq!(fresh_ids(&path, "other", &current, "db"), None);
        // A file changed, appeared, went away: a miss.
        let changed: HashMap<&str, Option<FileStamp>> =
            [("2026-01-01", same), ("2026-01-02", Some([1, 2, 3, 5]))].into();
        assert_eq!(fresh_ids(&path, "ws", &changed, "db"), None);
        let more: HashMap<&str, Option<FileStamp>> =
            [("2026-01-01", same), ("2026-01-02", same), ("2026-01-03", same)].into();
        assert_eq!(fresh_ids(&path, "ws", &more, "db"), None);
        let fewer: HashMap<&str, Option<FileStamp>> = [("2026-01-01", same)].into();
        assert_eq!(fresh_ids(&path, "ws", &fewer, "db"), None);
    }
}
