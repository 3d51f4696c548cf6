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

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Damage, Error, IoContext, Location, Result};
use crate::model::canon::{self, JsonStyle};
use crate::store::atomic_io::{self, Staged};
use crate::store::hash_checkpoints::{Checkpoints, Hasher};
use crate::store::layout_cache;

/// How a record's encoding starts and ends, four spaces in.
const RECORD_START: &[u8] = b"    {\n";
const RECORD_END: &[u8] = b"\n    }";

/// How much of a file on disk is read or written at a time: a stored
/// file is never held whole (it grows with the log). Small: each page of a
/// fresh buffer costs a page fault (3.3 us here), and a buffer lives for
/// one process (with 256 KiB, an incremental distill at 100k took 2,019
/// page faults against 1,783).
/// (Tests use a few bytes, so that records straddle chunks.)
const CHUNK: usize = if cfg!(test) { 7 } else { 64 * 1024 };

/// A record of a state file.
pub(crate) trait Record: Serialize + DeserializeOwned {
    /// What a writer needs of a record without decoding it, ordered as the
    /// records are in the file.
    type Head: Clone + Ord + std::fmt::Debug;
    /// The name of the array of records (the file's first key).
    const ARRAY: &'static str;
    /// The schema version written by default.
    const SCHEMA_VERSION: u32;
    /// Every schema version a file of these records may be written with:
    /// the default, then the later ones a file keeps once it has one (a
    /// memory that had a correction, docs/corrections.md).
    const SCHEMA_VERSIONS: &'static [u32] = &[Self::SCHEMA_VERSION];

    /// Returns the head of this record.
    fn head(&self) -> Self::Head;
    /// Reads the head of one record's encoding (as the file holds it).
    fn read_head(encoded: &[u8]) -> Option<Self::Head>;
    /// The id that must be unique in the file.
    fn id(head: &Self::Head) -> &str;
    /// The memory key of the record, if it has one.
    fn domain(head: &Self::Head) -> Option<&str>;
    /// The lowest schema version a file holding this record is written
    /// with (a record a correction changed needs the later one).
    fn schema_needed(&self) -> u32 {
        Self::SCHEMA_VERSION
    }
    /// Returns the first violated invariant among `records`, whole domains
    /// and records without a domain, in order.
    fn problem(records: &[Self], workspace_id: &str) -> Option<String>;

    /// The file of the memory directory that caches the layout of files
    /// of these records ([`crate::store::layout_cache`]), if any.
    const LAYOUT_CACHE: Option<&'static str> = None;

    /// A head as one line of text, for the layout cache.
    fn head_text(_head: &Self::Head) -> Option<String> {
        None
    }

    /// The head that [`Record::head_text`] wrote.
    fn head_of_text(_text: &str) -> Option<Self::Head> {
        None
    }

    /// Decodes one record's encoding as the file holds it.
    ///
    /// Errors: the record is not valid JSON of this type.
    fn decode(encoded: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(encoded)
    }

    /// Appends this record's encoding as a file holds it: its own pretty
    /// encoding, every line four spaces in.
    fn encode_into(&self, out: &mut Vec<u8>) {
        indent_into(out, &canon::encode(self, JsonStyle::Pretty), true);
    }
}

/// Appends `text`, each line four spaces in (the first one too when
/// `first` says so: otherwise it goes on the line `out` ends with).
pub(crate) fn indent_into(out: &mut Vec<u8>, text: &str, first: bool) {
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push(b'\n');
        }
        if n > 0 || first {
            out.extend_from_slice(b"    ");
        }
        out.extend_from_slice(line.as_bytes());
    }
}

/// Returns the value text of the top-level field `name` of one record's
/// encoding (the rest of its line, without a trailing comma).
pub(crate) fn field<'a>(encoded: &'a [u8], name: &str) -> Option<&'a [u8]> {
    field_at(encoded, name).map(|(value, _)| value)
}

