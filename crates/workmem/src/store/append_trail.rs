//! The append trail: the appends workmem made to the daily files under the
//! workspace lock (`remember --id`, `import`), each as the stamp its file
//! had right before the write and the stamp it had right after, so that a
//! cache that read a file at one stamp can tell, without reading the file
//! again, that it only grew since. (A plain `remember` takes no lock and
//! records nothing: a line of the trail would cost it a quarter of the
//! time its fsync takes.)
//!
//! A cache whose stamp of a daily file no longer matches reads the file
//! whole and hashes what it had read, to prove the old bytes are still
//! there ([`crate::store::coverage`]). When the trail leads from the
//! stamp the cache read to the stamp the file has now, one append at a
//! time, every step was an append of workmem's own, with nothing else
//! written in between (the file's size after the write was its size
//! before plus the bytes written, the inode the same): the cache reads
//! only the bytes after what it had read, and checks the last partial
//! block it had hashed. It trusts the stamps exactly as it trusts a file
//! whose stamp did not change.
//!
//! A cache, never evidence: `.append-trail` in the memory directory,
//! appended without fsync after each durable append (one `write` of whole
//! lines on an `O_APPEND` descriptor), each line closed by a checksum of
//! itself, so a torn or garbled line is skipped. Lost lines cost a cache a
//! read of the file.
//! A distill, holding the workspace lock, empties it once its cache
//! covers every file; a check with an id, holding the lock, compacts it
//! ([`compact`]); nothing is recorded while it is larger than [`LIMIT`]
//! (64 KiB, some 600 appends), and a reader parses only the lines of the
//! files it found changed.
//!
//! ```text
//! .append-trail, one line per append to one daily file:
//! <day> <inode> <size> <mtime_s> <mtime_ns> <inode> <size> <mtime_s> <mtime_ns> <checksum>
//!       (before the write)                  (after the write)
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::store::atomic_io::{self, FileStamp};
use crate::store::day_stamps::{DAY, Day};
use crate::store::fact_log::Written;
use crate::store::names::TRAIL_FILE;

/// The size past which no append is recorded (a workspace appended to
/// for long without a distill or a check with an id): the caches read the
/// files again.
pub(crate) const LIMIT: u64 = 1 << 16;

/// The most appends one file's chain is followed through.
const MAX_STEPS: usize = 100_000;

/// Records the appends `written` (each with its placement) that were
/// workmem's alone: the file's size after the write is its size before
/// plus the bytes written, under the same inode. Best effort, after the
/// appends are durable: a failure costs a cache a read.
pub(crate) fn record(memory_dir: &Path, written: &[Written]) {
    let mut lines = String::new();
    for file in written {
        if let (Some(placement), Ok(day)) = (file.alone(), <Day>::try_from(file.day.as_bytes())) {
            push_line(&mut lines, &day, placement.before, placement.after);
        }
    }
    if !lines.is_empty() {
        let _ = append(&memory_dir.join(TRAIL_FILE), lines.as_bytes());
    }
}

fn append(path: &Path, lines: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > LIMIT {
        return Ok(());
    }
    file.write_all(lines)
}

/// Empties the trail, for the holder of the workspace lock whose cache
/// now covers every daily file. Best effort.
pub(crate) fn clear(memory_dir: &Path) {
    let opened = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(memory_dir.join(TRAIL_FILE));
    if let Ok(file) = opened
        && file.metadata().is_ok_and(|meta| meta.is_file() && meta.len() > 0)
    {
        let _ = file.set_len(0);
    }
}

/// The appends recorded, by file and the stamp each started from.
#[derive(Debug, Default)]
pub(crate) struct Trail {
    steps: HashMap<(Day, FileStamp), FileStamp>,
}

impl Trail {
    /// Reads the appends the trail of `memory_dir` records to the daily
    /// files of `days` (in order); empty when it is missing or unreadable.
    /// Lines that do not check are skipped; the lines of other days are
    /// only looked at.
    pub(crate) fn load(memory_dir: &Path, days: &[Day]) -> Trail {
        if days.is_empty() {
            return Trail::default();
        }
        read(memory_dir, |day| days.binary_search(day).is_ok())
    }

    /// Whether the daily file of `day` went from stamp `from` to stamp
    /// `to` by workmem's own appends alone.
    pub(crate) fn leads(&self, day: &Day, from: FileStamp, to: FileStamp) -> bool {
        let mut at = from;
        for _ in 0..MAX_STEPS {
            if at == to {
                return from != to;
            }
            match self.steps.get(&(*day, at)) {
                Some(next) => at = *next,
                None => return false,
            }
        }
        false
    }
}

