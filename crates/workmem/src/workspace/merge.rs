//! Merging the memory files that git brings together (docs/sharing.md):
//! the bytes of a base, ours and theirs version in, the merged bytes out.
//! Every version is read as untrusted input and validated as on load; a
//! version that cannot be read fails the merge, so that git reports a
//! conflict instead of a guess.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::error::{Damage, Error, Location, Result};
use crate::model::canon::{self, JsonStyle};
use crate::model::fact::{Fact, REDACTED, redacted_key};
use crate::model::stamp::Stamp;
use crate::policy::merge::{merge_conflicts, merge_curated};
use crate::store::conflict_queue::ConflictQueue;
use crate::store::corrections::{self, CORRECTIONS_FILE};
use crate::store::curated_state::CuratedState;
use crate::store::journal::{self, Adjudication};
use crate::store::memory_dir::{self, lines};
use crate::store::names::{
    AUDIT_FILE, CONFLICTS_FILE, CURATED_FILE, DAILY_DIR, DAILY_PATTERN, DAY_EXTENSION, DOT_DIR,
    IDENTITY_FILE, JOURNAL_FILE, MEMORY_FILE, is_day_name,
};
use crate::workspace::Workspace;

/// A memory file, by the rule that merges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryFile {
    /// A daily log `daily/YYYY-MM-DD.jsonl`: the union of facts by id.
    DailyLog,
    /// The audit stream: the union of decisions by event id.
    Audit,
    /// The corrections stream: the union of corrections by event id.
    Corrections,
    /// The transaction journal: empty at rest, refused otherwise.
    Journal,
    /// curated.json: three-way, domain by domain.
    Curated,
    /// conflicts.json: three-way, case by case.
    Conflicts,
    /// MEMORY.md: derived, never merged (ours is kept; workmem renders it
    /// again from the merged curated.json).
    View,
    /// `.workmem/workspace.toml`, the pinned workspace id: both sides must
    /// pin the same id (a merge never changes it); ours is kept.
    Pin,
}

impl MemoryFile {
    /// The memory files that [`Workspace::share`] routes to the merge
    /// driver from the memory directory, in the order its `.gitattributes`
    /// lists them (the pin, in `.workmem/`, aside).
    pub(crate) const ROUTED: [MemoryFile; 7] = [
        MemoryFile::DailyLog,
        MemoryFile::Curated,
        MemoryFile::Conflicts,
        MemoryFile::Audit,
        MemoryFile::Corrections,
        MemoryFile::Journal,
        MemoryFile::View,
    ];

    /// Returns how the files of this kind are named, as `.gitattributes`
    /// names them: relative to the memory directory (`daily/*.jsonl`,
    /// `curated.json`, `MEMORY.md`, ...), or to `.workmem/` for the pin
    /// (`workspace.toml`). Every kind but the daily logs is one file, and
    /// its pattern is its name.
    pub fn pattern(self) -> &'static str {
        match self {
            MemoryFile::DailyLog => DAILY_PATTERN,
            MemoryFile::Audit => AUDIT_FILE,
            MemoryFile::Corrections => CORRECTIONS_FILE,
            MemoryFile::Journal => JOURNAL_FILE,
            MemoryFile::Curated => CURATED_FILE,
            MemoryFile::Conflicts => CONFLICTS_FILE,
            MemoryFile::View => MEMORY_FILE,
            MemoryFile::Pin => IDENTITY_FILE,
        }
    }

    /// Returns the kind of memory file at `path` (a path in the repository
    /// or the memory directory), by its name; `None` for any other file.
    pub fn for_path(path: &Path) -> Option<MemoryFile> {
        let name = path.file_name()?.to_str()?;
        let in_daily = path.parent().and_then(Path::file_name).is_some_and(|p| p == DAILY_DIR);
        Some(match name {
            CURATED_FILE => MemoryFile::Curated,
            CONFLICTS_FILE => MemoryFile::Conflicts,
            AUDIT_FILE => MemoryFile::Audit,
            CORRECTIONS_FILE => MemoryFile::Corrections,
            JOURNAL_FILE => MemoryFile::Journal,
            MEMORY_FILE => MemoryFile::View,
            IDENTITY_FILE
                if path.parent().and_then(Path::file_name).is_some_and(|p| p == DOT_DIR) =>
            {
                MemoryFile::Pin
            }
            _ if in_daily && name.strip_suffix(DAY_EXTENSION).is_some_and(is_day_name) => {
                MemoryFile::DailyLog
            }
            _ => return None,
        })
    }
}