/// [`field`], and the offset in `encoded` where its line ends: the next
/// field in sorted order is searched from there.
pub(crate) fn field_at<'a>(encoded: &'a [u8], name: &str) -> Option<(&'a [u8], usize)> {
    let needle = format!("\n      \"{name}\": ");
    let start = memchr::memmem::find(encoded, needle.as_bytes())? + needle.len();
    let end = memchr::memchr(b'\n', &encoded[start..]).map_or(encoded.len(), |n| start + n);
    let value = &encoded[start..end];
    Some((value.strip_suffix(b",").unwrap_or(value), end))
}

/// Writes the canonical encoding of a state file record by record, in the
/// order given (the caller's: canonical), recording where each one sits.
pub(crate) struct Encoder<'w, R> {
    bytes: Vec<u8>,
    /// How many bytes were handed on before `bytes` ([`Encoder::spill`]).
    base: usize,
    slots: Vec<Range<usize>>,
    workspace_id: &'w str,
    schema_version: u32,
    records: std::marker::PhantomData<R>,
}

impl<'w, R: Record> Encoder<'w, R> {
    /// Starts a file of `workspace_id`, written with `schema_version`,
    /// that will hold about `records` records and `bytes` bytes.
    pub(crate) fn new(
        workspace_id: &'w str,
        schema_version: u32,
        records: usize,
        bytes: usize,
    ) -> Encoder<'w, R> {
        Encoder {
            bytes: Vec::with_capacity(bytes),
            base: 0,
            slots: Vec::with_capacity(records),
            workspace_id,
            schema_version,
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

    fn position(&self) -> usize {
        self.base + self.bytes.len()
    }

    /// Appends `record`, encoded.
    pub(crate) fn record(&mut self, record: &R) {
        self.separate();
        let start = self.position();
        record.encode_into(&mut self.bytes);
        self.slots.push(start..self.position());
    }

    /// Appends a record's encoding as stored.
    fn stored(&mut self, encoded: &[u8]) {
        self.separate();
        let start = self.position();
        self.bytes.extend_from_slice(encoded);
        self.slots.push(start..self.position());
    }

    /// Records `run`, records stored one after another (each pair apart by
    /// `,\n`, as in a file), as written by the caller at the current
    /// position: the bytes encoded so far must have been spilled.
    fn copied(&mut self, run: &[Range<usize>]) {
        debug_assert!(self.bytes.is_empty(), "spill before copying");
        let (Some(first), Some(last)) = (run.first(), run.last()) else { return };
        let at = self.position();
        self.slots.extend(run.iter().map(|r| at + r.start - first.start..at + r.end - first.start));
        self.base += last.end - first.start;
    }

    /// Hands the bytes encoded so far to `out` and forgets them (their
    /// places are kept): how a file is written as it is encoded.
    fn spill(&mut self, out: &mut impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        out(&self.bytes)?;
        self.base += self.bytes.len();
        self.bytes.clear();
        Ok(())
    }

    /// Returns the rest of the file (all of it unless spilled) and where
    /// each record sits.
    pub(crate) fn finish(mut self) -> Encoded {
        if self.slots.is_empty() {
            self.bytes.extend_from_slice(format!("{{\n  \"{}\": [],", R::ARRAY).as_bytes());
        } else {
            self.bytes.extend_from_slice(b"\n  ],");
        }
        self.bytes.extend_from_slice(&tail(self.workspace_id, self.schema_version));
        Encoded { bytes: self.bytes, slots: self.slots, schema_version: self.schema_version }
    }
}

/// What follows the records: the schema version and the workspace id.
fn tail(workspace_id: &str, schema_version: u32) -> Vec<u8> {
    let id = canon::encode(workspace_id, JsonStyle::Pretty);
    format!("\n  \"schema_version\": {schema_version},\n  \"workspace_id\": {id}\n}}\n")
        .into_bytes()
}

/// An encoding and the byte range of each record in it.
pub(crate) struct Encoded {
    /// The file.
    pub(crate) bytes: Vec<u8>,
    /// Each record's range, in order.
    pub(crate) slots: Vec<Range<usize>>,
    /// The schema version it was written with.
    pub(crate) schema_version: u32,
}

/// One record of the file: its bytes and its head.
#[derive(Debug, Clone)]
struct Slot<H> {
    range: Range<usize>,
    head: H,
}

/// Where a state file's bytes are.
#[derive(Debug)]
pub(crate) enum Body {
    /// In memory: a file just encoded, or read whole.
    Held(Vec<u8>),
    /// In a file opened for reading: the stored file, read a chunk at a
    /// time as needed.
    File(File),
    /// In the staged next version of the file (a splice's output).
    Staged(Staged),
}

impl Body {
    /// The file the bytes are in, or the bytes.
    fn on_disk(&self) -> std::result::Result<&File, &[u8]> {
        match self {
            Body::Held(bytes) => Err(bytes),
            Body::File(file) => Ok(file),
            Body::Staged(staged) => Ok(staged.file()),
        }
    }

