//! The id index: where every fact id of the log is written, so that an
//! append with an explicit id (`remember --id`, `import`) is checked
//! without reading the log, and distill can tell a new record from a
//! repeated id.
//!
//! A cache, never evidence: it lives in `.id-index/` in the memory
//! directory, is only read and written under the workspace lock, and is
//! rebuilt from the log whenever it cannot vouch for its answer. For each
//! daily file the index records what it has read of it: the file's stamp
//! (inode, size, modification time), how many bytes its records reach, and
//! the state of a [`BlockChain`] hash after those bytes (the value after
//! their whole 4 KiB blocks, and a checksum of the bytes after them, which
//! are read back from the file when the hash goes on). A file that kept its
//! stamp is not read; a file whose covered bytes still hash the same only
//! grew, and only its new lines are indexed; a file that was rewritten or
//! removed makes the index rebuild. An append made under the lock
//! continues the entry of its file itself ([`IdIndex::record_append`]): the
//! hash state goes on over the bytes written and the stamp becomes the one
//! the file had right after the write, so the next check reads nothing of
//! it. Every record of
//! an id is indexed (a hand-edited log may hold an id twice); the one that
//! counts is the first in (file name, offset) order, as for every reader.
//!
//! Checking the stamps costs one `stat` per daily file, and a listing of
//! `daily/` only when its stamp changed ([`crate::store::day_stamps`]).
//!
//! The ids are spread over 1,024 shard files by a hash of the id, so a lookup
//! reads one shard. Shards only grow: new lines are written at the end the
//! manifest names, and a shard is used only when its length is exactly that
//! and its header names the index's generation (a random number drawn at
//! each rebuild), so a shard of an earlier index, restored or left by a
//! crash, is never used. The manifest is binary: a text header, then
//! batches of records each closed by a checksum; a save appends one batch
//! (the entries and shard lengths it changed), and the manifest is written
//! anew, compacted, once the batches outweigh what it describes. A torn or
//! garbled batch makes the whole manifest unusable. The header names the
//! inode of the `.id-index` directory, so an index copied from elsewhere (a
//! clone that committed it) never matches.
//!
//! ```text
//! .id-index/manifest:
//! workmem-id-index 3 <workspace_id> <directory inode> <generation>\n
//! then batches: <body length: u32> <body> <checksum of body: u64>
//! body records (integers little-endian):
//!   'F' <day: 10 bytes> <inode> <size> <mtime_s> <mtime_ns> <len> <chain value> <tail checksum>
//!   'S' <shard: u16> <length: u64>
//!   'L' <inode> <size> <mtime_s> <mtime_ns> <ctime_s> <ctime_ns>   (daily/, listed)
//!   'l'                                                        (daily/ must be listed)
//! .id-index/<n> (n = 0..1023, in hex):
//! workmem-id-shard 2 <workspace_id> <n> <generation>
//! <fact_id> <day> <offset>
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::model::fact_line::{FactRecord, FactSummary};
use crate::store::atomic_io::{self, FileStamp};
use crate::store::block_chain::{BlockChain, Prefix, checksum};
use crate::store::coverage;
use crate::store::day_stamps::{self, DAY, Day, ListingStamp};
use crate::store::fact_log::{FactLog, Written, map_in_parallel};
use crate::store::names::ID_INDEX_DIR;

const MANIFEST: &str = "manifest";
const HEADER: &str = "workmem-id-index 3";
const SHARD_HEADER: &str = "workmem-id-shard 2";
const SHARDS: usize = 1024;
const FILE_RECORD: usize = 1 + DAY + 5 * 8 + 8 + 8;
const SHARD_RECORD: usize = 1 + 2 + 8;
const LISTING_RECORD: usize = 1 + 6 * 8;

/// Where one record of a fact id is written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Place {
    /// The daily file's day (`YYYY-MM-DD`).
    pub day: String,
    /// The byte offset of the record's line in it.
    pub offset: u64,
}

