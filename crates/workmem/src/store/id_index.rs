//! The id index: where every fact id of the log is written, so that an
//! append with an explicit id (`remember --id`, `import`) is checked
//! without reading the log, and distill can tell a new record from a
//! repeated id.
//!
//! A cache, never evidence: it lives in `.id-index/` in the memory
//! directory, is only read and written under the workspace lock, and is
//! rebuilt from the log whenever it cannot vouch for its answer. The index
//! records what it has read of each daily file (see
//! [`crate::store::coverage`]): a file that kept its stamp is not read, a
//! file that grew is read and only its new lines are indexed, and a file
//! that was rewritten or removed makes the index rebuild. Every record of
//! an id is indexed (a hand-edited log may hold an id twice); the one that
//! counts is the first in (file name, offset) order, as for every reader.
//!
//! The ids are spread over 1,024 shard files by a hash of the id, so a lookup
//! reads one shard. The manifest (`.id-index/manifest`) is written last and
//! names the generation of every shard; a shard whose header names another
//! generation (a crash between the writes) or that does not end with `end`
//! (a torn write) is never used. The manifest also names the inode of the
//! `.id-index` directory, so an index copied from elsewhere (a clone that
//! committed it) never matches.
//!
//! ```text
//! .id-index/manifest:
//! workmem-id-index 1 <workspace_id> <directory inode> <generation>
//! shard <n> <generation>
//! file <day> <inode> <size> <mtime_s> <mtime_ns> <len> <sha256>
//! end
//! .id-index/<n> (n = 0..1023, in hex):
//! workmem-id-shard 1 <workspace_id> <n> <generation>
//! <fact_id> <day> <offset>
//! end
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::model::fact_line::{FactRecord, FactSummary};
use crate::store::atomic_io;
use crate::store::coverage::{self, Changed, Covered, Scan};
use crate::store::fact_log::{FactLog, map_in_parallel};

/// The index directory, in the memory directory.
pub(crate) const ID_INDEX_DIR: &str = ".id-index";
const MANIFEST: &str = "manifest";
const HEADER: &str = "workmem-id-index 1";
const SHARD_HEADER: &str = "workmem-id-shard 1";
const SHARDS: usize = 1024;

/// Where one record of a fact id is written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Place {
    /// The daily file's day (`YYYY-MM-DD`).
    pub day: String,
    /// The byte offset of the record's line in it.
    pub offset: u64,
}

/// A record indexed by a refresh: appended since the index last read its
/// file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewRecord {
    /// Its fact id.
    pub id: String,
    /// Where it is.
    pub place: Place,
}

/// The index as its manifest describes it.
#[derive(Debug)]
pub(crate) struct IdIndex {
    dir: PathBuf,
    workspace_id: String,
    generation: u64,
    /// The generation of each shard's file; 0 for an empty shard (no file).
    shards: Vec<u64>,
    files: BTreeMap<String, Covered>,
    /// Shards changed since the index was read (their entries, header
    /// included, `end` excluded), written by [`IdIndex::save`].
    pending: BTreeMap<usize, String>,
    /// Whether the index was started over: saving removes the files of the
    /// old one.
    fresh: bool,
    /// Whether anything changed since it was read.
    dirty: bool,
}

/// The result of [`refresh`].
#[derive(Debug)]
pub(crate) struct Refreshed {
    /// The index, up to date with the log.
    pub index: IdIndex,
    /// The records indexed by this refresh, in (file name, offset) order;
    /// `None` when the index was rebuilt from the whole log.
    #[allow(dead_code)]
    pub added: Option<Vec<NewRecord>>,
}

/// Returns the shard of `id`: FNV-1a, stable across versions and
/// platforms.
fn shard_of(id: &str) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % SHARDS as u64) as usize
}

fn dir_inode(dir: &Path) -> Option<i64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).ok().filter(std::fs::Metadata::is_dir).map(|m| m.ino() as i64)
}

