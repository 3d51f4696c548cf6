//! The curated state: `curated.json`, the canonical record of what the
//! policy promoted, with every revision of every keyed decision.
//!
//! Invariants (docs/format.md), checked on load and before every save: keys
//! are unique; occurrences equal the number of unique evidence ids; unkeyed
//! entries are revision 1, active and unlinked; each keyed domain has
//! exactly one active revision; active entries have no `superseded_by`,
//! superseded ones have one; revision 1 has no `supersedes`, later ones do;
//! links are mutual, stay inside one memory_key, and revisions are
//! contiguous; content passes the rules of fact content; keys recompute
//! from the content (docs/format.md). Schema-1 files (no lifecycle fields) load with defaults and
//! are written back as schema 2. This module only encodes and decodes; the
//! caller writes through `atomic_io::replace`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Damage, Error, Invalid, Location, Result};
use crate::model::canon;
use crate::model::fact::{Kind, REDACTED};
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::store::Finding;
use crate::store::state_file::{Encoded, Encoder};

/// Schema version written to `curated.json` of a memory that never had a
/// correction.
pub const CURATED_SCHEMA_VERSION: u32 = 2;

/// Schema version written to `curated.json` from the first correction on
/// (docs/corrections.md): entries may be `retracted` and list
/// `retracted_evidence_ids`, which earlier versions must refuse rather
/// than misread.
pub const CURATED_SCHEMA_CORRECTED: u32 = 3;

/// Evidence ids from which [`CuratedState::encode`] checks the invariants
/// on a second thread while it encodes.
const PARALLEL_CHECK_EVIDENCE: usize = 50_000;

/// Lifecycle status of a curated revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The current value of its key or domain.
    Active,
    /// Replaced by a later revision; kept for history.
    Superseded,
    /// One side's value of a memory key whose revision chains diverged in
    /// a merge (docs/sharing.md): outside the chain of revisions, waiting
    /// with the other side's value for a person to choose between them.
    Contested,
    /// A correction took its last evidence (docs/corrections.md): out of
    /// the memory, kept in its place in its domain's chain of revisions.
    Retracted,
}

impl Status {
    /// The status as written in curated.json.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Superseded => "superseded",
            Status::Contested => "contested",
            Status::Retracted => "retracted",
        }
    }
}

/// One curated revision. Format-stable.
///
/// Fields are declared in sorted order: [`crate::model::canon::encode`] writes them
/// as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The wording shown in MEMORY.md.
    pub content: String,
    /// Ids of the facts behind this revision, sorted and unique.
    pub evidence_ids: IdList,
    /// Earliest evidence timestamp.
    pub first_seen: Stamp,
    /// 16-hex entry key (docs/format.md).
    pub key: String,
    /// Kind of the promoted facts.
    pub kind: Kind,
    /// Latest evidence timestamp.
    pub last_seen: Stamp,
    /// Conflict domain, for keyed entries.
    #[serde(default)]
    pub memory_key: Option<String>,
    /// Number of evidence ids.
    pub occurrences: u64,
    /// Ids of facts a correction took from its evidence and a restore
    /// released after the domain moved on (docs/corrections.md,
    /// "Restore"): they count again, judged like new evidence, and are
    /// listed as the record of where they were; sorted and unique, never
    /// evidence or retracted evidence. Absent from the file when empty.
    #[serde(default, skip_serializing_if = "IdList::is_empty")]
    pub released_evidence_ids: IdList,
    /// Ids of the facts a correction took from its evidence and that are
    /// retracted, sorted and unique; never evidence. Absent from the file
    /// when empty.
    #[serde(default, skip_serializing_if = "IdList::is_empty")]
    pub retracted_evidence_ids: IdList,
    /// 1 for the first revision of a domain.
    #[serde(default = "one")]
    pub revision: u32,
    /// Lifecycle status.
    #[serde(default = "active")]
    pub status: Status,
    /// Key of the revision that replaced this one.
    #[serde(default)]
    pub superseded_by: Option<String>,
    /// Key of the revision this one replaced.
    #[serde(default)]
    pub supersedes: Option<String>,
}

fn one() -> u32 {
    1
}

fn active() -> Status {
    Status::Active
}

impl Entry {
    /// Returns whether this revision is active.
    pub fn is_active(&self) -> bool {
        self.status == Status::Active
    }

