//! The append-only fact log: `daily/YYYY-MM-DD.jsonl`, one fact per line,
//! each file named by the UTC day of its facts' `recorded_at`.
//!
//! Appends are one `write` of whole lines on an `O_APPEND` descriptor, then
//! fsync (see [`atomic_io::append`]). Reads apply the partial-tail rule: an
//! unterminated final line is used when it is a complete valid fact (the
//! next append keeps it too) and ignored otherwise; anything invalid before
//! it is a corruption error naming the file and line. Files whose names are
//! not `YYYY-MM-DD.jsonl` are ignored. This module never rewrites a line.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use foldhash::{HashSet, HashSetExt};

use crate::error::{Error, IoContext, Location, Result};
use crate::model::canon;
use crate::model::fact::Fact;
use crate::model::fact_line::{FactRecord, FactSummary, LineError};
use crate::store::atomic_io::{self, FileStamp};
use crate::store::block_chain::Covered;
use crate::store::corrections::Correction;
use crate::store::names::{DAY_EXTENSION, is_day_name};

/// The daily fact log of one workspace.
#[derive(Debug, Clone)]
pub(crate) struct FactLog {
    dir: PathBuf,
    workspace_id: String,
}

/// One daily log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DayFile {
    /// `YYYY-MM-DD`.
    pub day: String,
    /// Its path.
    pub path: PathBuf,
}

impl FactLog {
    /// Returns the log stored in `daily_dir` for `workspace_id`.
    pub(crate) fn new(daily_dir: PathBuf, workspace_id: String) -> FactLog {
        FactLog { dir: daily_dir, workspace_id }
    }

    /// Returns the `daily/` directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Returns the path of the log of `day` (`YYYY-MM-DD`).
    pub(crate) fn path_for_day(&self, day: &str) -> PathBuf {
        self.dir.join(format!("{day}{DAY_EXTENSION}"))
    }

    /// Returns the daily files, oldest first.
    ///
    /// Errors: [`Error::Io`]; [`Error::Corrupt`] when `daily/` is a symlink.
    pub(crate) fn days(&self) -> Result<Vec<DayFile>> {
        self.list().map(|days| days.into_iter().map(|(day, _)| day).collect())
    }

