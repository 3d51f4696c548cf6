//! The distill cache: what a distill leaves for the next one, so that a
//! distill reads and judges only what changed since (docs/design.md).
//!
//! A cache, never evidence: rebuilt by any distill that cannot use it, and
//! used only when everything it assumes still holds. Four files in the
//! memory directory, bound together by a random token and to the memory
//! directory by its inode (a copy from elsewhere never matches):
//!
//! - `.distill-cache` (small, read by every distill): the policy and
//!   `as_of` of the run that wrote it, the stamps of the state files it
//!   left, its counters and what a run with nothing new reports, and for
//!   each daily file what was read of it (see [`crate::store::coverage`])
//!   with the earliest and latest `recorded_at` in it;
//! - `.distill-cache.units` (read only when something changed): for each
//!   memory key and each unkeyed group with candidates left unpromoted,
//!   those candidates, and for each memory key every fact id with the key;
//! - `.distill-cache.ids`: a Bloom filter of every fact id of the log, so
//!   that a new record whose id may already exist sends distill back to
//!   the whole log (the first record of an id counts);
//! - `.distill-cache.places`: where each unit's records are in the units
//!   file (a 64-bit hash of the unit and an offset, in checksummed sections
//!   that follow the units file's), so that a run reads only the records
//!   of the units it judges, not the units file (42 MB at 1,000,000
//!   facts).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;

use crate::model::fact::Kind;
use crate::model::fact_line::{FactRecord, FactSummary};
use crate::store::atomic_io::{self, FileStamp};
use crate::store::block_chain::Covered;
use crate::store::corrections::StreamSeen;
use crate::store::day_stamps::ListingStamp;

/// The version of the distill cache's format (the small file, and the
/// `p` line of a candidate fact, whose fields follow
/// [`crate::model::fact_fields::FACT_FIELDS`]): raised whenever either
/// changes, so that a cache of another format is read as missing and
/// written again. It does not follow the crate's version: a release that
/// keeps the format keeps the cache.
pub(crate) const FORMAT_VERSION: u32 = 9;
const HEADER: &str = "workmem-distill-cache";
const UNITS_HEADER: &str = "workmem-distill-units 1";
const IDS_HEADER: &str = "workmem-distill-ids 2";

/// What a run read of one daily file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DayFacts {
    /// The bytes read.
    pub covered: Covered,
    /// The earliest and latest `recorded_at` (nanoseconds) of its facts;
    /// `None` when it has none.
    pub span: Option<(i128, i128)>,
    /// How many facts it holds.
    pub records: usize,
}

/// The small file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// Binds the three files.
    pub token: u64,
    /// The policy, as JSON.
    pub policy: String,
    /// The run's `as_of` (nanoseconds).
    pub as_of: i128,
    /// Stamps of curated.json, conflicts.json, MEMORY.md and the projection
    /// index as the run left them.
    pub state: [Option<FileStamp>; 4],
    /// Aged facts at `as_of`.
    pub scanned: usize,
    /// Aged facts that are evidence of an entry.
    pub already_evidence: usize,
    /// Active entries.
    pub active_entries: usize,
    /// Facts a run with nothing new counts `stale`.
    pub stale: usize,
    /// The conflict cases a run with nothing new reports, in memory-key
    /// order, each with its memory key.
    pub conflicts: Vec<(String, String)>,
    /// Distinct fact ids in the log.
    pub ids: usize,
    /// The length of the units file this header describes: bytes after it
    /// (an append a crash cut short) are not part of the cache.
    pub units_len: u64,
    /// The length of the id filter file this header describes, likewise.
    pub ids_len: u64,
    /// The length of the places file this header describes, likewise.
    pub places_len: u64,
    /// The corrections stream the run was built against: the cache is not
    /// used once it changed (its facts would count a fact retracted since).
    pub corrections: StreamSeen,
    /// The stamp of `daily/` under which the days of `files` were its
    /// list (`None`: list it).
    pub listing: Option<ListingStamp>,
    /// What was read of each daily file.
    pub files: BTreeMap<String, DayFacts>,
}

fn stamp_text(stamp: Option<FileStamp>) -> String {
    stamp.map_or_else(|| "-".to_owned(), |[a, b, c, d]| format!("{a},{b},{c},{d}"))
}

/// Parses a stamp written by [`stamp_text`]: `Ok(None)` for `-`, `Err`
/// when malformed.
fn parse_stamp(text: &str) -> std::result::Result<Option<FileStamp>, ()> {
    if text == "-" {
        return Ok(None);
    }
    let mut stamp: FileStamp = [0; 4];
    let mut fields = text.split(',');
    for slot in &mut stamp {
        *slot = fields.next().ok_or(())?.parse().map_err(drop)?;
    }
    if fields.next().is_some() { Err(()) } else { Ok(Some(stamp)) }
}

fn memory_inode(memory_dir: &Path) -> i64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(memory_dir).map_or(-1, |m| m.ino() as i64)
}

impl Header {
    /// Encodes the header for `workspace_id` in `memory_dir`.
    pub(crate) fn encode(&self, workspace_id: &str, memory_dir: &Path) -> String {
        self.encode_with(workspace_id, memory_dir, &self.encode_files())
    }

    /// Encodes the table of daily files, with the closing `end`: the bulk
    /// of the header, which a writer may encode before the rest is known.
    pub(crate) fn encode_files(&self) -> String {
        let mut text = String::with_capacity(self.files.len() * 160 + 4);
        for (day, facts) in &self.files {
            facts.covered.write_line(day, &mut text);
            if let Some((min, max)) = facts.span {
                let _ = writeln!(text, "span {min} {max} {}", facts.records);
            }
        }
        text.push_str("end\n");
        text
    }