    fn len(&self) -> io::Result<usize> {
        match self.on_disk() {
            Err(bytes) => Ok(bytes.len()),
            Ok(file) => usize::try_from(file.metadata()?.len())
                .map_err(|_| io::Error::other("file too large")),
        }
    }

    /// Returns all the bytes.
    ///
    /// Errors: reading them.
    pub(crate) fn into_bytes(self) -> io::Result<Vec<u8>> {
        match self {
            Body::Held(bytes) => Ok(bytes),
            body => Ok(body.read(0..body.len()?)?.into_owned()),
        }
    }

    /// Returns the bytes in `range`.
    fn read(&self, range: Range<usize>) -> io::Result<Cow<'_, [u8]>> {
        match self.on_disk() {
            Err(bytes) => Ok(Cow::Borrowed(&bytes[range])),
            Ok(file) => {
                let mut buf = vec![0; range.len()];
                file.read_exact_at(&mut buf, range.start as u64)?;
                Ok(Cow::Owned(buf))
            }
        }
    }
}

/// A view of a body's bytes read a chunk at a time, forward: how a file on
/// disk is laid out and copied without being held whole.
struct Window<'b> {
    body: &'b Body,
    len: usize,
    buf: Vec<u8>,
    /// The offset of `buf[0]`.
    start: usize,
}

impl<'b> Window<'b> {
    fn new(body: &'b Body, len: usize) -> Window<'b> {
        Window { body, len, buf: Vec::new(), start: 0 }
    }

    /// The end of what can be had without reading.
    fn end(&self) -> usize {
        match self.body.on_disk() {
            Err(bytes) => bytes.len(),
            Ok(_) => self.start + self.buf.len(),
        }
    }

    /// Returns the bytes in `range` (within the body), reading them and a
    /// chunk ahead when they are not at hand; what lies before `range` is
    /// forgotten.
    fn get(&mut self, range: Range<usize>) -> io::Result<&[u8]> {
        let file = match self.body.on_disk() {
            Err(bytes) => return Ok(&bytes[range]),
            Ok(file) => file,
        };
        if range.start < self.start || range.end > self.end() {
            if range.start < self.start || range.start > self.end() {
                self.buf.clear();
            } else {
                self.buf.drain(..range.start - self.start);
            }
            self.start = range.start;
            let from = self.end();
            let to = (from + CHUNK).min(self.len).max(range.end);
            self.buf.resize(to - self.start, 0);
            file.read_exact_at(&mut self.buf[from - self.start..], from as u64)?;
        }
        Ok(&self.buf[range.start - self.start..range.end - self.start])
    }
}

/// A state file, valid and canonical, with the place and head of every
/// record: as stored (read as needed), just encoded, or spliced and staged
/// to replace the stored one.
#[derive(Debug)]
pub(crate) struct StateFile<R: Record> {
    body: Body,
    len: usize,
    sha256: String,
    /// Where its hash stood part way.
    checkpoints: Checkpointed,
    slots: Vec<Slot<R::Head>>,
    /// The schema version in its tail (one of [`Record::SCHEMA_VERSIONS`]).
    schema_version: u32,
}

/// Where the hash of a file stood part way ([`crate::store::hash_checkpoints`]):
/// as its writer kept it (none known when empty), or as the cache of a
/// memory directory records it for the file's name and hash, read only
/// when a splice resumes from it (a reader never needs it).
#[derive(Debug)]
enum Checkpointed {
    Held(Checkpoints),
    Recorded { memory_dir: PathBuf, name: String },
}

impl Default for Checkpointed {
    fn default() -> Self {
        Checkpointed::Held(Checkpoints::default())
    }
}

impl Checkpointed {
    /// The checkpoints, read from the cache when they are recorded there
    /// for the file's hash `sha256`.
    fn of(self, sha256: &str) -> Checkpoints {
        match self {
            Checkpointed::Held(checkpoints) => checkpoints,
            Checkpointed::Recorded { memory_dir, name } => {
                crate::store::hash_checkpoints::load(&memory_dir, &name, sha256)
            }
        }
    }
}

impl<R: Record> StateFile<R> {
    /// Returns the file of `encoded`, the encoding of `records` (in the
    /// same order).
    pub(crate) fn of_encoding(encoded: Encoded, records: &[&R]) -> StateFile<R> {
        let Encoded { bytes, slots, schema_version } = encoded;
        let slots = slots
            .into_iter()
            .zip(records)
            .map(|(range, record)| Slot { range, head: record.head() })
            .collect();
        let mut hasher = Hasher::default();
        hasher.update(&bytes);
        let (sha256, checkpoints) = hasher.finish();
        let checkpoints = Checkpointed::Held(checkpoints);
        StateFile {
            len: bytes.len(),
            body: Body::Held(bytes),
            sha256,
            checkpoints,
            slots,
            schema_version,
        }
    }

