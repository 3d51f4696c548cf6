//! curated.json as stored ([`crate::store::state_file`]): its entries'
//! heads (every field but the evidence list, which grows with the log) and
//! where each entry sits, so that a writer replaces the entries of the
//! domains it changes and copies every other byte.

use std::cmp::Ordering;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::canon::{self, JsonStyle};
use crate::model::fact::Kind;
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::store::curated_state::{
    CURATED_SCHEMA_CORRECTED, CURATED_SCHEMA_VERSION, CuratedState, Entry, Status, order,
    problems_of,
};
#[cfg(test)]
use crate::store::state_file::{Body, Output};
use crate::store::state_file::{Record, StateFile, indent_into};

/// Where the fields after the evidence list start.
const FIRST_SEEN_LINE: &[u8] = b"\n      \"first_seen\": ";
const CONTENT_LINE: &[u8] = b"      \"content\": ";
/// How the evidence list starts, and how each of its ids does, in a file.
const EVIDENCE_LINE: &[u8] = b"      \"evidence_ids\": [";
const EVIDENCE_ID: &str = "        \"";
/// The evidence list in an entry's own encoding, when empty.
const NO_EVIDENCE: &str = "\n  \"evidence_ids\": []";

/// curated.json as stored.
pub(crate) type CuratedFile = StateFile<Entry>;

/// An entry's fields but its evidence ids: what the layout tells of each
/// entry without decoding its evidence list. Ordered as entries are in the
/// file: by (kind, memory_key or "", revision, key).
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
    /// Facts a correction took from its evidence and a restore released
    /// (few: not a list that grows with the log).
    #[serde(default)]
    pub(crate) released_evidence_ids: IdList,
    /// Facts a correction took from its evidence (few: not a list that
    /// grows with the log).
    #[serde(default)]
    pub(crate) retracted_evidence_ids: IdList,
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
    /// Returns whether this revision is active.
    pub(crate) fn is_active(&self) -> bool {
        self.status == Status::Active
    }

    fn order(&self) -> (&str, &str, u32, &str) {
        (self.kind.as_str(), self.memory_key.as_deref().unwrap_or(""), self.revision, &self.key)
    }
}

impl Ord for EntryHead {
    fn cmp(&self, other: &EntryHead) -> Ordering {
        self.order().cmp(&other.order())
    }
}