    /// Encodes the header with `files`, its table of daily files as
    /// [`Header::encode_files`] encoded it.
    pub(crate) fn encode_with(&self, workspace_id: &str, memory_dir: &Path, files: &str) -> String {
        let mut text = format!(
            "{HEADER} {FORMAT_VERSION} {workspace_id} {} {}\n",
            memory_inode(memory_dir),
            self.token
        );
        let _ = writeln!(text, "policy {}", self.policy);
        let _ = writeln!(text, "as_of {}", self.as_of);
        let [a, b, c, d] = self.state.map(stamp_text);
        let _ = writeln!(text, "state {a} {b} {c} {d}");
        let _ = writeln!(
            text,
            "counts {} {} {} {} {}",
            self.scanned, self.already_evidence, self.active_entries, self.stale, self.ids
        );
        let _ = writeln!(text, "units {} {} {}", self.units_len, self.ids_len, self.places_len);
        let _ = writeln!(
            text,
            "corrections {} {} {}",
            self.corrections.len,
            self.corrections.sha256,
            stamp_text(self.corrections.stamp)
        );
        text.push_str("listing");
        match self.listing {
            Some(listing) => listing.iter().for_each(|field| {
                let _ = write!(text, " {field}");
            }),
            None => text.push_str(" -"),
        }
        text.push('\n');
        text.push_str("conflicts");
        for (memory_key, id) in &self.conflicts {
            let _ = write!(text, " {memory_key}={id}");
        }
        text.push('\n');
        text.push_str(files);
        text
    }

    /// Reads the header at `path`; `None` when missing, torn, of another
    /// version, workspace or memory directory.
    pub(crate) fn load(path: &Path, workspace_id: &str, memory_dir: &Path) -> Option<Header> {
        let data = atomic_io::read_optional(path).ok()??;
        let text = std::str::from_utf8(&data).ok()?.strip_suffix("end\n")?;
        // Two lines per daily file: split with memchr, not char by char.
        let mut lines = lines(text);
        let expected =
            format!("{HEADER} {FORMAT_VERSION} {workspace_id} {} ", memory_inode(memory_dir));
        let token = lines.next()?.strip_prefix(&expected)?.parse().ok()?;
        let policy = lines.next()?.strip_prefix("policy ")?.to_owned();
        let as_of = lines.next()?.strip_prefix("as_of ")?.parse().ok()?;
        let mut state_fields = lines.next()?.strip_prefix("state ")?.split(' ');
        let mut state = [None; 4];
        for slot in &mut state {
            *slot = parse_stamp(state_fields.next()?).ok()?;
        }
        let counts: Vec<usize> = lines
            .next()?
            .strip_prefix("counts ")?
            .split(' ')
            .map(str::parse)
            .collect::<std::result::Result<_, _>>()
            .ok()?;
        let [scanned, already_evidence, active_entries, stale, ids] = counts[..] else {
            return None;
        };
        let mut lengths = lines.next()?.strip_prefix("units ")?.split(' ').map(str::parse::<u64>);
        let (units_len, ids_len, places_len) =
            (lengths.next()?.ok()?, lengths.next()?.ok()?, lengths.next()?.ok()?);
        if lengths.next().is_some() {
            return None;
        }
        let mut seen = lines.next()?.strip_prefix("corrections ")?.split(' ');
        let corrections = StreamSeen {
            len: seen.next()?.parse().ok()?,
            sha256: seen.next()?.to_owned(),
            stamp: parse_stamp(seen.next()?).ok()?,
        };
        if seen.next().is_some() {
            return None;
        }
        let listing = match lines.next()?.strip_prefix("listing ")? {
            "-" => None,
            fields => {
                let mut listing: ListingStamp = [0; 6];
                let mut fields = fields.split(' ');
                for slot in &mut listing {
                    *slot = fields.next()?.parse().ok()?;
                }
                if fields.next().is_some() {
                    return None;
                }
                Some(listing)
            }
        };
        let conflicts = lines.next()?.strip_prefix("conflicts")?;
        let conflicts = conflicts
            .split_ascii_whitespace()
            .map(|pair| pair.split_once('=').map(|(k, id)| (k.to_owned(), id.to_owned())))
            .collect::<Option<_>>()?;
        // Written in day order: checked, then built in one pass.
        let mut days: Vec<(String, DayFacts)> = Vec::new();
        for line in lines {
            if let Some(rest) = line.strip_prefix("span ") {
                let (min, rest) = rest.split_once(' ')?;
                let (max, records) = rest.split_once(' ')?;
                let (_, file) = days.last_mut()?;
                file.span = Some((parse_nanos(min)?, parse_nanos(max)?));
                file.records = records.parse().ok().filter(|n| *n > 0)?;
            } else {
                let (day, covered) = Covered::parse_line(line.strip_prefix("file ")?)?;
                if days.last().is_some_and(|(last, _)| last.as_str() >= day) {
                    return None;
                }
                days.push((day.to_owned(), DayFacts { covered, span: None, records: 0 }));
            }
        }
        let files: BTreeMap<String, DayFacts> = days.into_iter().collect();
        Some(Header {
            token,
            policy,
            as_of,
            state,
            scanned,
            already_evidence,
            active_entries,
            stale,
            conflicts,
            ids,
            units_len,
            ids_len,
            places_len,
            corrections,
            listing,
            files,
        })
    }
}

/// Returns the lines of `text`, each ended by a newline (the last one may
/// not be).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', rest.as_bytes()).unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        Some(line)
    })
}

/// Parses an instant in nanoseconds; those of years 1678-2261 (every
/// instant a log holds in practice) fit an `i64`, which parses faster.
fn parse_nanos(text: &str) -> Option<i128> {
    text.parse::<i64>().map(i128::from).or_else(|_| text.parse()).ok()
}

