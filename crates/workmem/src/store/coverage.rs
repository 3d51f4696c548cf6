//! What a cache has read of each daily file, so that it reads only what was
//! appended since.
//!
//! For each daily file a cache records the stamp the file had before it was
//! read (inode, size, modification time), how many bytes its records reach,
//! and a digest of those bytes: XXH3-128, which tells a file that changed
//! from one that did not as surely as a cryptographic hash for anything but
//! a forgery (and a forger who can write the daily files needs none), at a
//! tenth of the cost: a distill hashes every byte of the log it reads. A
//! file that kept its stamp is not read. A file whose stamp changed is read whole: when its first `len` bytes
//! still hash to the recorded digest, only the bytes after them are new (an
//! append); otherwise the file was rewritten (an edit by hand or by another
//! tool), and so is a file that disappeared: the cache cannot subtract what
//! it no longer sees, and is rebuilt by its owner.
//!
//! On disk each file is one line of the owner's text format:
//! `file <day> <inode> <size> <mtime_s> <mtime_ns> <len> <xxh3-128 hex>`.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use xxhash_rust::xxh3::{Xxh3Default, xxh3_128};

use crate::error::{IoContext, Result};
use crate::store::atomic_io::{self, FileStamp};
use crate::store::day_stamps::{self, ListingStamp};
use crate::store::fact_log::{DayFile, FactLog};

/// What a cache has read of one daily file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Covered {
    /// The file's stamp before the read.
    pub stamp: FileStamp,
    /// Bytes from the start whose records the cache holds.
    pub len: u64,
    /// XXH3-128 (32 hex digits) of those bytes.
    pub digest: String,
}

/// The 32 hex digits of a digest.
fn hex128(digest: u128) -> String {
    format!("{digest:032x}")
}

impl Covered {
    /// Returns the coverage of the first `len` bytes of `data`, read with
    /// `stamp`.
    pub(crate) fn of(stamp: FileStamp, data: &[u8], len: usize) -> Covered {
        Covered { stamp, len: len as u64, digest: hex128(xxh3_128(&data[..len])) }
    }

    /// Returns the coverage of the first `len` bytes of an appended file,
    /// continuing the hash of the bytes it already covered (`len` is at
    /// least [`Appended::from`]).
    pub(crate) fn of_appended(appended: &Appended, len: usize) -> Covered {
        let mut hasher = appended.prefix.clone();
        hasher.update(&appended.data[appended.from - appended.base..len - appended.base]);
        Covered { stamp: appended.stamp, len: len as u64, digest: hex128(hasher.digest128()) }
    }

    /// Appends the `file` line of `day` to `out`.
    pub(crate) fn write_line(&self, day: &str, out: &mut String) {
        let [inode, size, seconds, nanos] = self.stamp;
        let _ = writeln!(
            out,
            "file {day} {inode} {size} {seconds} {nanos} {} {}",
            self.len, self.digest
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
        let digest = fields.next()?;
        let valid =
            digest.len() == 32 && digest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        (valid && fields.next().is_none() && crate::store::fact_log::is_day_name(day))
            .then(|| (day, Covered { stamp, len, digest: digest.to_owned() }))
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
    /// were only hashed.
    pub base: usize,
    /// The lines before `base`.
    pub lines_before: usize,
    /// Where the new bytes start (the old coverage's `len`).
    pub from: usize,
    /// The hash state after the bytes before `from`.
    prefix: Xxh3Default,
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
/// the covered days were its list. Returns the stamp of `daily/` to keep
/// with the next coverage (`None`: not settled).
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// `daily/`.
pub(crate) fn scan(
    log: &FactLog,
    covered: &[(&str, &Covered)],
    listing: Option<ListingStamp>,
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
    for (day, stamp) in &stamped.days {
        let Ok(day) = std::str::from_utf8(day) else { continue };
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
        changed.push(Changed { day, known: known.cloned() });
    }
    let scan = if next == covered.len() { Scan::Changed(changed) } else { Scan::Rewritten };
    Ok((scan, stamped.listing))
}

/// Reads a changed file: `Some` with its bytes when it only grew (or is
/// new), `None` when it was rewritten or removed. The bytes the coverage
/// holds are only hashed, through one small buffer, unless `keep_old`
/// (then the whole file is kept).
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// or irregular file.
pub(crate) fn read_appended(changed: &Changed, keep_old: bool) -> Result<Option<Appended>> {
    let from = changed.known.as_ref().map_or(0, |old| old.len as usize);
    let Some(read) = read_after::<Xxh3Default>(&changed.day.path, from, keep_old)? else {
        return Ok(None);
    };
    if let Some(old) = &changed.known
        && hex128(read.prefix.digest128()) != old.digest
    {
        return Ok(None);
    }
    Ok(Some(Appended {
        day: changed.day.clone(),
        stamp: read.stamp,
        data: read.data,
        base: read.base,
        lines_before: read.lines_before,
        from,
        prefix: read.prefix,
    }))
}

/// A running hash of a daily file's bytes from its start: XXH3-128 for the
/// distill cache's coverage, a chain of XXH3-64 for the id index (which
/// keeps the state itself, to resume it after its own appends).
pub(crate) trait PrefixHash: Default {
    /// Hashes `bytes`, the next ones.
    fn update(&mut self, bytes: &[u8]);
}

impl PrefixHash for Xxh3Default {
    fn update(&mut self, bytes: &[u8]) {
        Xxh3Default::update(self, bytes);
    }
}

/// A daily file read past a prefix that was only hashed.
pub(crate) struct ReadAfter<H> {
    /// The file's stamp before the read.
    pub stamp: FileStamp,
    /// The hash state after the first `from` bytes.
    pub prefix: H,
    /// The bytes from `base` on.
    pub data: Vec<u8>,
    /// 0 when the prefix was kept, else `from`.
    pub base: usize,
    /// The lines before `base`.
    pub lines_before: usize,
}

/// Reads the daily file at `path` after its first `from` bytes, which are
/// hashed (and kept only when `keep_prefix`) on the way, through one small
/// buffer: a long file that grew by a few lines costs no memory of its
/// size. `None` when the file is missing or shorter than `from`.
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// or irregular file.
pub(crate) fn read_after<H: PrefixHash>(
    path: &Path,
    from: usize,
    keep_prefix: bool,
) -> Result<Option<ReadAfter<H>>> {
    let Some(mut file) = atomic_io::open_optional(path)? else { return Ok(None) };
    let stamp = atomic_io::stamp_of(&file.metadata().at(path)?);
    let mut prefix = H::default();
    let mut data = Vec::new();
    if keep_prefix || from == 0 {
        file.read_to_end(&mut data).at(path)?;
        let Some(old) = data.get(..from) else { return Ok(None) };
        prefix.update(old);
        return Ok(Some(ReadAfter { stamp, prefix, data, base: 0, lines_before: 0 }));
    }
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
    Ok(Some(ReadAfter { stamp, prefix, data, base: from, lines_before }))
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
    let from = covered.len as usize;
    if stamp != covered.stamp || data.len() < from {
        return Ok(None);
    }
    Ok(Some(Appended {
        day,
        stamp,
        data,
        base: 0,
        lines_before: 0,
        from,
        prefix: Xxh3Default::new(),
    }))
}