    /// Returns the layout of `body`, a state file of `workspace_id` known
    /// to be valid (its SHA-256 is `sha256`, found among the hashes of
    /// files checked whole or written by workmem), or the body back when
    /// it is not laid out as workmem writes it (the caller then decodes it
    /// whole). A body in a file is read a chunk at a time.
    ///
    /// Errors: reading the body.
    pub(crate) fn known_valid(
        body: Body,
        sha256: String,
        workspace_id: &str,
    ) -> io::Result<std::result::Result<StateFile<R>, Body>> {
        let len = body.len()?;
        Ok(match layout::<R>(&body, len, workspace_id)? {
            Some((slots, schema_version)) => Ok(StateFile {
                body,
                len,
                sha256,
                checkpoints: Checkpointed::default(),
                slots,
                schema_version,
            }),
            None => Err(body),
        })
    }

    /// Returns the file `body` like [`StateFile::known_valid`], laid out as
    /// `lines` (from the layout cache) say when they describe a whole file
    /// of `workspace_id` as long as `body`: records one after another,
    /// separated as [`Encoder`] separates them, from the file's head to its
    /// tail, their heads in order. Reads only the tail (its schema
    /// version). The body back otherwise.
    ///
    /// Errors: the body's length, reading its tail.
    pub(crate) fn with_layout(
        body: Body,
        sha256: String,
        workspace_id: &str,
        lines: &[layout_cache::Line],
    ) -> io::Result<std::result::Result<StateFile<R>, Body>> {
        let len = body.len()?;
        let head = format!("{{\n  \"{}\": [\n", R::ARRAY).len();
        let tails: Vec<(u32, Vec<u8>)> =
            R::SCHEMA_VERSIONS.iter().map(|&v| (v, tail(workspace_id, v))).collect();
        let Some(schema_version) = tails.iter().find_map(|(version, tail)| {
            let start = len.checked_sub(tail.len())?;
            (body.read(start..len).ok()?.as_ref() == tail.as_slice()).then_some(*version)
        }) else {
            return Ok(Err(body));
        };
        let tail = b"\n  ],".len() + tail(workspace_id, schema_version).len();
        let mut slots: Vec<Slot<R::Head>> = Vec::with_capacity(lines.len());
        let mut at = head;
        for line in lines {
            let head = R::head_of_text(&line.head);
            let fits = line.start == at
                && line.end > line.start
                && slots.last().zip(head.as_ref()).is_none_or(|(last, head)| last.head < *head);
            match head.filter(|_| fits) {
                Some(head) => slots.push(Slot { range: line.start..line.end, head }),
                None => return Ok(Err(body)),
            }
            at = line.end + 2;
        }
        if slots.is_empty() || at - 2 + tail != len {
            return Ok(Err(body));
        }
        Ok(Ok(StateFile {
            body,
            len,
            sha256,
            checkpoints: Checkpointed::default(),
            slots,
            schema_version,
        }))
    }