/// A record indexed by a refresh: appended since the index last read its
/// file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewRecord {
    /// Its fact id.
    pub id: String,
    /// Where it is.
    pub place: Place,
}

/// What the index has read of one daily file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// The file's day, `YYYY-MM-DD` (checked when read).
    day: [u8; DAY],
    /// The file's stamp before the read (or right after an append the
    /// index recorded).
    stamp: FileStamp,
    /// The bytes from the start whose records the index holds.
    prefix: Prefix,
}

/// The day of an entry as text (an entry's day is ASCII, checked when it
/// was made).
fn entry_day(day: &[u8; DAY]) -> &str {
    std::str::from_utf8(day).unwrap_or_default()
}

/// A daily file a check reads: its day, and what the index had read of it.
type ToRead = (String, Option<Entry>);

/// The index as its manifest describes it.
#[derive(Debug)]
pub(crate) struct IdIndex {
    dir: PathBuf,
    workspace_id: String,
    generation: u64,
    /// The length of each shard's file the manifest vouches for; 0 for an
    /// empty shard (no file).
    shard_len: Vec<u64>,
    /// The manifest as read: its records stay where they are.
    data: Vec<u8>,
    /// The daily files the manifest covers, by day, each with the offset
    /// in `data` of its latest record.
    slots: Vec<([u8; DAY], usize)>,
    /// The entries changed since the index was read.
    changed: BTreeMap<[u8; DAY], Entry>,
    /// The stamp of `daily/` when its files were last listed, when settled.
    listing: Option<ListingStamp>,
    /// The manifest's length as read (where the next batch goes).
    manifest_len: u64,
    /// New lines of each shard since the index was read, written by
    /// [`IdIndex::save`].
    pending: BTreeMap<usize, String>,
    /// Whether the listing stamp changed since the index was read.
    listing_touched: bool,
    /// Whether the index was started over: saving removes the files of the
    /// old one and writes every shard.
    fresh: bool,
}

/// The result of [`refresh`].
#[derive(Debug)]
pub(crate) struct Refreshed {
    /// The index, up to date with the log.
    pub index: IdIndex,
    /// The records indexed by this refresh, in (file name, offset) order;
    /// `None` when the index was rebuilt from the whole log.
    #[allow(dead_code)]
    pub added: Option<Vec<NewRecord>>,
}

/// Returns the shard of `id`: FNV-1a, stable across versions and
/// platforms.
fn shard_of(id: &str) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % SHARDS as u64) as usize
}

fn dir_inode(dir: &Path) -> Option<i64> {
    std::fs::symlink_metadata(dir).ok().filter(std::fs::Metadata::is_dir).map(|m| m.ino() as i64)
}

/// Returns the index of `log` in `memory_dir` brought up to date in
/// memory, for a reader that does not hold the workspace lock: only when
/// the stored index can be continued (the daily files that changed since
/// it last read them only grew); `None` when it would have to be rebuilt.
/// Never writes: shards only grow and the manifest is replaced whole, so
/// what the manifest read vouches for stays true while a writer goes on.
///
/// Errors: as [`refresh`].
pub(crate) fn peek(
    log: &FactLog,
    memory_dir: &Path,
    workspace_id: &str,
) -> Result<Option<IdIndex>> {
    let Some(mut index) = IdIndex::load(&memory_dir.join(ID_INDEX_DIR), workspace_id) else {
        return Ok(None);
    };
    Ok(index.update(log)?.map(|_| index))
}

