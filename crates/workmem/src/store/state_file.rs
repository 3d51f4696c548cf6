//! A canonical state file as stored (curated.json, conflicts.json): its
//! bytes and where each record sits in them, so that a writer that changes
//! a few domains (a resolution, a distill of a few new facts) replaces
//! their records and copies every other byte, instead of decoding,
//! checking and encoding the whole file, which grows with the log
//! (evidence lists) and with the history (closed cases).
//!
//! Both files are `{"<records>": [...], "schema_version": N,
//! "workspace_id": "..."}`, pretty-printed with sorted keys: the encoding
//! is the concatenation of each record's own pretty encoding, four spaces
//! in, separated by `,\n`, between a fixed head and a tail naming the
//! workspace. [`Encoder`] writes every state file that way, whole or
//! spliced, so the two agree byte for byte. A splice checks the records it
//! adds (every invariant but the uniqueness of ids stays inside one memory
//! key, and whole domains are replaced) and that their ids are new among
//! the records it keeps.
//!
//! The layout of bytes read back is only trusted for a file known to be
//! valid: one whose SHA-256 the caller found among the hashes of files
//! workmem checked whole or wrote ([`crate::store::valid_hashes`]). It is
//! read without decoding any record: a record ends on a line of exactly
//! four spaces and `}` (no string holds a raw newline), and what the
//! writer needs of it (its [`Record::Head`]) is read from its top-level
//! lines.

use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Location, Result};
use crate::model::canon::{self, JsonStyle};

/// How a record's encoding starts and ends, four spaces in.
const RECORD_START: &[u8] = b"    {\n";
const RECORD_END: &[u8] = b"\n    }";

/// A record of a state file.
pub(crate) trait Record: Serialize + DeserializeOwned {
    /// What a writer needs of a record without decoding it, ordered as the
    /// records are in the file.
    type Head: Clone + Ord + std::fmt::Debug;
    /// The name of the array of records (the file's first key).
    const ARRAY: &'static str;
    /// The schema version written.
    const SCHEMA_VERSION: u32;

    /// Returns the head of this record.
    fn head(&self) -> Self::Head;
    /// Reads the head of one record's encoding (as the file holds it).
    fn read_head(encoded: &[u8]) -> Option<Self::Head>;
    /// The id that must be unique in the file.
    fn id(head: &Self::Head) -> &str;
    /// The memory key of the record, if it has one.
    fn domain(head: &Self::Head) -> Option<&str>;
    /// Returns the first violated invariant among `records`, whole domains
    /// and records without a domain, in order.
    fn problem(records: &[Self], workspace_id: &str) -> Option<String>;
}

/// Returns the value text of the top-level field `name` of one record's
/// encoding (the rest of its line, without a trailing comma).
pub(crate) fn field<'a>(encoded: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let needle = format!("\n      \"{name}\": ");
    let start = memchr::memmem::find(encoded, needle.as_bytes())? + needle.len();
    let end = memchr::memchr(b'\n', &encoded[start..]).map_or(encoded.len(), |n| start + n);
    let value = &encoded[start..end];
    Some(value.strip_suffix(b",").unwrap_or(value))
}

/// Writes the canonical encoding of a state file record by record, in the
/// order given (the caller's: canonical), recording where each one sits.
pub(crate) struct Encoder<'w, R> {
    bytes: Vec<u8>,
    slots: Vec<Range<usize>>,
    workspace_id: &'w str,
    records: std::marker::PhantomData<R>,
}

