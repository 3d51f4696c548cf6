//! curated.json as stored: its canonical bytes and where each entry sits in
//! them, so that a writer that changes a few domains (a resolution, a
//! distill of a few new facts) replaces their entries and copies every
//! other byte, instead of decoding, checking and encoding the whole file,
//! whose evidence lists grow with the log.
//!
//! The canonical encoding (docs/format.md) is the concatenation of each
//! entry's own pretty encoding, four spaces in, separated by `,\n`, between
//! a fixed head and a tail naming the workspace: [`Encoder`] writes every
//! curated.json that way, whole or spliced, so the two agree byte for
//! byte. A splice checks the entries it adds (every invariant but the
//! uniqueness of keys stays inside one memory key, and whole domains are
//! replaced) and that their keys are new among the entries it keeps.
//!
//! The layout of bytes read back is only trusted for a file known to be
//! valid: one whose SHA-256 the caller found among the hashes of files
//! workmem checked whole or wrote ([`crate::store::valid_hashes`]). The
//! layout itself is read without decoding any evidence list: entries end
//! on a line of exactly four spaces and `}` (no string holds a raw
//! newline), and the fields after the evidence list are read from the
//! entry's last lines.

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Location, Result};
use crate::model::canon::{self, JsonStyle};
use crate::model::fact::Kind;
use crate::model::stamp::Stamp;
use crate::store::curated_state::{CuratedState, Entry, Status, problems_of};

/// What every non-empty curated.json starts with.
const HEAD: &[u8] = b"{\n  \"entries\": [\n";
/// How an entry's encoding starts and ends, four spaces in.
const ENTRY_START: &[u8] = b"    {\n";
const ENTRY_END: &[u8] = b"\n    }";
/// Where the fields after the evidence list start.
const FIRST_SEEN_LINE: &[u8] = b"\n      \"first_seen\": ";
const CONTENT_LINE: &[u8] = b"      \"content\": ";

/// An entry's fields but its evidence ids: what the layout tells of each
/// entry without decoding its evidence list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EntryHead {
    /// The wording.
    pub(crate) content: String,
    /// Earliest evidence.
    pub(crate) first_seen: Stamp,
    /// 16-hex entry key.
    pub(crate) key: String,
    /// Kind.
    pub(crate) kind: Kind,
    /// Latest evidence.
    pub(crate) last_seen: Stamp,
    /// Conflict domain, for keyed entries.
    pub(crate) memory_key: Option<String>,
    /// Number of evidence ids (equal to it in a valid file).
    pub(crate) occurrences: u64,
    /// Revision number.
    pub(crate) revision: u32,
    /// Lifecycle status.
    pub(crate) status: Status,
    /// Key of the revision that replaced this one.
    pub(crate) superseded_by: Option<String>,
    /// Key of the revision this one replaced.
    pub(crate) supersedes: Option<String>,
}

impl EntryHead {
    fn of(entry: &Entry) -> EntryHead {
        EntryHead {
            content: entry.content.clone(),
            first_seen: entry.first_seen.clone(),
            key: entry.key.clone(),
            kind: entry.kind,
            last_seen: entry.last_seen.clone(),
            memory_key: entry.memory_key.clone(),
            occurrences: entry.occurrences,
            revision: entry.revision,
            status: entry.status,
            superseded_by: entry.superseded_by.clone(),
            supersedes: entry.supersedes.clone(),
        }
    }

    /// Returns whether this revision is active.
    pub(crate) fn is_active(&self) -> bool {
        self.status == Status::Active
    }

    fn order(&self) -> (&str, &str, u32, &str) {
        (self.kind.as_str(), self.memory_key.as_deref().unwrap_or(""), self.revision, &self.key)
    }
}

/// The canonical order of an entry: (kind, memory_key or "", revision, key).
pub(crate) fn order(entry: &Entry) -> (&str, &str, u32, &str) {
    (entry.kind.as_str(), entry.memory_key.as_deref().unwrap_or(""), entry.revision, &entry.key)
}

/// One entry of the file: its bytes and its head.
#[derive(Debug, Clone)]
struct Slot {
    range: Range<usize>,
    head: EntryHead,
}

/// Writes the canonical encoding of curated.json entry by entry, in the
/// order given (the caller's: canonical), recording where each one sits.
pub(crate) struct Encoder<'w> {
    bytes: Vec<u8>,
    slots: Vec<Range<usize>>,
    workspace_id: &'w str,
}