    /// Returns whether this is one side's value of a domain under review
    /// after a merge ([`Status::Contested`]).
    pub fn is_contested(&self) -> bool {
        self.status == Status::Contested
    }

    /// Returns whether a correction took this entry's last evidence
    /// ([`Status::Retracted`]).
    pub fn is_retracted(&self) -> bool {
        self.status == Status::Retracted
    }

    /// Makes revision `key` the one that replaced this one: superseded,
    /// unless a correction retracted it (a retracted revision stays
    /// retracted once superseded).
    pub(crate) fn supersede_by(&mut self, key: &str) {
        if !self.is_retracted() {
            self.status = Status::Superseded;
        }
        self.superseded_by = Some(key.to_owned());
    }

    /// Returns the facts a correction took from this entry's evidence:
    /// those still retracted, then those a restore released.
    pub fn taken_ids(&self) -> impl Iterator<Item = &str> + Clone {
        self.retracted_evidence_ids.iter().chain(self.released_evidence_ids.iter())
    }

    /// Returns whether this entry holds what only a correction leaves: the
    /// `retracted` status, or facts a correction took from its evidence.
    pub fn holds_correction(&self) -> bool {
        self.is_retracted()
            || !self.retracted_evidence_ids.is_empty()
            || !self.released_evidence_ids.is_empty()
    }

    /// Returns the entry key recomputed from this entry's fields (see
    /// docs/format.md): of kind and normal content when unkeyed, and of
    /// memory_key, revision, kind and normal content when keyed.
    pub fn computed_key(&self) -> String {
        match self.memory_key.as_deref() {
            None => canon::unkeyed_entry_key(self.kind.as_str(), &self.content),
            Some(memory_key) => {
                canon::keyed_entry_key(memory_key, self.revision, self.kind.as_str(), &self.content)
            }
        }
    }

    /// Returns the id a conflict candidate with this entry's value has: of
    /// its memory_key, kind and normal content; `None` for an unkeyed
    /// entry, which no case holds.
    pub fn candidate_id(&self) -> Option<String> {
        let memory_key = self.memory_key.as_deref()?;
        Some(canon::candidate_id(memory_key, self.kind.as_str(), &self.content))
    }

    /// Adds evidence ids and widens first/last_seen.
    pub fn merge_evidence<'a>(
        &mut self,
        ids: impl IntoIterator<Item = &'a str>,
        first: &Stamp,
        last: &Stamp,
    ) {
        let mut added: Vec<&str> = ids.into_iter().collect();
        added.sort_unstable();
        added.dedup();
        if !self.released_evidence_ids.is_empty() {
            // A released fact judged again as evidence of the entry it was
            // taken from is back where it was.
            self.released_evidence_ids = self
                .released_evidence_ids
                .iter()
                .filter(|id| added.binary_search(id).is_err())
                .collect();
        }
        // Both lists are sorted: one linear merge (the evidence of a
        // long-lived entry grows with the log).
        self.evidence_ids = IdList::union(&self.evidence_ids, added);
        self.occurrences = self.evidence_ids.len() as u64;
        if first.instant() < self.first_seen.instant() {
            self.first_seen = first.clone();
        }
        if last.instant() > self.last_seen.instant() {
            self.last_seen = last.clone();
        }
    }
}

/// The decoded contents of `curated.json`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CuratedState {
    /// Schema version read from disk (2 for new states, 3 once a
    /// correction was made); the encoding keeps it, at least 2.
    pub schema_version: u32,
    /// Entries in canonical order (kind, memory_key or "", revision, key).
    pub entries: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCurated {
    schema_version: i64,
    workspace_id: String,
    entries: Vec<Entry>,
}

impl CuratedState {
    /// Returns an empty schema-2 state.
    pub fn new() -> CuratedState {
        CuratedState { schema_version: CURATED_SCHEMA_VERSION, entries: Vec::new() }
    }