/// The three versions of one memory file that git brings together.
#[derive(Debug, Clone, Copy)]
pub struct MergeSides<'a> {
    /// The common ancestor (`None` when the file did not exist there).
    pub base: Option<&'a [u8]>,
    /// The current side.
    pub ours: &'a [u8],
    /// The side being merged in.
    pub theirs: &'a [u8],
}

/// Merges three versions of the memory file `path` of kind `file` by the
/// rules of docs/sharing.md and returns the merged bytes. The result does
/// not depend on which side is ours.
///
/// Errors: [`Error::Corrupt`] naming the side and line of a version that is
/// not valid (a line that is not a record, conflict markers, a non-empty
/// journal) or of records of two workspaces; [`Error::UnsupportedVersion`].
pub fn merge_memory_file(file: MemoryFile, path: &Path, sides: MergeSides<'_>) -> Result<Vec<u8>> {
    let versions =
        [("base", sides.base.unwrap_or_default()), ("ours", sides.ours), ("theirs", sides.theirs)];
    match file {
        MemoryFile::View => Ok(sides.ours.to_vec()),
        MemoryFile::Pin => {
            let ours = crate::store::identity::parse_pin(sides.ours, &side_path(path, "ours"))?;
            let theirs =
                crate::store::identity::parse_pin(sides.theirs, &side_path(path, "theirs"))?;
            if ours != theirs {
                return Err(Error::corrupt(
                    Location::file(path),
                    Damage::PinChanged { ours, theirs, path: path.to_path_buf() },
                ));
            }
            Ok(sides.ours.to_vec())
        }
        MemoryFile::Journal => {
            for (side, data) in versions {
                if !data.iter().all(u8::is_ascii_whitespace) {
                    return Err(Error::corrupt(
                        Location::file(path),
                        Damage::ResolutionInFlight { side },
                    ));
                }
            }
            Ok(Vec::new())
        }
        MemoryFile::DailyLog => union_records(path, versions, |line| {
            let fact = Fact::parse_line(line)?;
            Ok(Keyed {
                at: fact.recorded_at().clone(),
                id: fact.fact_id().to_owned(),
                workspace: fact.workspace_id().to_owned(),
                replaces: fact.line_sha256.clone(),
                redactable: false,
            })
        }),
        MemoryFile::Audit => union_records(path, versions, |line| {
            let record = journal::parse_record::<Adjudication>(line)?;
            Ok(Keyed {
                at: record.resolved_at,
                id: record.event_id,
                workspace: record.workspace_id,
                replaces: None,
                redactable: true,
            })
        }),
        // Two different records under one event id are both kept: verify
        // reports the second, and a merge never chooses between them.
        MemoryFile::Corrections => union_records(path, versions, |line| {
            let record = corrections::parse_line(line)?;
            Ok(Keyed {
                at: record.recorded_at,
                id: record.event_id,
                workspace: record.workspace_id,
                replaces: None,
                redactable: true,
            })
        }),
        MemoryFile::Curated => {
            let workspace = state_workspace(path, &versions)?;
            let [base, ours, theirs] = versions.map(|(side, data)| {
                if data.is_empty() {
                    return Ok(CuratedState::new());
                }
                CuratedState::decode(data, &side_path(path, side), &workspace)
            });
            let [base, ours, theirs] = rekey_curated([base?, ours?, theirs?]);
            merge_curated(&base, &ours, &theirs).encode(path, &workspace)
        }
        MemoryFile::Conflicts => {
            let workspace = state_workspace(path, &versions)?;
            let [base, ours, theirs] = versions.map(|(side, data)| {
                if data.is_empty() {
                    return Ok(ConflictQueue::default());
                }
                ConflictQueue::decode(data, &side_path(path, side), &workspace)
            });
            let [base, ours, theirs] = rekey_conflicts([base?, ours?, theirs?]);
            merge_conflicts(&base, &ours, &theirs).encode(path, &workspace)
        }
    }
}