impl PartialOrd for EntryHead {
    fn partial_cmp(&self, other: &EntryHead) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Record for Entry {
    type Head = EntryHead;
    const ARRAY: &'static str = "entries";
    const SCHEMA_VERSION: u32 = CURATED_SCHEMA_VERSION;
    const SCHEMA_VERSIONS: &'static [u32] = &[CURATED_SCHEMA_VERSION, CURATED_SCHEMA_CORRECTED];

    fn head(&self) -> EntryHead {
        EntryHead {
            content: self.content.clone(),
            first_seen: self.first_seen.clone(),
            key: self.key.clone(),
            kind: self.kind,
            last_seen: self.last_seen.clone(),
            memory_key: self.memory_key.clone(),
            occurrences: self.occurrences,
            released_evidence_ids: self.released_evidence_ids.clone(),
            retracted_evidence_ids: self.retracted_evidence_ids.clone(),
            revision: self.revision,
            status: self.status,
            superseded_by: self.superseded_by.clone(),
            supersedes: self.supersedes.clone(),
        }
    }

    /// Reads an entry's first line (the content) and the lines after its
    /// evidence list.
    fn read_head(encoded: &[u8]) -> Option<EntryHead> {
        let (content, _, rest) = entry_parts(encoded)?;
        head_of(content, rest)
    }

    fn id(head: &EntryHead) -> &str {
        &head.key
    }

    fn domain(head: &EntryHead) -> Option<&str> {
        head.memory_key.as_deref()
    }

    fn schema_needed(&self) -> u32 {
        if self.holds_correction() { CURATED_SCHEMA_CORRECTED } else { CURATED_SCHEMA_VERSION }
    }

    fn problem(records: &[Entry], _workspace_id: &str) -> Option<String> {
        problems_of(records).into_iter().next().map(|finding| finding.message)
    }

    /// Reads the fields but the evidence list as [`Record::read_head`]
    /// does, and the evidence ids a line each (a long-lived entry cites
    /// thousands of facts: one pass over their lines, no JSON value per
    /// id). An entry laid out any other way is decoded as JSON.
    fn decode(encoded: &[u8]) -> serde_json::Result<Entry> {
        match stored_entry(encoded) {
            Some(entry) => Ok(entry),
            None => serde_json::from_slice(encoded),
        }
    }

    /// Encodes the fields but the evidence list as JSON, and writes each
    /// evidence id on its line into the list's place.
    fn encode_into(&self, out: &mut Vec<u8>) {
        let fields = EntryFields {
            content: &self.content,
            evidence_ids: &[],
            first_seen: &self.first_seen,
            key: &self.key,
            kind: self.kind,
            last_seen: &self.last_seen,
            memory_key: self.memory_key.as_deref(),
            occurrences: self.occurrences,
            released_evidence_ids: &self.released_evidence_ids,
            retracted_evidence_ids: &self.retracted_evidence_ids,
            revision: self.revision,
            status: self.status,
            superseded_by: self.superseded_by.as_deref(),
            supersedes: self.supersedes.as_deref(),
        };
        let text = canon::encode(&fields, JsonStyle::Pretty);
        // The content is the first field, on one line: the list's line is
        // the first one that starts this way.
        let open = match text.find(NO_EVIDENCE) {
            Some(at) if !self.evidence_ids.is_empty() => at + NO_EVIDENCE.len() - 1,
            _ => return indent_into(out, &text, true),
        };
        indent_into(out, &text[..open], true);
        out.reserve(self.evidence_ids.text_len() + 12 * self.evidence_ids.len() + 8);
        let mut escaped = String::new();
        for (n, id) in self.evidence_ids.iter().enumerate() {
            out.extend_from_slice(if n == 0 { b"\n" } else { b",\n" });
            out.extend_from_slice(&EVIDENCE_ID.as_bytes()[..EVIDENCE_ID.len() - 1]);
            if canon::is_unescaped(id.as_bytes()) {
                out.push(b'"');
                out.extend_from_slice(id.as_bytes());
                out.push(b'"');
            } else {
                escaped.clear();
                canon::write_string(&mut escaped, id);
                out.extend_from_slice(escaped.as_bytes());
            }
        }
        out.extend_from_slice(b"\n      ");
        indent_into(out, &text[open..], false);
    }
}

/// An entry's fields with an empty evidence list, borrowed, declared in
/// the order of [`Entry`]'s: encoded as the entry is but for the list.
#[derive(Serialize)]
struct EntryFields<'a> {
    content: &'a str,
    evidence_ids: &'a [&'a str],
    first_seen: &'a Stamp,
    key: &'a str,
    kind: Kind,
    last_seen: &'a Stamp,
    memory_key: Option<&'a str>,
    occurrences: u64,
    #[serde(skip_serializing_if = "no_ids")]
    released_evidence_ids: &'a IdList,
    #[serde(skip_serializing_if = "no_ids")]
    retracted_evidence_ids: &'a IdList,
    revision: u32,
    status: Status,
    superseded_by: Option<&'a str>,
    supersedes: Option<&'a str>,
}

/// An entry's encoding as a file holds it, in three parts: its first line
/// (the content), the lines between it and `first_seen` (the evidence
/// list; empty when there are none), and the lines from `first_seen` on.
fn entry_parts(encoded: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let first = encoded.strip_prefix(b"    {\n")?;
    let content_end = memchr::memchr(b'\n', first)?;
    let content = &first[..content_end];
    if !content.starts_with(CONTENT_LINE) {
        return None;
    }
    let rest = memchr::memmem::rfind(encoded, FIRST_SEEN_LINE)?;
    let list = encoded.get(encoded.len() - first.len() + content_end + 1..rest).unwrap_or(&[]);
    Some((content, list, &encoded[rest..]))
}

/// Decodes an entry's head from its content line and the lines from
/// `first_seen` on.
fn head_of(content: &[u8], rest: &[u8]) -> Option<EntryHead> {
    let mut text = Vec::with_capacity(2 + content.len() + rest.len());
    text.extend_from_slice(b"{\n");
    text.extend_from_slice(content);
    text.extend_from_slice(rest);
    serde_json::from_slice(&text).ok()
}