    /// Lists the daily files, oldest first, with their directory entries.
    fn list(&self) -> Result<Vec<(DayFile, fs::DirEntry)>> {
        atomic_io::refuse_symlink(&self.dir)?;
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(err).at(&self.dir),
        };
        let mut days = Vec::new();
        for entry in entries {
            let entry = entry.at(&self.dir)?;
            let name = entry.file_name();
            let Some(day) = name.to_str().and_then(|n| n.strip_suffix(DAY_EXTENSION)) else {
                continue;
            };
            if is_day_name(day) {
                days.push((DayFile { day: day.to_owned(), path: entry.path() }, entry));
            }
        }
        days.sort_by(|a, b| a.0.day.cmp(&b.0.day));
        Ok(days)
    }

    /// Reads the facts of one daily file in file order (empty if missing);
    /// an id written twice in it counts once, at its first line.
    ///
    /// Errors: [`Error::Corrupt`] naming file and line, [`Error::Scope`] for
    /// a fact of another workspace, [`Error::Io`].
    pub(crate) fn read_file(&self, path: &Path) -> Result<Vec<Fact>> {
        let mut facts = self.read_records(path)?;
        drop_repeated_ids(&mut facts);
        Ok(facts)
    }

    /// Reads the facts of one daily file as [`FactLog::read_file`] does,
    /// with the file's stamp taken before the read; only the bytes the
    /// stamp counts are parsed, so the facts are exactly those of the file
    /// the stamp describes even when an append lands during the read.
    /// `None` when the file does not exist.
    ///
    /// Errors: as [`FactLog::read_file`].
    pub(crate) fn read_file_stamped(&self, path: &Path) -> Result<Option<(Vec<Fact>, FileStamp)>> {
        let Some((data, stamp)) = atomic_io::read_stamped(path)? else { return Ok(None) };
        let counted = usize::try_from(stamp[1]).unwrap_or(usize::MAX).min(data.len());
        let mut facts: Vec<Fact> = self.parse_records(path, &data[..counted])?;
        drop_repeated_ids(&mut facts);
        Ok(Some((facts, stamp)))
    }

    /// Parses `data`, the bytes of a daily file from elsewhere than the
    /// log's directory (a git object, named `path` in messages), with the
    /// readers' rules: the facts [`FactLog::read_file`] would return.
    ///
    /// Errors: as [`FactLog::read_file`].
    pub(crate) fn parse_file(&self, path: &Path, data: &[u8]) -> Result<Vec<Fact>> {
        let mut facts: Vec<Fact> = self.parse_records(path, data)?;
        drop_repeated_ids(&mut facts);
        Ok(facts)
    }

    fn read_records<T: FactRecord>(&self, path: &Path) -> Result<Vec<T>> {
        match atomic_io::read_optional(path)? {
            Some(data) => self.parse_records(path, &data),
            None => Ok(Vec::new()),
        }
    }

    fn parse_records<T: FactRecord>(&self, path: &Path, data: &[u8]) -> Result<Vec<T>> {
        // One record a line: sized once (the records of the whole log are
        // held at once).
        let mut records = Vec::with_capacity(memchr::memchr_iter(b'\n', data).count() + 1);
        for (number, line, terminated) in atomic_io::lines(data) {
            match T::parse_for(line, &self.workspace_id) {
                Ok(record) => records.push(record),
                Err(err) => self.refuse_line(path, (number, line), err, terminated)?,
            }
        }
        Ok(records)
    }

    /// Returns `data`, the bytes of the daily file `path`, with the line
    /// of each fact `record` (a redaction) names replaced by the fact's
    /// tombstone, when the line's SHA-256 (without its newline) is the one
    /// the record holds for it; every other byte is kept, in order. A line
    /// that is already the tombstone is kept: the rewrite is idempotent.
    ///
    /// Errors: as [`FactLog::read_file`].
    pub(crate) fn with_tombstones(
        &self,
        path: &Path,
        data: &[u8],
        record: &Correction,
    ) -> Result<Vec<u8>> {
        let hashes = record.line_sha256.as_ref();
        let mut out = Vec::with_capacity(data.len());
        for (index, chunk) in data.split_inclusive(|&b| b == b'\n').enumerate() {
            let line = chunk.strip_suffix(b"\n").unwrap_or(chunk);
            // Only the lines of the files a redaction names are read here:
            // each is parsed (a hand-written line may lay its keys out in
            // any order).
            let fact = match Fact::parse_for(line, &self.workspace_id) {
                Ok(fact) => Some(fact),
                Err(err) => {
                    let terminated = chunk.ends_with(b"\n");
                    self.refuse_line(path, (index + 1, line), err, terminated)?;
                    None
                }
            };
            let tombstone = fact.and_then(|fact| {
                let hash = hashes?.get(&fact.fact_id)?;
                let named = record.fact_ids.contains(&fact.fact_id) && fact.redacted_by.is_none();
                (named && canon::sha256_hex(line) == *hash)
                    .then(|| fact.tombstone(&record.event_id, hash).to_line())
            });
            match tombstone {
                Some(tombstone) => out.extend_from_slice(tombstone.as_bytes()),
                None => out.extend_from_slice(chunk),
            }
        }
        Ok(out)
    }

    /// Calls `each` with every fact of the log, oldest file first: its
    /// daily file, its line (without the newline) and the fact read from
    /// it. A whole-log pass for the rare acts that must see every line (a
    /// redaction).
    ///
    /// Errors: as [`FactLog::read_file`].
    pub(crate) fn each_line(
        &self,
        mut each: impl FnMut(&DayFile, &[u8], &FactSummary),
    ) -> Result<()> {
        for day in self.days()? {
            let Some(data) = atomic_io::read_optional(&day.path)? else { continue };
            for (number, line, terminated) in atomic_io::lines(&data) {
                match FactSummary::parse_for(line, &self.workspace_id) {
                    Ok(fact) => each(&day, line, &fact),
                    Err(err) => self.refuse_line(&day.path, (number, line), err, terminated)?,
                }
            }
        }
        Ok(())
    }

    /// What line `number` of `path` (its bytes given beside it), which did
    /// not parse (`err`), means:
    /// nothing for an invalid unterminated final line (a torn append,
    /// never acknowledged: ignored), else the error naming the line.
    ///
    /// Errors: [`Error::Scope`] for a fact of another workspace,
    /// [`Error::Corrupt`] for an invalid line.
    fn refuse_line(
        &self,
        path: &Path,
        (number, line): (usize, &[u8]),
        err: LineError,
        terminated: bool,
    ) -> Result<()> {
        match err {
            LineError::Scope(found) => Err(Error::Scope {
                location: Location::line(path, number),
                found,
                expected: self.workspace_id.clone(),
            }),
            LineError::Invalid(_) if !terminated => Ok(()),
            LineError::Invalid(damage) => {
                Err(super::corrupt_in(line, Location::line(path, number), damage))
            }
        }
    }

    /// Parses `tail`, the bytes of a daily file from offset `base` (a line
    /// start after `lines_before` lines, `None` when they were not
    /// counted), with the readers' rules, each record with the file offset
    /// of its line; also returns how far the records reach in the file:
    /// past the last terminated line, or to the end when an unterminated
    /// final line is a complete valid record (it is used, like the readers
    /// use it). An unterminated invalid fragment is left out of both.
    ///
    /// Errors: as [`FactLog::read_file`], the line numbered in the whole
    /// file (the lines before `base` counted then, when they were not).
    pub(crate) fn parse_tail<T: FactRecord>(
        &self,
        path: &Path,
        tail: &[u8],
        base: usize,
        lines_before: Option<usize>,
    ) -> Result<(Vec<(u64, T)>, usize)> {
        let mut records = Vec::new();
        let mut offset = 0;
        let mut reach = 0;
        let mut number = 0;
        while offset < tail.len() {
            number += 1;
            let rest = &tail[offset..];
            let (line, terminated) = match memchr::memchr(b'\n', rest) {
                Some(pos) => (&rest[..pos], true),
                None => (rest, false),
            };
            let start = offset;
            offset += line.len() + usize::from(terminated);
            if line.iter().all(u8::is_ascii_whitespace) {
                if terminated {
                    reach = offset;
                }
                continue;
            }
            match T::parse_for(line, &self.workspace_id) {
                Ok(record) => {
                    records.push(((base + start) as u64, record));
                    reach = offset;
                }
                Err(err) => {
                    let before = lines_before.unwrap_or_else(|| lines_in(path, base));
                    self.refuse_line(path, (before + number, line), err, terminated)?;
                }
            }
        }
        Ok((records, base + reach))
    }

    /// Reads the record whose line starts at byte `offset` of the daily
    /// file of `day`; `None` when the file is missing, or the offset is
    /// past its end or not at a line start holding a valid record.
    ///
    /// Errors: [`Error::Scope`] for a record of another workspace;
    /// [`Error::Io`].
    pub(crate) fn read_at<T: FactRecord>(&self, day: &str, offset: u64) -> Result<Option<T>> {
        use std::io::{BufRead, Seek};
        let path = self.path_for_day(day);
        let Some(mut file) = atomic_io::open_optional(&path)? else { return Ok(None) };
        if offset > 0 {
            // The line must start right after a newline.
            file.seek(io::SeekFrom::Start(offset - 1)).at(&path)?;
        }
        let mut reader = io::BufReader::new(file);
        let mut line = Vec::new();
        if offset > 0 {
            reader.read_until(b'\n', &mut line).at(&path)?;
            if line != b"\n" {
                return Ok(None);
            }
            line.clear();
        }
        reader.read_until(b'\n', &mut line).at(&path)?;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        match T::parse_for(&line, &self.workspace_id) {
            Ok(record) => Ok(Some(record)),
            Err(LineError::Scope(found)) => Err(Error::Scope {
                location: Location::file(&path),
                found,
                expected: self.workspace_id.clone(),
            }),
            Err(LineError::Invalid(_)) => Ok(None),
        }
    }

    /// Reads every fact, ordered by (recorded_at instant, fact_id). Files
    /// are parsed in parallel. A fact id written more than once counts once
    /// (see [`LogRead::merge`]).
    ///
    /// Errors: as [`FactLog::read_file`].
    pub(crate) fn read_all(&self) -> Result<Vec<Fact>> {
        Ok(self.read_files(&self.days()?)?.merge())
    }

    /// Reads and validates the given daily files in parallel, each with
    /// the stamp it had before it was read (missing files are skipped);
    /// each file's records are sorted by (recorded_at instant, fact_id).
    ///
    /// Errors: as [`FactLog::read_file`].
    pub(crate) fn read_files<T: FactRecord>(&self, days: &[DayFile]) -> Result<LogRead<T>> {
        self.read_files_with(days, false)
    }

    /// Reads the given daily files like [`FactLog::read_files`], and with
    /// `cover` also what a cache needs to read only their appends later
    /// ([`FileRecords::covered`]).
    ///
    /// Errors: as [`FactLog::read_file`].
    pub(crate) fn read_files_with<T: FactRecord>(
        &self,
        days: &[DayFile],
        cover: bool,
    ) -> Result<LogRead<T>> {
        let read = |day: &DayFile, into: &mut LogRead<T>| -> Result<()> {
            let Some((data, stamp)) = atomic_io::read_stamped(&day.path)? else { return Ok(()) };
            let mut records: Vec<T> = self.parse_records(&day.path, &data)?;
            let parsed = records.len();
            if !records.is_sorted_by(|a, b| order(a, b).is_le()) {
                // Sorting loses the line order that decides which of two
                // records under one id counts: settle that first. A sorted
                // file (the usual case: appends arrive in time order) is
                // in line order already, and `merge` keeps its first.
                drop_repeated_ids(&mut records);
                records.sort_unstable_by(order);
            }
            let covered = cover.then(|| {
                // The records reach the end, or the last newline when an
                // unterminated final fragment is not a record.
                let tail = memchr::memrchr(b'\n', &data).map_or(0, |n| n + 1);
                let reach = if tail == data.len()
                    || T::parse_for(&data[tail..], &self.workspace_id).is_ok()
                {
                    data.len()
                } else {
                    tail
                };
                Covered::of(stamp, &data, reach)
            });
            let dropped = parsed - records.len();
            into.push(day.clone(), stamp, covered, dropped, records);
            Ok(())
        };
        // Each core reads runs of consecutive files into one list of its
        // own, and the runs are joined in order: the records of the whole
        // log are held once, plus one run, never once per file and again
        // joined (a file's list would be freed to the allocator, not to
        // the system, and the joined list taken beside them).
        let runs: Vec<&[DayFile]> =
            days.chunks(days.len().div_ceil(threads() * RUNS_PER_CORE).max(1)).collect();
        let runs = map_in_parallel(&runs, |run| {
            let mut into = LogRead { records: Vec::new(), files: Vec::with_capacity(run.len()) };
            run.iter().try_for_each(|day| read(day, &mut into)).map(|()| into)
        });
        let mut all = LogRead {
            records: Vec::with_capacity(runs.iter().flatten().map(|run| run.records.len()).sum()),
            files: Vec::with_capacity(days.len()),
        };
        for run in runs {
            let run = run?;
            let offset = all.records.len();
            all.files.extend(run.files.into_iter().map(|file| FileRead {
                records: file.records.start + offset..file.records.end + offset,
                ..file
            }));
            all.records.extend(run.records);
        }
        Ok(all)
    }

    /// Returns up to `limit` most recent facts accepted by `keep`, oldest of
    /// them first, reading the newest daily files first and stopping as soon
    /// as older files cannot change the answer.
    ///
    /// Errors: as [`FactLog::read_file`], for the files it opens.
    pub(crate) fn recent(&self, limit: usize, keep: impl Fn(&Fact) -> bool) -> Result<Vec<Fact>> {
        self.recent_before(limit, None, keep)
    }

    /// Returns up to `limit` most recent facts accepted by `keep` that come
    /// before `before` in the log's order ((recorded_at instant, fact_id);
    /// `None`: no bound), oldest of them first. Files of days after
    /// `before`'s are not read.
    ///
    /// Errors: as [`FactLog::read_file`], for the files it opens.
    pub(crate) fn recent_before(
        &self,
        limit: usize,
        before: Option<(jiff::Timestamp, &str)>,
        keep: impl Fn(&Fact) -> bool,
    ) -> Result<Vec<Fact>> {
        let mut found: Vec<Fact> = Vec::new();
        if limit == 0 {
            return Ok(found);
        }
        let last_day =
            before.map(|(at, _)| crate::model::stamp::Stamp::from_timestamp(at).utc_day());
        for day in self.days()?.into_iter().rev() {
            if last_day.as_deref().is_some_and(|last| day.day.as_str() > last) {
                continue;
            }
            let mut facts: Vec<Fact> = self
                .read_file(&day.path)?
                .into_iter()
                .filter(|f| {
                    before.is_none_or(|bound| (f.recorded_at.instant(), f.fact_id.as_str()) < bound)
                })
                .filter(&keep)
                .collect();
            facts.sort_by(|a, b| {
                (a.recorded_at.instant(), &a.fact_id).cmp(&(b.recorded_at.instant(), &b.fact_id))
            });
            // Every fact of a newer file is newer than those of older files.
            let take = facts.len().min(limit - found.len());
            let mut newest: Vec<Fact> = facts.split_off(facts.len() - take);
            newest.append(&mut found);
            found = newest;
            if found.len() == limit {
                break;
            }
        }
        Ok(found)
    }

    /// Appends facts durably: for each daily file they belong to, one write
    /// of all its lines and one fsync (the fsyncs of a batch run together),
    /// then one fsync of `daily/` if a file was created. The memory and
    /// `daily/` directories must exist. Returns what was written to each
    /// file and, with `placed`, the ids written and where the bytes landed,
    /// for the id index to count them as read and for the append trail.
    /// `head`, when given, judges each target file's first complete line
    /// (with the file's path) before anything is written to it, as
    /// [`atomic_io::AppendOptions::head`] says: for a caller appending to
    /// one file, whose check would otherwise open and read it apart.
    ///
    /// Errors: [`Error::Io`], [`Error::Corrupt`] for a symlinked file; what
    /// `head` returns.
    pub(crate) fn append(
        &self,
        facts: &[Fact],
        placed: bool,
        head: Option<FileHeadCheck<'_>>,
    ) -> Result<Vec<Written>> {
        atomic_io::refuse_symlink(&self.dir)?;
        let mut by_day: BTreeMap<String, Written> = BTreeMap::new();
        for fact in facts {
            let written =
                by_day.entry(fact.recorded_at.utc_day()).or_insert_with_key(|day| Written {
                    day: day.clone(),
                    bytes: String::new(),
                    records: Vec::new(),
                    placement: None,
                });
            if placed {
                written.records.push((written.bytes.len() as u64, fact.fact_id.clone()));
            }
            written.bytes.push_str(&fact.to_line());
        }
        let mut written: Vec<Written> = by_day.into_values().collect();
        let mut pending = Vec::with_capacity(written.len());
        for file in &mut written {
            let path = &self.path_for_day(&file.day);
            let is_record = |fragment: &[u8]| Fact::parse_line(fragment).is_ok();
            let check = head.map(|head| move |line: Option<&[u8]>| head(path, line));
            let options = atomic_io::AppendOptions {
                place: placed,
                head: check.as_ref().map(|check| check as atomic_io::HeadCheck<'_>),
            };
            let append =
                atomic_io::append_unsynced(path, file.bytes.as_bytes(), &is_record, options)?;
            file.placement = append.placement;
            pending.push(append);
        }
        let created = pending.iter().any(|p| p.created);
        atomic_io::sync_all(pending)?;
        if created {
            atomic_io::sync_dir(&self.dir)?;
        }
        Ok(written)
    }
}