/// Starts reading the shards that hold `ids` into the page cache, without
/// waiting: the lookup that follows the stamps' check then finds them
/// there. A shard not used for a while may be on disk only (reading one
/// took 1.8 ms here, the stamps' check of 731 daily files 1.4 ms), and an
/// import's ids fall in as many shards as it has ids, read at once rather
/// than one after another. A hint: never an error.
pub(crate) fn prefetch(memory_dir: &Path, ids: &[&str]) {
    let dir = memory_dir.join(ID_INDEX_DIR);
    let shards: std::collections::BTreeSet<usize> = ids.iter().map(|id| shard_of(id)).collect();
    for shard in shards {
        advise(&dir, shard, 0);
    }
}

/// The file of shard `shard` of the index in `dir`.
fn shard_path(dir: &Path, shard: usize) -> PathBuf {
    dir.join(format!("{shard:03x}"))
}

/// Asks the kernel to read shard `shard` of the index in `dir` from
/// `offset` on into the page cache, without waiting.
fn advise(dir: &Path, shard: usize, offset: u64) {
    if let Ok(Some(file)) = atomic_io::open_optional(&shard_path(dir, shard)) {
        let _ = rustix::fs::fadvise(&file, offset, None, rustix::fs::Advice::WillNeed);
    }
}

/// Brings the index of `log` in `memory_dir` up to date in memory and
/// returns it: reads the daily files that changed since it last read them,
/// or the whole log when the index is missing, torn, of another workspace
/// or directory, or a covered file was rewritten. Nothing is written until
/// the caller saves it ([`IdIndex::save`]), once its own work succeeded,
/// so a refused operation writes nothing. The workspace lock must be held.
///
/// Errors: as [`FactLog::read_file`] for the bytes it reads (a corrupt line
/// in a file that changed is refused, as every reader refuses it);
/// [`crate::Error::Io`].
pub(crate) fn refresh(log: &FactLog, memory_dir: &Path, workspace_id: &str) -> Result<Refreshed> {
    let dir = memory_dir.join(ID_INDEX_DIR);
    if let Some(mut index) = IdIndex::load(&dir, workspace_id)
        && let Some(added) = index.update(log)?
    {
        // The shards the new lines go to are written at their end when the
        // caller saves the index: their last page is read meanwhile (a
        // write into a page that is not in memory reads it first, and
        // waits).
        for shard in index.pending.keys() {
            let len = index.shard_len[*shard];
            advise(&index.dir, *shard, len - len % 4096);
        }
        return Ok(Refreshed { index, added: Some(added) });
    }
    let mut index = IdIndex::fresh(dir, workspace_id);
    // Every shard of a fresh index is empty, hence usable; a file that
    // changes while it is read is read again next time.
    if index.update(log)?.is_none() {
        return Err(crate::error::Error::Io {
            path: index.dir.clone(),
            source: io::Error::other("the daily files kept changing while they were indexed"),
        });
    }
    Ok(Refreshed { index, added: None })
}

/// Removes the manifest of the index in `memory_dir`, so that the next use
/// rebuilds the index.
pub(crate) fn discard(memory_dir: &Path) {
    let _ = std::fs::remove_file(memory_dir.join(ID_INDEX_DIR).join(MANIFEST));
}

/// Reads little-endian integers and byte arrays off a manifest batch.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Option<&'a [u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(head)
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take().copied()
    }

    fn i64(&mut self) -> Option<i64> {
        self.bytes().map(i64::from_le_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.bytes().map(u64::from_le_bytes)
    }

    fn rest(&self) -> &'a [u8] {
        self.0
    }
}

fn put_i64s(out: &mut Vec<u8>, values: &[i64]) {
    for value in values {
        out.extend_from_slice(&value.to_le_bytes());
    }
}