/// Returns the complete record lines of `data` (a log, the audit stream or
/// the corrections stream that git left with conflict markers, possibly appended to since): what a
/// finished merge must keep besides the index's versions. Lines that are
/// not records of `file` (the markers) are left out.
pub fn salvage_records(file: MemoryFile, data: &[u8]) -> Vec<u8> {
    let valid = |line: &[u8]| match file {
        MemoryFile::DailyLog => Fact::parse_line(line).is_ok(),
        MemoryFile::Audit => journal::parse_record::<Adjudication>(line).is_ok(),
        MemoryFile::Corrections => corrections::parse_line(line).is_ok(),
        _ => false,
    };
    let mut out = Vec::new();
    for (_, line, terminated) in lines(data) {
        if terminated && valid(line) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

pub use crate::store::has_conflict_markers;

impl Workspace {
    /// Replaces the memory file `name` (relative to the memory directory,
    /// e.g. `curated.json` or `daily/2026-01-05.jsonl`) with `data`
    /// atomically, under the workspace lock, after checking that `data` is
    /// a valid version of that file for this workspace: how a merge that git
    /// left unfinished is completed. MEMORY.md is rendered again from
    /// curated.json afterwards by [`Workspace::memory`].
    ///
    /// Errors: [`Error::InvalidInput`] naming `path` for a name that is not
    /// a memory file; [`Error::Corrupt`] or [`Error::Scope`] for data that
    /// does not load; [`Error::Io`].
    pub fn write_merged(&self, name: &Path, data: &[u8]) -> Result<()> {
        self.writable()?;
        let Some(file) = MemoryFile::for_path(name)
            .filter(|file| *file != MemoryFile::Pin && name.components().count() <= 2)
        else {
            return Err(Error::invalid(
                "path",
                crate::error::Invalid::Malformed {
                    rule: "a memory file (daily/YYYY-MM-DD.jsonl, curated.json, conflicts.json, \
                           the audit stream, the corrections stream, the journal or MEMORY.md)",
                },
            ));
        };
        let path = self.file(&name.to_string_lossy());
        let _lock = self.lock()?;
        match file {
            MemoryFile::Curated => {
                CuratedState::decode(data, &path, self.workspace_id())?;
            }
            MemoryFile::Conflicts => {
                ConflictQueue::decode(data, &path, self.workspace_id())?;
            }
            MemoryFile::DailyLog
            | MemoryFile::Audit
            | MemoryFile::Corrections
            | MemoryFile::Journal => {
                let merged = merge_memory_file(
                    file,
                    &path,
                    MergeSides { base: None, ours: data, theirs: data },
                )?;
                let workspace = first_workspace(&merged);
                if let Some(found) = workspace.filter(|w| w != self.workspace_id()) {
                    return Err(Error::Scope {
                        location: Location::file(&path),
                        found,
                        expected: self.workspace_id().to_owned(),
                    });
                }
            }
            MemoryFile::View | MemoryFile::Pin => {}
        }
        if file == MemoryFile::DailyLog {
            self.dir.create_dir(self.log().dir())?;
        }
        self.dir.replace_path(&path, data)
    }
}

/// The identity of an append-only record: its time, its id and its
/// workspace.
struct Keyed {
    at: Stamp,
    id: String,
    workspace: String,
    /// Of a tombstone: the SHA-256 of the line it replaced.
    replaces: Option<String>,
    /// Whether a redaction may replace the record's actor and rationale
    /// by the marker (a decision or a correction).
    redactable: bool,
}

/// One record line of a side.
struct Line {
    bytes: Vec<u8>,
    /// The record's canonical JSON: equal for equal records, whatever
    /// their formatting.
    canonical: String,
    /// Of a decision or correction: the canonical JSON of the record with
    /// the marker in its actor and rationale (its own when it holds it).
    marked: Option<String>,
    keyed: Keyed,
}

/// Returns the union of the records of three versions of an append-only
/// file: the base's lines in the base's order, then every line a side added,
/// ordered by (time, id, bytes); a record on several sides (equal as JSON)
/// once.
fn union_records(
    path: &Path,
    versions: [(&str, &[u8]); 3],
    parse: impl Fn(&[u8]) -> std::result::Result<Keyed, Damage>,
) -> Result<Vec<u8>> {
    let mut sides = read_sides(path, versions, parse)?;
    let theirs = sides.pop().unwrap_or_default();
    let ours = sides.pop().unwrap_or_default();
    let base = sides.pop().unwrap_or_default();
    let workspaces: std::collections::BTreeSet<&str> = [&base, &ours, &theirs]
        .into_iter()
        .flatten()
        .map(|line| line.keyed.workspace.as_str())
        .collect();
    if workspaces.len() > 1 {
        return Err(Error::corrupt(
            Location::file(path),
            Damage::SeveralWorkspaces { ids: workspaces.into_iter().map(str::to_owned).collect() },
        ));
    }
    // A tombstone wins over the line it replaced (the line whose SHA-256
    // it records): it is written in that line's place, once.
    let tombstones = tombstones_by_line([&base, &ours, &theirs]);
    // A record with the marker in its actor and rationale wins over the
    // same record holding them (docs/corrections.md, "Records that are not
    // facts"): every other field is equal, so the decision or correction
    // itself is the same; verify checks that a redact record names it.
    let marked: HashMap<&str, &Line> = [&base, &ours, &theirs]
        .into_iter()
        .flatten()
        .filter(|line| line.marked.as_deref() == Some(line.canonical.as_str()))
        .map(|line| (line.canonical.as_str(), line))
        .collect();
    let replaced = |line: &'_ Line| -> Option<&Line> {
        if let Some(form) = &line.marked
            && let Some(redacted) = marked.get(form.as_str())
        {
            return Some(*redacted);
        }
        if tombstones.is_empty() {
            return None;
        }
        let hash = match line.keyed.replaces.as_deref() {
            Some(hash) => hash.to_owned(),
            None => canon::sha256_hex(&line.bytes),
        };
        tombstones.get(hash.as_str()).copied()
    };
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for line in &base {
        let line = replaced(line).unwrap_or(line);
        if seen.insert(&line.canonical) {
            out.extend_from_slice(&line.bytes);
            out.push(b'\n');
        }
    }
    let in_base: HashSet<&str> = base.iter().map(|line| line.canonical.as_str()).collect();
    // Added lines: one per distinct record, its smallest encoding.
    let mut added: BTreeMap<&str, &Line> = BTreeMap::new();
    for line in ours.iter().chain(&theirs) {
        if in_base.contains(line.canonical.as_str()) {
            continue;
        }
        let line = replaced(line).unwrap_or(line);
        if seen.contains(line.canonical.as_str()) {
            continue;
        }
        added
            .entry(&line.canonical)
            .and_modify(|kept| {
                if line.bytes < kept.bytes {
                    *kept = line;
                }
            })
            .or_insert(line);
    }
    let mut added: Vec<&Line> = added.into_values().collect();
    added.sort_by(|x, y| {
        x.keyed
            .at
            .instant()
            .cmp(&y.keyed.at.instant())
            .then_with(|| x.keyed.id.cmp(&y.keyed.id))
            .then_with(|| x.bytes.cmp(&y.bytes))
    });
    for line in added {
        out.extend_from_slice(&line.bytes);
        out.push(b'\n');
    }
    Ok(out)
}

/// The record lines of each of three versions of an append-only file.
///
/// Errors: [`Error::Corrupt`] naming the side and line of a terminated
/// line that is not a record.
fn read_sides(
    path: &Path,
    versions: [(&str, &[u8]); 3],
    parse: impl Fn(&[u8]) -> std::result::Result<Keyed, Damage>,
) -> Result<Vec<Vec<Line>>> {
    let mut sides: Vec<Vec<Line>> = Vec::new();
    for (side, data) in versions {
        let mut lines = Vec::new();
        for (number, bytes, terminated) in memory_dir::lines(data) {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = parse(bytes).and_then(|keyed| {
                serde_json::from_slice::<Value>(bytes)
                    .map(|value| {
                        let canonical = canon::encode(&value, JsonStyle::Canonical);
                        let marked = keyed.redactable.then(|| marked_form(value));
                        (keyed, canonical, marked)
                    })
                    .map_err(|err| Damage::record(err.to_string()))
            });
            match parsed {
                Ok((keyed, canonical, marked)) => {
                    lines.push(Line { bytes: bytes.to_vec(), canonical, marked, keyed });
                }
                // An unterminated fragment that is no record is what a
                // crashed append leaves: readers ignore it, so does a merge.
                Err(_) if !terminated => {}
                Err(damage) => {
                    return Err(Error::corrupt(
                        Location::line(&side_path(path, side), number),
                        Damage::MergeRecord {
                            problem: damage.to_string(),
                            markers: has_conflict_markers(data),
                        },
                    ));
                }
            }
        }
        sides.push(lines);
    }
    Ok(sides)
}

/// The three versions of curated.json with every entry of a domain that a
/// redaction gave another key on some side under that key (see
/// [`redacted_keys`]).
fn rekey_curated(mut sides: [CuratedState; 3]) -> [CuratedState; 3] {
    let renamed = redacted_keys(
        sides.iter().flat_map(|s| s.entries.iter().filter_map(|e| e.memory_key.as_deref())),
    );
    if renamed.is_empty() {
        return sides;
    }
    for state in &mut sides {
        for entry in &mut state.entries {
            if let Some(to) = entry.memory_key.as_deref().and_then(|k| renamed.get(k)) {
                entry.memory_key = Some(to.clone());
            }
        }
        state.sort();
    }
    sides
}

/// The three versions of conflicts.json with every case of a domain that a
/// redaction gave another key on some side under that key.
fn rekey_conflicts(mut sides: [ConflictQueue; 3]) -> [ConflictQueue; 3] {
    let renamed =
        redacted_keys(sides.iter().flat_map(|s| s.cases.iter().map(|c| c.memory_key.as_str())));
    if renamed.is_empty() {
        return sides;
    }
    for queue in &mut sides {
        for case in &mut queue.cases {
            if let Some(to) = renamed.get(&case.memory_key) {
                case.memory_key.clone_from(to);
            }
        }
        queue.sort();
    }
    sides
}

/// The memory keys of `keys` (every side's) that a redaction replaced on
/// some side, each with the key it became there: a side that did not see
/// the redaction holds the domain under its old key, and merging it under
/// that key would split one domain in two (docs/corrections.md, "A
/// credential in a memory key").
fn redacted_keys<'k>(keys: impl Iterator<Item = &'k str> + Clone) -> HashMap<String, String> {
    let present: HashSet<&str> = keys.clone().collect();
    keys.filter_map(|key| {
        let to = redacted_key(key);
        (to != key && present.contains(to.as_str())).then(|| (key.to_owned(), to))
    })
    .collect()
}