    /// The file's layout as the layout cache writes it, when its records'
    /// layout is cached.
    pub(crate) fn layout_lines(&self) -> Option<Vec<layout_cache::Line>> {
        self.slots
            .iter()
            .map(|slot| {
                let head = R::head_text(&slot.head)?;
                Some(layout_cache::Line { start: slot.range.start, end: slot.range.end, head })
            })
            .collect()
    }

    /// The file's bytes (read whole when they are not in memory).
    ///
    /// Errors: reading them.
    pub(crate) fn contents(&self) -> io::Result<Cow<'_, [u8]>> {
        self.body.read(0..self.len)
    }

    /// The file, to be spliced with at least `schema_version`: a
    /// correction raises it even where it changes no record (docs/
    /// corrections.md), and every later write keeps it.
    pub(crate) fn with_schema_at_least(mut self, schema_version: u32) -> StateFile<R> {
        self.schema_version = self.schema_version.max(schema_version);
        self
    }

    /// The SHA-256 of the file's bytes, hex.
    pub(crate) fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Where the SHA-256 of the file's bytes stood part way, as its writer
    /// kept it, for the hash of a splice of it
    /// ([`crate::store::hash_checkpoints`]); `None` for a stored file, whose
    /// checkpoints are recorded ([`StateFile::with_recorded_checkpoints`]).
    pub(crate) fn checkpoints(&self) -> Option<&Checkpoints> {
        match &self.checkpoints {
            Checkpointed::Held(checkpoints) => Some(checkpoints),
            Checkpointed::Recorded { .. } => None,
        }
    }

    /// The file with `checkpoints`, those recorded for its hash.
    #[cfg(test)]
    pub(crate) fn with_checkpoints(self, checkpoints: Checkpoints) -> StateFile<R> {
        StateFile { checkpoints: Checkpointed::Held(checkpoints), ..self }
    }

    /// The stored file `name` of `memory_dir`, whose checkpoints the cache
    /// there records under its hash: read only if it is spliced.
    pub(crate) fn with_recorded_checkpoints(self, memory_dir: &Path, name: &str) -> StateFile<R> {
        let checkpoints =
            Checkpointed::Recorded { memory_dir: memory_dir.to_owned(), name: name.to_owned() };
        StateFile { checkpoints, ..self }
    }

    /// Every record's head, in order.
    pub(crate) fn heads(&self) -> impl Iterator<Item = &R::Head> + Clone {
        self.slots.iter().map(|slot| &slot.head)
    }

    /// Decodes the records whose head `wanted` selects, in order.
    ///
    /// Errors: [`Error::Corrupt`] naming `path` when a record does not
    /// decode (the file changed under a known hash: a bug); [`Error::Io`]
    /// reading it.
    pub(crate) fn records(&self, path: &Path, wanted: impl Fn(&R::Head) -> bool) -> Result<Vec<R>> {
        self.slots
            .iter()
            .filter(|slot| wanted(&slot.head))
            .map(|slot| {
                let encoded = self.body.read(slot.range.clone()).at(path)?;
                R::decode(&encoded).map_err(|err| {
                    Error::corrupt(
                        Location::file(path),
                        Damage::RecordJson {
                            id: R::id(&slot.head).to_string(),
                            detail: crate::error::describe_json_error(&err),
                        },
                    )
                })
            })
            .collect()
    }