impl IdIndex {
    /// Reads the manifest at `dir`; `None` when it is missing, torn,
    /// malformed, of another workspace or of another directory.
    fn load(dir: &Path, workspace_id: &str) -> Option<IdIndex> {
        let inode = dir_inode(dir)?;
        let data = atomic_io::read_optional(&dir.join(MANIFEST)).ok()??;
        let newline = memchr::memchr(b'\n', &data)?;
        let header = std::str::from_utf8(&data[..newline]).ok()?;
        let mut fields = header.strip_prefix(HEADER)?.strip_prefix(' ')?.split(' ');
        if fields.next()? != workspace_id || fields.next()?.parse::<i64>().ok()? != inode {
            return None;
        }
        let generation: u64 = fields.next()?.parse().ok()?;
        if fields.next().is_some() || generation == 0 {
            return None;
        }
        let mut index = IdIndex {
            dir: dir.to_owned(),
            workspace_id: workspace_id.to_owned(),
            generation,
            shard_len: vec![0; SHARDS],
            data: Vec::new(),
            slots: Vec::new(),
            changed: BTreeMap::new(),
            listing: None,
            manifest_len: data.len() as u64,
            pending: BTreeMap::new(),
            listing_touched: false,
            fresh: false,
        };
        let mut at = newline + 1;
        if at == data.len() {
            return None;
        }
        while at < data.len() {
            let len = u32::from_le_bytes(*data[at..].first_chunk()?) as usize;
            let body = data.get(at + 4..at + 4 + len)?;
            let sum = u64::from_le_bytes(*data.get(at + 4 + len..)?.first_chunk()?);
            if sum != checksum(body) {
                return None;
            }
            index.apply(body, at + 4)?;
            at += 4 + len + 8;
        }
        index.data = data;
        Some(index)
    }

    /// Applies the records of one manifest batch, found at `base` in the
    /// manifest; `None` when one is malformed.
    fn apply(&mut self, body: &[u8], base: usize) -> Option<()> {
        self.slots.reserve(body.len() / FILE_RECORD);
        let mut reader = Reader(body);
        while let Some([tag]) = reader.bytes::<1>() {
            match tag {
                b'F' => {
                    let at = base + (body.len() - reader.rest().len());
                    let record: &[u8; FILE_RECORD - 1] = reader.take()?;
                    let day: &[u8; DAY] = record.first_chunk()?;
                    let day_shaped = day.iter().enumerate().all(|(at, byte)| match at {
                        4 | 7 => *byte == b'-',
                        _ => byte.is_ascii_digit(),
                    });
                    if !day_shaped {
                        return None;
                    }
                    // A manifest lists its files in order; a later batch
                    // replaces or adds a file.
                    if self.slots.last().is_none_or(|(last, _)| last < day) {
                        self.slots.push((*day, at));
                    } else {
                        match self.slots.binary_search_by(|(d, _)| d.cmp(day)) {
                            Ok(found) => self.slots[found].1 = at,
                            Err(found) => self.slots.insert(found, (*day, at)),
                        }
                    }
                }
                b'S' => {
                    let shard = usize::from(u16::from_le_bytes(reader.bytes()?));
                    *self.shard_len.get_mut(shard)? = reader.u64()?;
                }
                b'L' => {
                    let mut stamp: ListingStamp = [0; 6];
                    for slot in &mut stamp {
                        *slot = reader.i64()?;
                    }
                    self.listing = Some(stamp);
                }
                b'l' => self.listing = None,
                _ => return None,
            }
        }
        Some(())
    }

    /// Sets the entry of its day.
    fn put(&mut self, entry: Entry) {
        self.changed.insert(entry.day, entry);
    }

    /// Returns the entry of `day`.
    fn entry(&self, day: &[u8; DAY]) -> Option<Entry> {
        if let Some(entry) = self.changed.get(day) {
            return Some(*entry);
        }
        let found = self.slots.binary_search_by(|(d, _)| d.cmp(day)).ok()?;
        Some(self.decode(found))
    }

    /// Returns the stamp the index holds for the daily file of `day`: the
    /// stamp it had when the index last read it or appended to it.
    pub(crate) fn stamp(&self, day: &Day) -> Option<FileStamp> {
        self.entry(day).map(|entry| entry.stamp)
    }

