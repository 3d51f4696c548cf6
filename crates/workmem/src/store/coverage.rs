//! What a cache has read of each daily file, so that it reads only what was
//! appended since.
//!
//! For each daily file a cache records the stamp the file had before it was
//! read (inode, size, modification time), how many bytes its records reach,
//! and the SHA-256 of those bytes. A file that kept its stamp is not read.
//! A file whose stamp changed is read whole: when its first `len` bytes
//! still hash to the recorded digest, only the bytes after them are new (an
//! append); otherwise the file was rewritten (an edit by hand or by another
//! tool), and so is a file that disappeared: the cache cannot subtract what
//! it no longer sees, and is rebuilt by its owner.
//!
//! On disk each file is one line of the owner's text format:
//! `file <day> <inode> <size> <mtime_s> <mtime_ns> <len> <sha256 hex>`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::store::atomic_io::{self, FileStamp};
use crate::store::fact_log::{DayFile, FactLog};

/// What a cache has read of one daily file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Covered {
    /// The file's stamp before the read.
    pub stamp: FileStamp,
    /// Bytes from the start whose records the cache holds.
    pub len: u64,
    /// SHA-256 (hex) of those bytes.
    pub digest: String,
}

impl Covered {
    /// Returns the coverage of the first `len` bytes of `data`, read with
    /// `stamp`.
    pub(crate) fn of(stamp: FileStamp, data: &[u8], len: usize) -> Covered {
        Covered { stamp, len: len as u64, digest: hex::encode(Sha256::digest(&data[..len])) }
    }

    /// Returns the coverage of the first `len` bytes of an appended file,
    /// continuing the hash of the bytes it already covered (`len` is at
    /// least [`Appended::from`]).
    pub(crate) fn of_appended(appended: &Appended, len: usize) -> Covered {
        let mut hasher = appended.prefix.clone();
        hasher.update(&appended.data[appended.from..len]);
        Covered { stamp: appended.stamp, len: len as u64, digest: hex::encode(hasher.finalize()) }
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
            digest.len() == 64 && digest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
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
#[derive(Debug)]
pub(crate) struct Appended {
    /// The file.
    pub day: DayFile,
    /// Its stamp before this read.
    pub stamp: FileStamp,
    /// The whole file as read.
    pub data: Vec<u8>,
    /// Where the new bytes start (the old coverage's `len`).
    pub from: usize,
    /// The hash state after the bytes before `from`.
    prefix: Sha256,
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

/// Compares the daily files of `log` with `covered` (by day): stats every
/// file (relative to `daily/`), reads none.
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// `daily/`.
pub(crate) fn scan(log: &FactLog, covered: &BTreeMap<String, Covered>) -> Result<Scan> {
    let days = log.days_with_stamps()?;
    let mut listed = 0;
    let mut changed = Vec::new();
    for (day, stamp) in days {
        let known = covered.get(&day.day);
        listed += usize::from(known.is_some());
        if let Some(old) = known
            && Some(old.stamp) == stamp
        {
            continue;
        }
        changed.push(Changed { day, known: known.cloned() });
    }
    if listed != covered.len() {
        return Ok(Scan::Rewritten);
    }
    Ok(Scan::Changed(changed))
}

/// Reads a changed file: `Some` with its bytes when it only grew (or is
/// new), `None` when it was rewritten or removed.
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// or irregular file.
pub(crate) fn read_appended(changed: &Changed) -> Result<Option<Appended>> {
    let Some((data, stamp)) = atomic_io::read_stamped(&changed.day.path)? else {
        return Ok(None);
    };
    let mut prefix = Sha256::new();
    let from = match &changed.known {
        None => 0,
        Some(old) => {
            let len = old.len as usize;
            if data.len() < len {
                return Ok(None);
            }
            prefix.update(&data[..len]);
            if hex::encode(prefix.clone().finalize()) != old.digest {
                return Ok(None);
            }
            len
        }
    };
    Ok(Some(Appended { day: changed.day.clone(), stamp, data, from, prefix }))
}

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
    Ok(Some(Appended { day, stamp, data, from, prefix: Sha256::new() }))
}