/// The lines in the first `len` bytes of the file at `path`, for the
/// number of a line refused after them (0 when they cannot be read).
fn lines_in(path: &Path, len: usize) -> usize {
    let Ok(Some(data)) = atomic_io::read_optional(path) else { return 0 };
    memchr::memchr_iter(b'\n', &data[..len.min(data.len())]).count()
}

/// A judge of a daily file's first complete line, given the file's path
/// ([`FactLog::append`]).
pub(crate) type FileHeadCheck<'a> = &'a dyn Fn(&Path, Option<&[u8]>) -> Result<()>;

/// What one append wrote to one daily file.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    /// The file's day.
    pub day: String,
    /// The lines written, in one write.
    pub bytes: String,
    /// The id of each record written, with the offset of its line in
    /// `bytes`.
    pub records: Vec<(u64, String)>,
    /// Where the bytes landed.
    pub placement: Option<atomic_io::Placement>,
}

impl Written {
    /// Where the bytes landed, when nobody else wrote to the file between
    /// its two stamps: the same inode, the bytes written where the file
    /// ended, and the file as long after the write as before plus them.
    pub(crate) fn alone(&self) -> Option<atomic_io::Placement> {
        self.placement.filter(|placement| placement.alone(self.bytes.len()))
    }
}

/// How many runs of consecutive files each core is given by
/// [`FactLog::read_files_with`]: enough that a run of large files does
/// not leave the other cores idle.
const RUNS_PER_CORE: usize = 8;

