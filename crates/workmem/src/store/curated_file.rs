//! curated.json as stored ([`crate::store::state_file`]): its entries'
//! heads (every field but the evidence list, which grows with the log) and
//! where each entry sits, so that a writer replaces the entries of the
//! domains it changes and copies every other byte.

use std::cmp::Ordering;
use std::path::Path;

use serde::Deserialize;

use crate::error::Result;
use crate::model::fact::Kind;
use crate::model::stamp::Stamp;
use crate::store::curated_state::{
    CURATED_SCHEMA_VERSION, CuratedState, Entry, Status, problems_of,
};
use crate::store::state_file::{Record, StateFile};

/// Where the fields after the evidence list start.
const FIRST_SEEN_LINE: &[u8] = b"\n      \"first_seen\": ";
const CONTENT_LINE: &[u8] = b"      \"content\": ";

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

/// The canonical order of an entry: (kind, memory_key or "", revision, key).
pub(crate) fn order(entry: &Entry) -> (&str, &str, u32, &str) {
    (entry.kind.as_str(), entry.memory_key.as_deref().unwrap_or(""), entry.revision, &entry.key)
}

impl Record for Entry {
    type Head = EntryHead;
    const ARRAY: &'static str = "entries";
    const SCHEMA_VERSION: u32 = CURATED_SCHEMA_VERSION;

    fn head(&self) -> EntryHead {
        EntryHead {
            content: self.content.clone(),
            first_seen: self.first_seen.clone(),
            key: self.key.clone(),
            kind: self.kind,
            last_seen: self.last_seen.clone(),
            memory_key: self.memory_key.clone(),
            occurrences: self.occurrences,
            revision: self.revision,
            status: self.status,
            superseded_by: self.superseded_by.clone(),
            supersedes: self.supersedes.clone(),
        }
    }

    /// Reads an entry's first line (the content) and the lines after its
    /// evidence list.
    fn read_head(encoded: &[u8]) -> Option<EntryHead> {
        let first = encoded.strip_prefix(b"    {\n")?;
        let content = &first[..memchr::memchr(b'\n', first)?];
        if !content.starts_with(CONTENT_LINE) {
            return None;
        }
        let rest = memchr::memmem::rfind(encoded, FIRST_SEEN_LINE)?;
        let mut text = Vec::with_capacity(2 + content.len() + encoded.len() - rest);
        text.extend_from_slice(b"{\n");
        text.extend_from_slice(content);
        text.extend_from_slice(&encoded[rest..]);
        serde_json::from_slice(&text).ok()
    }

    fn id(head: &EntryHead) -> &str {
        &head.key
    }

    fn domain(head: &EntryHead) -> Option<&str> {
        head.memory_key.as_deref()
    }

    fn problem(records: &[Entry], _workspace_id: &str) -> Option<String> {
        problems_of(records).into_iter().next().map(|finding| finding.message)
    }
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
            let Ok(read) =
                CuratedFile::known_valid(file.bytes().to_vec(), file.sha256().to_owned(), "ws")
            else {
                panic!("the layout of an encoding is not read back");
            };
            assert_eq!(
                read.heads().cloned().collect::<Vec<_>>(),
                file.heads().cloned().collect::<Vec<_>>()
            );
            assert_eq!(read.records(path, |_| true).unwrap(), state.entries);
            // Another workspace's file is not taken for this one.
            assert!(
                CuratedFile::known_valid(file.bytes().to_vec(), String::new(), "other").is_err()
            );
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
        assert_eq!(spliced.bytes(), whole.bytes());
        assert_eq!(spliced.sha256(), whole.sha256());
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
            proptest::prop_assert_eq!(spliced.bytes(), expected.bytes());
            proptest::prop_assert_eq!(spliced.sha256(), expected.sha256());
            let read = CuratedFile::known_valid(spliced.bytes().to_vec(), spliced.sha256().to_owned(), "ws");
            let heads = |f: &CuratedFile| f.heads().cloned().collect::<Vec<_>>();
            proptest::prop_assert_eq!(heads(&read.ok().unwrap()), heads(&expected));
        }
    }
}