    /// Decodes and validates `data`, read from `path`.
    ///
    /// Errors: [`Error::Corrupt`] naming the file (and entry),
    /// [`Error::Scope`] for another workspace.
    pub fn decode(data: &[u8], path: &Path, workspace_id: &str) -> Result<CuratedState> {
        let here = || Location::file(path);
        let raw: RawCurated = serde_json::from_slice(data)
            .map_err(|err| super::corrupt_in(data, here(), Damage::json(&err)))?;
        if raw.workspace_id != workspace_id {
            return Err(Error::Scope {
                location: here(),
                found: raw.workspace_id,
                expected: workspace_id.to_owned(),
            });
        }
        let schema_version = match raw.schema_version {
            1 => 1,
            2 => 2,
            3 => 3,
            other => {
                return Err(Error::UnsupportedVersion {
                    location: here(),
                    what: "curated",
                    found: other,
                    supported: "1, 2, 3",
                });
            }
        };
        // Only a file written after a correction holds what one leaves.
        if schema_version < CURATED_SCHEMA_CORRECTED
            && let Some(entry) = raw.entries.iter().find(|e| e.holds_correction())
        {
            return Err(super::corrupt_in(
                data,
                here(),
                Damage::record(format!(
                    "entry {} holds what a correction leaves, in a schema {schema_version} file",
                    entry.key
                )),
            ));
        }
        let mut state = CuratedState { schema_version, entries: raw.entries };
        state.sort();
        state.validate().map_err(|damage| super::corrupt_in(data, here(), damage))?;
        Ok(state)
    }

    /// Returns the canonical encoding (schema 2, or 3 once a correction
    /// was made; pretty, sorted keys, trailing newline) after checking
    /// every invariant.
    ///
    /// Errors: [`Error::Corrupt`] if an invariant does not hold (a bug).
    pub fn encode(&self, path: &Path, workspace_id: &str) -> Result<Vec<u8>> {
        Ok(self.encoded(path, workspace_id)?.bytes)
    }

    /// Returns the canonical encoding with the byte range of each entry
    /// (in canonical order), after checking every invariant.
    ///
    /// Errors: as [`CuratedState::encode`].
    pub(crate) fn encoded(&self, path: &Path, workspace_id: &str) -> Result<Encoded> {
        let write = || {
            let mut entries: Vec<&Entry> = self.entries.iter().collect();
            entries.sort_by(|a, b| entry_order(a, b));
            let mut out =
                Encoder::<Entry>::new(workspace_id, self.written_version(), entries.len(), 0);
            for entry in entries {
                out.record(entry);
            }
            out.finish()
        };
        // A large state (its evidence lists grow with the log) is checked on
        // a second core while this one encodes it; the bytes are returned
        // only if every invariant holds.
        let evidence: usize = self.entries.iter().map(|e| e.evidence_ids.len()).sum();
        let (checked, bytes) = if evidence < PARALLEL_CHECK_EVIDENCE {
            (self.validate(), None)
        } else {
            std::thread::scope(|scope| {
                let checked = scope.spawn(|| self.validate());
                let bytes = write();
                let checked =
                    checked.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (checked, Some(bytes))
            })
        };
        checked.map_err(|msg| {
            Error::corrupt(Location::file(path), Damage::RefusedSave(Box::new(msg)))
        })?;
        Ok(bytes.unwrap_or_else(write))
    }

    /// Sorts entries into canonical order.
    pub fn sort(&mut self) {
        sort_entries(&mut self.entries);
    }

    /// The schema version this state is written with: the one it was read
    /// with, at least [`CURATED_SCHEMA_VERSION`], and
    /// [`CURATED_SCHEMA_CORRECTED`] when an entry holds what a correction
    /// leaves.
    pub fn written_version(&self) -> u32 {
        let corrected = self.entries.iter().any(Entry::holds_correction);
        let floor = if corrected { CURATED_SCHEMA_CORRECTED } else { CURATED_SCHEMA_VERSION };
        self.schema_version.max(floor)
    }

    /// Returns the entries of the keyed domain `memory_key` (every
    /// revision), in canonical order.
    pub fn domain(&self, memory_key: &str) -> Vec<Entry> {
        self.entries
            .iter()
            .filter(|e| e.memory_key.as_deref() == Some(memory_key))
            .cloned()
            .collect()
    }

    /// Replaces the entries of the keyed domain `memory_key` by `entries`
    /// (which must all belong to it) and restores canonical order; every
    /// other entry is kept as it is.
    pub fn replace_domain(&mut self, memory_key: &str, entries: Vec<Entry>) {
        self.entries.retain(|e| e.memory_key.as_deref() != Some(memory_key));
        self.entries.extend(entries);
        self.sort();
    }