    /// Returns the stamp of the file of slot `n`.
    fn slot_stamp(&self, n: usize) -> FileStamp {
        let record = &self.data[self.slots[n].1 + DAY..];
        std::array::from_fn(|i| {
            i64::from_le_bytes(*record[8 * i..].first_chunk().unwrap_or(&[0; 8]))
        })
    }

    /// Returns the entry of slot `n`.
    fn decode(&self, n: usize) -> Entry {
        let (day, at) = self.slots[n];
        let record = &self.data[at + DAY..at + FILE_RECORD - 1];
        let int = |i: usize| i64::from_le_bytes(*record[8 * i..].first_chunk().unwrap_or(&[0; 8]));
        Entry {
            day,
            stamp: self.slot_stamp(n),
            prefix: Prefix { len: int(4) as u64, chain: int(5) as u64, tail_sum: int(6) as u64 },
        }
    }

    /// Returns every entry, by day.
    fn entries(&self) -> BTreeMap<[u8; DAY], Entry> {
        let mut all: BTreeMap<[u8; DAY], Entry> =
            (0..self.slots.len()).map(|n| (self.slots[n].0, self.decode(n))).collect();
        all.extend(self.changed.iter().map(|(day, entry)| (*day, *entry)));
        all
    }

    /// Returns an empty index at `dir` (whatever is there is replaced when
    /// it is saved).
    fn fresh(dir: PathBuf, workspace_id: &str) -> IdIndex {
        // A generation no earlier index used: a shard file left from one can
        // never pass for a shard of this one.
        let random = uuid::Uuid::new_v4().as_u64_pair().0 >> 2;
        IdIndex {
            dir,
            workspace_id: workspace_id.to_owned(),
            generation: random.max(1),
            shard_len: vec![0; SHARDS],
            data: Vec::new(),
            slots: Vec::new(),
            changed: BTreeMap::new(),
            listing: None,
            manifest_len: 0,
            pending: BTreeMap::new(),
            listing_touched: false,
            fresh: true,
        }
    }

    fn shard_path(&self, shard: usize) -> PathBuf {
        shard_path(&self.dir, shard)
    }

    fn shard_header(&self, shard: usize) -> String {
        format!("{SHARD_HEADER} {} {shard:03x} {}\n", self.workspace_id, self.generation)
    }

    /// Reads a shard's entries (header line included) with the lines not
    /// saved yet; `None` when the file does not belong to this manifest.
    fn read_shard(&self, shard: usize) -> Option<Vec<u8>> {
        let len = self.shard_len[shard];
        let header = self.shard_header(shard);
        let mut body = if len == 0 {
            header.into_bytes()
        } else {
            let data = atomic_io::read_optional(&self.shard_path(shard)).ok()??;
            (data.len() as u64 == len
                && data.starts_with(header.as_bytes())
                && data.ends_with(b"\n"))
            .then_some(data)?
        };
        if let Some(lines) = self.pending.get(&shard) {
            body.extend_from_slice(lines.as_bytes());
        }
        Some(body)
    }