/// Reads an entry laid out as [`Record::encode_into`] writes it: its head
/// from the lines around the evidence list, then the list, an id a line
/// written without escapes (as every valid id is). `None` for any other
/// layout.
fn stored_entry(encoded: &[u8]) -> Option<Entry> {
    let (content, list, rest) = entry_parts(encoded)?;
    let head = head_of(content, rest)?;
    let list = list.strip_prefix(EVIDENCE_LINE)?.strip_suffix(b"],")?;
    let mut evidence_ids = IdList::new();
    if !list.is_empty() {
        let lines = list.strip_prefix(b"\n")?.strip_suffix(b"\n      ")?;
        let lines = std::str::from_utf8(lines).ok()?;
        let count = memchr::memchr_iter(b'\n', lines.as_bytes()).count() + 1;
        evidence_ids = IdList::with_capacity(count, lines.len());
        for (n, line) in lines.split('\n').enumerate() {
            let line = if n + 1 < count { line.strip_suffix(',')? } else { line };
            let id = line.strip_prefix(EVIDENCE_ID)?.strip_suffix('"')?;
            if !canon::is_unescaped(id.as_bytes()) {
                return None;
            }
            evidence_ids.push(id);
        }
    }
    Some(Entry {
        content: head.content,
        evidence_ids,
        first_seen: head.first_seen,
        key: head.key,
        kind: head.kind,
        last_seen: head.last_seen,
        memory_key: head.memory_key,
        occurrences: head.occurrences,
        released_evidence_ids: head.released_evidence_ids,
        retracted_evidence_ids: head.retracted_evidence_ids,
        revision: head.revision,
        status: head.status,
        superseded_by: head.superseded_by,
        supersedes: head.supersedes,
    })
}

/// Whether a borrowed id list is empty (left out of the encoding).
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference to the field"
)]
fn no_ids(ids: &&IdList) -> bool {
    ids.is_empty()
}