    /// Returns the active entry of `memory_key`, if any.
    pub fn active_for(&self, memory_key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.is_active() && e.memory_key.as_deref() == Some(memory_key))
    }

    /// Returns every active entry.
    pub fn active_entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.is_active())
    }

    /// Checks every invariant of docs/format.md; the message names the entry.
    pub(crate) fn validate(&self) -> std::result::Result<(), Damage> {
        match self.problems().into_iter().next() {
            Some(finding) => Err(Damage::record(finding.message)),
            None => Ok(()),
        }
    }

    /// Returns every violated invariant of docs/format.md, each message
    /// naming the entry.
    pub(crate) fn problems(&self) -> Vec<Finding> {
        problems_of(&self.entries)
    }
}

/// Returns every violated invariant of docs/format.md among `entries`, each
/// message naming the entry. Every check but the uniqueness of keys stays
/// inside one memory key (or one unkeyed entry), so the entries of whole
/// domains can be checked apart from the rest of the state.
#[expect(
    clippy::too_many_lines,
    reason = "every invariant of the entries in the order of the format's list, each a few lines over the same by-key maps built once at the top"
)]
pub(crate) fn problems_of(entries: &[Entry]) -> Vec<Finding> {
    let mut problems = Vec::new();
    let mut by_key: HashMap<&str, &Entry> = HashMap::with_capacity(entries.len());
    for entry in entries {
        if let Err(msg) = check_entry_fields(entry) {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!("entry {}: {msg}", entry.key),
            });
        }
        if by_key.insert(entry.key.as_str(), entry).is_some() {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!("entry key {} appears twice", entry.key),
            });
        }
    }
    let mut active_by_domain: BTreeMap<&str, &Entry> = BTreeMap::new();
    let mut domains: BTreeSet<&str> = BTreeSet::new();
    let mut contested: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    let mut last_revision: HashMap<&str, u32> = HashMap::new();
    // Retracted revisions without a successor, by domain.
    let mut retracted_last: Vec<(&str, &Entry)> = Vec::new();
    for entry in entries {
        let ids = &entry.evidence_ids;
        let unique = if ids.is_sorted_unique() {
            ids.len()
        } else {
            ids.iter().collect::<BTreeSet<_>>().len()
        };
        if entry.occurrences != unique as u64 {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!(
                    "entry {} has occurrences {} but {unique} unique evidence ids",
                    entry.key, entry.occurrences
                ),
            });
        }
        // Retracted exactly when a correction took its last evidence.
        let emptied = entry.evidence_ids.is_empty() && entry.taken_ids().next().is_some();
        if entry.is_retracted() != emptied {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: if entry.is_retracted() {
                    format!(
                        "retracted entry {} must have no evidence and some retracted evidence",
                        entry.key
                    )
                } else {
                    format!(
                        "entry {} has no evidence left but retracted evidence, and is not retracted",
                        entry.key
                    )
                },
            });
        }
        let Some(domain) = entry.memory_key.as_deref() else {
            if entry.revision != 1
                || !(entry.is_active() || entry.is_retracted())
                || entry.supersedes.is_some()
                || entry.superseded_by.is_some()
            {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!(
                        "unkeyed entry {} must be revision 1, active or retracted, and unlinked",
                        entry.key
                    ),
                });
            }
            continue;
        };
        domains.insert(domain);
        if entry.is_contested() {
            contested.entry(domain).or_default().push(entry);
            if entry.supersedes.is_some() || entry.superseded_by.is_some() {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!(
                        "contested entry {} must not be linked to other revisions",
                        entry.key
                    ),
                });
            }
            continue;
        }
        let last = last_revision.entry(domain).or_default();
        *last = (*last).max(entry.revision);
        if entry.is_active() {
            if let Some(other) = active_by_domain.insert(domain, entry) {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!(
                        "memory_key {domain} has two active revisions: {} and {}",
                        other.key, entry.key
                    ),
                });
            }
            if entry.superseded_by.is_some() {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!("active entry {} must not have superseded_by", entry.key),
                });
            }
        } else if entry.is_retracted() {
            // A retracted revision keeps its links; only the latest one of
            // its domain has no successor.
            if entry.superseded_by.is_none() {
                retracted_last.push((domain, entry));
            }
        } else if entry.superseded_by.is_none() {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!("superseded entry {} has no superseded_by", entry.key),
            });
        }
        if entry.revision == 1 && entry.supersedes.is_some() {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!("entry {} is revision 1 but has supersedes", entry.key),
            });
        }
        if entry.revision > 1 && entry.supersedes.is_none() {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!(
                    "entry {} is revision {} but has no supersedes",
                    entry.key, entry.revision
                ),
            });
        }
    }
    for (domain, entry) in &retracted_last {
        if last_revision.get(domain).is_some_and(|last| *last != entry.revision) {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!(
                    "retracted entry {} is not the latest revision of {domain} but has no superseded_by",
                    entry.key
                ),
            });
        }
    }
    // A domain has no value only when a correction took its latest one.
    let emptied: BTreeSet<&str> = retracted_last.iter().map(|(domain, _)| *domain).collect();
    for domain in domains.iter().filter(|d| {
        !active_by_domain.contains_key(*d) && !contested.contains_key(*d) && !emptied.contains(*d)
    }) {
        problems.push(Finding {
            subject: None,
            message: format!("memory_key {domain} has no active revision"),
        });
    }
    for (domain, entry) in &retracted_last {
        if let Some(active) = active_by_domain.get(domain) {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!(
                    "memory_key {domain} has an active revision {} and a retracted latest revision {}",
                    active.key, entry.key
                ),
            });
        }
    }
    // The values under review are distinct candidates: of another kind or
    // wording than each other and than the active value, and after the
    // domain's revisions.
    for (domain, values) in &contested {
        let active = active_by_domain.get(domain).copied();
        let last = last_revision.get(domain).copied().unwrap_or(0);
        let mut seen: BTreeSet<(Kind, String)> = BTreeSet::new();
        if let Some(active) = active {
            seen.insert((active.kind, canon::normal_form(&active.content)));
        }
        if values.len() + usize::from(active.is_some()) < 2 {
            problems.push(Finding {
                subject: Some(values[0].key.clone()),
                message: format!(
                    "contested entry {} has no other value of {domain} in dispute",
                    values[0].key
                ),
            });
        }
        for entry in values {
            if !seen.insert((entry.kind, canon::normal_form(&entry.content))) {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!(
                        "contested entry {} states a value {domain} already holds",
                        entry.key
                    ),
                });
            }
            if entry.revision <= last {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!(
                        "contested entry {} is revision {} but {domain} has revision {last}",
                        entry.key, entry.revision
                    ),
                });
            }
        }
    }
    for entry in entries {
        if let Some(next) = entry.superseded_by.as_deref() {
            match by_key.get(next) {
                Some(successor) if successor.supersedes.as_deref() == Some(entry.key.as_str()) => {}
                _ => problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!(
                        "entry {} has a broken superseded_by link to {next}",
                        entry.key
                    ),
                }),
            }
        }
        if let Some(prev) = entry.supersedes.as_deref() {
            let Some(previous) = by_key.get(prev) else {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!("entry {} has a broken supersedes link to {prev}", entry.key),
                });
                continue;
            };
            if previous.superseded_by.as_deref() != Some(entry.key.as_str()) {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!("entry {} has a broken supersedes link to {prev}", entry.key),
                });
            }
            if previous.memory_key != entry.memory_key {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!("entry {} supersedes {prev} of another memory_key", entry.key),
                });
            }
            if entry.revision != previous.revision + 1 {
                problems.push(Finding {
                    subject: Some(entry.key.clone()),
                    message: format!(
                        "entry {} is revision {} but supersedes revision {}",
                        entry.key, entry.revision, previous.revision
                    ),
                });
            }
        }
    }
    // Last: a key that does not recompute is often the consequence of
    // an edit the structural checks above explain better.
    // A redacted wording keeps the key it was recorded with: verify checks
    // it against the redact record instead.
    for entry in entries.iter().filter(|e| e.content != REDACTED) {
        let expected = entry.computed_key();
        if entry.key != expected {
            problems.push(Finding {
                subject: Some(entry.key.clone()),
                message: format!(
                    "entry {} has a key that does not match its content (expected {expected})",
                    entry.key
                ),
            });
        }
    }
    problems
}

