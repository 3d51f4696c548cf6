//! The distill cache: what a distill leaves for the next one, so that a
//! distill reads and judges only what changed since (docs/design.md).
//!
//! A cache, never evidence: rebuilt by any distill that cannot use it, and
//! used only when everything it assumes still holds. Two files in the
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
//!   the whole log (the first record of an id counts).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;

use crate::model::fact::Kind;
use crate::model::fact_line::{FactRecord, FactSummary};
use crate::store::atomic_io::{self, FileStamp};
use crate::store::coverage::Covered;
use crate::store::day_stamps::ListingStamp;

/// The small file.
pub(crate) const CACHE_FILE: &str = ".distill-cache";
/// The units file.
pub(crate) const UNITS_FILE: &str = ".distill-cache.units";
/// The id filter.
pub(crate) const IDS_FILE: &str = ".distill-cache.ids";
const HEADER: &str = "workmem-distill-cache 4";
pub(crate) const UNITS_HEADER: &str = "workmem-distill-units 1";
const IDS_HEADER: &str = "workmem-distill-ids 2";

/// What a run read of one daily file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DayFacts {
    /// The bytes read.
    pub covered: Covered,
    /// The earliest and latest `recorded_at` (nanoseconds) of its facts;
    /// `None` when it has none.
    pub span: Option<(i128, i128)>,
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
        let mut text = format!(
            "{HEADER} {} {workspace_id} {} {}\n",
            env!("CARGO_PKG_VERSION"),
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
        let _ = writeln!(text, "units {} {}", self.units_len, self.ids_len);
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
        for (day, facts) in &self.files {
            facts.covered.write_line(day, &mut text);
            if let Some((min, max)) = facts.span {
                let _ = writeln!(text, "span {min} {max}");
            }
        }
        text.push_str("end\n");
        text
    }

    /// Reads the header at `path`; `None` when missing, torn, of another
    /// version, workspace or memory directory.
    pub(crate) fn load(path: &Path, workspace_id: &str, memory_dir: &Path) -> Option<Header> {
        let data = atomic_io::read_optional(path).ok()??;
        let text = std::str::from_utf8(&data).ok()?.strip_suffix("end\n")?;
        let mut lines = text.lines();
        let expected = format!(
            "{HEADER} {} {workspace_id} {} ",
            env!("CARGO_PKG_VERSION"),
            memory_inode(memory_dir)
        );
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
        let (units_len, ids_len) = lines.next()?.strip_prefix("units ")?.split_once(' ')?;
        let (units_len, ids_len) = (units_len.parse().ok()?, ids_len.parse().ok()?);
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
                let (min, max) = rest.split_once(' ')?;
                let (_, file) = days.last_mut()?;
                file.span = Some((min.parse().ok()?, max.parse().ok()?));
            } else {
                let (day, covered) = Covered::parse_line(line.strip_prefix("file ")?)?;
                if days.last().is_some_and(|(last, _)| last.as_str() >= day) {
                    return None;
                }
                days.push((day.to_owned(), DayFacts { covered, span: None }));
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
            listing,
            files,
        })
    }
}

/// Appends the cache line of a candidate fact to `out`; false when a field
/// holds a tab or a newline (the cache is then not written).
pub(crate) fn write_fact(fact: &FactSummary, out: &mut String) -> bool {
    let stamp = fact.stamp_text();
    let fields =
        [fact.fact_id(), fact.source(), fact.memory_key().unwrap_or(""), &stamp, fact.content()];
    if fields.iter().any(|f| memchr::memchr2(b'\t', b'\n', f.as_bytes()).is_some()) {
        return false;
    }
    // `p id kind importance source key stamp nanos content`, tab-separated.
    for part in ["p\t", fields[0], "\t", fact.kind().as_str(), "\t"] {
        out.push_str(part);
    }
    out.push(char::from(b'0' + fact.importance()));
    for part in ["\t", fields[1], "\t", fields[2], "\t", fields[3], "\t"] {
        out.push_str(part);
    }
    let _ = write!(out, "{}", fact.instant().as_nanosecond());
    out.push('\t');
    out.push_str(fields[4]);
    out.push('\n');
    true
}