impl CuratedFile {
    /// Encodes `state` (checking every invariant) as the file it is
    /// written to.
    ///
    /// Errors: [`crate::Error::Corrupt`] if an invariant does not hold (a
    /// bug).
    pub(crate) fn encode(
        state: &CuratedState,
        path: &Path,
        workspace_id: &str,
    ) -> Result<CuratedFile> {
        let encoded = state.encoded(path, workspace_id)?;
        let mut sorted: Vec<&Entry> = state.entries.iter().collect();
        sorted.sort_by_key(|e| order(e));
        Ok(StateFile::of_encoding(encoded, &sorted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(content: &str, memory_key: Option<&str>, ids: &[&str]) -> Entry {
        let ids: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
        Entry::sample(content, memory_key, &ids)
    }

    /// The file `file` as stored in `dir`, read back by layout from disk,
    /// with the hash checkpoints its writer kept.
    fn on_disk(file: &CuratedFile, dir: &Path) -> CuratedFile {
        let path = dir.join("stored.json");
        crate::store::atomic_io::replace(&path, &file.contents().unwrap()).unwrap();
        let body = Body::File(std::fs::File::open(&path).unwrap());
        let read = CuratedFile::known_valid(body, file.sha256().to_owned(), "ws").unwrap();
        read.expect("the layout of an encoding is read back")
            .with_checkpoints(file.checkpoints().cloned().unwrap_or_default())
    }

    fn state(entries: Vec<Entry>) -> CuratedState {
        let mut state = CuratedState::new();
        state.entries = entries;
        state.sort();
        state
    }

    #[test]
    fn a_known_valid_file_reads_back_its_layout_and_heads() {
        let dir = tempfile::tempdir().unwrap();
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
            let bytes = file.contents().unwrap().into_owned();
            let held = Body::Held(bytes.clone());
            let Ok(Ok(read)) = CuratedFile::known_valid(held, file.sha256().to_owned(), "ws")
            else {
                panic!("the layout of an encoding is not read back");
            };
            for read in [read, on_disk(&file, dir.path())] {
                assert_eq!(
                    read.heads().cloned().collect::<Vec<_>>(),
                    file.heads().cloned().collect::<Vec<_>>()
                );
                assert_eq!(read.records(path, |_| true).unwrap(), state.entries);
                assert_eq!(read.contents().unwrap(), bytes.as_slice());
            }
            // Another workspace's file is not taken for this one.
            let held = Body::Held(bytes.clone());
            assert!(CuratedFile::known_valid(held, String::new(), "other").unwrap().is_err());
            // Nor a file cut short.
            let held = Body::Held(bytes[..bytes.len() - 1].to_vec());
            assert!(CuratedFile::known_valid(held, String::new(), "ws").unwrap().is_err());
        }
    }

    /// A stored file's checkpoints are read from the cache of its memory
    /// directory, under its name and hash, only when it is spliced: a
    /// splice of it hashes from them. (Recorded from another file of the
    /// same layout, they give a wrong hash: they were what it resumed
    /// from.)
    #[test]
    fn a_stored_file_is_spliced_from_the_checkpoints_recorded_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = &dir.path().join("curated.json");
        // (Tests keep a checkpoint every 8 bytes.)
        let of = |word: &str| -> CuratedState {
            let time = entry("Use UTC.", Some("a.time"), &[word, "x"]);
            state(vec![time, entry("Use WAL.", Some("z.db"), &["w"])])
        };
        let (ours, theirs) = (of("ours"), of("them"));
        let changed = vec![entry("Use WAL2.", Some("z.db"), &["v", "w"])];
        let mut after = ours.clone();
        after.replace_domain("z.db", changed.clone());
        let whole = CuratedFile::encode(&after, path, "ws").unwrap();
        let file = CuratedFile::encode(&ours, path, "ws").unwrap();
        let other = CuratedFile::encode(&theirs, path, "ws").unwrap();
        assert_eq!(file.contents().unwrap().len(), other.contents().unwrap().len());
        for (recorded, right) in [(&file, true), (&other, false)] {
            let checkpoints = recorded.checkpoints().unwrap();
            let sha256 = file.sha256();
            crate::store::hash_checkpoints::record(dir.path(), "curated.json", sha256, checkpoints);
            let stored =
                on_disk(&file, dir.path()).with_recorded_checkpoints(dir.path(), "curated.json");
            assert!(stored.checkpoints().is_none(), "nothing is read before a splice");
            let replaced = |h: &EntryHead| h.memory_key.as_deref() == Some("z.db");
            let spliced = stored.splice(path, "ws", replaced, &changed, Output::Staged).unwrap();
            assert_eq!(spliced.contents().unwrap(), whole.contents().unwrap());
            assert_eq!(spliced.sha256() == whole.sha256(), right);
        }
    }

    #[test]
    fn a_splice_gives_the_bytes_of_a_whole_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let path = &dir.path().join("curated.json");
        let before = state(vec![
            entry("Use UTC.", None, &["x"]),
            entry("Use WAL.", Some("db.mode"), &["a"]),
            entry("Use tabs.", Some("style.indent"), &["b", "c"]),
        ]);
        let file = || CuratedFile::encode(&before, path, "ws").unwrap();
        let changed = vec![entry("Use spaces.", Some("style.indent"), &["b", "c", "d"])];
        let spliced = file()
            .splice(
                path,
                "ws",
                |h| h.memory_key.as_deref() == Some("style.indent"),
                &changed,
                Output::Staged,
            )
            .unwrap();
        let mut after = before.clone();
        after.replace_domain("style.indent", changed.clone());
        let whole = CuratedFile::encode(&after, path, "ws").unwrap();
        assert_eq!(spliced.contents().unwrap(), whole.contents().unwrap());
        assert_eq!(spliced.sha256(), whole.sha256());
        let heads = |f: &CuratedFile| f.heads().cloned().collect::<Vec<_>>();
        assert_eq!(heads(&spliced), heads(&whole));
        // Saved, the staged file takes the place of the stored one.
        assert!(!path.exists());
        assert_eq!(spliced.save(path).unwrap(), heads(&whole));
        assert_eq!(std::fs::read(path).unwrap(), whole.contents().unwrap().as_ref());
        // A domain split between kept and added entries is refused.
        let err = file()
            .splice(
                path,
                "ws",
                |_| false,
                &[entry("Use WAL2.", Some("db.mode"), &["q"])],
                Output::Staged,
            )
            .unwrap_err();
        assert!(err.to_string().contains("split"), "{err}");
        // Added entries are checked.
        let mut broken = entry("Use x.", Some("new.key"), &["q"]);
        broken.occurrences = 2;
        let err = file().splice(path, "ws", |_| false, &[broken], Output::Staged).unwrap_err();
        assert!(err.to_string().contains("occurrences"), "{err}");
        // Nothing refused is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    /// `entry` after a correction took `retracted` from its evidence.
    fn corrected(mut entry: Entry, retracted: &[&str]) -> Entry {
        let ids: Vec<String> = entry
            .evidence_ids
            .iter()
            .filter(|id| !retracted.contains(id))
            .map(str::to_owned)
            .collect();
        entry.retracted_evidence_ids = retracted.iter().copied().collect();
        entry.evidence_ids = ids.iter().collect();
        entry.occurrences = ids.len() as u64;
        if ids.is_empty() {
            entry.status = Status::Retracted;
        }
        entry
    }

    /// A memory without corrections is written as schema 2, as before; an
    /// entry a correction changed is written as schema 3, read back by
    /// layout, and a splice never writes the file back as schema 2.
    #[test]
    fn a_corrected_entry_raises_the_schema_and_keeps_its_layout() {
        let dir = tempfile::tempdir().unwrap();
        let path = &dir.path().join("curated.json");
        let plain = state(vec![
            entry("Use UTC.", None, &["x"]),
            entry("Use WAL.", Some("db.mode"), &["a", "b"]),
        ]);
        let bytes =
            CuratedFile::encode(&plain, path, "ws").unwrap().contents().unwrap().into_owned();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.ends_with("\"schema_version\": 2,\n  \"workspace_id\": \"ws\"\n}\n"));
        assert!(!text.contains("retracted"), "{text}");

        let changed = vec![corrected(entry("Use WAL.", Some("db.mode"), &["a", "b"]), &["a", "b"])];
        let spliced = on_disk(&CuratedFile::encode(&plain, path, "ws").unwrap(), dir.path())
            .splice(
                path,
                "ws",
                |h| h.memory_key.as_deref() == Some("db.mode"),
                &changed,
                Output::Staged,
            )
            .unwrap();
        let mut after = plain.clone();
        after.replace_domain("db.mode", changed);
        let whole = CuratedFile::encode(&after, path, "ws").unwrap();
        assert_eq!(spliced.contents().unwrap(), whole.contents().unwrap());
        let text = String::from_utf8(whole.contents().unwrap().into_owned()).unwrap();
        assert!(text.contains("\"schema_version\": 3,"), "{text}");
        assert!(text.contains("\"status\": \"retracted\""), "{text}");
        assert!(
            text.contains("\"retracted_evidence_ids\": [\n        \"a\",\n        \"b\"\n      ],"),
            "{text}"
        );
        let decoded = CuratedState::decode(text.as_bytes(), path, "ws").unwrap();
        assert_eq!(decoded.entries, after.entries);
        assert_eq!(decoded.schema_version, 3);
        let read = on_disk(&whole, dir.path());
        assert_eq!(read.records(path, |_| true).unwrap(), after.entries);
        // Restored (the entry as it was), the file stays schema 3.
        let restored = vec![entry("Use WAL.", Some("db.mode"), &["a", "b"])];
        let back = read
            .splice(
                path,
                "ws",
                |h| h.memory_key.as_deref() == Some("db.mode"),
                &restored,
                Output::Held,
            )
            .unwrap();
        let text = String::from_utf8(back.contents().unwrap().into_owned()).unwrap();
        assert!(text.contains("\"schema_version\": 3,") && !text.contains("retracted"), "{text}");
        let decoded = CuratedState::decode(text.as_bytes(), path, "ws").unwrap();
        assert_eq!(decoded.entries, plain.entries);
        assert_eq!(decoded.encode(path, "ws").unwrap(), text.as_bytes());
        // A schema 2 file holding what a correction leaves is refused.
        let forged = String::from_utf8(whole.contents().unwrap().into_owned())
            .unwrap()
            .replace("\"schema_version\": 3,", "\"schema_version\": 2,");
        let err = CuratedState::decode(forged.as_bytes(), path, "ws").unwrap_err().to_string();
        assert!(err.contains("schema 2"), "{err}");
    }