/// The content of a new keyed revision.
#[derive(Debug, Clone)]
pub struct Revision<'a> {
    /// Its conflict domain.
    pub memory_key: &'a str,
    /// Its kind.
    pub kind: Kind,
    /// Its wording.
    pub content: String,
    /// The facts behind it, sorted and unique.
    pub evidence_ids: IdList,
    /// Earliest evidence.
    pub first_seen: Stamp,
    /// Latest evidence.
    pub last_seen: Stamp,
}

/// Appends `revision` to `entries` as the active entry of its domain: the
/// next revision number after `active` (the domain's current active entry,
/// if any), which becomes superseded, with mutual links. `taken` says
/// whether an entry key is already used. Returns the new entry's index.
///
/// Errors: [`Damage::KeyCollision`] when the new key is taken.
pub fn push_revision(
    entries: &mut Vec<Entry>,
    active: Option<usize>,
    revision: Revision<'_>,
    taken: impl Fn(&str) -> bool,
) -> std::result::Result<usize, Damage> {
    let number = active.map_or(1, |i| entries[i].revision + 1);
    let key = canon::keyed_entry_key(
        revision.memory_key,
        number,
        revision.kind.as_str(),
        &revision.content,
    );
    if taken(&key) {
        return Err(Damage::KeyCollision {
            memory_key: revision.memory_key.to_owned(),
            revision: number,
            key,
        });
    }
    let supersedes = active.map(|i| {
        entries[i].supersede_by(&key);
        entries[i].key.clone()
    });
    entries.push(Entry {
        key,
        kind: revision.kind,
        content: revision.content,
        first_seen: revision.first_seen,
        last_seen: revision.last_seen,
        occurrences: revision.evidence_ids.len() as u64,
        evidence_ids: revision.evidence_ids,
        released_evidence_ids: IdList::new(),
        retracted_evidence_ids: IdList::new(),
        memory_key: Some(revision.memory_key.to_owned()),
        revision: number,
        status: Status::Active,
        supersedes,
        superseded_by: None,
    });
    Ok(entries.len() - 1)
}