impl<'w, R: Record> Encoder<'w, R> {
    /// Starts a file of `workspace_id` that will hold about `records`
    /// records and `bytes` bytes.
    pub(crate) fn new(workspace_id: &'w str, records: usize, bytes: usize) -> Encoder<'w, R> {
        Encoder {
            bytes: Vec::with_capacity(bytes),
            slots: Vec::with_capacity(records),
            workspace_id,
            records: std::marker::PhantomData,
        }
    }

    fn separate(&mut self) {
        if self.slots.is_empty() {
            self.bytes.extend_from_slice(format!("{{\n  \"{}\": [\n", R::ARRAY).as_bytes());
        } else {
            self.bytes.extend_from_slice(b",\n");
        }
    }

    /// Appends `record`, encoded.
    pub(crate) fn record(&mut self, record: &R) {
        self.separate();
        let start = self.bytes.len();
        let text = canon::encode(record, JsonStyle::Pretty);
        for (n, line) in text.split('\n').enumerate() {
            if n > 0 {
                self.bytes.push(b'\n');
            }
            self.bytes.extend_from_slice(b"    ");
            self.bytes.extend_from_slice(line.as_bytes());
        }
        self.slots.push(start..self.bytes.len());
    }

    /// Appends a record's encoding as stored.
    fn stored(&mut self, encoded: &[u8]) {
        self.separate();
        let start = self.bytes.len();
        self.bytes.extend_from_slice(encoded);
        self.slots.push(start..self.bytes.len());
    }

    /// Returns the whole file and where each record sits.
    pub(crate) fn finish(mut self) -> Encoded {
        if self.slots.is_empty() {
            self.bytes.extend_from_slice(format!("{{\n  \"{}\": [],", R::ARRAY).as_bytes());
        } else {
            self.bytes.extend_from_slice(b"\n  ],");
        }
        self.bytes.extend_from_slice(&tail::<R>(self.workspace_id));
        Encoded { bytes: self.bytes, slots: self.slots }
    }
}

/// What follows the records: the schema version and the workspace id.
fn tail<R: Record>(workspace_id: &str) -> Vec<u8> {
    let id = canon::encode(workspace_id, JsonStyle::Pretty);
    format!("\n  \"schema_version\": {},\n  \"workspace_id\": {id}\n}}\n", R::SCHEMA_VERSION)
        .into_bytes()
}

/// An encoding and the byte range of each record in it.
pub(crate) struct Encoded {
    /// The file.
    pub(crate) bytes: Vec<u8>,
    /// Each record's range, in order.
    pub(crate) slots: Vec<Range<usize>>,
}

/// One record of the file: its bytes and its head.
#[derive(Debug, Clone)]
struct Slot<H> {
    range: Range<usize>,
    head: H,
}

/// A state file as stored, valid and canonical, with the place and head of
/// every record.
#[derive(Debug, Clone)]
pub(crate) struct StateFile<R: Record> {
    bytes: Vec<u8>,
    sha256: String,
    slots: Vec<Slot<R::Head>>,
}

impl<R: Record> StateFile<R> {
    /// Returns the file of `encoded`, the encoding of `records` (in the
    /// same order).
    pub(crate) fn of_encoding(encoded: Encoded, records: &[&R]) -> StateFile<R> {
        let Encoded { bytes, slots } = encoded;
        let slots = slots
            .into_iter()
            .zip(records)
            .map(|(range, record)| Slot { range, head: record.head() })
            .collect();
        let sha256 = canon::sha256_hex(&bytes);
        StateFile { bytes, sha256, slots }
    }

    /// Returns the layout of `bytes`, a state file of `workspace_id` known
    /// to be valid (its SHA-256 is `sha256`, found among the hashes of
    /// files checked whole or written by workmem), or the bytes back when
    /// they are not laid out as workmem writes them (the caller then
    /// decodes them whole).
    ///
    /// Errors: the bytes, unchanged.
    pub(crate) fn known_valid(
        bytes: Vec<u8>,
        sha256: String,
        workspace_id: &str,
    ) -> std::result::Result<StateFile<R>, Vec<u8>> {
        match layout::<R>(&bytes, workspace_id) {
            Some(slots) => Ok(StateFile { bytes, sha256, slots }),
            None => Err(bytes),
        }
    }

    /// The file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Returns the file's bytes.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The SHA-256 of the file's bytes, hex.
    pub(crate) fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Every record's head, in order.
    pub(crate) fn heads(&self) -> impl Iterator<Item = &R::Head> + Clone {
        self.slots.iter().map(|slot| &slot.head)
    }

    /// Decodes the records whose head `wanted` selects, in order.
    ///
    /// Errors: [`Error::Corrupt`] naming `path` when a record does not
    /// decode (the file changed under a known hash: a bug).
    pub(crate) fn records(&self, path: &Path, wanted: impl Fn(&R::Head) -> bool) -> Result<Vec<R>> {
        self.slots
            .iter()
            .filter(|slot| wanted(&slot.head))
            .map(|slot| {
                serde_json::from_slice(&self.bytes[slot.range.clone()]).map_err(|err| {
                    Error::corrupt(
                        Location::file(path),
                        format!(
                            "{}: {}",
                            R::id(&slot.head),
                            crate::model::fact_line::describe_json_error(&err)
                        ),
                    )
                })
            })
            .collect()
    }