/// Appends the cache line of a candidate fact to `out`; false when a field
/// holds a tab or a newline (the cache is then not written).
pub(crate) fn write_fact(fact: &FactSummary, out: &mut String) -> bool {
    let fields = [
        fact.fact_id(),
        fact.source(),
        fact.memory_key().unwrap_or(""),
        fact.stored_stamp(),
        fact.content(),
    ];
    if fields.iter().any(|f| memchr::memchr2(b'\t', b'\n', f.as_bytes()).is_some()) {
        return false;
    }
    // `p id kind importance source key stamp nanos content`, tab-separated.
    for part in ["p\t", fields[0], "\t", fact.kind().as_str(), "\t"] {
        out.push_str(part);
    }
    out.push(char::from(b'0' + fact.importance()));
    for part in ["\t", fields[1], "\t", fields[2], "\t"] {
        out.push_str(part);
    }
    fact.push_stamp_text(out);
    out.push('\t');
    push_integer(out, fact.instant().as_nanosecond());
    out.push('\t');
    out.push_str(fields[4]);
    out.push('\n');
    true
}

/// Appends `n` in decimal; the digits of a non-negative one that fits in 64
/// bits are written in place (a whole-log distill writes one per fact).
fn push_integer(out: &mut String, n: i128) {
    let Ok(mut value) = u64::try_from(n) else {
        let _ = write!(out, "{n}");
        return;
    };
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[start..]).unwrap_or_default());
}

/// Reads the cache line of a candidate fact, as [`write_fact`] wrote it;
/// `None` for a damaged line.
pub(crate) fn read_fact(line: &str) -> Option<FactSummary> {
    let mut f = line.strip_prefix("p\t")?.splitn(8, '\t');
    let (id, kind, importance, source, key, stamp, nanos, content) =
        (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
    FactSummary::from_fields(
        id,
        content,
        (!key.is_empty()).then_some(key),
        stamp,
        jiff::Timestamp::from_nanosecond(nanos.parse().ok()?).ok()?,
        source,
        Kind::parse(kind).ok()?,
        importance.parse().ok()?,
    )
}

/// A unit of the units file: a memory key or an unkeyed group (by entry
/// key).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum UnitKey {
    /// A memory key.
    Domain(String),
    /// An unkeyed group, by its entry key.
    Group(String),
}

impl UnitKey {
    /// The hash of the unit its places file records.
    fn hash(&self) -> u64 {
        let (kind, key) = self.parts();
        xxhash_rust::xxh3::xxh3_64_with_seed(key.as_bytes(), u64::from(kind))
    }

    /// Its kind as the units file writes it (`d` or `u`), and its key.
    fn parts(&self) -> (u8, &str) {
        match self {
            UnitKey::Domain(key) => (b'd', key),
            UnitKey::Group(key) => (b'u', key),
        }
    }
}

/// One unit as stored: its counts and its block of lines.
#[derive(Debug, Clone)]
pub(crate) struct StoredUnit {
    /// Facts counted `stale` (memory keys).
    pub stale: usize,
    /// The conflict case of its tie (memory keys).
    pub conflict: Option<String>,
    /// Its lines.
    range: Range<usize>,
}

/// The units file, indexed but not parsed.
///
/// The file is a whole section, written by a run over the whole log, then
/// the sections later runs appended, each holding only the units they
/// judged (a unit with an empty block has no candidates and no ids): a
/// unit's last record counts. The header names the token of the last
/// section and the file's length, so bytes a crash left after it are
/// ignored (and overwritten by the next append).
#[derive(Debug)]
pub(crate) struct Units {
    data: String,
    /// Units by key.
    pub units: BTreeMap<UnitKey, StoredUnit>,
    /// The length of the first (whole) section.
    whole_len: usize,
    /// The number of appended sections.
    appended: usize,
    /// The length of the file read.
    len: usize,
}

/// Appended sections from which the next run rewrites the units file
/// whole.
const MAX_APPENDED: usize = 64;

/// A unit's content.
#[derive(Debug, Default)]
pub(crate) struct UnitFacts {
    /// Its candidates left unpromoted.
    pub pending: Vec<FactSummary>,
    /// Every fact id with the memory key and its importance (memory keys).
    pub ids: Vec<(String, u8)>,
}

impl Units {
    /// Reads the first `len` bytes of the units file, whose last section
    /// must be of `token`, through one small buffer, keeping every unit
    /// (what a run that rewrites the file whole needs). `None` when the
    /// file is missing, shorter, torn or of another token.
    pub(crate) fn load(path: &Path, token: u64, len: u64) -> Option<Units> {
        use std::io::{BufRead, Read};
        let file = atomic_io::open_optional(path).ok()??;
        if file.metadata().ok()?.len() < len {
            return None;
        }
        let mut reader = std::io::BufReader::with_capacity(256 * 1024, file.take(len));
        let mut data = String::new();
        let mut units = BTreeMap::new();
        let (mut at, mut whole_len, mut appended, mut last_token) = (0u64, 0u64, 0, None);
        let mut line = Vec::new();
        let read_line = |reader: &mut std::io::BufReader<_>, line: &mut Vec<u8>| {
            line.clear();
            let n = reader.read_until(b'\n', line).ok()?;
            line.pop().filter(|&end| end == b'\n').map(|_| n as u64)
        };
        while at < len {
            at += read_line(&mut reader, &mut line)?;
            let opening = std::str::from_utf8(&line).ok()?;
            let section_token = if whole_len == 0 {
                opening.strip_prefix(UNITS_HEADER)?.strip_prefix(' ')?
            } else {
                appended += 1;
                opening.strip_prefix("append ")?
            };
            last_token = Some(section_token.trim_end().parse::<u64>().ok()?);
            loop {
                at += read_line(&mut reader, &mut line)?;
                if line.as_slice() == b"end" {
                    break;
                }
                let record = UnitLine::parse(std::str::from_utf8(&line).ok()?)?;
                at += record.len as u64;
                // A later record of a unit replaces an earlier one.
                let mut block = vec![0; record.len];
                reader.read_exact(&mut block).ok()?;
                let unit = record.keep(std::str::from_utf8(&block).ok()?, &mut data);
                units.insert(record.unit_key(), unit);
            }
            if whole_len == 0 {
                whole_len = at;
            }
        }
        (last_token == Some(token)).then_some(Units {
            data,
            units,
            whole_len: usize::try_from(whole_len).ok()?,
            appended,
            len: usize::try_from(len).ok()?,
        })
    }

