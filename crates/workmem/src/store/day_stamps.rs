//! The stamps of the daily files, taken cheaply: what every cache of the
//! log (the distill cache, the id index) compares with what it read.
//!
//! One `stat` per daily file, relative to the open `daily/` (no path is
//! resolved from the root).
//! The list of daily files is read again only when the stamp of `daily/`
//! changed (a file created, removed or renamed); a stamp whose
//! modification time is less than [`SETTLED_SECS`] old when it is taken is
//! not kept, so that a file created within the same tick of a coarse clock
//! is never missed.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{IoContext, Result};
use crate::store::atomic_io::{self, FileStamp};
use crate::store::fact_log::FactLog;
use crate::store::names::DAY_EXTENSION;

/// The length of a day, `YYYY-MM-DD`.
pub(crate) const DAY: usize = 10;
/// A day, as the name of its daily file starts.
pub(crate) type Day = [u8; DAY];
/// The stamp of `daily/`: inode, size, modification and change times.
pub(crate) type ListingStamp = [i64; 6];

/// How old the modification time of `daily/` must be, when its stamp is
/// taken, for the stamp to stand for the list of daily files: any file
/// created later gets a later time, even from a clock with a coarse tick.
pub(crate) const SETTLED_SECS: i64 = 3;

/// The daily files and their stamps.
#[derive(Debug)]
pub(crate) struct DayStamps {
    /// The days, oldest first, each with its file's stamp (`None`: the
    /// file is gone since it was listed).
    pub days: Vec<(Day, Option<FileStamp>)>,
    /// The stamp of `daily/` when it is settled: while `daily/` keeps it,
    /// `days` is its list of files.
    pub listing: Option<ListingStamp>,
}

/// Stamps the daily files of `log`. `known` is a listing stamp with the
/// days it stood for: when `daily/` still has that stamp, those days are
/// the list and `daily/` is not read. `None` when `daily/` does not exist.
///
/// Errors: [`crate::Error::Io`]; [`crate::Error::Corrupt`] for a symlinked
/// `daily/`.
pub(crate) fn scan(
    log: &FactLog,
    known: Option<(ListingStamp, Vec<Day>)>,
) -> Result<Option<DayStamps>> {
    let dir_path = log.dir();
    let Some((dir, listing)) = open_listing(dir_path)? else { return Ok(None) };
    let (days, settled) = match known {
        Some((stamp, days)) if stamp == listing => (days, Some(listing)),
        _ => {
            let listed = log.days()?;
            let days = listed.iter().filter_map(|file| file.day.as_bytes().try_into().ok());
            (days.collect(), settled(listing))
        }
    };
    let stamps = stat_days(&dir, dir_path, &days)?;
    Ok(Some(DayStamps { days: days.into_iter().zip(stamps).collect(), listing: settled }))
}

/// Returns the stamp of `daily/` when it is settled, taken before the
/// files are listed, for a reader of the whole log to keep with what it
/// read. `None` when `daily/` is missing or was changed too recently.
///
/// Errors: as [`scan`].
pub(crate) fn settled_listing(log: &FactLog) -> Result<Option<ListingStamp>> {
    Ok(open_listing(log.dir())?.and_then(|(_, listing)| settled(listing)))
}

/// `listing` when its modification time is old enough to stand for the
/// list of files.
fn settled(listing: ListingStamp) -> Option<ListingStamp> {
    // The file system's clock, not the workspace's (which tests set).
    #[allow(clippy::disallowed_methods)]
    let now = jiff::Timestamp::now().as_second();
    (listing[2] < now - SETTLED_SECS).then_some(listing)
}

/// Opens `daily/` (never through a symlink) and takes its stamp; `None`
/// when it does not exist.
fn open_listing(dir_path: &Path) -> Result<Option<(File, ListingStamp)>> {
    let dir = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir_path)
    {
        Ok(dir) => dir,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            atomic_io::refuse_symlink(dir_path)?;
            return Err(err).at(dir_path);
        }
        Err(err) => return Err(err).at(dir_path),
    };
    let meta = dir.metadata().at(dir_path)?;
    let listing = [
        meta.ino() as i64,
        meta.size() as i64,
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    ];
    Ok(Some((dir, listing)))
}

/// Returns the stamp of each daily file of `days` (`None`: it is gone),
/// each `stat` relative to the open `daily/`. On one thread: the stats of
/// one directory do not get faster on two (measured: 885 files took
/// 1.4-1.6 ms on one core or split over two), and a thread costs its start.
fn stat_days(dir: &File, dir_path: &Path, days: &[Day]) -> Result<Vec<Option<FileStamp>>> {
    let mut name = [0u8; DAY + 6];
    name[DAY..].copy_from_slice(DAY_EXTENSION.as_bytes());
    days.iter()
        .map(|day| {
            name[..DAY].copy_from_slice(day);
            match rustix::fs::statat(dir, &name[..], rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => Ok(Some([
                    stat.st_ino as i64,
                    stat.st_size,
                    stat.st_mtime,
                    stat.st_mtime_nsec as i64,
                ])),
                Err(rustix::io::Errno::NOENT) => Ok(None),
                Err(err) => Err(io::Error::from(err)).at(dir_path),
            }
        })
        .collect()
}