/// The canonical JSON of a decision or correction `value` with the marker
/// in its actor and rationale.
fn marked_form(mut value: Value) -> String {
    if let Value::Object(map) = &mut value {
        for field in ["actor", "rationale"] {
            map.insert(field.to_owned(), Value::String(REDACTED.to_owned()));
        }
    }
    canon::encode(&value, JsonStyle::Canonical)
}

/// The tombstones of three versions of a daily file, by the SHA-256 of
/// the line each replaced. Two redactions of one fact (one on each side)
/// leave two tombstones of one line: the one with the smallest bytes
/// stands for both, whichever side merges into which.
fn tombstones_by_line(sides: [&Vec<Line>; 3]) -> HashMap<&str, &Line> {
    let mut tombstones: HashMap<&str, &Line> = HashMap::new();
    for line in sides.into_iter().flatten() {
        if let Some(hash) = line.keyed.replaces.as_deref() {
            tombstones
                .entry(hash)
                .and_modify(|kept| {
                    if line.bytes < kept.bytes {
                        *kept = line;
                    }
                })
                .or_insert(line);
        }
    }
    tombstones
}

/// Returns the workspace id the state files' versions agree on (a missing
/// version agrees with any).
fn state_workspace(path: &Path, versions: &[(&str, &[u8]); 3]) -> Result<String> {
    let mut found: Option<String> = None;
    for (side, data) in versions.iter().filter(|(_, data)| !data.is_empty()) {
        let id = first_workspace(data).ok_or_else(|| {
            Error::corrupt(
                Location::file(&side_path(path, side)),
                Damage::NotStateFile { markers: has_conflict_markers(data) },
            )
        })?;
        match &found {
            Some(other) if *other != id => {
                return Err(Error::corrupt(
                    Location::file(path),
                    Damage::TwoWorkspaces { first: other.clone(), second: id },
                ));
            }
            _ => found = Some(id),
        }
    }
    found.ok_or_else(|| Error::corrupt(Location::file(path), Damage::EveryVersionEmpty))
}

/// Returns the `workspace_id` of a state file or of the first record of a
/// stream.
fn first_workspace(data: &[u8]) -> Option<String> {
    let first = lines(data).map(|(_, line, _)| line).find(|l| !l.is_empty())?;
    let value: Value =
        serde_json::from_slice(first).or_else(|_| serde_json::from_slice(data)).ok()?;
    value.get("workspace_id")?.as_str().map(str::to_owned)
}

/// Returns `path` labelled with the side it was read from, for messages.
fn side_path(path: &Path, side: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{} ({side})", path.display()))
}
