//! What a cache has read of each daily file, so that it reads only what was
//! appended since.
//!
//! For each daily file a cache records the stamp the file had before it was
//! read (inode, size, modification time), how many bytes its records reach,
//! and the fingerprint of those bytes by a [`BlockChain`]: XXH3-64 of each
//! 4 KiB block, seeded with the value of the blocks before it, which tells
//! a file that changed from one that did not as surely as a cryptographic
//! hash for anything but a forgery (and a forger who can write the daily
//! files needs none), at a tenth of the cost (a distill hashes every byte
//! of the log it reads), and goes on from its saved value. A file that
//! kept its stamp is not read. A file whose stamp changed is read whole:
//! when its first `len` bytes still have the recorded fingerprint, only the
//! bytes after them are new (an append); otherwise the file was rewritten
//! (an edit by hand or by another tool), and so is a file that
//! disappeared: the cache cannot subtract what it no longer sees, and is
//! rebuilt by its owner. When the append trail leads from the recorded
//! stamp to the file's stamp now ([`crate::store::append_trail`]), the
//! file only grew by workmem's own appends: only the bytes after the last
//! whole block the cache hashed are read.
//!
//! On disk each file is one line of the owner's text format:
//! `file <day> <inode> <size> <mtime_s> <mtime_ns> <len> <chain> <tail>`
//! (the last two as 16 hex digits: the chain's value after the whole
//! blocks, a checksum of the bytes after them).

use std::io::{Read as _, Seek as _};
use std::path::Path;

use crate::error::{IoContext, Result};
use crate::store::append_trail::Trail;
use crate::store::atomic_io::{self, FileStamp};
use crate::store::block_chain::{BlockChain, CHAIN_BLOCK, Covered, Prefix};
use crate::store::day_stamps::{self, Day, ListingStamp};
use crate::store::fact_log::{DayFile, FactLog};

/// A daily file whose stamp differs from its coverage (or that is not
/// covered yet).
#[derive(Debug, Clone)]
pub(crate) struct Changed {
    /// The file.
    pub day: DayFile,
    /// What the cache had read of it.
    pub known: Option<Covered>,
    /// The stamp the scan found, when the append trail leads to it from
    /// the known stamp: the file only grew by workmem's own appends.
    pub grown_to: Option<FileStamp>,
}

/// The bytes appended to one daily file since a cache covered it.
pub(crate) struct Appended {
    /// The file.
    pub day: DayFile,
    /// Its stamp before this read.
    pub stamp: FileStamp,
    /// The bytes read, from offset `base` of the file.
    pub data: Vec<u8>,
    /// Where `data` starts in the file: 0, or `from` when the bytes before
    /// were not kept.
    pub base: usize,
    /// The lines before `base`, when they were counted (see
    /// [`FactLog::parse_tail`]).
    pub lines_before: Option<usize>,
    /// Where the new bytes start (the old coverage's `len`).
    pub from: usize,
    /// The hash state after the bytes before `from`.
    prefix: BlockChain,
}

impl Covered {
    /// Returns the coverage of the first `len` bytes of an appended file,
    /// continuing the hash of the bytes it already covered (`len` is at
    /// least [`Appended::from`]).
    pub(crate) fn of_appended(appended: &Appended, len: usize) -> Covered {
        let mut chain = appended.prefix.clone();
        chain.update(&appended.data[appended.from - appended.base..len - appended.base]);
        Covered { stamp: appended.stamp, prefix: chain.prefix(len as u64) }
    }
}

/// How the daily files differ from a coverage.
#[derive(Debug)]
pub(crate) enum Scan {
    /// The files whose stamp changed or that are new: read them with
    /// [`read_appended`].
    Changed(Vec<Changed>),
    /// A covered file was removed: the cache must be rebuilt.
    Rewritten,
}

/// Compares the daily files of `log` with `covered` (by day, in day
/// order): stats every file (relative to `daily/`), reads none, and lists
/// `daily/` only when its stamp is not `listing`, the stamp under which
/// the covered days were its list. A covered file whose stamp changed is
/// looked up in the append trail of `memory_dir`. Returns the stamp of
/// `daily/` to keep with the next coverage (`None`: not settled).
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// `daily/`.
pub(crate) fn scan(
    log: &FactLog,
    covered: &[(&str, &Covered)],
    listing: Option<ListingStamp>,
    memory_dir: &Path,
) -> Result<(Scan, Option<ListingStamp>)> {
    let known = listing.map(|listing| {
        let days = covered.iter().filter_map(|(day, _)| day.as_bytes().try_into().ok());
        (listing, days.collect())
    });
    let Some(stamped) = day_stamps::scan(log, known)? else {
        let scan = if covered.is_empty() { Scan::Changed(Vec::new()) } else { Scan::Rewritten };
        return Ok((scan, None));
    };
    // Both lists are in day order: walk them together.
    let mut next = 0;
    let mut changed = Vec::new();
    for (name, stamp) in &stamped.days {
        let Ok(day) = std::str::from_utf8(name) else { continue };
        let known = match covered.get(next).map(|(known, _)| (*known).cmp(day)) {
            // A covered file that is no longer listed.
            Some(std::cmp::Ordering::Less) => return Ok((Scan::Rewritten, stamped.listing)),
            Some(std::cmp::Ordering::Equal) => {
                next += 1;
                Some(covered[next - 1].1)
            }
            _ => None,
        };
        if known.is_some_and(|old| Some(old.stamp) == *stamp) {
            continue;
        }
        let day = DayFile { day: day.to_owned(), path: log.path_for_day(day) };
        // For a covered file, the stamp it has now: where the trail must
        // lead.
        let now = known.and(*stamp);
        changed.push((*name, now, Changed { day, known: known.cloned(), grown_to: None }));
    }
    if next != covered.len() {
        return Ok((Scan::Rewritten, stamped.listing));
    }
    let grown: Vec<Day> =
        changed.iter().filter(|(_, now, _)| now.is_some()).map(|(name, _, _)| *name).collect();
    let trail = Trail::load(memory_dir, &grown);
    let changed = changed
        .into_iter()
        .map(|(name, now, mut change)| {
            change.grown_to = change
                .known
                .as_ref()
                .zip(now)
                .and_then(|(known, to)| trail.leads(&name, known.stamp, to).then_some(to));
            change
        })
        .collect();
    Ok((Scan::Changed(changed), stamped.listing))
}