    /// Puts the file in place at `path`, durably and atomically (a staged
    /// file is renamed over it, any other written beside it and renamed),
    /// and returns every record's head, in order.
    ///
    /// Errors: [`Error::Io`].
    pub(crate) fn save(self, path: &Path) -> Result<Vec<R::Head>> {
        match self.body {
            Body::Staged(staged) => staged.commit()?,
            body => atomic_io::replace(path, &body.read(0..self.len).at(path)?)?,
        }
        Ok(self.slots.into_iter().map(|slot| slot.head).collect())
    }

    /// Returns the file with the records `replaced` selects taken out and
    /// `added` put in, every other record's bytes copied as they are, put
    /// where `to` says: staged beside `path` to replace it (written as it
    /// is encoded, a chunk at a time, then hashed by reading it back while
    /// another thread makes it durable, until [`StateFile::save`]) or held in
    /// memory. `replaced` must select whole memory keys (every
    /// record of each) and records without one, and `added` must hold whole
    /// memory keys.
    ///
    /// Errors: [`Error::Corrupt`] naming `path` when the records added
    /// break an invariant, a memory key is split between kept and added
    /// records, or an added id is taken by a kept record; [`Error::Io`].
    #[expect(
        clippy::too_many_lines,
        reason = "one pass over the file: copy the untouched prefix, merge kept and added records, stage and hash; the phases share the read window, the output and the running hash"
    )]
    pub(crate) fn splice(
        self,
        path: &Path,
        workspace_id: &str,
        replaced: impl Fn(&R::Head) -> bool,
        added: &[R],
        to: Output,
    ) -> Result<StateFile<R>> {
        let refuse = |damage: Damage| {
            Error::corrupt(Location::file(path), Damage::RefusedSave(Box::new(damage)))
        };
        if let Some(problem) = R::problem(added, workspace_id) {
            return Err(refuse(Damage::record(problem)));
        }
        // The file keeps its schema version, raised to what an added record
        // needs; a file is never written back with an earlier one.
        let schema_version = added.iter().map(R::schema_needed).fold(self.schema_version, u32::max);
        let mut added: Vec<(R::Head, &R)> = added.iter().map(|r| (r.head(), r)).collect();
        added.sort_by(|a, b| a.0.cmp(&b.0));
        let StateFile {
            body: old,
            len: old_len,
            slots: old_slots,
            checkpoints,
            sha256,
            schema_version: _,
        } = self;
        // (Raised above, from the file's own version.)
        let checkpoints = checkpoints.of(&sha256);
        // The records before the first one replaced or added are copied
        // where they were: the file's hash resumes after them.
        let first_added = added.first().map(|(head, _)| head);
        let same = old_slots
            .iter()
            .take_while(|slot| {
                !replaced(&slot.head) && first_added.is_none_or(|head| slot.head < *head)
            })
            .last()
            .map_or(0, |slot| slot.range.end);
        let (hasher, hashed_to) = Hasher::resume(&checkpoints, same as u64);
        let kept: Vec<Slot<R::Head>> =
            old_slots.into_iter().filter(|slot| !replaced(&slot.head)).collect();
        let new_ids: HashSet<&str> = added.iter().map(|(h, _)| R::id(h)).collect();
        let new_domains: HashSet<&str> = added.iter().filter_map(|(h, _)| R::domain(h)).collect();
        for slot in &kept {
            if new_ids.contains(R::id(&slot.head)) {
                return Err(refuse(Damage::record(format!("{} appears twice", R::id(&slot.head)))));
            }
            if let Some(key) = R::domain(&slot.head).filter(|k| new_domains.contains(k)) {
                return Err(refuse(Damage::record(format!(
                    "memory_key {key} is split between two writes"
                ))));
            }
        }
        let records = kept.len() + added.len();
        let mut heads = Vec::with_capacity(records);
        let mut slots = Vec::new();
        let mut len = 0;
        // The merge of the kept records (copied from this file's bytes, read
        // a chunk at a time) and the added ones, in order, handed to `out`
        // a chunk at a time. From a file into a file (`into`), each run of
        // kept records that follow one another in the old file is copied by
        // the kernel instead ([`copy_range`]).
        let write_to = |out: &mut dyn FnMut(&[u8]) -> io::Result<()>,
                        into: Option<&File>|
         -> io::Result<()> {
            let mut window = Window::new(&old, old_len);
            let copy_from = old.on_disk().ok().zip(into);
            let mut write = |bytes: &[u8]| {
                len += bytes.len();
                out(bytes)
            };
            let mut encoder = Encoder::<R>::new(workspace_id, schema_version, records, 2 * CHUNK);
            let mut kept = kept.into_iter().peekable();
            let mut added = added.into_iter().peekable();
            let mut run: Vec<Range<usize>> = Vec::new();
            let mut copied = 0;
            // Whether a kept record comes before the next added one.
            let before_added = |slot: &Slot<R::Head>, added: Option<&(R::Head, &R)>| {
                added.is_none_or(|(head, _)| slot.head < *head)
            };
            loop {
                let take_kept = match kept.peek() {
                    Some(slot) => before_added(slot, added.peek()),
                    None if added.peek().is_none() => break,
                    None => false,
                };
                if take_kept && let Some((from, to)) = copy_from {
                    run.clear();
                    while let Some(slot) = kept.next_if(|slot| {
                        before_added(slot, added.peek())
                            && run.last().is_none_or(|last| slot.range.start == last.end + 2)
                    }) {
                        run.push(slot.range);
                        heads.push(slot.head);
                    }
                    encoder.separate();
                    encoder.spill(&mut write)?;
                    let (start, end) = (run[0].start, run[run.len() - 1].end);
                    copy_range(from, start..end, to)?;
                    copied += end - start;
                    encoder.copied(&run);
                } else if take_kept {
                    let slot = kept.next().expect("peeked");
                    encoder.stored(window.get(slot.range)?);
                    heads.push(slot.head);
                } else {
                    let (head, record) = added.next().expect("peeked");
                    encoder.record(record);
                    heads.push(head);
                }
                if encoder.bytes.len() >= CHUNK {
                    encoder.spill(&mut write)?;
                }
            }
            let rest = encoder.finish();
            write(&rest.bytes)?;
            slots = rest.slots;
            len += copied;
            Ok(())
        };
        // A staged file is hashed once written, while it is made durable.
        let ((sha256, checkpoints), body) = match to {
            Output::Staged => {
                let (staged, hashed) = atomic_io::stage_reading_back(
                    path,
                    |file| {
                        let file: &File = file;
                        write_to(&mut |bytes| Write::write_all(&mut { file }, bytes), Some(file))
                    },
                    |file| hash_file_from(file, hasher, hashed_to),
                )?;
                (hashed, Body::Staged(staged))
            }
            Output::Held => {
                let mut held = Vec::with_capacity(old_len + 4096);
                write_to(
                    &mut |bytes| {
                        held.extend_from_slice(bytes);
                        Ok(())
                    },
                    None,
                )
                .at(path)?;
                let mut hasher = hasher;
                hasher.update(&held[hashed_to as usize..]);
                (hasher.finish(), Body::Held(held))
            }
        };
        let slots =
            slots.into_iter().zip(heads).map(|(range, head)| Slot { range, head }).collect();
        Ok(StateFile {
            body,
            len,
            sha256,
            checkpoints: Checkpointed::Held(checkpoints),
            slots,
            schema_version,
        })
    }
}