fn check_entry_fields(entry: &Entry) -> std::result::Result<(), Damage> {
    if entry.key.len() != 16 || !entry.key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        let reason = Invalid::Malformed { rule: "16 lowercase hex characters" };
        return Err(Damage::Field { field: "key".into(), reason });
    }
    if entry.revision < 1 {
        let reason = Invalid::TooSmall { value: i64::from(entry.revision), min: 1 };
        return Err(Damage::Field { field: "revision".into(), reason });
    }
    crate::model::fact::check_stored_content(&entry.content)?;
    if let Some(key) = entry.memory_key.as_deref() {
        match canon::clean_memory_key(key) {
            Ok(clean) if clean == key => {}
            _ => return Err(Damage::record(format!("invalid memory_key {key:?}"))),
        }
    }
    for id in &entry.evidence_ids {
        canon::check_id("evidence id", id).map_err(Damage::field)?;
    }
    if !entry.evidence_ids.is_sorted_unique() {
        let reason = Invalid::Malformed { rule: "sorted and unique" };
        return Err(Damage::Field { field: "evidence_ids".into(), reason });
    }
    for id in &entry.retracted_evidence_ids {
        canon::check_id("retracted evidence id", id).map_err(|e| Damage::record(e.to_string()))?;
        if entry.evidence_ids.contains(id) {
            return Err(Damage::record(format!(
                "fact {id} is both evidence and retracted evidence"
            )));
        }
    }
    if !entry.retracted_evidence_ids.is_sorted_unique() {
        return Err(Damage::record("retracted_evidence_ids must be sorted and unique"));
    }
    for id in &entry.released_evidence_ids {
        canon::check_id("released evidence id", id).map_err(|e| Damage::record(e.to_string()))?;
        if entry.evidence_ids.contains(id) || entry.retracted_evidence_ids.contains(id) {
            return Err(Damage::record(format!(
                "fact {id} is both released evidence and evidence or retracted evidence"
            )));
        }
    }
    if !entry.released_evidence_ids.is_sorted_unique() {
        return Err(Damage::record("released_evidence_ids must be sorted and unique"));
    }
    if entry.first_seen.instant() > entry.last_seen.instant() {
        return Err(Damage::record("first_seen is after last_seen"));
    }
    Ok(())
}

/// Sorts `entries` into canonical order: (kind, memory_key or "",
/// revision, key).
pub fn sort_entries(entries: &mut [Entry]) {
    entries.sort_by(entry_order);
}

/// The canonical order of an entry: (kind, memory_key or "", revision, key).
pub(crate) fn order(entry: &Entry) -> (&str, &str, u32, &str) {
    (entry.kind.as_str(), entry.memory_key.as_deref().unwrap_or(""), entry.revision, &entry.key)
}