/// What a read of daily files found: the records of every file, file after
/// file (oldest first), and what was read of each.
#[derive(Debug)]
pub(crate) struct LogRead<T> {
    records: Vec<T>,
    files: Vec<FileRead>,
}

/// What was read of one daily file.
#[derive(Debug)]
struct FileRead {
    day: DayFile,
    stamp: FileStamp,
    covered: Option<Covered>,
    dropped: usize,
    /// Where its records are in [`LogRead::records`].
    records: std::ops::Range<usize>,
}

/// The records of one daily file and the file's stamp before the read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileRecords<'a, T> {
    /// The file.
    pub day: &'a DayFile,
    /// Its identity when it was read ([`atomic_io::read_stamped`]).
    pub stamp: FileStamp,
    /// Its valid records, by (recorded_at instant, fact_id).
    pub records: &'a [T],
    /// What was read, when asked ([`FactLog::read_files_with`]).
    pub covered: Option<&'a Covered>,
    /// Records dropped because an earlier line of the file has their id.
    pub dropped: usize,
}

impl<T> LogRead<T> {
    /// Adds the file `day` read with `stamp`, after the files before it.
    fn push(
        &mut self,
        day: DayFile,
        stamp: FileStamp,
        covered: Option<Covered>,
        dropped: usize,
        records: Vec<T>,
    ) {
        let start = self.records.len();
        self.records.extend(records);
        let records = start..self.records.len();
        self.files.push(FileRead { day, stamp, covered, dropped, records });
    }