    /// The invariants of a retracted entry: retracted exactly when a
    /// correction took its last evidence; a retracted latest revision
    /// leaves its domain without an active value, and only then.
    #[test]
    fn the_invariants_of_retracted_entries() {
        let problems = |entries: Vec<Entry>| -> Vec<String> {
            state(entries).problems().into_iter().map(|f| f.message).collect()
        };
        let wal = || entry("Use WAL.", Some("db.mode"), &["a", "b"]);
        assert!(problems(vec![corrected(wal(), &["a"])]).is_empty());
        assert!(problems(vec![corrected(wal(), &["a", "b"])]).is_empty());
        assert!(problems(vec![corrected(entry("Use UTC.", None, &["x"]), &["x"])]).is_empty());
        // Retracted with evidence left, or emptied and not retracted.
        let mut wrong = corrected(wal(), &["a"]);
        wrong.status = Status::Retracted;
        assert!(problems(vec![wrong]).iter().any(|p| p.contains("must have no evidence")));
        let mut wrong = corrected(wal(), &["a", "b"]);
        wrong.status = Status::Active;
        assert!(problems(vec![wrong]).iter().any(|p| p.contains("is not retracted")));
        // A fact both evidence and retracted evidence.
        let mut wrong = corrected(wal(), &["a"]);
        wrong.retracted_evidence_ids = ["a", "b"].into_iter().collect();
        assert!(problems(vec![wrong]).iter().any(|p| p.contains("both evidence")));
        // A chain R1 (superseded) -> R2: R2 retracted leaves no active value;
        // R1 retracted keeps its link.
        let r1 = entry("Use WAL.", Some("db.mode"), &["a"]);
        let mut r2 = entry("Use MVCC.", Some("db.mode"), &["c"]);
        r2.revision = 2;
        r2.key = r2.computed_key();
        let chain = |mut r1: Entry, mut r2: Entry| {
            r1.status = if r1.is_retracted() { Status::Retracted } else { Status::Superseded };
            r1.superseded_by = Some(r2.key.clone());
            r2.supersedes = Some(r1.key.clone());
            vec![r1, r2]
        };
        assert!(problems(chain(r1.clone(), corrected(r2.clone(), &["c"]))).is_empty());
        assert!(problems(chain(corrected(r1.clone(), &["a"]), r2.clone())).is_empty());
        // Without its link, a retracted earlier revision is out of place.
        let mut broken = chain(corrected(r1.clone(), &["a"]), r2.clone());
        broken[0].superseded_by = None;
        broken[1].supersedes = None;
        assert!(!problems(broken).is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Replacing any set of domains and unkeyed entries by a splice
        /// gives the bytes, hash and heads of encoding the new state whole;
        /// so does splicing the spliced file back (each hash resumed from
        /// the checkpoints of the file spliced).
        #[test]
        fn any_splice_equals_a_whole_encoding(
            before in proptest::collection::vec((0..6usize, 0..3usize, 1..4usize), 0..12),
            after in proptest::collection::vec((0..6usize, 0..3usize, 1..4usize), 0..12),
            replaced in proptest::collection::btree_set(0..6usize, 0..6),
            staged: bool,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = &dir.path().join("curated.json");
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
            let replaced_of = |state: &CuratedState| -> Vec<Entry> {
                state
                    .entries
                    .iter()
                    .filter(|e| replaced.contains(&unit_of(e.memory_key.as_deref(), &e.content)))
                    .cloned()
                    .collect()
            };
            let added: Vec<Entry> = build(&after, "b")
                .into_iter()
                .filter(|e| replaced.contains(&unit_of(e.memory_key.as_deref(), &e.content)))
                .collect();
            let file = on_disk(&CuratedFile::encode(&before, path, "ws").unwrap(), dir.path());
            let spliced = file
                .splice(
                    path,
                    "ws",
                    |h| replaced.contains(&unit_of(h.memory_key.as_deref(), &h.content)),
                    &added,
                    if staged { Output::Staged } else { Output::Held },
                )
                .unwrap();
            let mut whole = before.clone();
            whole.entries.retain(|e| !replaced.contains(&unit_of(e.memory_key.as_deref(), &e.content)));
            whole.entries.extend(added);
            whole.sort();
            let expected = CuratedFile::encode(&whole, path, "ws").unwrap();
            proptest::prop_assert_eq!(spliced.contents().unwrap(), expected.contents().unwrap());
            proptest::prop_assert_eq!(spliced.sha256(), expected.sha256());
            let heads = |f: &CuratedFile| f.heads().cloned().collect::<Vec<_>>();
            proptest::prop_assert_eq!(heads(&spliced), heads(&expected));
            let read = on_disk(&spliced, dir.path());
            proptest::prop_assert_eq!(heads(&read), heads(&expected));
            let back = read
                .splice(
                    path,
                    "ws",
                    |h| replaced.contains(&unit_of(h.memory_key.as_deref(), &h.content)),
                    &replaced_of(&before),
                    if staged { Output::Held } else { Output::Staged },
                )
                .unwrap();
            let first = CuratedFile::encode(&before, path, "ws").unwrap();
            proptest::prop_assert_eq!(back.contents().unwrap(), first.contents().unwrap());
            proptest::prop_assert_eq!(back.sha256(), first.sha256());
        }
    }

    /// How the default of [`Record::encode_into`] writes an entry: its
    /// whole serde encoding, indented.
    fn encoded_as_json(entry: &Entry) -> Vec<u8> {
        let mut out = Vec::new();
        indent_into(&mut out, &canon::encode(entry, JsonStyle::Pretty), true);
        out
    }

    #[test]
    fn an_entry_laid_out_otherwise_is_decoded_as_json() {
        let entry = entry("Use UTC.", None, &["a", "b"]);
        let stored = encoded_as_json(&entry);
        assert!(stored_entry(&stored).is_some());
        let text = String::from_utf8(stored).unwrap();
        for other in [
            // one line, a missing comma, an escaped id, a field in between
            text.replace("[\n        \"a\",\n        \"b\"\n      ]", "[\"a\", \"b\"]"),
            text.replace("\"a\",\n", "\"a\"\n"),
            text.replace("\"a\"", "\"\\u0061\""),
            text.replace("\"evidence_ids\"", "\"extra\": 1,\n      \"evidence_ids\""),
        ] {
            assert!(stored_entry(other.as_bytes()).is_none(), "{other}");
            let decoded = Entry::decode(other.as_bytes());
            assert_eq!(decoded.ok(), serde_json::from_str::<Entry>(&other).ok(), "{other}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The direct encoding of an entry is its JSON encoding byte for
        /// byte, and reads back line by line as the entry.
        #[test]
        fn an_entry_is_written_and_read_as_its_json(
            content in "[a-z \"\\\\✓\u{e9}\u{7f}]{1,12}",
            memory_key in proptest::option::of("[a-z]{1,4}\\.[a-z]{1,4}"),
            ids in proptest::collection::btree_set("[A-Za-z0-9][A-Za-z0-9._:/-]{0,8}|[a-z\"\\\\é]{1,3}", 0..6),
            superseded in proptest::bool::ANY,
        ) {
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let mut entry = entry(&content, memory_key.as_deref(), &ids);
            if superseded {
                entry.status = Status::Superseded;
                entry.superseded_by = Some("0123456789abcdef".into());
            }
            let mut direct = Vec::new();
            entry.encode_into(&mut direct);
            let json = encoded_as_json(&entry);
            proptest::prop_assert_eq!(String::from_utf8_lossy(&direct), String::from_utf8_lossy(&json));
            proptest::prop_assert_eq!(Entry::decode(&direct).unwrap(), entry.clone());
            let plain = ids.iter().all(|id| canon::is_unescaped(id.as_bytes()));
            proptest::prop_assert_eq!(stored_entry(&direct), plain.then_some(entry));
        }
    }
}