    /// Reads the last record of each unit of `keep`, found through the
    /// places file (its first `places_len` bytes), from the first `len`
    /// bytes of the units file, whose last section must be of `token`:
    /// what a run that judges a few units needs, at the cost of those
    /// units and of the places file, not of the units file. A unit without
    /// a record is left out. `None` when either file is missing, shorter,
    /// torn or of another token, or a record is not where its place says.
    pub(crate) fn load_kept(
        units_path: &Path,
        places_path: &Path,
        token: u64,
        len: u64,
        places_len: u64,
        keep: &std::collections::BTreeSet<UnitKey>,
    ) -> Option<Units> {
        use std::os::unix::fs::FileExt;
        let places_file = atomic_io::open_optional(places_path).ok()??;
        let mut places = vec![0; usize::try_from(places_len).ok()?];
        places_file.read_exact_at(&mut places, 0).ok()?;
        // The places of the records of each hash kept, in file order.
        let mut wanted: std::collections::HashMap<u64, Vec<u64>> =
            keep.iter().map(|key| (key.hash(), Vec::new())).collect();
        let mut sections: Vec<(u64, u64)> = Vec::new();
        let mut rest = places.as_slice();
        while !rest.is_empty() {
            let (section, after) = PlacesSection::parse(rest)?;
            if sections.last().is_some_and(|&(_, end)| end >= section.units_end) {
                return None;
            }
            for (hash, offset) in section.places() {
                if offset >= section.units_end {
                    return None;
                }
                if let Some(found) = wanted.get_mut(&hash) {
                    found.push(offset);
                }
            }
            sections.push((section.token, section.units_end));
            rest = after;
        }
        let (&(_, whole_len), &(last_token, end)) = (sections.first()?, sections.last()?);
        if last_token != token || end != len {
            return None;
        }
        let units_file = atomic_io::open_optional(units_path).ok()??;
        if units_file.metadata().ok()?.len() < len {
            return None;
        }
        let mut data = String::new();
        let mut units = BTreeMap::new();
        for key in keep {
            // The last record of the key counts; another key may share its
            // hash.
            for &offset in wanted[&key.hash()].iter().rev() {
                let (line, block) = read_record(&units_file, offset, len)?;
                let record = UnitLine::parse(&line)?;
                if (record.kind, record.key) != key.parts() {
                    continue;
                }
                units.insert(key.clone(), record.keep(&block, &mut data));
                break;
            }
        }
        Some(Units {
            data,
            units,
            whole_len: usize::try_from(whole_len).ok()?,
            appended: sections.len() - 1,
            len: usize::try_from(len).ok()?,
        })
    }

    /// Returns whether the next run should write the file whole: the
    /// appended sections outgrew the first one, or are too many.
    pub(crate) fn worn(&self) -> bool {
        self.appended >= MAX_APPENDED || self.len > 2 * self.whole_len
    }

    /// Parses a unit's lines; `None` when they are damaged.
    pub(crate) fn facts(&self, unit: &StoredUnit) -> Option<UnitFacts> {
        let mut out = UnitFacts::default();
        for line in self.data[unit.range.clone()].lines() {
            if let Some(ids) = line.strip_prefix("i") {
                for pair in ids.split_ascii_whitespace() {
                    let (id, importance) = pair.rsplit_once(':')?;
                    out.ids.push((id.to_owned(), importance.parse().ok()?));
                }
            } else {
                out.pending.push(read_fact(line)?);
            }
        }
        Some(out)
    }

    /// Returns a unit's lines as stored.
    pub(crate) fn block(&self, unit: &StoredUnit) -> &str {
        &self.data[unit.range.clone()]
    }
}

/// Returns the block of lines of a unit; `None` when a fact cannot be
/// stored.
pub(crate) fn unit_block<S: AsRef<str>>(
    pending: &[&FactSummary],
    ids: Option<&[(S, u8)]>,
) -> Option<String> {
    let mut block = String::new();
    write_unit_block(pending, ids, &mut block).then_some(block)
}

/// Appends the block of lines of a unit to `block`; false when a fact
/// cannot be stored.
pub(crate) fn write_unit_block<S: AsRef<str>>(
    pending: &[&FactSummary],
    ids: Option<&[(S, u8)]>,
    block: &mut String,
) -> bool {
    if let Some(ids) = ids {
        block.reserve(ids.iter().map(|(id, _)| id.as_ref().len() + 3).sum::<usize>() + 2);
        write_ids_line(block, ids.iter().map(|(id, importance)| (id.as_ref(), *importance)));
    }
    write_facts(pending, block)
}

/// Appends a unit's line of ids (`i id:importance ...`) to `block`.
fn write_ids_line<'a>(block: &mut String, ids: impl Iterator<Item = (&'a str, u8)>) {
    block.push('i');
    for (id, importance) in ids {
        block.push(' ');
        block.push_str(id);
        block.push(':');
        // Importance is 1-5; anything else in its decimal form.
        if importance < 10 {
            block.push(char::from(b'0' + importance));
        } else {
            let _ = write!(block, "{importance}");
        }
    }
    block.push('\n');
}

/// The keyed facts of a log grouped by memory key, in key order (each
/// key's facts in log order), for the line of ids each key's unit holds
/// in the units file of a whole-log run. Positions, not copies: 4 bytes a
/// fact while the run's other state is held.
pub(crate) struct KeyedFacts<'f> {
    facts: &'f [FactSummary],
    /// Each memory key with the range of its facts in `positions`.
    keys: Vec<(&'f str, Range<usize>)>,
    positions: Vec<u32>,
}