/// Reads a changed file: `Some` with its bytes when it only grew (or is
/// new), `None` when it was rewritten or removed. See [`read_grown`];
/// with `keep_old` the whole file is kept.
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// or irregular file.
pub(crate) fn read_appended(changed: &Changed, keep_old: bool) -> Result<Option<Appended>> {
    let known = changed.known.as_ref().map(|old| &old.prefix);
    let Some(read) = read_grown(&changed.day.path, known, changed.grown_to, keep_old)? else {
        return Ok(None);
    };
    Ok(Some(Appended {
        day: changed.day.clone(),
        stamp: read.stamp,
        data: read.data,
        base: read.base,
        lines_before: read.lines_before,
        from: known.map_or(0, |known| known.len as usize),
        prefix: read.prefix,
    }))
}

/// A daily file read past a prefix that was only hashed.
pub(crate) struct ReadAfter {
    /// The file's stamp before the read.
    pub stamp: FileStamp,
    /// The hash state after the prefix.
    pub prefix: BlockChain,
    /// The bytes from `base` on.
    pub data: Vec<u8>,
    /// 0 when the prefix was kept, else its length.
    pub base: usize,
    /// The lines before `base`, when they were counted.
    pub lines_before: Option<usize>,
}

/// Reads the daily file at `path` after the `known` prefix a cache read
/// of it (`None`: read it all), when the file still begins with those
/// bytes; `None` when it does not, is missing or is shorter.
///
/// When the file's stamp is `grown_to` (the append trail leads there from
/// the stamp the cache read), only the bytes after the prefix's last whole
/// block are read: those few are checked against the prefix's checksum,
/// and the hash goes on from its value. Otherwise the prefix is hashed
/// again, through one small buffer (a long file that grew by a few lines
/// costs no memory of its size), and kept only when `keep_prefix`.
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// or irregular file.
pub(crate) fn read_grown(
    path: &Path,
    known: Option<&Prefix>,
    grown_to: Option<FileStamp>,
    keep_prefix: bool,
) -> Result<Option<ReadAfter>> {
    let Some(mut file) = atomic_io::open_optional(path)? else { return Ok(None) };
    let stamp = atomic_io::stamp_of(&file.metadata().at(path)?);
    let from = known.map_or(0, |known| known.len as usize);
    if let Some(known) = known
        && !keep_prefix
        && grown_to == Some(stamp)
    {
        let block = from - from % CHAIN_BLOCK;
        let mut data = Vec::new();
        file.seek(std::io::SeekFrom::Start(block as u64)).at(path)?;
        file.read_to_end(&mut data).at(path)?;
        let resumed = data.get(..from - block).and_then(|tail| BlockChain::resume(known, tail));
        if let Some(prefix) = resumed {
            data.drain(..from - block);
            return Ok(Some(ReadAfter { stamp, prefix, data, base: from, lines_before: None }));
        }
        // Not the bytes the cache hashed: the whole prefix decides.
        file.rewind().at(path)?;
    }
    let mut prefix = BlockChain::default();
    let mut data = Vec::new();
    let read = if keep_prefix || from == 0 {
        file.read_to_end(&mut data).at(path)?;
        let Some(old) = data.get(..from) else { return Ok(None) };
        prefix.update(old);
        ReadAfter { stamp, prefix, data, base: 0, lines_before: Some(0) }
    } else {
        let mut buffer = vec![0; HASH_BUFFER.min(from)];
        let (mut left, mut lines_before) = (from, 0);
        while left > 0 {
            let chunk = &mut buffer[..HASH_BUFFER.min(left)];
            match file.read(chunk) {
                Ok(0) => return Ok(None),
                Ok(n) => {
                    prefix.update(&chunk[..n]);
                    lines_before += memchr::memchr_iter(b'\n', &chunk[..n]).count();
                    left -= n;
                }
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err).at(path),
            }
        }
        file.read_to_end(&mut data).at(path)?;
        ReadAfter { stamp, prefix, data, base: from, lines_before: Some(lines_before) }
    };
    Ok(known.is_none_or(|known| read.prefix.prefix(known.len) == *known).then_some(read))
}

/// The buffer the bytes a cache already holds are hashed through: small,
/// as every page of a fresh buffer costs a page fault.
const HASH_BUFFER: usize = 64 * 1024;

/// Reads a file the coverage still describes (its stamp unchanged), for
/// the facts in it: `None` when its stamp changed since. Not hashed: its
/// coverage stays as it is (never pass it to [`Covered::of_appended`]).
///
/// Errors: as [`read_appended`].
pub(crate) fn read_covered(day: DayFile, covered: &Covered) -> Result<Option<Appended>> {
    let Some((data, stamp)) = atomic_io::read_stamped(&day.path)? else {
        return Ok(None);
    };
    let from = covered.prefix.len as usize;
    if stamp != covered.stamp || data.len() < from {
        return Ok(None);
    }
    Ok(Some(Appended {
        day,
        stamp,
        data,
        base: 0,
        lines_before: Some(0),
        from,
        prefix: BlockChain::default(),
    }))
}