    /// Returns what was read of each file, oldest first.
    pub(crate) fn files(&self) -> Vec<FileRecords<'_, T>> {
        self.files
            .iter()
            .map(|file| FileRecords {
                day: &file.day,
                stamp: file.stamp,
                records: &self.records[file.records.clone()],
                covered: file.covered.as_ref(),
                dropped: file.dropped,
            })
            .collect()
    }

    /// Returns the records of every file, file after file, for a test that
    /// builds a read.
    #[cfg(test)]
    pub(crate) fn of_files(files: Vec<(DayFile, FileStamp, Vec<T>)>) -> LogRead<T> {
        let mut read = LogRead { records: Vec::new(), files: Vec::new() };
        for (day, stamp, records) in files {
            read.push(day, stamp, None, 0, records);
        }
        read
    }
}

impl<T: FactRecord> LogRead<T> {
    /// Merges the records of the files into one list ordered by
    /// (recorded_at instant, fact_id). A fact id written more than once
    /// (by hand, or by another tool) counts once: the first record in
    /// (file name, line) order is kept and the others are ignored, whether
    /// or not they are identical (`verify` reports those that differ).
    /// Reads never fail on them, so no duplicate can make a workspace
    /// unreadable.
    pub(crate) fn merge(self) -> Vec<T> {
        // Each file is sorted (see `read_files`), and holds one day, so the
        // files in day order usually are too: the whole is sorted when each
        // file starts at or after the end of the one before. Dropping
        // records keeps it sorted; a fact filed under another day needs the
        // full sort.
        let LogRead { mut records, files } = self;
        let mut sorted = true;
        let mut last: Option<&T> = None;
        for file in files.iter().filter(|file| !file.records.is_empty()) {
            let first = &records[file.records.start];
            sorted &= last.is_none_or(|last| order(last, first).is_le());
            last = records.get(file.records.end - 1);
        }
        // Each file's records are in line order among equal ids (see
        // `read_files`), and files come oldest first: the first record of
        // an id met here is the one that counts.
        drop_repeated_ids(&mut records);
        if !sorted {
            records.sort_unstable_by(order);
        }
        records
    }
}