impl<'f> KeyedFacts<'f> {
    /// Returns the id filter of `facts` (the log, in its order) and its
    /// keyed facts, grouped.
    pub(crate) fn of(facts: &'f [FactSummary]) -> (IdFilter, KeyedFacts<'f>) {
        const UNKEYED: u32 = u32::MAX;
        // Each key numbered as first met, and each fact's key number.
        let mut numbers: foldhash::HashMap<&str, u32> = foldhash::HashMap::default();
        let mut counts: Vec<(&str, usize)> = Vec::new();
        let mut key_of: Vec<u32> = Vec::with_capacity(facts.len());
        let mut filter = IdFilter::with_capacity(facts.len() * 2);
        for fact in facts {
            filter.insert(fact.fact_id());
            key_of.push(match fact.memory_key() {
                Some(key) => {
                    let number = *numbers.entry(key).or_insert_with(|| {
                        counts.push((key, 0));
                        u32::try_from(counts.len() - 1).unwrap_or(UNKEYED)
                    });
                    counts[number as usize].1 += 1;
                    number
                }
                None => UNKEYED,
            });
        }
        drop(numbers);
        // A counting sort of the keyed positions by key number.
        let mut keys: Vec<(&str, Range<usize>)> = Vec::with_capacity(counts.len());
        let mut start = 0;
        for (key, count) in counts {
            keys.push((key, start..start));
            start += count;
        }
        let mut positions = vec![0u32; start];
        for (position, &number) in key_of.iter().enumerate() {
            if let Some((_, range)) = keys.get_mut(number as usize) {
                positions[range.end] = u32::try_from(position).unwrap_or(u32::MAX);
                range.end += 1;
            }
        }
        drop(key_of);
        keys.sort_unstable_by_key(|(key, _)| *key);
        (filter, KeyedFacts { facts, keys, positions })
    }

    /// Returns the facts (the log) they were grouped from.
    pub(crate) fn facts(&self) -> &'f [FactSummary] {
        self.facts
    }

    /// Returns the number of memory keys.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Returns each memory key with its facts, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'f str, KeyFacts<'_, 'f>)> + '_ {
        self.keys.iter().map(|(key, range)| {
            (*key, KeyFacts { facts: self.facts, positions: &self.positions[range.clone()] })
        })
    }
}

/// The facts of one memory key ([`KeyedFacts::iter`]).
#[derive(Clone, Copy)]
pub(crate) struct KeyFacts<'a, 'f> {
    facts: &'f [FactSummary],
    positions: &'a [u32],
}

impl KeyFacts<'_, '_> {
    /// Appends the key's line of ids to `block`.
    pub(crate) fn write_ids_line(&self, block: &mut String) {
        let facts = self.positions.iter().map(|&position| &self.facts[position as usize]);
        write_ids_line(block, facts.map(|fact| (fact.fact_id(), fact.importance())));
    }
}

/// Appends the lines of a unit's pending facts to `block`; false when a
/// fact cannot be stored.
pub(crate) fn write_facts(pending: &[&FactSummary], block: &mut String) -> bool {
    pending.iter().all(|fact| write_fact(fact, block))
}

/// Appends one unit (its line of counts, then its block) to a units file
/// being encoded.
pub(crate) fn push_unit(
    text: &mut String,
    key: &UnitKey,
    stale: usize,
    conflict: Option<&str>,
    block: &str,
) {
    push_unit_line(text, key, stale, conflict, block.len());
    text.push_str(block);
}

/// Appends the line that opens a unit's record, before its block of
/// `block_len` bytes.
pub(crate) fn push_unit_line(
    text: &mut String,
    key: &UnitKey,
    stale: usize,
    conflict: Option<&str>,
    block_len: usize,
) {
    match key {
        UnitKey::Domain(memory_key) => {
            let _ =
                writeln!(text, "d {memory_key} {stale} {} {block_len}", conflict.unwrap_or("-"));
        }
        UnitKey::Group(entry_key) => {
            let _ = writeln!(text, "u {entry_key} {block_len}");
        }
    }
}

/// The line that opens a unit's record, borrowed: its key, counts and the
/// length of its block.
struct UnitLine<'a> {
    /// `d` (a memory key) or `u` (an unkeyed group).
    kind: u8,
    key: &'a str,
    stale: usize,
    conflict: Option<&'a str>,
    len: usize,
}