/// Brings the index of `log` in `memory_dir` up to date in memory and
/// returns it: reads the daily files that changed since it last read them,
/// or the whole log when the index is missing, torn, of another workspace
/// or directory, or a covered file was rewritten. Nothing is written until
/// the caller saves it ([`IdIndex::save`]), once its own work succeeded,
/// so a refused operation writes nothing. The workspace lock must be held.
///
/// Errors: as [`FactLog::read_file`] for the bytes it reads (a corrupt line
/// in a file that changed is refused, as every reader refuses it);
/// [`crate::Error::Io`].
pub(crate) fn refresh(log: &FactLog, memory_dir: &Path, workspace_id: &str) -> Result<Refreshed> {
    let dir = memory_dir.join(ID_INDEX_DIR);
    if let Some(mut index) = IdIndex::load(&dir, workspace_id)
        && let Scan::Changed(changed) = coverage::scan(log, &index.files)?
        && let Some(added) = index.add(log, changed)?
    {
        return Ok(Refreshed { index, added: Some(added) });
    }
    let mut index = IdIndex::fresh(dir, workspace_id);
    let Scan::Changed(changed) = coverage::scan(log, &BTreeMap::new())? else {
        unreachable!("nothing is covered, so nothing was removed")
    };
    // Every shard of a fresh index is empty, hence usable; a file that
    // changes while it is read is read again next time.
    if index.add(log, changed)?.is_none() {
        return Err(crate::Error::Io {
            path: index.dir.clone(),
            source: std::io::Error::other("the daily files kept changing while they were indexed"),
        });
    }
    Ok(Refreshed { index, added: None })
}

impl IdIndex {
    /// Reads the manifest at `dir`; `None` when it is missing, torn,
    /// malformed, of another workspace or of another directory.
    fn load(dir: &Path, workspace_id: &str) -> Option<IdIndex> {
        let inode = dir_inode(dir)?;
        let data = atomic_io::read_optional(&dir.join(MANIFEST)).ok()??;
        let text = std::str::from_utf8(&data).ok()?;
        let body = text.strip_suffix("end\n")?;
        let mut lines = body.lines();
        let mut header = lines.next()?.strip_prefix(HEADER)?.split_ascii_whitespace();
        if header.next()? != workspace_id || header.next()?.parse::<i64>().ok()? != inode {
            return None;
        }
        let generation: u64 = header.next()?.parse().ok()?;
        if header.next().is_some() {
            return None;
        }
        let mut shards = vec![0; SHARDS];
        let mut files = BTreeMap::new();
        for line in lines {
            if let Some(rest) = line.strip_prefix("shard ") {
                let (n, g) = rest.split_once(' ')?;
                let n = usize::from_str_radix(n, 16).ok().filter(|n| *n < SHARDS)?;
                shards[n] = g.parse().ok().filter(|g| *g != 0)?;
            } else {
                let (day, covered) = Covered::parse_line(line.strip_prefix("file ")?)?;
                if files.insert(day.to_owned(), covered).is_some() {
                    return None;
                }
            }
        }
        Some(IdIndex {
            dir: dir.to_owned(),
            workspace_id: workspace_id.to_owned(),
            generation,
            shards,
            files,
            pending: BTreeMap::new(),
            fresh: false,
            dirty: false,
        })
    }

    /// Returns an empty index at `dir` (whatever is there is replaced when
    /// it is saved).
    fn fresh(dir: PathBuf, workspace_id: &str) -> IdIndex {
        // A generation no earlier index used: a shard file left from one can
        // never pass for a shard of this one.
        let random = uuid::Uuid::new_v4().as_u64_pair().0 >> 2;
        IdIndex {
            dir,
            workspace_id: workspace_id.to_owned(),
            generation: random.max(1),
            shards: vec![0; SHARDS],
            files: BTreeMap::new(),
            pending: BTreeMap::new(),
            fresh: true,
            dirty: true,
        }
    }

    fn shard_path(&self, shard: usize) -> PathBuf {
        self.dir.join(format!("{shard:03x}"))
    }

    fn shard_header(&self, shard: usize, generation: u64) -> String {
        format!("{SHARD_HEADER} {} {shard:03x} {generation}\n", self.workspace_id)
    }

    /// Reads a shard's entries (header line included, `end` excluded);
    /// `None` when the file does not belong to this manifest.
    fn read_shard(&self, shard: usize) -> Option<String> {
        if let Some(body) = self.pending.get(&shard) {
            return Some(body.clone());
        }
        let generation = self.shards[shard];
        if generation == 0 {
            return Some(self.shard_header(shard, 0));
        }
        let data = atomic_io::read_optional(&self.shard_path(shard)).ok()??;
        let text = String::from_utf8(data).ok()?;
        let header = self.shard_header(shard, generation);
        let body = text.strip_suffix("end\n")?;
        (body.starts_with(&header) && body.ends_with('\n')).then(|| body.to_owned())
    }