fn entry_order(a: &Entry, b: &Entry) -> std::cmp::Ordering {
    order(a).cmp(&order(b))
}

#[cfg(test)]
impl Entry {
    /// A decision (revision 1, active) with `ids` as its evidence and its
    /// key computed: for tests.
    pub(crate) fn sample(content: &str, memory_key: Option<&str>, ids: &[String]) -> Entry {
        let stamp = |text: &str| Stamp::parse(text).unwrap();
        let mut entry = Entry {
            content: content.into(),
            evidence_ids: ids.iter().collect(),
            first_seen: stamp("2026-01-02T00:00:00Z"),
            key: String::new(),
            kind: Kind::Decision,
            last_seen: stamp("2026-01-03T00:00:00.250000Z"),
            memory_key: memory_key.map(str::to_owned),
            occurrences: ids.len() as u64,
            released_evidence_ids: IdList::new(),
            retracted_evidence_ids: IdList::new(),
            revision: 1,
            status: Status::Active,
            superseded_by: None,
            supersedes: None,
        };
        entry.key = entry.computed_key();
        entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_evidence_is_the_sorted_union() {
        let stamp = |text: &str| Stamp::parse(text).unwrap();
        let cases: [(&[&str], &[&str]); 5] = [
            (&[], &["b", "a", "b"]),
            (&["a", "c"], &[]),
            (&["a", "c", "e"], &["d", "a", "f", "0"]),
            (&["b"], &["a", "b", "c"]),
            (&["a", "b"], &["a", "b"]),
        ];
        for (old, added) in cases {
            let mut entry = Entry {
                content: "x".into(),
                evidence_ids: old.iter().collect(),
                first_seen: stamp("2026-01-02T00:00:00Z"),
                key: "0123456789abcdef".into(),
                kind: Kind::Decision,
                last_seen: stamp("2026-01-03T00:00:00Z"),
                memory_key: None,
                occurrences: old.len() as u64,
                released_evidence_ids: IdList::new(),
                retracted_evidence_ids: IdList::new(),
                revision: 1,
                status: Status::Active,
                superseded_by: None,
                supersedes: None,
            };
            entry.merge_evidence(
                added.iter().copied(),
                &stamp("2026-01-01T00:00:00Z"),
                &stamp("2026-01-02T00:00:00Z"),
            );
            let union: BTreeSet<&str> = old.iter().chain(added).copied().collect();
            assert_eq!(
                entry.evidence_ids,
                union.into_iter().collect::<Vec<_>>(),
                "{old:?} + {added:?}"
            );
            assert_eq!(entry.occurrences, entry.evidence_ids.len() as u64);
            assert_eq!(entry.first_seen.as_str(), "2026-01-01T00:00:00Z");
            assert_eq!(entry.last_seen.as_str(), "2026-01-03T00:00:00Z");
        }
    }

    #[test]
    fn a_large_state_is_checked_while_it_is_encoded() {
        let ids: Vec<String> = (0..PARALLEL_CHECK_EVIDENCE).map(|n| format!("f{n:06}")).collect();
        let entry = |content: &str, ids: &[String]| Entry::sample(content, None, ids);
        let (a, b) = ids.split_at(ids.len() / 2);
        let mut state = CuratedState::new();
        state.entries = vec![entry("Use WAL mode.", a), entry("Use UTC.", b)];
        state.sort();
        let path = Path::new("curated.json");
        // Both ways give the same bytes: the file a small state would get.
        let parallel = state.encode(path, "ws").unwrap();
        let decoded = CuratedState::decode(&parallel, path, "ws").unwrap();
        assert_eq!(decoded, state);
        let mut small = state.clone();
        small.entries[0].evidence_ids.truncate(1);
        small.entries[0].occurrences = 1;
        small.entries[1].evidence_ids.truncate(1);
        small.entries[1].occurrences = 1;
        let sequential = small.encode(path, "ws").unwrap();
        assert_eq!(CuratedState::decode(&sequential, path, "ws").unwrap(), small);
        // A broken invariant is refused, and no bytes come out.
        state.entries[1].occurrences += 1;
        let err = state.encode(path, "ws").unwrap_err().to_string();
        assert!(err.contains("refusing to save") && err.contains("occurrences"), "{err}");
    }
}