/// Copies the bytes of `from` in `range` to `to` at its file position (the
/// end of what was written to it), page cache to page cache in the kernel
/// (`copy_file_range`), or through a buffer where the kernel or the file
/// system cannot. At 100,000 facts a distill's splice copies about 2 MB of
/// curated.json this way; read into this process and written back, each
/// byte was copied three times.
///
/// Errors: reading or writing them; a file shorter than `range`.
fn copy_range(from: &File, range: Range<usize>, to: &File) -> io::Result<()> {
    use rustix::io::Errno;
    let mut at = range.start as u64;
    let mut left = range.len();
    while left > 0 {
        match rustix::fs::copy_file_range(from, Some(&mut at), to, None, left) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(copied) => left -= copied,
            Err(Errno::NOSYS | Errno::XDEV | Errno::INVAL | Errno::OPNOTSUPP) => {
                let mut buf = vec![0; left];
                from.read_exact_at(&mut buf, at)?;
                return Write::write_all(&mut { to }, &buf);
            }
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// Returns the SHA-256 (hex) of `file` and its checkpoints, `hasher`
/// having hashed its bytes up to `from`: the rest is read a chunk at a
/// time.
fn hash_file_from(file: &File, mut hasher: Hasher, from: u64) -> io::Result<(String, Checkpoints)> {
    let mut chunk = vec![0; CHUNK];
    let mut at = from;
    loop {
        let n = file.read_at(&mut chunk, at)?;
        if n == 0 {
            return Ok(hasher.finish());
        }
        hasher.update(&chunk[..n]);
        at += n as u64;
    }
}

/// Where a splice puts the file it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// Staged beside the file it replaces, for a writer to save.
    Staged,
    /// In memory, for a check that writes nothing.
    Held,
}

/// Every record's place and head, and the file's schema version.
type Layout<R> = (Vec<Slot<<R as Record>::Head>>, u32);

/// Returns every record's place and head when `body` (`len` bytes) is
/// laid out as [`Encoder`] writes a file of `workspace_id`, reading it
/// forward through a [`Window`].
///
/// Errors: reading the body.
fn layout<R: Record>(body: &Body, len: usize, workspace_id: &str) -> io::Result<Option<Layout<R>>> {
    let mut window = Window::new(body, len);
    let mut found = None;
    for &version in R::SCHEMA_VERSIONS {
        let tail = tail(workspace_id, version);
        let Some(records_end) = len.checked_sub(tail.len()) else { continue };
        if window.get(records_end..len)? == tail {
            found = Some((records_end, version));
            break;
        }
    }
    let Some((records_end, schema_version)) = found else { return Ok(None) };
    let empty_head = format!("{{\n  \"{}\": [],", R::ARRAY);
    if records_end == empty_head.len() && window.get(0..records_end)? == empty_head.as_bytes() {
        return Ok(Some((Vec::new(), schema_version)));
    }
    let head = format!("{{\n  \"{}\": [\n", R::ARRAY);
    let closing = b"\n  ],";
    let Some(end) = records_end.checked_sub(closing.len()) else { return Ok(None) };
    // (The end first, then the start: the window reads on from there.)
    if end < head.len()
        || window.get(end..records_end)? != closing
        || window.get(0..head.len())? != head.as_bytes()
    {
        return Ok(None);
    }
    let finder = memchr::memmem::Finder::new(RECORD_END);
    let mut slots: Vec<Slot<R::Head>> = Vec::new();
    let mut at = head.len();
    loop {
        if window.get(at..(at + RECORD_START.len()).min(end))? != RECORD_START {
            return Ok(None);
        }
        // The record ends at the first RECORD_END after its start: search
        // what is at hand, then read on a chunk at a time.
        let mut searched = at;
        let close = loop {
            let at_hand = window.end().min(end);
            let to = if at_hand >= searched + RECORD_END.len() {
                at_hand
            } else {
                (searched + CHUNK).min(end)
            };
            let seen = &window.get(at..to)?[searched - at..];
            if let Some(found) = finder.find(seen) {
                break searched + found + RECORD_END.len();
            }
            if to == end {
                return Ok(None);
            }
            // (The end may straddle what was searched and what is next.)
            searched = (to + 1).saturating_sub(RECORD_END.len()).max(at);
        };
        let Some(head) = R::read_head(window.get(at..close)?) else { return Ok(None) };
        if slots.last().is_some_and(|last| last.head >= head) {
            return Ok(None);
        }
        slots.push(Slot { range: at..close, head });
        if close == end {
            return Ok(Some((slots, schema_version)));
        }
        if window.get(close..(close + 2).min(end))? != b",\n" {
            return Ok(None);
        }
        at = close + 2;
    }
}