/// Reads the appends the trail of `memory_dir` records to the daily files
/// whose day is `wanted`.
fn read(memory_dir: &Path, wanted: impl Fn(&Day) -> bool) -> Trail {
    let mut steps = HashMap::new();
    let path = memory_dir.join(TRAIL_FILE);
    let Ok(Some(data)) = atomic_io::read_optional(&path) else { return Trail { steps } };
    for line in data.split(|&b| b == b'\n') {
        let ours = line.first_chunk::<DAY>().is_some_and(&wanted);
        if let Some((day, before, after)) = ours.then(|| parse_line(line)).flatten() {
            steps.insert((day, before), after);
        }
    }
    Trail { steps }
}

/// The size past which a writer holding the lock compacts the trail.
const COMPACT_AT: u64 = 16 << 10;

/// Compacts the trail of `memory_dir` once it outgrew [`COMPACT_AT`], for
/// the holder of the workspace lock, which knows the stamp every daily
/// file had when it last looked (`now`): the appends that follow one
/// another become one step, from the first stamp (where the distill cache
/// stands) to the last, with one more from the stamp in `now` when it is
/// on the way (where the id index stands). What any reader could follow
/// before, it can follow after: from where it stood to the end. A chain
/// that does not reach the stamp in `now` leads nowhere the file is and is
/// dropped. Best effort: the trail is a cache.
pub(crate) fn compact(memory_dir: &Path, now: impl Fn(&Day) -> Option<FileStamp>) {
    let path = memory_dir.join(TRAIL_FILE);
    if std::fs::symlink_metadata(&path).map_or(true, |meta| meta.len() <= COMPACT_AT) {
        return;
    }
    let trail = read(memory_dir, |_| true);
    let targets: std::collections::HashSet<(Day, FileStamp)> =
        trail.steps.iter().map(|((day, _), after)| (*day, *after)).collect();
    let mut kept: Vec<(Day, FileStamp, FileStamp)> = Vec::new();
    // Each chain from its start (a stamp no step leads to).
    for (day, start) in trail.steps.keys().filter(|(day, from)| !targets.contains(&(*day, *from))) {
        let mut chain = vec![*start];
        while let Some(next) = trail.steps.get(&(*day, chain[chain.len() - 1])) {
            if chain.len() > MAX_STEPS {
                break;
            }
            chain.push(*next);
        }
        let end = chain[chain.len() - 1];
        match now(day).map(|stamp| chain.iter().position(|at| *at == stamp)) {
            // A file the lock holder does not know: the chain as one step.
            None => kept.push((*day, *start, end)),
            // It leads nowhere the file is.
            Some(None) => {}
            Some(Some(n)) => {
                if n > 0 && n < chain.len() - 1 {
                    kept.push((*day, *start, chain[n]));
                    kept.push((*day, chain[n], end));
                } else {
                    kept.push((*day, *start, end));
                }
            }
        }
    }
    kept.sort_unstable();
    let mut lines = String::new();
    for (day, before, after) in kept {
        push_line(&mut lines, &day, before, after);
    }
    let _ = atomic_io::replace_cache(&path, lines.as_bytes());
}

/// Appends the line of one step to `out`.
fn push_line(out: &mut String, day: &Day, before: FileStamp, after: FileStamp) {
    let start = out.len();
    let [bi, bs, bm, bn] = before;
    let [ai, a_size, am, an] = after;
    let day = std::str::from_utf8(day).unwrap_or_default();
    let _ = write!(out, "{day} {bi} {bs} {bm} {bn} {ai} {a_size} {am} {an}");
    let sum = xxh3_64(&out.as_bytes()[start..]);
    let _ = writeln!(out, " {sum:016x}");
}