    /// Returns the file with the records `replaced` selects taken out and
    /// `added` put in, every other record's bytes copied as they are.
    /// `replaced` must select whole memory keys (every record of each) and
    /// records without one, and `added` must hold whole memory keys.
    ///
    /// Errors: [`Error::Corrupt`] naming `path` when the records added
    /// break an invariant, a memory key is split between kept and added
    /// records, or an added id is taken by a kept record.
    pub(crate) fn splice(
        &self,
        path: &Path,
        workspace_id: &str,
        replaced: impl Fn(&R::Head) -> bool,
        added: &[R],
    ) -> Result<StateFile<R>> {
        let refuse =
            |msg: String| Error::corrupt(Location::file(path), format!("refusing to save: {msg}"));
        if let Some(problem) = R::problem(added, workspace_id) {
            return Err(refuse(problem));
        }
        let mut added: Vec<(R::Head, &R)> = added.iter().map(|r| (r.head(), r)).collect();
        added.sort_by(|a, b| a.0.cmp(&b.0));
        let kept: Vec<&Slot<R::Head>> =
            self.slots.iter().filter(|slot| !replaced(&slot.head)).collect();
        let new_ids: HashSet<&str> = added.iter().map(|(h, _)| R::id(h)).collect();
        let new_domains: HashSet<&str> = added.iter().filter_map(|(h, _)| R::domain(h)).collect();
        for slot in &kept {
            if new_ids.contains(R::id(&slot.head)) {
                return Err(refuse(format!("{} appears twice", R::id(&slot.head))));
            }
            if let Some(key) = R::domain(&slot.head).filter(|k| new_domains.contains(k)) {
                return Err(refuse(format!("memory_key {key} is split between two writes")));
            }
        }
        // Room for the bytes kept and about as many again for those added.
        let mut out =
            Encoder::<R>::new(workspace_id, kept.len() + added.len(), self.bytes.len() + 4096);
        let mut heads = Vec::with_capacity(kept.len() + added.len());
        let mut kept = kept.into_iter().peekable();
        let mut added = added.into_iter().peekable();
        loop {
            let take_kept = match (kept.peek(), added.peek()) {
                (Some(slot), Some((head, _))) => slot.head < *head,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if take_kept {
                let slot = kept.next().expect("peeked");
                out.stored(&self.bytes[slot.range.clone()]);
                heads.push(slot.head.clone());
            } else {
                let (head, record) = added.next().expect("peeked");
                out.record(record);
                heads.push(head);
            }
        }
        let Encoded { bytes, slots } = out.finish();
        let slots =
            slots.into_iter().zip(heads).map(|(range, head)| Slot { range, head }).collect();
        let sha256 = canon::sha256_hex(&bytes);
        Ok(StateFile { bytes, sha256, slots })
    }
}

/// Returns every record's place and head when `bytes` are laid out as
/// [`Encoder`] writes a file of `workspace_id`, in order.
fn layout<R: Record>(bytes: &[u8], workspace_id: &str) -> Option<Vec<Slot<R::Head>>> {
    let ranges = locate::<R>(bytes, workspace_id)?;
    let mut slots = Vec::with_capacity(ranges.len());
    for range in ranges {
        let head = R::read_head(&bytes[range.clone()])?;
        slots.push(Slot { range, head });
    }
    let sorted = slots.windows(2).all(|w| w[0].head < w[1].head);
    sorted.then_some(slots)
}

/// Returns the byte range of every record of `bytes` when they are laid
/// out as [`Encoder`] writes a file of `workspace_id`.
fn locate<R: Record>(bytes: &[u8], workspace_id: &str) -> Option<Vec<Range<usize>>> {
    let tail = tail::<R>(workspace_id);
    let empty_head = format!("{{\n  \"{}\": [],", R::ARRAY);
    if bytes.len() == empty_head.len() + tail.len()
        && bytes.starts_with(empty_head.as_bytes())
        && bytes.ends_with(&tail)
    {
        return Some(Vec::new());
    }
    let head = format!("{{\n  \"{}\": [\n", R::ARRAY);
    let closing = b"\n  ],";
    if !bytes.starts_with(head.as_bytes()) || !bytes.ends_with(&tail) {
        return None;
    }
    let end = bytes.len().checked_sub(tail.len() + closing.len())?;
    if end < head.len() || &bytes[end..end + closing.len()] != closing {
        return None;
    }
    let finder = memchr::memmem::Finder::new(RECORD_END);
    let mut ranges = Vec::new();
    let mut at = head.len();
    loop {
        if !bytes[at..end].starts_with(RECORD_START) {
            return None;
        }
        let close = at + finder.find(&bytes[at..end])? + RECORD_END.len();
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