    /// Indexes what was appended to the `changed` files (in memory).
    /// Returns the records indexed, or `None` when a file was rewritten or
    /// a shard to extend is unusable (the caller rebuilds).
    fn add(&mut self, log: &FactLog, changed: Vec<Changed>) -> Result<Option<Vec<NewRecord>>> {
        if changed.is_empty() {
            return Ok(Some(Vec::new()));
        }
        self.dirty = true;
        let mut lines: BTreeMap<usize, String> = BTreeMap::new();
        let mut added = Vec::new();
        // A bounded number of files in memory at once (a rebuild reads them
        // all).
        for chunk in changed.chunks(64) {
            let parsed = map_in_parallel(chunk, |changed| {
                let Some(file) = coverage::read_appended(changed)? else { return Ok(None) };
                let (records, reach) =
                    log.parse_from::<FactSummary>(&file.day.path, &file.data, file.from)?;
                let ids: Vec<(u64, String)> = records
                    .into_iter()
                    .map(|(offset, r)| (offset, r.fact_id().to_owned()))
                    .collect();
                Ok(Some((ids, Covered::of(file.stamp, &file.data, reach))))
            });
            for (changed, result) in chunk.iter().zip(parsed) {
                let Some((ids, covered)) = result? else { return Ok(None) };
                let day = &changed.day.day;
                for (offset, id) in ids {
                    let line = lines.entry(shard_of(&id)).or_default();
                    let _ = writeln!(line, "{id} {day} {offset}");
                    added.push(NewRecord { id, place: Place { day: day.clone(), offset } });
                }
                self.files.insert(day.clone(), covered);
            }
        }
        let generation = self.generation + 1;
        for (shard, new) in lines {
            let Some(mut body) = self.read_shard(shard) else { return Ok(None) };
            body.replace_range(
                ..body.find('\n').map_or(0, |n| n + 1),
                &self.shard_header(shard, generation),
            );
            // A usable shard holds exactly what the manifest covers (a
            // crash between a shard and the manifest leaves the shard of
            // another generation), so the new lines are not in it yet.
            body.push_str(&new);
            self.pending.insert(shard, body);
            self.shards[shard] = generation;
        }
        self.generation = generation;
        Ok(Some(added))
    }

    /// Writes what changed since the index was read: the changed shards,
    /// then the manifest. Only a cache: a caller may ignore a failure (the
    /// next use reads the daily files again).
    ///
    /// Errors: [`crate::Error::Io`].
    pub(crate) fn save(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        atomic_io::create_private_dir(&self.dir)?;
        if self.fresh {
            // No manifest while the old shards are replaced.
            let _ = std::fs::remove_file(self.dir.join(MANIFEST));
            for shard in (0..SHARDS).filter(|s| self.shards[*s] == 0) {
                let _ = std::fs::remove_file(self.shard_path(shard));
            }
        }
        for (shard, body) in std::mem::take(&mut self.pending) {
            let mut data = body.into_bytes();
            data.extend_from_slice(b"end\n");
            atomic_io::replace_cache(&self.shard_path(shard), &data)?;
        }
        self.fresh = false;
        self.dirty = false;
        let inode = dir_inode(&self.dir).unwrap_or(-1);
        let mut text = format!("{HEADER} {} {inode} {}\n", self.workspace_id, self.generation);
        for (shard, generation) in self.shards.iter().enumerate().filter(|(_, g)| **g != 0) {
            let _ = writeln!(text, "shard {shard:03x} {generation}");
        }
        for (day, covered) in &self.files {
            covered.write_line(day, &mut text);
        }
        text.push_str("end\n");
        atomic_io::replace_cache(&self.dir.join(MANIFEST), text.as_bytes())
    }

    /// Returns every indexed place of each of `ids`, sorted (the first is
    /// the record that counts); `None` when a shard it needs is unusable
    /// (the caller rebuilds).
    pub(crate) fn lookup(&self, ids: &[&str]) -> Option<Vec<Vec<Place>>> {
        let mut by_shard: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (position, id) in ids.iter().enumerate() {
            by_shard.entry(shard_of(id)).or_default().push(position);
        }
        let mut found = vec![Vec::new(); ids.len()];
        for (shard, positions) in by_shard {
            if self.shards[shard] == 0 {
                continue;
            }
            let body = self.read_shard(shard)?;
            for position in positions {
                let needle = format!("\n{} ", ids[position]);
                for start in memchr::memmem::find_iter(body.as_bytes(), needle.as_bytes()) {
                    let rest = &body[start + needle.len()..];
                    let line = &rest[..rest.find('\n')?];
                    let (day, offset) = line.split_once(' ')?;
                    found[position]
                        .push(Place { day: day.to_owned(), offset: offset.parse().ok()? });
                }
                found[position].sort();
            }
        }
        Some(found)
    }
}