/// Records from which [`drop_repeated_ids`] looks for repeated ids on
/// every core.
const PARALLEL_RECORDS: usize = 1 << 16;

/// Removes every record whose id an earlier record already has.
fn drop_repeated_ids<T: FactRecord>(records: &mut Vec<T>) {
    use std::hash::BuildHasher;
    // A set of 64-bit hashes is half the size of a set of the ids and
    // never reads them back; a hash met twice is checked exactly below.
    let hasher = foldhash::quality::FixedState::default();
    let parts = if records.len() < PARALLEL_RECORDS { 1 } else { threads() };
    // The hashes, each part of the records on its own core; then the
    // hashes met twice, each core keeping the hashes of its own residue
    // (a set of 1/parts of them, and no hash in two sets).
    let chunks: Vec<&[T]> = records.chunks(records.len().div_ceil(parts).max(1)).collect();
    let hashes: Vec<u64> = map_in_parallel(&chunks, |chunk| {
        chunk.iter().map(|record| hasher.hash_one(record.fact_id())).collect::<Vec<u64>>()
    })
    .concat();
    let residues: Vec<u64> = (0..parts as u64).collect();
    let suspects: HashSet<u64> = map_in_parallel(&residues, |&residue| {
        let mut seen: HashSet<u64> = HashSet::with_capacity(hashes.len() / parts);
        hashes
            .iter()
            .filter(|&&hash| hash % parts as u64 == residue && !seen.insert(hash))
            .copied()
            .collect::<Vec<u64>>()
    })
    .concat()
    .into_iter()
    .collect();
    if suspects.is_empty() {
        return;
    }
    // Every record whose hash is a suspect's, in order: the exact ids.
    let mut repeated: Vec<usize> = Vec::new();
    {
        let mut seen: HashSet<&str> = HashSet::new();
        for (index, (record, hash)) in records.iter().zip(&hashes).enumerate() {
            if suspects.contains(hash) && !seen.insert(record.fact_id()) {
                repeated.push(index);
            }
        }
    }
    drop(hashes);
    if !repeated.is_empty() {
        let mut index = 0;
        records.retain(|_| {
            index += 1;
            repeated.binary_search(&(index - 1)).is_err()
        });
    }
}