fn read_fact(line: &str) -> Option<FactSummary> {
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
    /// must be of `token`, through one small buffer, keeping the units of
    /// `keep` (every unit when `None`): the others are read and dropped.
    /// `None` when the file is missing, shorter, torn or of another token.
    pub(crate) fn load(
        path: &Path,
        token: u64,
        len: u64,
        keep: Option<&std::collections::BTreeSet<UnitKey>>,
    ) -> Option<Units> {
        use std::io::{BufRead, Read};
        let file = atomic_io::open_optional(path).ok()??;
        if file.metadata().ok()?.len() < len {
            return None;
        }
        // The units kept, by kind, so that a record is tested before its
        // key is built.
        let mut kept: [std::collections::HashSet<&str>; 2] = Default::default();
        for key in keep.into_iter().flatten() {
            let (kind, key) = key.parts();
            kept[usize::from(kind == b'u')].insert(key);
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
                if keep.is_none() || kept[usize::from(record.kind == b'u')].contains(record.key) {
                    // A later record of a unit replaces an earlier one.
                    let start = data.len();
                    let mut block = vec![0; record.len];
                    reader.read_exact(&mut block).ok()?;
                    data.push_str(std::str::from_utf8(&block).ok()?);
                    units.insert(
                        record.unit_key(),
                        StoredUnit {
                            stale: record.stale,
                            conflict: record.conflict.map(str::to_owned),
                            range: start..data.len(),
                        },
                    );
                } else {
                    // Skipped within the buffer, refilled as needed.
                    let mut left = record.len;
                    while left > 0 {
                        let available = reader.fill_buf().ok()?.len();
                        if available == 0 {
                            return None;
                        }
                        let step = available.min(left);
                        reader.consume(step);
                        left -= step;
                    }
                }
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
        block.push('i');
        for (id, importance) in ids {
            block.push(' ');
            block.push_str(id.as_ref());
            block.push(':');
            // Importance is 1-5; anything else in its decimal form.
            if *importance < 10 {
                block.push(char::from(b'0' + importance));
            } else {
                let _ = write!(block, "{importance}");
            }
        }
        block.push('\n');
    }
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
    match key {
        UnitKey::Domain(memory_key) => {
            let _ = writeln!(
                text,
                "d {memory_key} {stale} {} {}",
                conflict.unwrap_or("-"),
                block.len()
            );
        }
        UnitKey::Group(entry_key) => {
            let _ = writeln!(text, "u {entry_key} {}", block.len());
        }
    }
    text.push_str(block);
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

    fn unit_key(&self) -> UnitKey {
        match self.kind {
            b'd' => UnitKey::Domain(self.key.to_owned()),
            _ => UnitKey::Group(self.key.to_owned()),
        }
    }
}

/// Encodes a section appended to the units file by a run of `token`,
/// from the counts and block of each unit it judged.
pub(crate) fn encode_appended<'a>(
    token: u64,
    units: impl Iterator<Item = (&'a UnitKey, usize, Option<&'a str>, &'a str)>,
) -> String {
    let text = encode_units(token, units);
    format!("append {token}\n{}", &text[text.find('\n').map_or(0, |n| n + 1)..])
}

/// Encodes the units file of `token` from each unit's counts and block.
pub(crate) fn encode_units<'a>(
    token: u64,
    units: impl Iterator<Item = (&'a UnitKey, usize, Option<&'a str>, &'a str)>,
) -> String {
    let mut text = format!("{UNITS_HEADER} {token}\n");
    for (key, stale, conflict, block) in units {
        push_unit(&mut text, key, stale, conflict, block);
    }
    text.push_str("end\n");
    text
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