impl<'a> UnitLine<'a> {
    fn parse(line: &'a str) -> Option<UnitLine<'a>> {
        let mut fields = line.split(' ');
        let (kind, key, stale, conflict) = match fields.next()? {
            "d" => {
                let key = fields.next()?;
                let stale = fields.next()?.parse().ok()?;
                let conflict = fields.next()?;
                (b'd', key, stale, (conflict != "-").then_some(conflict))
            }
            "u" => (b'u', fields.next()?, 0, None),
            _ => return None,
        };
        let len: usize = fields.next()?.parse().ok()?;
        fields.next().is_none().then_some(UnitLine { kind, key, stale, conflict, len })
    }

    /// The unit of this record, its `block` kept at the end of `data`.
    fn keep(&self, block: &str, data: &mut String) -> StoredUnit {
        let start = data.len();
        data.push_str(block);
        StoredUnit {
            stale: self.stale,
            conflict: self.conflict.map(str::to_owned),
            range: start..data.len(),
        }
    }

    fn unit_key(&self) -> UnitKey {
        match self.kind {
            b'd' => UnitKey::Domain(self.key.to_owned()),
            _ => UnitKey::Group(self.key.to_owned()),
        }
    }
}

/// Encodes the section of the units file a run of `token` writes at
/// offset `at` (the whole file when `at` is 0, else an appended section)
/// from each unit's counts and block; returns it with the places of its
/// records.
pub(crate) fn encode_section<'a>(
    token: u64,
    at: u64,
    units: impl Iterator<Item = (&'a UnitKey, usize, Option<&'a str>, &'a str)>,
) -> (String, Vec<Place>) {
    let mut text = section_opening(token, at);
    let mut places = Vec::new();
    for (key, stale, conflict, block) in units {
        places.push(place(key, at + text.len() as u64));
        push_unit(&mut text, key, stale, conflict, block);
    }
    text.push_str("end\n");
    (text, places)
}

/// The line that opens the section of the units file a run of `token`
/// writes at offset `at`: the file's first line, or an appended section's.
pub(crate) fn section_opening(token: u64, at: u64) -> String {
    if at == 0 { format!("{UNITS_HEADER} {token}\n") } else { format!("append {token}\n") }
}

/// Where a unit's record is: the hash of its key, and the offset of its
/// line in the units file.
pub(crate) type Place = (u64, u64);

/// The place of `key`'s record whose line starts at `offset`.
pub(crate) fn place(key: &UnitKey, offset: u64) -> Place {
    (key.hash(), offset)
}

/// One section of the places file: the places of the records a write of
/// `token` added to the units file, which it left `units_end` long.
///
/// ```text
/// 'P' <token> <units_end> <count> then count x (<hash> <offset>), then
/// <XXH3-64 of all that> (integers u64 little-endian)
/// ```
struct PlacesSection<'a> {
    token: u64,
    units_end: u64,
    body: &'a [u8],
}

impl<'a> PlacesSection<'a> {
    /// Parses the section at the start of `data`; returns it and what
    /// follows. `None` when it is torn or damaged.
    fn parse(data: &'a [u8]) -> Option<(PlacesSection<'a>, &'a [u8])> {
        let word = |at: usize| {
            data.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        };
        if data.first() != Some(&b'P') {
            return None;
        }
        let (token, units_end, count) = (word(1)?, word(9)?, usize::try_from(word(17)?).ok()?);
        let end = count.checked_mul(16)?.checked_add(25)?;
        let sum = word(end)?;
        if sum != xxhash_rust::xxh3::xxh3_64(&data[..end]) {
            return None;
        }
        let section = PlacesSection { token, units_end, body: &data[25..end] };
        Some((section, &data[end + 8..]))
    }

    fn places(&self) -> impl Iterator<Item = Place> + 'a {
        self.body.as_chunks::<16>().0.iter().map(|pair| {
            let (hash, offset) = pair.split_at(8);
            (
                u64::from_le_bytes(hash.try_into().unwrap_or_default()),
                u64::from_le_bytes(offset.try_into().unwrap_or_default()),
            )
        })
    }
}