    /// Checks the stamps of the daily files against the index, reads what
    /// was appended to those that changed and indexes it (in memory).
    /// Returns the records indexed, or `None` when a file was rewritten or
    /// removed (the caller rebuilds). (The append trail is not followed:
    /// the appends it records are made under the lock, which continues the
    /// index itself, [`IdIndex::record_append`].)
    fn update(&mut self, log: &FactLog) -> Result<Option<Vec<NewRecord>>> {
        let Some(changed) = self.scan(log)? else { return Ok(None) };
        let mut added = Vec::new();
        // A bounded number of files in memory at once (a rebuild reads them
        // all).
        for chunk in changed.chunks(64) {
            let parsed = map_in_parallel(chunk, |(day, known)| {
                let path = log.path_for_day(day);
                let known = known.as_ref().map(|known| &known.prefix);
                // What the index read of the file is only hashed again.
                let Some(read) = coverage::read_grown(&path, known, None, false)? else {
                    return Ok(None);
                };
                let (mut hasher, stamp) = (read.prefix, read.stamp);
                let (records, reach) =
                    log.parse_tail::<FactSummary>(&path, &read.data, read.base, read.lines_before)?;
                let from = known.map_or(0, |known| known.len as usize);
                hasher.update(&read.data[from - read.base..reach - read.base]);
                let ids: Vec<(u64, String)> = records
                    .into_iter()
                    .map(|(offset, r)| (offset, r.fact_id().to_owned()))
                    .collect();
                let mut entry = Entry { day: [0; DAY], stamp, prefix: hasher.prefix(reach as u64) };
                entry.day.copy_from_slice(day.as_bytes());
                Ok(Some((ids, entry)))
            });
            for ((day, _), result) in chunk.iter().zip(parsed) {
                let Some((ids, entry)) = result? else { return Ok(None) };
                for (offset, id) in ids {
                    let lines = self.pending.entry(shard_of(&id)).or_default();
                    let _ = writeln!(lines, "{id} {day} {offset}");
                    added.push(NewRecord { id, place: Place { day: day.clone(), offset } });
                }
                self.put(entry);
            }
        }
        Ok(Some(added))
    }

    /// Compares the daily files with the index: the listing of `daily/`
    /// when its stamp changed, then one `stat` per file. Returns the files
    /// to read (day, what the index had read of it), or `None` when a
    /// covered file was removed.
    fn scan(&mut self, log: &FactLog) -> Result<Option<Vec<ToRead>>> {
        // A scan runs first, before anything changed.
        debug_assert!(self.changed.is_empty());
        let known = self
            .listing
            .map(|listing| (listing, self.slots.iter().map(|(day, _)| *day).collect::<Vec<Day>>()));
        let Some(stamped) = day_stamps::scan(log, known)? else {
            return Ok(self.slots.is_empty().then(Vec::new));
        };
        if stamped.listing != self.listing {
            self.listing = stamped.listing;
            self.listing_touched = true;
        }
        // Both lists are in day order: walk them together.
        let mut changed = Vec::new();
        let mut next = 0;
        for (day, stamp) in &stamped.days {
            let (day, stamp) = (day, *stamp);
            let slot = match self.slots.get(next).map(|(known, _)| known.cmp(day)) {
                // A covered file that is no longer listed.
                Some(std::cmp::Ordering::Less) => return Ok(None),
                Some(std::cmp::Ordering::Equal) => {
                    next += 1;
                    Some(next - 1)
                }
                _ => None,
            };
            match (slot, stamp) {
                (Some(slot), Some(stamp)) if self.slot_stamp(slot) == stamp => {}
                (Some(_), None) => return Ok(None),
                (None, None) => {}
                (slot, Some(_)) => {
                    changed.push((entry_day(day).to_owned(), slot.map(|n| self.decode(n))));
                }
            }
        }
        Ok((next == self.slots.len()).then_some(changed))
    }

    /// Counts what an append made under the lock wrote as read, when the
    /// index had read its file to the end right before it and nobody else
    /// wrote to it in between (else the next check reads the file): the
    /// entry continues over the written bytes with the stamp the file had
    /// right after the write, and the records are indexed.
    pub(crate) fn record_append(&mut self, log: &FactLog, written: &[Written]) {
        for file in written {
            let Some(placement) = file.alone() else { continue };
            let end = placement.offset + file.bytes.len() as u64;
            let Ok(day) = <[u8; DAY]>::try_from(file.day.as_bytes()) else { continue };
            let mut hasher = match self.entry(&day) {
                Some(known)
                    if known.stamp == placement.before && known.prefix.len == placement.offset =>
                {
                    let path = log.path_for_day(&file.day);
                    let Some(hasher) = BlockChain::resume_from(&path, &known.prefix) else {
                        continue;
                    };
                    hasher
                }
                None if placement.offset == 0 => BlockChain::default(),
                _ => continue,
            };
            hasher.update(file.bytes.as_bytes());
            for (at, id) in &file.records {
                let lines = self.pending.entry(shard_of(id)).or_default();
                let _ = writeln!(lines, "{id} {} {}", file.day, placement.offset + at);
            }
            self.put(Entry { day, stamp: placement.after, prefix: hasher.prefix(end) });
        }
    }