impl<'w> Encoder<'w> {
    /// Starts a file of `workspace_id` that will hold about `entries`
    /// entries.
    pub(crate) fn new(workspace_id: &'w str, entries: usize) -> Encoder<'w> {
        Encoder::with_capacity(workspace_id, entries, 0)
    }

    /// Starts a file like [`Encoder::new`] with room for `bytes` bytes.
    fn with_capacity(workspace_id: &'w str, entries: usize, bytes: usize) -> Encoder<'w> {
        Encoder {
            bytes: Vec::with_capacity(bytes),
            slots: Vec::with_capacity(entries),
            workspace_id,
        }
    }

    fn separate(&mut self) {
        if self.slots.is_empty() {
            self.bytes.extend_from_slice(HEAD);
        } else {
            self.bytes.extend_from_slice(b",\n");
        }
    }

    /// Appends `entry`, encoded.
    pub(crate) fn entry(&mut self, entry: &Entry) {
        self.separate();
        let start = self.bytes.len();
        let text = canon::encode(entry, JsonStyle::Pretty);
        for (n, line) in text.split('\n').enumerate() {
            if n > 0 {
                self.bytes.push(b'\n');
            }
            self.bytes.extend_from_slice(b"    ");
            self.bytes.extend_from_slice(line.as_bytes());
        }
        self.slots.push(start..self.bytes.len());
    }

    /// Appends an entry's encoding as stored.
    fn stored(&mut self, encoded: &[u8]) {
        self.separate();
        let start = self.bytes.len();
        self.bytes.extend_from_slice(encoded);
        self.slots.push(start..self.bytes.len());
    }

    /// Returns the whole file and where each entry sits.
    pub(crate) fn finish(mut self) -> Encoded {
        if self.slots.is_empty() {
            self.bytes.extend_from_slice(b"{\n  \"entries\": [],");
        } else {
            self.bytes.extend_from_slice(b"\n  ],");
        }
        self.bytes.extend_from_slice(&tail(self.workspace_id));
        Encoded { bytes: self.bytes, slots: self.slots }
    }
}

/// What follows the entries: the schema version and the workspace id.
fn tail(workspace_id: &str) -> Vec<u8> {
    let id = canon::encode(workspace_id, JsonStyle::Pretty);
    format!("\n  \"schema_version\": 2,\n  \"workspace_id\": {id}\n}}\n").into_bytes()
}

/// An encoding and the byte range of each entry in it.
pub(crate) struct Encoded {
    /// The file.
    pub(crate) bytes: Vec<u8>,
    /// Each entry's range, in order.
    pub(crate) slots: Vec<Range<usize>>,
}

/// curated.json as stored, valid and canonical, with the place and head of
/// every entry.
#[derive(Debug, Clone)]
pub(crate) struct CuratedFile {
    bytes: Vec<u8>,
    sha256: String,
    slots: Vec<Slot>,
}

impl CuratedFile {
    /// Encodes `state` (checking every invariant) as the file it is
    /// written to.
    ///
    /// Errors: [`Error::Corrupt`] if an invariant does not hold (a bug).
    pub(crate) fn encode(
        state: &CuratedState,
        path: &Path,
        workspace_id: &str,
    ) -> Result<CuratedFile> {
        let Encoded { bytes, slots } = state.encoded(path, workspace_id)?;
        let mut sorted: Vec<&Entry> = state.entries.iter().collect();
        sorted.sort_by_key(|e| order(e));
        let slots = slots
            .into_iter()
            .zip(sorted)
            .map(|(range, entry)| Slot { range, head: EntryHead::of(entry) })
            .collect();
        let sha256 = canon::sha256_hex(&bytes);
        Ok(CuratedFile { bytes, sha256, slots })
    }

    /// Returns the layout of `bytes`, a curated.json of `workspace_id`
    /// known to be valid (its SHA-256 is `sha256`, found among the hashes
    /// of files checked whole or written by workmem), or the bytes back
    /// when they are not laid out as workmem writes them (the caller then
    /// decodes them whole).
    ///
    /// Errors: the bytes, unchanged.
    pub(crate) fn known_valid(
        bytes: Vec<u8>,
        sha256: String,
        workspace_id: &str,
    ) -> std::result::Result<CuratedFile, Vec<u8>> {
        match layout(&bytes, workspace_id) {
            Some(slots) => Ok(CuratedFile { bytes, sha256, slots }),
            None => Err(bytes),
        }
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The SHA-256 of the file's bytes, hex.
    pub(crate) fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Every entry's head, in canonical order.
    pub(crate) fn heads(&self) -> impl Iterator<Item = &EntryHead> + Clone {
        self.slots.iter().map(|slot| &slot.head)
    }

    /// Decodes the entries whose head `wanted` selects, in canonical order.
    ///
    /// Errors: [`Error::Corrupt`] naming `path` when an entry does not
    /// decode (the file changed under a known hash: a bug).
    pub(crate) fn entries(
        &self,
        path: &Path,
        wanted: impl Fn(&EntryHead) -> bool,
    ) -> Result<Vec<Entry>> {
        self.slots
            .iter()
            .filter(|slot| wanted(&slot.head))
            .map(|slot| {
                serde_json::from_slice(&self.bytes[slot.range.clone()]).map_err(|err| {
                    Error::corrupt(
                        Location::file(path),
                        format!(
                            "entry {}: {}",
                            slot.head.key,
                            crate::model::fact_line::describe_json_error(&err)
                        ),
                    )
                })
            })
            .collect()
    }

    /// Returns the file with the entries `replaced` selects taken out and
    /// `added` put in, every other entry's bytes copied as they are.
    /// `replaced` must select whole memory keys (every revision of each)
    /// and unkeyed entries, and `added` must hold whole memory keys.
    ///
    /// Errors: [`Error::Corrupt`] naming `path` when the entries added
    /// break an invariant, a memory key is split between kept and added
    /// entries, or an added key is taken by a kept entry.
    pub(crate) fn splice(
        &self,
        path: &Path,
        workspace_id: &str,
        replaced: impl Fn(&EntryHead) -> bool,
        added: &[Entry],
    ) -> Result<CuratedFile> {
        let refuse =
            |msg: String| Error::corrupt(Location::file(path), format!("refusing to save: {msg}"));
        if let Some(finding) = problems_of(added).into_iter().next() {
            return Err(refuse(finding.message));
        }
        let kept: Vec<&Slot> = self.slots.iter().filter(|slot| !replaced(&slot.head)).collect();
        let new_keys: std::collections::HashSet<&str> =
            added.iter().map(|e| e.key.as_str()).collect();
        let new_domains: std::collections::HashSet<&str> =
            added.iter().filter_map(|e| e.memory_key.as_deref()).collect();
        for slot in &kept {
            if new_keys.contains(slot.head.key.as_str()) {
                return Err(refuse(format!("entry key {} appears twice", slot.head.key)));
            }
            if let Some(key) = slot.head.memory_key.as_deref().filter(|k| new_domains.contains(k)) {
                return Err(refuse(format!("memory_key {key} is split between two writes")));
            }
        }
        let mut sorted: Vec<&Entry> = added.iter().collect();
        sorted.sort_by_key(|e| order(e));
        // Room for the bytes kept and about as many again for those added.
        let mut out = Encoder::with_capacity(
            workspace_id,
            kept.len() + sorted.len(),
            self.bytes.len() + 4096 * sorted.len(),
        );
        let mut heads = Vec::with_capacity(kept.len() + sorted.len());
        let mut kept = kept.into_iter().peekable();
        let mut sorted = sorted.into_iter().peekable();
        loop {
            let take_kept = match (kept.peek(), sorted.peek()) {
                (Some(slot), Some(entry)) => slot.head.order() < order(entry),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if take_kept {
                let slot = kept.next().expect("peeked");
                out.stored(&self.bytes[slot.range.clone()]);
                heads.push(slot.head.clone());
            } else {
                let entry = sorted.next().expect("peeked");
                out.entry(entry);
                heads.push(EntryHead::of(entry));
            }
        }
        let Encoded { bytes, slots } = out.finish();
        let slots =
            slots.into_iter().zip(heads).map(|(range, head)| Slot { range, head }).collect();
        let sha256 = canon::sha256_hex(&bytes);
        Ok(CuratedFile { bytes, sha256, slots })
    }
}

/// Returns every entry's place and head when `bytes` are laid out as
/// [`Encoder`] writes a file of `workspace_id`, in canonical order.
fn layout(bytes: &[u8], workspace_id: &str) -> Option<Vec<Slot>> {
    let ranges = locate(bytes, workspace_id)?;
    let mut slots = Vec::with_capacity(ranges.len());
    for range in ranges {
        let head = read_head(&bytes[range.clone()])?;
        slots.push(Slot { range, head });
    }
    let sorted = slots.windows(2).all(|w| w[0].head.order() < w[1].head.order());
    sorted.then_some(slots)
}

/// Returns the byte range of every entry of `bytes` when they are laid out
/// as [`Encoder`] writes a file of `workspace_id`.
fn locate(bytes: &[u8], workspace_id: &str) -> Option<Vec<Range<usize>>> {
    let tail = tail(workspace_id);
    let empty_head = b"{\n  \"entries\": [],";
    if bytes.len() == empty_head.len() + tail.len()
        && bytes.starts_with(empty_head)
        && bytes.ends_with(&tail)
    {
        return Some(Vec::new());
    }
    let closing = b"\n  ],";
    if !bytes.starts_with(HEAD) || !bytes.ends_with(&tail) {
        return None;
    }
    let end = bytes.len().checked_sub(tail.len() + closing.len())?;
    if end < HEAD.len() || &bytes[end..end + closing.len()] != closing {
        return None;
    }
    let finder = memchr::memmem::Finder::new(ENTRY_END);
    let mut ranges = Vec::new();
    let mut at = HEAD.len();
    loop {
        if !bytes[at..end].starts_with(ENTRY_START) {
            return None;
        }
        let close = at + finder.find(&bytes[at..end])? + ENTRY_END.len();
        ranges.push(at..close);
        if close == end {
            return Some(ranges);
        }
        if !bytes[close..end].starts_with(b",\n") {
            return None;
        }
        at = close + 2;
    }
}

/// Reads the head of one entry's encoding: its first line (the content)
/// and the lines after its evidence list.
fn read_head(entry: &[u8]) -> Option<EntryHead> {
    let first = &entry[ENTRY_START.len()..];
    let content_end = memchr::memchr(b'\n', first)?;
    let content = &first[..content_end];
    if !content.starts_with(CONTENT_LINE) {
        return None;
    }
    let rest = memchr::memmem::rfind(entry, FIRST_SEEN_LINE)?;
    let mut text = Vec::with_capacity(2 + content.len() + entry.len() - rest);
    text.extend_from_slice(b"{\n");
    text.extend_from_slice(content);
    text.extend_from_slice(&entry[rest..]);
    serde_json::from_slice(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(content: &str, memory_key: Option<&str>, ids: &[&str]) -> Entry {
        let stamp = |text: &str| Stamp::parse(text).unwrap();
        let mut entry = Entry {
            content: content.into(),
            evidence_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
            first_seen: stamp("2026-01-02T00:00:00Z"),
            key: String::new(),
            kind: Kind::Decision,
            last_seen: stamp("2026-01-03T00:00:00.250000Z"),
            memory_key: memory_key.map(str::to_owned),
            occurrences: ids.len() as u64,
            revision: 1,
            status: Status::Active,
            superseded_by: None,
            supersedes: None,
        };
        entry.key = entry.computed_key();
        entry
    }

    fn state(entries: Vec<Entry>) -> CuratedState {
        let mut state = CuratedState::new();
        state.entries = entries;
        state.sort();
        state
    }

    #[test]
    fn a_known_valid_file_reads_back_its_layout_and_heads() {
        let path = Path::new("curated.json");
        for entries in [
            vec![],
            vec![entry("Use \"WAL\" mode, \\ always ✓ \\n", Some("db.mode"), &["a", "b"])],
            vec![
                entry("Use UTC.", None, &["x"]),
                entry("\"first_seen\": \"odd\" content", Some("time.zone"), &["y", "z"]),
            ],
        ] {
            let state = state(entries);
            let file = CuratedFile::encode(&state, path, "ws").unwrap();
            let Ok(read) = CuratedFile::known_valid(file.bytes.clone(), file.sha256.clone(), "ws")
            else {
                panic!("the layout of an encoding is not read back");
            };
            assert_eq!(
                read.heads().cloned().collect::<Vec<_>>(),
                file.heads().cloned().collect::<Vec<_>>()
            );
            assert_eq!(read.entries(path, |_| true).unwrap(), state.entries);
            // Another workspace's file is not taken for this one.
            assert!(CuratedFile::known_valid(file.bytes.clone(), String::new(), "other").is_err());
        }
    }

    #[test]
    fn a_splice_gives_the_bytes_of_a_whole_encoding() {
        let path = Path::new("curated.json");
        let before = state(vec![
            entry("Use UTC.", None, &["x"]),
            entry("Use WAL.", Some("db.mode"), &["a"]),
            entry("Use tabs.", Some("style.indent"), &["b", "c"]),
        ]);
        let file = CuratedFile::encode(&before, path, "ws").unwrap();
        let changed = vec![entry("Use spaces.", Some("style.indent"), &["b", "c", "d"])];
        let spliced = file
            .splice(path, "ws", |h| h.memory_key.as_deref() == Some("style.indent"), &changed)
            .unwrap();
        let mut after = before.clone();
        after.replace_domain("style.indent", changed.clone());
        let whole = CuratedFile::encode(&after, path, "ws").unwrap();
        assert_eq!(spliced.bytes, whole.bytes);
        assert_eq!(spliced.sha256, whole.sha256);
        let heads = |f: &CuratedFile| f.heads().cloned().collect::<Vec<_>>();
        assert_eq!(heads(&spliced), heads(&whole));
        // A domain split between kept and added entries is refused.
        let err = file
            .splice(path, "ws", |_| false, &[entry("Use WAL2.", Some("db.mode"), &["q"])])
            .unwrap_err();
        assert!(err.to_string().contains("split"), "{err}");
        // Added entries are checked.
        let mut broken = entry("Use x.", Some("new.key"), &["q"]);
        broken.occurrences = 2;
        let err = file.splice(path, "ws", |_| false, &[broken]).unwrap_err();
        assert!(err.to_string().contains("occurrences"), "{err}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Replacing any set of domains and unkeyed entries by a splice
        /// gives the bytes, hash and heads of encoding the new state whole.
        #[test]
        fn any_splice_equals_a_whole_encoding(
            before in proptest::collection::vec((0..6usize, 0..3usize, 1..4usize), 0..12),
            after in proptest::collection::vec((0..6usize, 0..3usize, 1..4usize), 0..12),
            replaced in proptest::collection::btree_set(0..6usize, 0..6),
        ) {
            let path = Path::new("curated.json");
            // Unit n < 3 is the domain `d<n>` (one active revision), else an
            // unkeyed entry; each with a few evidence ids.
            let build = |spec: &[(usize, usize, usize)], tag: &str| {
                let mut seen = std::collections::BTreeSet::new();
                let mut entries = Vec::new();
                for &(unit, word, ids) in spec {
                    if !seen.insert(unit) {
                        continue;
                    }
                    let ids: Vec<String> = (0..ids).map(|n| format!("{tag}{unit}-{n}")).collect();
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    let key = format!("d{unit}");
                    let content = format!("Unit {unit} says {word}.");
                    entries.push(if unit < 3 {
                        entry(&content, Some(&key), &ids)
                    } else {
                        entry(&format!("Unkeyed {unit}."), None, &ids)
                    });
                }
                entries
            };
            let unit_of = |memory_key: Option<&str>, content: &str| match memory_key {
                Some(key) => key[1..].parse::<usize>().unwrap(),
                None => content["Unkeyed ".len()..content.len() - 1].parse::<usize>().unwrap(),
            };
            let before = state(build(&before, "a"));
            let added: Vec<Entry> = build(&after, "b")
                .into_iter()
                .filter(|e| replaced.contains(&unit_of(e.memory_key.as_deref(), &e.content)))
                .collect();
            let file = CuratedFile::encode(&before, path, "ws").unwrap();
            let spliced = file
                .splice(
                    path,
                    "ws",
                    |h| replaced.contains(&unit_of(h.memory_key.as_deref(), &h.content)),
                    &added,
                )
                .unwrap();
            let mut whole = before.clone();
            whole.entries.retain(|e| !replaced.contains(&unit_of(e.memory_key.as_deref(), &e.content)));
            whole.entries.extend(added);
            whole.sort();
            let expected = CuratedFile::encode(&whole, path, "ws").unwrap();
            proptest::prop_assert_eq!(&spliced.bytes, &expected.bytes);
            proptest::prop_assert_eq!(&spliced.sha256, &expected.sha256);
            let read = CuratedFile::known_valid(spliced.bytes.clone(), spliced.sha256.clone(), "ws");
            let heads = |f: &CuratedFile| f.heads().cloned().collect::<Vec<_>>();
            proptest::prop_assert_eq!(heads(&read.ok().unwrap()), heads(&expected));
        }
    }
}
