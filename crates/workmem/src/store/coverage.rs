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

use std::fmt::Write as _;
use std::io::{Read as _, Seek as _};
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::error::{IoContext, Result};
use crate::store::append_trail::Trail;
use crate::store::atomic_io::{self, FileStamp};
use crate::store::day_stamps::{self, Day, ListingStamp};
use crate::store::fact_log::{DayFile, FactLog};

/// The block of a [`BlockChain`].
const CHAIN_BLOCK: usize = 4096;

/// A running hash of a daily file's bytes that goes on from a small saved
/// state: XXH3-64 of each [`CHAIN_BLOCK`] bytes, seeded with the value of
/// the blocks before it. Its state is that value and the bytes after the
/// last whole block, which a cache does not keep: it reads them back from
/// the file (fewer than a block) when the hash goes on, and checks them
/// against their checksum ([`Prefix::tail_sum`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlockChain {
    /// The value after the whole blocks hashed so far.
    value: u64,
    /// The bytes after them.
    tail: Vec<u8>,
}

impl Default for BlockChain {
    fn default() -> BlockChain {
        BlockChain { value: 0x5741_4c4b_4d45_4d31, tail: Vec::new() }
    }
}

impl BlockChain {
    /// Hashes `bytes`, the next ones.
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        if !self.tail.is_empty() {
            let take = bytes.len().min(CHAIN_BLOCK - self.tail.len());
            self.tail.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.tail.len() < CHAIN_BLOCK {
                return;
            }
            self.value = xxh3_64_with_seed(&self.tail, self.value);
            self.tail.clear();
        }
        let (blocks, rest) = bytes.as_chunks::<CHAIN_BLOCK>();
        for block in blocks {
            self.value = xxh3_64_with_seed(block, self.value);
        }
        self.tail.extend_from_slice(rest);
    }

    /// Returns the fingerprint of the `len` bytes hashed so far: what a
    /// cache keeps.
    pub(crate) fn prefix(&self, len: u64) -> Prefix {
        Prefix { len, chain: self.value, tail_sum: checksum(&self.tail) }
    }

    /// Returns the hash of `prefix` going on, given the bytes after its
    /// whole blocks; `None` when they are not those bytes.
    pub(crate) fn resume(prefix: &Prefix, tail: &[u8]) -> Option<BlockChain> {
        (tail.len() == prefix.len as usize % CHAIN_BLOCK && checksum(tail) == prefix.tail_sum)
            .then(|| BlockChain { value: prefix.chain, tail: tail.to_vec() })
    }
}

impl BlockChain {
    /// Returns the hash of `prefix`, the first bytes of the file at `path`,
    /// going on: the bytes after its whole blocks are read back from the
    /// file; `None` when they cannot be read or are not those bytes.
    pub(crate) fn resume_from(path: &Path, prefix: &Prefix) -> Option<BlockChain> {
        use std::os::unix::fs::FileExt as _;
        let file = atomic_io::open_optional(path).ok()??;
        let after = prefix.len % CHAIN_BLOCK as u64;
        let mut tail = vec![0; after as usize];
        file.read_exact_at(&mut tail, prefix.len - after).ok()?;
        BlockChain::resume(prefix, &tail)
    }
}

/// A checksum of a few bytes that catches a torn or zeroed write, not an
/// adversary.
pub(crate) fn checksum(data: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut hash = 0x243f_6a88_85a3_08d3 ^ data.len() as u64;
    let (words, rest) = data.as_chunks::<8>();
    for word in words {
        hash = (hash ^ u64::from_le_bytes(*word)).wrapping_mul(K).rotate_left(31);
    }
    for byte in rest {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(K).rotate_left(31);
    }
    hash
}

/// The first bytes of a daily file a cache read, as it keeps them: how
/// many, and their [`BlockChain`] fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prefix {
    /// How many bytes.
    pub len: u64,
    /// The chain's value after their whole blocks.
    pub chain: u64,
    /// The checksum of the bytes after those blocks.
    pub tail_sum: u64,
}

/// What a cache has read of one daily file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Covered {
    /// The file's stamp before the read.
    pub stamp: FileStamp,
    /// The bytes from the start whose records the cache holds.
    pub prefix: Prefix,
}

impl Covered {
    /// Returns the coverage of the first `len` bytes of `data`, read with
    /// `stamp`.
    pub(crate) fn of(stamp: FileStamp, data: &[u8], len: usize) -> Covered {
        let mut chain = BlockChain::default();
        chain.update(&data[..len]);
        Covered { stamp, prefix: chain.prefix(len as u64) }
    }

    /// Returns the coverage of the first `len` bytes of an appended file,
    /// continuing the hash of the bytes it already covered (`len` is at
    /// least [`Appended::from`]).
    pub(crate) fn of_appended(appended: &Appended, len: usize) -> Covered {
        let mut chain = appended.prefix.clone();
        chain.update(&appended.data[appended.from - appended.base..len - appended.base]);
        Covered { stamp: appended.stamp, prefix: chain.prefix(len as u64) }
    }