/// Encodes the section of the places file for a write of `token` that left
/// the units file `units_end` long, with the places of its records.
pub(crate) fn encode_places(token: u64, units_end: u64, places: &[Place]) -> Vec<u8> {
    let mut out = Vec::with_capacity(33 + 16 * places.len());
    out.push(b'P');
    for word in [token, units_end, places.len() as u64] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for (hash, offset) in places {
        out.extend_from_slice(&hash.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Reads the record whose line starts at `offset` of the units file's
/// first `len` bytes: its line (without the newline) and its block.
fn read_record(file: &std::fs::File, offset: u64, len: u64) -> Option<(String, String)> {
    use std::os::unix::fs::FileExt;
    // A line is short (a key, two counts, a case id); read more until
    // its end shows.
    let mut chunk = 512u64;
    loop {
        let size = usize::try_from(chunk.min(len.checked_sub(offset)?)).ok()?;
        let mut head = vec![0; size];
        file.read_exact_at(&mut head, offset).ok()?;
        if let Some(newline) = memchr::memchr(b'\n', &head) {
            head.truncate(newline);
            let line = String::from_utf8(head).ok()?;
            let block_len = UnitLine::parse(&line)?.len;
            let from = offset + newline as u64 + 1;
            if from.checked_add(block_len as u64)? > len {
                return None;
            }
            let mut block = vec![0; block_len];
            file.read_exact_at(&mut block, from).ok()?;
            return Some((line, String::from_utf8(block).ok()?));
        }
        if size as u64 == len - offset || chunk >= 1 << 20 {
            return None;
        }
        chunk *= 8;
    }
}

/// A Bloom filter of fact ids: "absent" is certain, "present" may be
/// wrong (then distill reads the whole log). Blocked: the bits of an id
/// all fall in one 512-bit block (one cache line), chosen by one half of
/// a 128-bit hash of the id, the bits within it by the other.
#[derive(Debug, Clone)]
pub(crate) struct IdFilter {
    bits: Vec<u64>,
}

const FILTER_HASHES: u32 = 7;
/// Words in a block (512 bits).
const BLOCK_WORDS: usize = 8;

/// Mixes the bytes of `id` into two 64-bit hashes (8 bytes a step). Fixed
/// forever for a given filter version: the filter is stored.
fn id_hashes(id: &str) -> (u64, u64) {
    const K1: u64 = 0x9e37_79b9_7f4a_7c15;
    const K2: u64 = 0xc2b2_ae3d_27d4_eb4f;
    let bytes = id.as_bytes();
    let (mut a, mut b) = (K1 ^ bytes.len() as u64, K2);
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        a = (a ^ word).wrapping_mul(K2).rotate_left(31);
        b = (b ^ word).wrapping_mul(K1).rotate_left(29);
    }
    let finish = |mut h: u64| {
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    };
    (finish(a ^ b.rotate_left(17)), finish(b ^ a.rotate_left(43)))
}

impl IdFilter {
    /// Returns an empty filter sized for `capacity` ids (about 1% false
    /// positives at capacity).
    pub(crate) fn with_capacity(capacity: usize) -> IdFilter {
        let words = (capacity.max(1024) * 10).div_ceil(64).next_power_of_two();
        IdFilter { bits: vec![0; words] }
    }

    /// Adds an id.
    pub(crate) fn insert(&mut self, id: &str) {
        let (block, masks) = positions(self.bits.len(), id);
        for (word, mask) in self.bits[block..block + BLOCK_WORDS].iter_mut().zip(masks) {
            *word |= mask;
        }
    }

    /// Encodes the filter for `token`.
    pub(crate) fn encode(&self, token: u64) -> Vec<u8> {
        let mut data = Vec::with_capacity(self.bits.len() * 8 + 64);
        let _ = self.write_to(token, &mut data);
        data
    }

    /// Writes the filter for `token` as [`IdFilter::encode`] encodes it.
    ///
    /// Errors: those of `out`.
    pub(crate) fn write_to(&self, token: u64, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "{IDS_HEADER} {token} {}", self.bits.len())?;
        for words in self.bits.chunks(512) {
            let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
            out.write_all(&bytes)?;
        }
        out.write_all(b"end\n")
    }
}

/// The first word of an id's block in a filter of `words` words, and the
/// mask of its bits in each of the block's words.
fn positions(words: usize, id: &str) -> (usize, [u64; BLOCK_WORDS]) {
    let (a, mut b) = id_hashes(id);
    let blocks = words / BLOCK_WORDS;
    let block = (a % blocks as u64) as usize * BLOCK_WORDS;
    let mut masks = [0u64; BLOCK_WORDS];
    for _ in 0..FILTER_HASHES {
        let bit = (b & 511) as usize;
        b >>= 9;
        masks[bit / 64] |= 1 << (bit % 64);
    }
    (block, masks)
}

/// The id filter file as stored: the filter a run over the whole log
/// wrote, then the ids later runs appended, one `add <token> <id>...`
/// line each (the last names the header's token). Its blocks are read
/// when asked for: a run that adds a few ids neither reads nor rewrites
/// the filter.
#[derive(Debug)]
pub(crate) struct StoredIds {
    file: std::fs::File,
    /// Where the filter's words start.
    body_at: u64,
    /// How many words it has.
    words: usize,
    /// The appended ids.
    added: std::collections::HashSet<String>,
}

impl StoredIds {
    /// Opens the first `len` bytes of the id filter file at `path`, whose
    /// last part must be of `token`; `None` when it is missing, shorter,
    /// torn or of another token.
    pub(crate) fn open(path: &Path, token: u64, len: u64) -> Option<StoredIds> {
        use std::os::unix::fs::FileExt;
        let file = atomic_io::open_optional(path).ok()??;
        let mut head = [0u8; 96];
        let read = file.read_at(&mut head, 0).ok()?;
        let newline = head[..read].iter().position(|b| *b == b'\n')?;
        let (base_token, words) = std::str::from_utf8(&head[..newline])
            .ok()?
            .strip_prefix(IDS_HEADER)?
            .strip_prefix(' ')?
            .split_once(' ')?;
        let (base_token, words): (u64, usize) = (base_token.parse().ok()?, words.parse().ok()?);
        if !words.is_power_of_two() || words < BLOCK_WORDS {
            return None;
        }
        let body_at = newline as u64 + 1;
        let base_len = body_at + words as u64 * 8 + 4;
        let mut end = [0u8; 4];
        file.read_exact_at(&mut end, base_len - 4).ok()?;
        if &end != b"end\n" || len < base_len {
            return None;
        }
        let mut appended = vec![0; usize::try_from(len - base_len).ok()?];
        file.read_exact_at(&mut appended, base_len).ok()?;
        let mut added = std::collections::HashSet::new();
        let mut last_token = base_token;
        for line in std::str::from_utf8(&appended).ok()?.split_terminator('\n') {
            let mut fields = line.strip_prefix("add ")?.split(' ');
            last_token = fields.next()?.parse().ok()?;
            added.extend(fields.map(str::to_owned));
        }
        (appended.last().is_none_or(|b| *b == b'\n') && last_token == token).then_some(StoredIds {
            file,
            body_at,
            words,
            added,
        })
    }

    /// Returns whether the id may be present (a block that cannot be read
    /// says it may).
    pub(crate) fn may_contain(&self, id: &str) -> bool {
        use std::os::unix::fs::FileExt;
        if self.added.contains(id) {
            return true;
        }
        let (block, masks) = positions(self.words, id);
        let mut bytes = [0u8; BLOCK_WORDS * 8];
        if self.file.read_exact_at(&mut bytes, self.body_at + block as u64 * 8).is_err() {
            return true;
        }
        bytes.chunks_exact(8).zip(masks).all(|(word, mask)| {
            u64::from_le_bytes(word.try_into().unwrap_or_default()) & mask == mask
        })
    }

    /// Returns how many ids the filter holds at about 1% false positives.
    pub(crate) fn capacity(&self) -> usize {
        self.words * 64 / 10
    }

    /// Returns how many ids were appended.
    pub(crate) fn added(&self) -> usize {
        self.added.len()
    }

    /// Reads the whole filter, with the appended ids in it; `None` when
    /// it cannot be read.
    pub(crate) fn load(&self) -> Option<IdFilter> {
        use std::os::unix::fs::FileExt;
        let mut body = vec![0u8; self.words * 8];
        self.file.read_exact_at(&mut body, self.body_at).ok()?;
        let bits = body
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        let mut filter = IdFilter { bits };
        for id in &self.added {
            filter.insert(id);
        }
        Some(filter)
    }
}

/// Encodes the line a run of `token` appends to the id filter file for
/// the new `ids`.
pub(crate) fn encode_added_ids<'a>(token: u64, ids: impl Iterator<Item = &'a str>) -> String {
    let mut line = format!("add {token}");
    for id in ids {
        line.push(' ');
        line.push_str(id);
    }
    line.push('\n');
    line
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write fixtures directly
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use super::*;

    fn domain(key: &str) -> UnitKey {
        UnitKey::Domain(key.to_owned())
    }

    #[test]
    fn integers_are_written_in_decimal() {
        let samples = [0i128, 9, 10, 99, 100, 1_714_000_000_123_456_789, i128::from(u64::MAX)];
        for n in samples.into_iter().chain([-1, -1_000_000_000, i128::from(u64::MAX) + 1]) {
            let mut out = String::from("x");
            push_integer(&mut out, n);
            assert_eq!(out, format!("x{n}"));
        }
    }

    /// A units file of a whole section (`a`, `b`, `c`) and an appended
    /// one (`a` again, `b` emptied), and its places file; returns the two
    /// paths, the last token and the two lengths.
    fn two_sections(dir: &Path) -> (PathBuf, PathBuf, u64, u64, u64) {
        let (a, b, c) = (domain("a.key"), domain("b.key"), domain("c.key"));
        let (units, places) = (dir.join("units"), dir.join("places"));
        let whole =
            [(&a, 1, None, "i a1:3\n"), (&b, 0, None, "i b1:2\n"), (&c, 0, None, "i c1:1\n")];
        let (text, first) = encode_section(7, 0, whole.into_iter());
        let mut units_text = text;
        let mut places_data = encode_places(7, units_text.len() as u64, &first);
        let appended = [(&a, 2, Some("conflict-1"), "i a1:3 a2:3\n"), (&b, 0, None, "")];
        let (text, second) = encode_section(9, units_text.len() as u64, appended.into_iter());
        units_text.push_str(&text);
        places_data.extend(encode_places(9, units_text.len() as u64, &second));
        std::fs::write(&units, &units_text).unwrap();
        std::fs::write(&places, &places_data).unwrap();
        (units, places, 9, units_text.len() as u64, places_data.len() as u64)
    }

    fn summary(units: &Units) -> Vec<(UnitKey, usize, Option<String>, String)> {
        units
            .units
            .iter()
            .map(|(key, unit)| {
                (key.clone(), unit.stale, unit.conflict.clone(), units.block(unit).to_owned())
            })
            .collect()
    }

    #[test]
    fn a_unit_is_read_from_its_last_record_through_its_places() {
        let dir = tempfile::tempdir().unwrap();
        let (units, places, token, len, places_len) = two_sections(dir.path());
        let keep: BTreeSet<UnitKey> = [domain("a.key"), domain("b.key"), domain("z.key")].into();
        let kept = Units::load_kept(&units, &places, token, len, places_len, &keep).unwrap();
        let expected = vec![
            (domain("a.key"), 2, Some("conflict-1".to_owned()), "i a1:3 a2:3\n".to_owned()),
            (domain("b.key"), 0, None, String::new()),
        ];
        assert_eq!(summary(&kept), expected);
        // The same as a scan of the whole file, for the units kept.
        let whole = Units::load(&units, token, len).unwrap();
        let mut scanned = summary(&whole);
        scanned.retain(|(key, ..)| keep.contains(key));
        assert_eq!(scanned, expected);
        assert_eq!(
            (kept.appended, kept.whole_len, kept.len),
            (whole.appended, whole.whole_len, whole.len)
        );
    }

    #[test]
    fn a_record_of_another_key_under_the_same_hash_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (domain("a.key"), domain("b.key"));
        let (units, places) = (dir.path().join("units"), dir.path().join("places"));
        let (mut text, first) = encode_section(1, 0, [(&a, 0, None, "i a1:1\n")].into_iter());
        let mut data = encode_places(1, text.len() as u64, &first);
        let (more, second) =
            encode_section(2, text.len() as u64, [(&b, 0, None, "i b1:1\n")].into_iter());
        text.push_str(&more);
        // `b`'s record, placed as if its key hashed as `a`'s does.
        let collided: Vec<Place> = second.iter().map(|&(_, offset)| (a.hash(), offset)).collect();
        data.extend(encode_places(2, text.len() as u64, &collided));
        std::fs::write(&units, &text).unwrap();
        std::fs::write(&places, &data).unwrap();
        let keep: BTreeSet<UnitKey> = [a.clone()].into();
        let kept =
            Units::load_kept(&units, &places, 2, text.len() as u64, data.len() as u64, &keep)
                .unwrap();
        assert_eq!(summary(&kept), vec![(a, 0, None, "i a1:1\n".to_owned())]);
    }

    #[test]
    fn damaged_places_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (units, places, token, len, places_len) = two_sections(dir.path());
        let keep: BTreeSet<UnitKey> = [domain("a.key")].into();
        let load = |token, len, places_len| {
            Units::load_kept(&units, &places, token, len, places_len, &keep).is_some()
        };
        assert!(load(token, len, places_len));
        // Of another token, or read short of the units file or of the last
        // section.
        assert!(!load(token + 1, len, places_len));
        assert!(!load(token, len - 1, places_len));
        assert!(!load(token, len, places_len - 1));
        // A byte changed in a place.
        let original = std::fs::read(&places).unwrap();
        for at in [0, 1, 30, original.len() - 20] {
            let mut damaged = original.clone();
            damaged[at] ^= 0x40;
            std::fs::write(&places, &damaged).unwrap();
            assert!(!load(token, len, places_len), "byte {at}");
        }
        // A place that points into the middle of a record.
        let (text, mut moved) =
            encode_section(5, 0, [(&domain("a.key"), 0, None, "i a1:1\n")].into_iter());
        moved[0].1 += 2;
        std::fs::write(&units, &text).unwrap();
        std::fs::write(&places, encode_places(5, text.len() as u64, &moved)).unwrap();
        let places_len = std::fs::metadata(&places).unwrap().len();
        assert!(!load(5, text.len() as u64, places_len));
    }
}