    /// Writes what changed since the index was read: the new lines of the
    /// shards, then a batch of the manifest (or the whole manifest, when
    /// it is fresh or its batches outweigh what it describes). Only a
    /// cache, written without fsync: a caller may ignore a failure (the
    /// next use reads the daily files again).
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn save(&mut self) -> Result<()> {
        if !self.fresh
            && self.pending.is_empty()
            && self.changed.is_empty()
            && !self.listing_touched
        {
            return Ok(());
        }
        atomic_io::create_private_dir(&self.dir)?;
        if self.fresh {
            // No manifest while the old shards are replaced.
            let _ = std::fs::remove_file(self.dir.join(MANIFEST));
            atomic_io::remove_temporaries(&self.dir);
            for shard in (0..SHARDS).filter(|s| !self.pending.contains_key(s)) {
                let _ = std::fs::remove_file(self.shard_path(shard));
            }
        }
        let mut shards = Vec::with_capacity(self.pending.len());
        for (shard, lines) in std::mem::take(&mut self.pending) {
            let path = self.shard_path(shard);
            let file = open_cache(&path)?;
            let at = self.shard_len[shard];
            let header = self.shard_header(shard);
            let len = if at == 0 {
                let mut data = header.into_bytes();
                data.extend_from_slice(lines.as_bytes());
                file.write_all_at(&data, 0).at(&path)?;
                // Whatever an earlier index left after the end is cut off.
                file.set_len(data.len() as u64).at(&path)?;
                data.len() as u64
            } else if shard_intact(&file, &header, at) {
                file.write_all_at(lines.as_bytes(), at).at(&path)?;
                at + lines.len() as u64
            } else {
                // New lines must follow exactly what the manifest covers.
                let _ = std::fs::remove_file(self.dir.join(MANIFEST));
                return Err(io::Error::other("a shard of the id index was changed")).at(&path);
            };
            self.shard_len[shard] = len;
            shards.push(shard);
        }
        let path = self.dir.join(MANIFEST);
        let mut batch = Vec::new();
        for entry in self.changed.values() {
            push_entry(&mut batch, entry);
        }
        for shard in shards {
            push_shard(&mut batch, shard, self.shard_len[shard]);
        }
        if self.listing_touched {
            push_listing(&mut batch, self.listing.as_ref());
        }
        self.listing_touched = false;
        let compact = self.compact_len();
        // Batches up to a quarter of what they describe: a check reads at
        // most 1.25 times the compacted manifest.
        if self.fresh || self.manifest_len + batch.len() as u64 + 12 > compact + compact / 4 + 4096
        {
            let data = self.compact();
            atomic_io::replace_cache(&path, &data)?;
            self.manifest_len = data.len() as u64;
            self.fresh = false;
            return Ok(());
        }
        let mut data = Vec::with_capacity(batch.len() + 12);
        close_batch(&mut data, &batch);
        // The manifest is as long as it was when read (nothing else writes
        // the index under the lock; anything after a batch fails to load).
        let file = open_cache(&path)?;
        file.write_all_at(&data, self.manifest_len).at(&path)?;
        self.manifest_len += data.len() as u64;
        Ok(())
    }

    /// The length of the manifest written whole.
    fn compact_len(&self) -> u64 {
        let shards = self.shard_len.iter().filter(|len| **len != 0).count();
        (HEADER.len()
            + self.workspace_id.len()
            + 64
            + 12
            + (self.slots.len() + self.changed.len()) * FILE_RECORD
            + shards * SHARD_RECORD
            + LISTING_RECORD) as u64
    }