    /// Appends the `file` line of `day` to `out`.
    pub(crate) fn write_line(&self, day: &str, out: &mut String) {
        let [inode, size, seconds, nanos] = self.stamp;
        let Prefix { len, chain, tail_sum } = self.prefix;
        let _ = writeln!(
            out,
            "file {day} {inode} {size} {seconds} {nanos} {len} {chain:016x} {tail_sum:016x}"
        );
    }

    /// Parses the rest of a `file` line (after `file `): the day and the
    /// coverage; `None` when malformed.
    pub(crate) fn parse_line(rest: &str) -> Option<(&str, Covered)> {
        let mut fields = rest.split_ascii_whitespace();
        let day = fields.next()?;
        let mut stamp: FileStamp = [0; 4];
        for slot in &mut stamp {
            *slot = fields.next()?.parse().ok()?;
        }
        let len = fields.next()?.parse().ok()?;
        let mut hex = || {
            let field = fields.next().filter(|field| field.len() == 16)?;
            u64::from_str_radix(field, 16).ok()
        };
        let (chain, tail_sum) = (hex()?, hex()?);
        (fields.next().is_none() && crate::store::fact_log::is_day_name(day))
            .then_some((day, Covered { stamp, prefix: Prefix { len, chain, tail_sum } }))
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize) -> Vec<u8> {
        (0..len).map(|n| (n * 31 % 251) as u8).collect()
    }

    fn hashed(parts: &[&[u8]]) -> BlockChain {
        let mut hash = BlockChain::default();
        for part in parts {
            hash.update(part);
        }
        hash
    }

    #[test]
    fn the_chain_does_not_depend_on_how_the_bytes_are_cut() {
        let data = bytes(3 * CHAIN_BLOCK + 1234);
        let whole = hashed(&[&data]);
        for cut in [0, 1, 63, CHAIN_BLOCK - 1, CHAIN_BLOCK, CHAIN_BLOCK + 1, 2 * CHAIN_BLOCK + 5] {
            let (a, b) = data.split_at(cut);
            assert_eq!(hashed(&[a, b]), whole, "cut at {cut}");
        }
        let small: Vec<&[u8]> = data.chunks(97).collect();
        assert_eq!(hashed(&small), whole);
        assert_eq!(whole.tail, data[3 * CHAIN_BLOCK..]);
    }

    #[test]
    fn a_resumed_chain_goes_on_as_the_unbroken_one() {
        let data = bytes(2 * CHAIN_BLOCK + 700);
        for len in [0, 5, CHAIN_BLOCK - 1, CHAIN_BLOCK, CHAIN_BLOCK + 300, data.len() - 1] {
            let before = hashed(&[&data[..len]]);
            let prefix = before.prefix(len as u64);
            // The bytes after the whole blocks, as read back from the file.
            let tail = &data[len - len % CHAIN_BLOCK..len];
            let mut resumed = BlockChain::resume(&prefix, tail).unwrap();
            resumed.update(&data[len..]);
            assert_eq!(resumed, hashed(&[&data]), "resumed at {len}");
        }
        // Not the bytes the prefix ended with, or not as many.
        let prefix = hashed(&[&data[..CHAIN_BLOCK + 300]]).prefix(CHAIN_BLOCK as u64 + 300);
        let mut tail = data[CHAIN_BLOCK..CHAIN_BLOCK + 300].to_vec();
        assert!(BlockChain::resume(&prefix, &tail).is_some());
        tail[7] ^= 1;
        assert!(BlockChain::resume(&prefix, &tail).is_none());
        assert!(BlockChain::resume(&prefix, &data[CHAIN_BLOCK..CHAIN_BLOCK + 299]).is_none());
    }

    #[test]
    fn a_changed_byte_or_order_changes_the_fingerprint() {
        let data = bytes(2 * CHAIN_BLOCK + 10);
        let whole = hashed(&[&data]).prefix(data.len() as u64);
        for at in [0, CHAIN_BLOCK - 1, CHAIN_BLOCK, 2 * CHAIN_BLOCK + 9] {
            let mut changed = data.clone();
            changed[at] ^= 1;
            assert_ne!(hashed(&[&changed]).prefix(data.len() as u64), whole, "byte {at}");
        }
        // The same blocks in another order.
        let mut swapped = data[CHAIN_BLOCK..2 * CHAIN_BLOCK].to_vec();
        swapped.extend_from_slice(&data[..CHAIN_BLOCK]);
        swapped.extend_from_slice(&data[2 * CHAIN_BLOCK..]);
        assert_ne!(hashed(&[&swapped]).prefix(data.len() as u64), whole);
    }
}