fn parse_line(line: &[u8]) -> Option<(Day, FileStamp, FileStamp)> {
    let text = std::str::from_utf8(line).ok()?;
    let (body, sum) = text.rsplit_once(' ')?;
    if sum.len() != 16 || u64::from_str_radix(sum, 16).ok()? != xxh3_64(body.as_bytes()) {
        return None;
    }
    let mut fields = body.split(' ');
    let day: Day = fields.next()?.as_bytes().try_into().ok()?;
    let mut stamps = [[0i64; 4]; 2];
    for stamp in &mut stamps {
        for slot in stamp.iter_mut() {
            *slot = fields.next()?.parse().ok()?;
        }
    }
    fields.next().is_none().then_some((day, stamps[0], stamps[1]))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write fixtures directly
mod tests {
    use super::*;
    use crate::store::atomic_io::Placement;

    fn written(day: &str, bytes: &str, before: FileStamp, after: FileStamp) -> Written {
        Written {
            day: day.into(),
            bytes: bytes.into(),
            records: Vec::new(),
            placement: Some(Placement { before, offset: before[1] as u64, after }),
        }
    }

    const DAY_1: &Day = b"2026-01-01";
    const DAYS: &[Day] = &[*b"2026-01-01", *b"2026-01-02"];

    #[test]
    fn a_chain_of_own_appends_leads_from_the_first_stamp_to_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = ([7, 10, 1, 0], [7, 15, 2, 0], [7, 18, 3, 5]);
        record(dir.path(), &[written("2026-01-01", "12345", a, b)]);
        record(dir.path(), &[written("2026-01-01", "678", b, c)]);
        let trail = Trail::load(dir.path(), DAYS);
        assert!(trail.leads(DAY_1, a, c));
        assert!(trail.leads(DAY_1, b, c));
        // Not backwards, not to itself, not for another day.
        assert!(!trail.leads(DAY_1, c, a));
        assert!(!trail.leads(DAY_1, a, a));
        assert!(!trail.leads(b"2026-01-02", a, c));
        // Only the lines of the days asked for are read.
        assert!(!Trail::load(dir.path(), &[*b"2026-01-02"]).leads(DAY_1, a, c));
        clear(dir.path());
        assert!(!Trail::load(dir.path(), DAYS).leads(DAY_1, a, c));
    }

    #[test]
    fn an_append_with_another_write_in_between_is_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        // 5 bytes written, but the file grew by 9: someone else wrote too.
        record(dir.path(), &[written("2026-01-01", "12345", [7, 10, 1, 0], [7, 19, 2, 0])]);
        // Another inode after the write: the file was replaced.
        record(dir.path(), &[written("2026-01-01", "12345", [7, 10, 1, 0], [8, 15, 2, 0])]);
        assert!(Trail::load(dir.path(), DAYS).steps.is_empty());
    }

    #[test]
    fn a_garbled_or_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = ([7, 10, 1, 0], [7, 15, 2, 0], [7, 18, 3, 5]);
        record(dir.path(), &[written("2026-01-01", "12345", a, b)]);
        record(dir.path(), &[written("2026-01-01", "678", b, c)]);
        let path = dir.path().join(TRAIL_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        // The second step's size changed: its checksum no longer holds.
        let garbled = text.replacen(" 7 18 3 5 ", " 7 19 3 5 ", 1);
        std::fs::write(&path, &garbled).unwrap();
        let trail = Trail::load(dir.path(), DAYS);
        assert!(trail.leads(DAY_1, a, b));
        assert!(!trail.leads(DAY_1, a, c));
        assert!(!trail.leads(DAY_1, a, [7, 19, 3, 5]));
        // Torn: the first line only.
        let first = text.split_inclusive('\n').next().unwrap();
        std::fs::write(&path, &text[..first.len() + 20]).unwrap();
        let trail = Trail::load(dir.path(), DAYS);
        assert!(trail.leads(DAY_1, a, b) && !trail.leads(DAY_1, a, c));
    }

    #[test]
    fn a_compacted_trail_leads_wherever_it_led() {
        let dir = tempfile::tempdir().unwrap();
        let stamp = |n: i64| [7, 10 * n, n, 0];
        let step = |day: &str, from: i64, to: i64| {
            record(
                dir.path(),
                &[written(day, &"x".repeat(10 * (to - from) as usize), stamp(from), stamp(to))],
            );
        };
        // Day 1: 1 -> 2 -> ... -> 600, and a chain 900 -> 901 an outside
        // write cut off; day 2, which the lock holder does not know:
        // 1 -> 2 -> 3.
        for n in 1..600 {
            step("2026-01-01", n, n + 1);
        }
        step("2026-01-01", 900, 901);
        step("2026-01-02", 1, 2);
        step("2026-01-02", 2, 3);
        let path = dir.path().join(TRAIL_FILE);
        let before = std::fs::metadata(&path).unwrap().len();
        assert!(before > COMPACT_AT);
        // The lock holder last saw day 1 at 120.
        compact(dir.path(), |day| (day == DAY_1).then_some(stamp(120)));
        assert!(std::fs::metadata(&path).unwrap().len() < 500);
        let trail = Trail::load(dir.path(), DAYS);
        assert_eq!(trail.steps.len(), 3);
        for from in [1, 120] {
            assert!(trail.leads(DAY_1, stamp(from), stamp(600)), "from {from}");
        }
        assert!(!trail.leads(DAY_1, stamp(900), stamp(901)));
        assert!(trail.leads(b"2026-01-02", stamp(1), stamp(3)));
        // Small enough: left as it is.
        let compacted = std::fs::read(&path).unwrap();
        compact(dir.path(), |_| None);
        assert_eq!(std::fs::read(&path).unwrap(), compacted);
    }

    #[test]
    fn nothing_is_recorded_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRAIL_FILE);
        std::fs::write(&path, vec![b'\n'; LIMIT as usize + 1]).unwrap();
        record(dir.path(), &[written("2026-01-01", "12345", [7, 10, 1, 0], [7, 15, 2, 0])]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), LIMIT + 1);
    }
}