    /// Returns the manifest written whole: the header and one batch.
    fn compact(&self) -> Vec<u8> {
        let inode = dir_inode(&self.dir).unwrap_or(-1);
        let mut batch = Vec::with_capacity(self.compact_len() as usize);
        for entry in self.entries().values() {
            push_entry(&mut batch, entry);
        }
        for (shard, len) in self.shard_len.iter().enumerate().filter(|(_, len)| **len != 0) {
            push_shard(&mut batch, shard, *len);
        }
        push_listing(&mut batch, self.listing.as_ref());
        let mut data =
            format!("{HEADER} {} {inode} {}\n", self.workspace_id, self.generation).into_bytes();
        close_batch(&mut data, &batch);
        data
    }

    /// Returns every indexed place of each of `ids`, sorted (the first is
    /// the record that counts); `None` when a shard it needs is unusable
    /// (the caller rebuilds).
    pub(crate) fn lookup(&self, ids: &[&str]) -> Option<Vec<Vec<Place>>> {
        let mut by_shard: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (position, id) in ids.iter().enumerate() {
            by_shard.entry(shard_of(id)).or_default().push(position);
        }
        let mut found = vec![Vec::new(); ids.len()];
        for (shard, positions) in by_shard {
            if self.shard_len[shard] == 0 && !self.pending.contains_key(&shard) {
                continue;
            }
            let body = self.read_shard(shard)?;
            for position in positions {
                let needle = format!("\n{} ", ids[position]);
                for start in memchr::memmem::find_iter(&body, needle.as_bytes()) {
                    let rest = &body[start + needle.len()..];
                    let line = std::str::from_utf8(&rest[..memchr::memchr(b'\n', rest)?]).ok()?;
                    let (day, offset) = line.split_once(' ')?;
                    found[position]
                        .push(Place { day: day.to_owned(), offset: offset.parse().ok()? });
                }
                found[position].sort();
            }
        }
        Some(found)
    }
}

fn push_entry(out: &mut Vec<u8>, entry: &Entry) {
    out.push(b'F');
    out.extend_from_slice(&entry.day);
    put_i64s(out, &entry.stamp);
    out.extend_from_slice(&entry.prefix.len.to_le_bytes());
    out.extend_from_slice(&entry.prefix.chain.to_le_bytes());
    out.extend_from_slice(&entry.prefix.tail_sum.to_le_bytes());
}

fn push_shard(out: &mut Vec<u8>, shard: usize, len: u64) {
    out.push(b'S');
    out.extend_from_slice(&(shard as u16).to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

fn push_listing(out: &mut Vec<u8>, listing: Option<&ListingStamp>) {
    match listing {
        Some(stamp) => {
            out.push(b'L');
            put_i64s(out, stamp);
        }
        None => out.push(b'l'),
    }
}

/// Appends `batch` to `out` as one manifest batch: length, body, checksum.
fn close_batch(out: &mut Vec<u8>, batch: &[u8]) {
    out.extend_from_slice(&(batch.len() as u32).to_le_bytes());
    out.extend_from_slice(batch);
    out.extend_from_slice(&checksum(batch).to_le_bytes());
}

/// Returns whether the shard file `file` is `len` bytes long and starts
/// with `header`: what the manifest covers of it (a shard whose lines were
/// cut or replaced is never extended).
fn shard_intact(file: &File, header: &str, len: u64) -> bool {
    let mut start = vec![0; header.len()];
    file.metadata().is_ok_and(|meta| meta.len() == len)
        && file.read_exact_at(&mut start, 0).is_ok()
        && start == header.as_bytes()
}

/// Opens an index file for writing in place (created with mode 0600), not
/// following a symlink.
fn open_cache(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .at(path)
}