/// The number of threads [`map_in_parallel`] runs on: the cores this
/// process may use (asked once: the answer reads the cgroup's files).
fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Returns `f` of every item, in order, computed on one thread per core
/// (the calling thread is one of them; whole-log scans are CPU-bound).
/// Each thread takes the next item not yet taken, so a few large items
/// do not leave the other threads idle.
pub(crate) fn map_in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    if items.len() < 2 {
        // Not worth a thread (a check after one append reads one file).
        return items.iter().map(f).collect();
    }
    let threads = threads().min(items.len());
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(index) else { return done };
            done.push((index, f(item)));
        }
    };
    let mut all: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for handle in handles {
            all.extend(handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        all
    });
    all.sort_unstable_by_key(|(index, _)| *index);
    all.into_iter().map(|(_, r)| r).collect()
}

/// The log's order: (recorded_at instant, fact_id).
fn order<T: FactRecord>(a: &T, b: &T) -> std::cmp::Ordering {
    (a.instant(), a.fact_id()).cmp(&(b.instant(), b.fact_id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::fact::Kind;
    use crate::model::fact_line::FactSummary;

    fn summary(id: &str, second: i64) -> FactSummary {
        let at = jiff::Timestamp::from_second(1_700_000_000 + second).unwrap();
        FactSummary::from_fields(id, "content", None, "", at, "agent", Kind::Decision, 3).unwrap()
    }

    fn file(day: &str, records: Vec<FactSummary>) -> (DayFile, FileStamp, Vec<FactSummary>) {
        (DayFile { day: day.to_owned(), path: PathBuf::from(day) }, [0; 4], records)
    }

    /// The first record of every id, in order: what `drop_repeated_ids`
    /// must leave, computed the plain way.
    fn first_of_each(records: &[FactSummary]) -> Vec<FactSummary> {
        let mut seen = std::collections::HashSet::new();
        records.iter().filter(|r| seen.insert(r.fact_id().to_owned())).cloned().collect()
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // writes its fixture directly
    fn a_line_refused_after_uncounted_lines_is_numbered_in_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = FactLog::new(dir.path().to_path_buf(), "ws".into());
        let path = dir.path().join("2026-01-01.jsonl");
        let head = "first\nsecond\nthird\n";
        std::fs::write(&path, format!("{head}not a fact\n")).unwrap();
        for counted in [Some(3), None] {
            match log.parse_tail::<FactSummary>(&path, b"not a fact\n", head.len(), counted) {
                Err(Error::Corrupt { location, .. }) => assert_eq!(location.line, Some(4)),
                other => panic!("{counted:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn repeated_ids_are_dropped_on_every_core_as_on_one() {
        // Above PARALLEL_RECORDS: the hashes are split among the cores.
        let count = PARALLEL_RECORDS + 5_000;
        let mut records: Vec<FactSummary> =
            (0..count).map(|n| summary(&format!("id-{n}"), n as i64)).collect();
        // Repeats far apart, near, at the ends, and of a repeat.
        for (at, of) in [(100, 7), (count - 1, 0), (40_000, 39_999), (70_001, 3), (70_002, 7)] {
            records[at] = summary(&format!("id-{of}"), at as i64);
        }
        let expected = first_of_each(&records);
        drop_repeated_ids(&mut records);
        assert_eq!(records.len(), count - 5);
        assert_eq!(records, expected);
    }

    #[test]
    fn merge_sorts_only_when_a_file_starts_before_the_end_of_the_one_before() {
        let in_order = vec![
            file("2026-01-01", vec![summary("a", 1), summary("b", 2)]),
            file("2026-01-02", vec![]),
            file("2026-01-03", vec![summary("c", 2), summary("d", 5)]),
        ];
        let ids = |facts: Vec<FactSummary>| -> Vec<String> {
            facts.iter().map(|f| f.fact_id().to_owned()).collect()
        };
        assert_eq!(ids(LogRead::of_files(in_order).merge()), ["a", "b", "c", "d"]);
        // A fact filed under a later day than its instant's.
        let misfiled = vec![
            file("2026-01-01", vec![summary("a", 1), summary("d", 9)]),
            file("2026-01-02", vec![]),
            file("2026-01-03", vec![summary("b", 2), summary("c", 3)]),
        ];
        assert_eq!(ids(LogRead::of_files(misfiled).merge()), ["a", "b", "c", "d"]);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // writes its fixture directly
    fn a_read_in_runs_keeps_each_files_records_and_merges_them_as_one_log() {
        use crate::model::fact::NewFact;
        use crate::model::stamp::Stamp;
        // More files than the runs of any machine's cores, so that runs
        // hold several files and a repeated id crosses runs.
        let dir = tempfile::tempdir().unwrap();
        let log = FactLog::new(dir.path().to_path_buf(), "0123456789abcdef".into());
        let start = jiff::civil::date(2026, 1, 1);
        let fact = |day: jiff::civil::Date, second: u32, id: &str| {
            let mut new = NewFact::new(format!("Fact {id}"));
            new.recorded_at = Some(format!("{day}T00:00:{second:02}Z"));
            new.fact_id = Some(id.to_owned());
            let now = Stamp::parse("2026-12-01T00:00:00Z").unwrap();
            Fact::from_new(new, "0123456789abcdef", now, || unreachable!()).unwrap()
        };
        let (mut per_file, mut merged) = (Vec::new(), Vec::new());
        for n in 0..(threads() * RUNS_PER_CORE * 3) as i32 {
            let day = start.checked_add(jiff::Span::new().days(n)).unwrap();
            let mut facts =
                vec![fact(day, 2, &format!("d{n}-b")), fact(day, 1, &format!("d{n}-a"))];
            if n > 0 {
                // The id of the day before: counts there, not here.
                facts.push(fact(day, 3, &format!("d{}-a", n - 1)));
            }
            if n % 5 != 0 {
                // Usually in time order; every fifth file is not.
                facts.sort_by_key(|fact| fact.recorded_at().instant());
            }
            let text: String = facts.iter().map(Fact::to_line).collect();
            std::fs::write(log.path_for_day(&day.to_string()), text).unwrap();
            let mut ids: Vec<String> = facts.iter().map(|f| f.fact_id().to_owned()).collect();
            ids.sort_by_key(|id| {
                facts.iter().find(|f| f.fact_id() == id).unwrap().recorded_at().instant()
            });
            merged.extend(ids.iter().filter(|id| id.starts_with(&format!("d{n}-"))).cloned());
            per_file.push((day.to_string(), ids));
        }
        let read = log.read_files::<FactSummary>(&log.days().unwrap()).unwrap();
        let files: Vec<(String, Vec<String>)> = read
            .files()
            .iter()
            .map(|file| {
                let ids = file.records.iter().map(|r| r.fact_id().to_owned()).collect();
                (file.day.day.clone(), ids)
            })
            .collect();
        assert_eq!(files, per_file);
        let all: Vec<String> = read.merge().iter().map(|r| r.fact_id().to_owned()).collect();
        assert_eq!(all, merged);
    }

    #[test]
    fn day_names() {
        assert!(is_day_name("2026-01-31"));
        for bad in ["2026-1-31", "notes", "2026-01-31x", "2026_01_31"] {
            assert!(!is_day_name(bad));
        }
    }
}
