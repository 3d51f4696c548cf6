//! Memory in code review: what a change of revision does to the memory,
//! from the bytes of the memory files at two revisions (docs/sharing.md).
//!
//! A [`MemorySnapshot`] holds the files of one revision as the caller found
//! them (a git tree, read without a checkout); [`MemoryDiff::between`]
//! decodes both with the readers' validating decoders and compares them:
//! facts, human decisions, curated entries and the agent context each
//! revision would give. Everything in a snapshot is untrusted: a file that
//! fails to decode is reported as a problem of its revision, its content is
//! never compared nor shown, and nothing here panics on hostile bytes. This
//! module reads no file, spawns nothing and prints nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::model::fact::Fact;
use crate::model::secret;
use crate::policy::config::Config;
use crate::policy::projection::{self, MAX_PENDING_FACTS, PendingFact, Projection};
use crate::store::conflict_queue::{CaseStatus, ConflictQueue};
use crate::store::curated_state::{CuratedState, Entry, Status};
use crate::store::fact_log::FactLog;
use crate::store::identity;
use crate::store::journal::{self, Adjudication};
use crate::store::memory_dir::lines;
use crate::store::names::{DAILY_DIR, DAY_EXTENSION};
use crate::workspace::merge::MemoryFile;
use crate::workspace::scan::Finding;
use crate::workspace::verify::{Problem, from_error, problem};

/// The memory files of one revision, as found (in a git tree, say), not
/// yet decoded: the input of [`MemoryDiff::between`].
///
/// ```
/// use workmem::{Config, MemoryDiff, MemorySnapshot};
///
/// let base = MemorySnapshot::new(".workmem/memory");
/// let head = MemorySnapshot::new(".workmem/memory").with_file(
///     "daily/2026-01-05.jsonl",
///     Some(b"{\"content\": \"Use WAL mode\", \"evidence\": {}, \"fact_id\": \"f-1\", \
///            \"importance\": 4, \"kind\": \"decision\", \"memory_key\": null, \
///            \"recorded_at\": \"2026-01-05T09:00:00Z\", \"schema_version\": 2, \
///            \"source\": \"agent\", \"workspace_id\": \"0123456789abcdef\"}\n"
///         .to_vec()),
/// );
/// let diff = MemoryDiff::between(&base, &head, &Config::default());
/// assert_eq!(diff.facts_added.len(), 1);
/// assert_eq!(diff.facts_added[0].content(), "Use WAL mode");
/// assert!(diff.context.added.contains(&"- [decision] Use WAL mode (2026-01-05)".to_owned()));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemorySnapshot {
    /// How the memory directory is named in messages.
    root: PathBuf,
    /// The workspace pin: where it was found, and its bytes (`None`: not a
    /// regular file).
    pin: Option<(PathBuf, Option<Vec<u8>>)>,
    /// Files by their path in the memory directory; `None`: not a regular
    /// file (a link, a directory, a submodule).
    files: BTreeMap<String, Option<Vec<u8>>>,
}

impl MemorySnapshot {
    /// Returns a snapshot without files (a revision without memory) whose
    /// memory directory is named `root` in messages.
    pub fn new(root: impl Into<PathBuf>) -> MemorySnapshot {
        MemorySnapshot { root: root.into(), ..MemorySnapshot::default() }
    }

    /// Returns this snapshot with the file `name` (relative to the memory
    /// directory: `curated.json`, `daily/2026-01-05.jsonl`, ...) holding
    /// `bytes`, or `None` when the revision holds something other than a
    /// regular file there (a symbolic link, a submodule). Names that are no
    /// memory file (MEMORY.md, caches, anything else) are ignored; the
    /// empty name stands for the memory directory itself, found to be no
    /// directory.
    #[must_use]
    pub fn with_file(mut self, name: impl Into<String>, bytes: Option<Vec<u8>>) -> MemorySnapshot {
        self.files.insert(name.into(), bytes);
        self
    }

    /// Returns this snapshot with the workspace pin (`.workmem/workspace.toml`)
    /// found at `path` holding `bytes` (`None`: not a regular file).
    #[must_use]
    pub fn with_pin(mut self, path: impl Into<PathBuf>, bytes: Option<Vec<u8>>) -> MemorySnapshot {
        self.pin = Some((path.into(), bytes));
        self
    }

    /// Returns the snapshot decoded: what each file holds, or why it does
    /// not count.
    fn decode(&self) -> Decoded {
        let mut problems: Vec<Problem> = Vec::new();
        let mut days: BTreeMap<String, Found<'_>> = BTreeMap::new();
        let mut singles: Vec<(MemoryFile, Found<'_>)> = Vec::new();
        for (name, bytes) in &self.files {
            // A tree lists the files under a directory, never the directory:
            // the memory directory or `daily/` named itself is something else.
            if name.is_empty() || name == DAILY_DIR {
                let path = if name.is_empty() { self.root.clone() } else { self.root.join(name) };
                problems.push(problem(
                    &path,
                    None,
                    "is not a directory (a symbolic link or a file): no memory file in it is read",
                ));
                continue;
            }
            let relative = Path::new(name);
            let Some(kind) = MemoryFile::for_path(relative)
                .filter(|_| relative.components().count() <= 2)
                .filter(|kind| {
                    *kind == MemoryFile::DailyLog || relative.parent() == Some(Path::new(""))
                })
            else {
                continue;
            };
            let path = self.root.join(relative);
            let bytes = bytes.as_deref();
            if bytes.is_none() {
                problems.push(problem(
                    &path,
                    None,
                    "is not a regular file (a symbolic link or a submodule): not read",
                ));
            }
            match kind {
                MemoryFile::DailyLog => {
                    days.insert(name.clone(), (path, bytes));
                }
                MemoryFile::View => {}
                other => singles.push((other, (path, bytes))),
            }
        }
        let workspace_id = self.workspace_id(&days, &singles, &mut problems);
        let id = workspace_id.clone().unwrap_or_default();
        let single = |wanted: MemoryFile| {
            singles.iter().find(|(kind, _)| *kind == wanted).map(|(_, file)| file)
        };
        let mut decoded = Decoded { workspace_id, ..Decoded::default() };

        let log = FactLog::new(self.root.join(DAILY_DIR), id.clone());
        for (name, (path, bytes)) in &days {
            let facts = bytes.and_then(|data| {
                log.parse_file(path, data).map_err(|err| problems.push(from_error(err, path))).ok()
            });
            decoded.days.insert(name.clone(), facts);
        }
        if let Some((path, bytes)) = single(MemoryFile::Curated) {
            decoded.curated = Part::of(bytes.and_then(|data| {
                CuratedState::decode(data, path, &id)
                    .map_err(|err| problems.push(from_error(err, path)))
                    .ok()
            }));
        }
        if let Some((path, bytes)) = single(MemoryFile::Conflicts) {
            decoded.conflicts = Part::of(bytes.and_then(|data| {
                ConflictQueue::decode(data, path, &id)
                    .map_err(|err| problems.push(from_error(err, path)))
                    .ok()
            }));
        }
        if let Some((path, bytes)) = single(MemoryFile::Audit) {
            decoded.audit = Part::of(bytes.and_then(|data| {
                let mut records = Vec::new();
                journal::for_each_record_in::<Adjudication>(path, data, 1, &id, |numbered| {
                    records.push(numbered.record);
                    Ok(())
                })
                .map_err(|err| problems.push(from_error(err, path)))
                .ok()
                .map(|()| records)
            }));
        }
        if let Some((path, Some(bytes))) = single(MemoryFile::Journal)
            && !bytes.iter().all(u8::is_ascii_whitespace)
        {
            problems.push(problem(
                path,
                None,
                "holds a resolution in flight: a journal that travels through git is never \
                 rolled forward (it is not part of the shared memory)",
            ));
        }
        decoded.problems = problems;
        decoded
    }

    /// Returns the workspace id the records of this revision must carry:
    /// the pin's, else the one the first record carries (each decoder then
    /// refuses records of any other). `None` when there is neither.
    fn workspace_id(
        &self,
        days: &BTreeMap<String, Found<'_>>,
        singles: &[(MemoryFile, Found<'_>)],
        problems: &mut Vec<Problem>,
    ) -> Option<String> {
        match &self.pin {
            Some((path, Some(bytes))) => match identity::parse_pin(bytes, path) {
                Ok(id) => return Some(id),
                Err(err) => problems.push(from_error(err, path)),
            },
            Some((path, None)) => problems.push(problem(
                path,
                None,
                "is not a regular file (a symbolic link or a submodule): not read",
            )),
            None => {}
        }
        let order = [MemoryFile::Curated, MemoryFile::Conflicts, MemoryFile::Audit];
        order
            .iter()
            .filter_map(|kind| singles.iter().find(|(found, _)| found == kind).map(|(_, f)| f))
            .chain(days.values())
            .filter_map(|(_, bytes)| *bytes)
            .find_map(first_workspace)
    }
}

/// A file of a snapshot: its path for messages, and its bytes (`None`: not
/// a regular file).
type Found<'a> = (PathBuf, Option<&'a [u8]>);

/// Returns the `workspace_id` of a state file or of the first line of a
/// stream, when it has one.
fn first_workspace(data: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Scoped {
        workspace_id: String,
    }
    let first = lines(data).map(|(_, line, _)| line).next()?;
    let scoped: Scoped =
        serde_json::from_slice(first).or_else(|_| serde_json::from_slice(data)).ok()?;
    identity::is_workspace_id(&scoped.workspace_id).then_some(scoped.workspace_id)
}

/// A state file of one revision.
#[derive(Debug, Default)]
enum Part<T> {
    /// Not in the revision.
    #[default]
    Missing,
    /// Present but not readable (reported as a problem).
    Unreadable,
    /// Decoded.
    Read(T),
}

impl<T> Part<T> {
    fn of(decoded: Option<T>) -> Part<T> {
        decoded.map_or(Part::Unreadable, Part::Read)
    }

    /// The decoded value, `None` when missing; `Err` when unreadable.
    fn readable(&self) -> Result<Option<&T>, ()> {
        match self {
            Part::Missing => Ok(None),
            Part::Unreadable => Err(()),
            Part::Read(value) => Ok(Some(value)),
        }
    }
}

/// One revision's memory, decoded.
#[derive(Debug, Default)]
struct Decoded {
    workspace_id: Option<String>,
    /// Facts of each daily file (by its name), `None` when it did not
    /// decode.
    days: BTreeMap<String, Option<Vec<Fact>>>,
    curated: Part<CuratedState>,
    conflicts: Part<ConflictQueue>,
    audit: Part<Vec<Adjudication>>,
    problems: Vec<Problem>,
}

impl Decoded {
    /// Returns why `record` does not close its case in this revision's
    /// conflicts.json, `None` when it does.
    fn set_aside(&self, record: &Adjudication) -> Option<String> {
        let queue = match self.conflicts.readable() {
            Ok(Some(queue)) => queue,
            Ok(None) => return Some("conflicts.json is gone".to_owned()),
            Err(()) => return Some("conflicts.json does not decode".to_owned()),
        };
        let conflict = &record.conflict_id;
        let Some(case) = queue.get(conflict) else {
            return Some(format!("its case {conflict} is no longer in conflicts.json"));
        };
        if case.resolution_event_id.as_deref() == Some(record.event_id.as_str()) {
            return None;
        }
        Some(match (case.status, case.resolution_event_id.as_deref()) {
            (CaseStatus::Open, _) => format!("its case {conflict} is open again"),
            (CaseStatus::Resolved, Some(other)) => {
                format!("its case {conflict} is resolved by another decision, {other}")
            }
            (status, _) => format!("its case {conflict} is {}", status.as_str()),
        })
    }

    /// Returns `record` with what this revision says of it.
    fn decision(&self, record: &Adjudication) -> DiffDecision {
        let case = match self.conflicts.readable() {
            Ok(Some(queue)) => queue.get(&record.conflict_id),
            _ => None,
        };
        DiffDecision {
            record: record.clone(),
            memory_key: case.map(|case| case.memory_key.clone()),
            chosen_content: case
                .and_then(|case| case.candidate(&record.selected_candidate_id))
                .map(|candidate| candidate.content.clone()),
            set_aside: self.set_aside(record),
        }
    }

    /// Returns the agent context this revision gives, as `workmem context`
    /// renders it from the revision's state with `config`; `None` when a
    /// file it needs does not decode (workmem would refuse the state).
    fn context(&self, config: &Config) -> Option<String> {
        let curated = self.curated.readable().ok()?;
        let mut seen: HashSet<&str> = HashSet::new();
        let mut facts: Vec<&Fact> = Vec::new();
        for day in self.days.values() {
            facts.extend(day.as_ref()?.iter().filter(|fact| seen.insert(&fact.fact_id)));
        }
        facts.sort_by(|a, b| {
            (a.recorded_at.instant(), &a.fact_id).cmp(&(b.recorded_at.instant(), &b.fact_id))
        });
        let entries: &[Entry] = curated.map_or(&[], |state| &state.entries);
        let memory_md =
            curated.map(|_| Projection::of_entries(entries).render_memory()).unwrap_or_default();
        let recent: Vec<Fact> = newest(
            facts.iter().copied().filter(|fact| fact.memory_key.is_none()),
            config.recent_facts,
        )
        .into_iter()
        .cloned()
        .collect();
        let evidence: HashSet<(&str, &str)> = entries
            .iter()
            .filter_map(|entry| Some((entry.memory_key.as_deref()?, &entry.evidence_ids)))
            .flat_map(|(key, ids)| ids.iter().map(move |id| (key, id)))
            .collect();
        let pending: Vec<PendingFact> = newest(
            facts.iter().copied().filter(|fact| {
                fact.memory_key
                    .as_deref()
                    .is_some_and(|key| !evidence.contains(&(key, fact.fact_id.as_str())))
            }),
            config.pending_facts.min(MAX_PENDING_FACTS),
        )
        .into_iter()
        .filter_map(PendingFact::of)
        .collect();
        Some(projection::render_context(
            &memory_md,
            &projection::project(entries),
            &recent,
            &pending,
            config.context_budget,
            &Vec::new,
        ))
    }
}

/// Returns the last `limit` of `items` (oldest first).
fn newest<'a, T>(items: impl Iterator<Item = &'a T>, limit: usize) -> Vec<&'a T>
where
    T: 'a,
{
    let all: Vec<&T> = items.collect();
    all[all.len().saturating_sub(limit)..].to_vec()
}

/// What a change of revision does to the memory: [`MemoryDiff::between`].
/// Serialized, this is the `--json` output of `workmem diff`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MemoryDiff {
    /// Facts of the head the base lacks (a fact whose line was rewritten
    /// under the same id is removed and added), oldest first.
    pub facts_added: Vec<Fact>,
    /// Facts of the base the head lacks, oldest first: the log is
    /// append-only, so a change that removes facts deletes them from every
    /// clone that takes it.
    pub facts_removed: Vec<Fact>,
    /// Human decisions of the head's audit stream the base lacks, in
    /// stream order, each with what the head says of it.
    pub decisions_added: Vec<DiffDecision>,
    /// Human decisions of the base's audit stream the head lacks (the
    /// stream is append-only), with what the base said of them.
    pub decisions_removed: Vec<DiffDecision>,
    /// Decisions of the head's audit stream that closed their case at the
    /// base, or are new, and do not close it at the head: their outcome no
    /// longer holds.
    pub decisions_set_aside: Vec<DiffDecision>,
    /// Curated entries created, superseded, retracted or removed.
    pub entries: DiffEntries,
    /// The lines of the agent context that change.
    pub context: DiffContext,
    /// Records of the lists above that hold what the secret guard takes
    /// for a credential: each is withheld from its list (a review output
    /// must not spread the credential further) and named here, with the
    /// field and the kind of credential, never the value.
    pub credentials: Vec<Finding>,
    /// Files of the base that do not decode (or are not regular files):
    /// their content is not compared.
    pub problems_at_base: Vec<Problem>,
    /// Files of the head that do not decode (or are not regular files):
    /// their content is not compared and never shown.
    pub problems_at_head: Vec<Problem>,
}

/// The curated entries a change affects (of [`MemoryDiff`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DiffEntries {
    /// Revisions of the head the base lacks, as the head holds them (one
    /// created and superseded within the change is listed superseded).
    pub created: Vec<Entry>,
    /// Revisions active at the base and superseded at the head, as the head
    /// holds them (`superseded_by` names the successor).
    pub superseded: Vec<Entry>,
    /// Revisions active at the base that left the memory without a
    /// successor: marked so at the head, or their record gone from
    /// curated.json.
    pub retracted: Vec<Entry>,
    /// Superseded revisions of the base whose record is gone from
    /// curated.json: history that curated.json keeps, deleted.
    pub removed: Vec<Entry>,
}

/// How the agent context changes (of [`MemoryDiff`]): lines, blank lines
/// left out, each in the order of its own revision's context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DiffContext {
    /// Lines of the head's context the base's lacks.
    pub added: Vec<String>,
    /// Lines of the base's context the head's lacks.
    pub removed: Vec<String>,
    /// Whether both contexts were rendered: false when a file one of them
    /// needs does not decode (see the problems), and then no line is
    /// listed.
    pub complete: bool,
}

/// One human decision of an audit stream, with what its revision says of
/// it (of [`MemoryDiff`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffDecision {
    /// The audit record.
    #[serde(flatten)]
    pub record: Adjudication,
    /// The memory key of its case, when the revision holds the case.
    pub memory_key: Option<String>,
    /// The wording of the chosen candidate, when the revision holds it.
    pub chosen_content: Option<String>,
    /// Why the decision does not close its case in the revision; `None`
    /// when it does.
    pub set_aside: Option<String>,
}

impl MemoryDiff {
    /// Returns what going from `base` to `head` changes in the memory:
    /// facts added and removed, decisions added, removed and set aside,
    /// curated entries created, superseded, retracted and removed, and the
    /// lines of the agent context (rendered from each revision's state as
    /// `workmem context` would, with `config`'s counts and budget) that
    /// change. Both snapshots are decoded with the readers' validation
    /// first; a file that does not decode is listed in the problems of its
    /// revision and left out of every comparison (in both revisions), and
    /// the context of a revision with such a file is not rendered.
    pub fn between(base: &MemorySnapshot, head: &MemorySnapshot, config: &Config) -> MemoryDiff {
        let (old, new) = (base.decode(), head.decode());
        let mut diff = MemoryDiff {
            problems_at_base: old.problems.clone(),
            problems_at_head: new.problems.clone(),
            ..MemoryDiff::default()
        };
        if let (Some(a), Some(b)) = (&old.workspace_id, &new.workspace_id)
            && a != b
            && base.pin.is_some()
            && head.pin.is_some()
        {
            let path = head.pin.as_ref().map(|(path, _)| path.clone()).unwrap_or_default();
            diff.problems_at_head.push(problem(
                &path,
                None,
                format!(
                    "the pinned workspace id changes from {a} to {b}: a merge refuses this change \
                     (revert the file)"
                ),
            ));
        }
        diff.compare_facts(&old, &new);
        diff.compare_decisions(&old, &new);
        diff.compare_entries(&old, &new);
        if let (Some(before), Some(after)) = (old.context(config), new.context(config)) {
            diff.context = context_lines(&before, &after);
        }
        diff.withhold_credentials(&head.root);
        diff
    }

    /// Moves every record that holds a credential out of its list into
    /// [`MemoryDiff::credentials`] (see there); `root` names the memory
    /// directory in the findings.
    fn withhold_credentials(&mut self, root: &Path) {
        let file = |name: &str| root.join(name).display().to_string();
        let mut found: Vec<Finding> = Vec::new();
        let mut finding = |file: String, record: String, fact_id: Option<&str>, hit: Hit| {
            found.push(Finding {
                file,
                line: None,
                fact_id: fact_id.map(str::to_owned),
                record: Some(record),
                field: hit.0.to_owned(),
                kind: hit.1,
            });
        };
        for (facts, list) in
            [(&mut self.facts_added, "added"), (&mut self.facts_removed, "removed")]
        {
            facts.retain(|fact| {
                let Some(hit) = fact_secret(fact) else { return true };
                let day = format!("{DAILY_DIR}/{}{DAY_EXTENSION}", fact.recorded_at.utc_day());
                finding(
                    file(&day),
                    format!("fact {} ({list})", fact.fact_id),
                    Some(&fact.fact_id),
                    hit,
                );
                false
            });
        }
        for (decisions, list) in [
            (&mut self.decisions_added, "added"),
            (&mut self.decisions_removed, "removed"),
            (&mut self.decisions_set_aside, "set aside"),
        ] {
            decisions.retain(|decision| {
                let Some(hit) = decision_secret(decision) else { return true };
                let record = format!("event {} ({list})", decision.record.event_id);
                finding(file(crate::store::names::AUDIT_FILE), record, None, hit);
                false
            });
        }
        let DiffEntries { created, superseded, retracted, removed } = &mut self.entries;
        for (entries, list) in [
            (created, "created"),
            (superseded, "superseded"),
            (retracted, "retracted"),
            (removed, "removed"),
        ] {
            entries.retain(|entry| {
                let Some(hit) = entry_secret(entry) else { return true };
                let record = format!("entry {} ({list})", entry.key);
                finding(file(crate::store::names::CURATED_FILE), record, None, hit);
                false
            });
        }
        for (lines, list) in
            [(&mut self.context.added, "added"), (&mut self.context.removed, "removed")]
        {
            lines.retain(|line| {
                let Some(kind) = secret::find(line) else { return true };
                let record = format!("context line ({list})");
                finding(root.display().to_string(), record, None, ("text", kind));
                false
            });
        }
        self.credentials = found;
    }

    /// Returns whether nothing changes and nothing failed to decode.
    pub fn is_empty(&self) -> bool {
        let MemoryDiff {
            facts_added,
            facts_removed,
            decisions_added,
            decisions_removed,
            decisions_set_aside,
            entries: DiffEntries { created, superseded, retracted, removed },
            context: DiffContext { added, removed: lines_removed, complete },
            credentials,
            problems_at_base,
            problems_at_head,
        } = self;
        facts_added.is_empty()
            && facts_removed.is_empty()
            && decisions_added.is_empty()
            && decisions_removed.is_empty()
            && decisions_set_aside.is_empty()
            && created.is_empty()
            && superseded.is_empty()
            && retracted.is_empty()
            && removed.is_empty()
            && added.is_empty()
            && lines_removed.is_empty()
            && *complete
            && credentials.is_empty()
            && problems_at_base.is_empty()
            && problems_at_head.is_empty()
    }

    /// Compares the facts of the daily files that decode in both revisions
    /// (or exist in one only), by id.
    fn compare_facts(&mut self, old: &Decoded, new: &Decoded) {
        let names: BTreeSet<&String> = old.days.keys().chain(new.days.keys()).collect();
        let none: Vec<Fact> = Vec::new();
        for name in names {
            let (Some(before), Some(after)) = (
                old.days.get(name).map_or(Some(&none), Option::as_ref),
                new.days.get(name).map_or(Some(&none), Option::as_ref),
            ) else {
                continue;
            };
            let before_ids: HashMap<&str, &Fact> =
                before.iter().map(|fact| (fact.fact_id.as_str(), fact)).collect();
            let after_ids: HashMap<&str, &Fact> =
                after.iter().map(|fact| (fact.fact_id.as_str(), fact)).collect();
            self.facts_added.extend(
                after
                    .iter()
                    .filter(|fact| before_ids.get(fact.fact_id.as_str()) != Some(fact))
                    .cloned(),
            );
            self.facts_removed.extend(
                before
                    .iter()
                    .filter(|fact| after_ids.get(fact.fact_id.as_str()) != Some(fact))
                    .cloned(),
            );
        }
        for facts in [&mut self.facts_added, &mut self.facts_removed] {
            facts.sort_by(|a, b| {
                (a.recorded_at.instant(), &a.fact_id).cmp(&(b.recorded_at.instant(), &b.fact_id))
            });
        }
    }

    /// Compares the audit streams by event id, and finds the decisions the
    /// head sets aside.
    fn compare_decisions(&mut self, old: &Decoded, new: &Decoded) {
        let none: Vec<Adjudication> = Vec::new();
        let (Ok(before), Ok(after)) = (old.audit.readable(), new.audit.readable()) else {
            return;
        };
        let (before, after) = (before.unwrap_or(&none), after.unwrap_or(&none));
        let before_ids: HashMap<&str, &Adjudication> =
            before.iter().map(|record| (record.event_id.as_str(), record)).collect();
        let after_ids: HashMap<&str, &Adjudication> =
            after.iter().map(|record| (record.event_id.as_str(), record)).collect();
        for record in after {
            let earlier = before_ids.get(record.event_id.as_str()).copied();
            let decision = new.decision(record);
            if earlier != Some(record) {
                self.decisions_added.push(decision.clone());
            }
            // Set aside by this change: it held at the base (or is new)
            // and does not hold at the head.
            let held = earlier.is_none_or(|earlier| old.set_aside(earlier).is_none());
            if held && decision.set_aside.is_some() && new.conflicts.readable().is_ok() {
                self.decisions_set_aside.push(decision);
            }
        }
        for record in before {
            if after_ids.get(record.event_id.as_str()) != Some(&record) {
                self.decisions_removed.push(old.decision(record));
            }
        }
    }

    /// Compares the curated entries by key.
    fn compare_entries(&mut self, old: &Decoded, new: &Decoded) {
        let (Ok(before), Ok(after)) = (old.curated.readable(), new.curated.readable()) else {
            return;
        };
        let empty = CuratedState::new();
        let (before, after) = (before.unwrap_or(&empty), after.unwrap_or(&empty));
        let before_keys: HashMap<&str, &Entry> =
            before.entries.iter().map(|entry| (entry.key.as_str(), entry)).collect();
        let after_keys: HashMap<&str, &Entry> =
            after.entries.iter().map(|entry| (entry.key.as_str(), entry)).collect();
        for entry in &after.entries {
            match before_keys.get(entry.key.as_str()) {
                None => self.entries.created.push(entry.clone()),
                Some(earlier) if earlier.is_active() && !entry.is_active() => {
                    if entry.status == Status::Superseded {
                        self.entries.superseded.push(entry.clone());
                    } else {
                        self.entries.retracted.push(entry.clone());
                    }
                }
                Some(_) => {}
            }
        }
        for entry in &before.entries {
            if !after_keys.contains_key(entry.key.as_str()) {
                if entry.is_active() {
                    self.entries.retracted.push(entry.clone());
                } else {
                    self.entries.removed.push(entry.clone());
                }
            }
        }
    }
}

/// A credential found in a record: the field and the kind.
type Hit = (&'static str, &'static str);

/// Returns the first text of `fields` that holds a credential.
fn first_secret<'a>(fields: impl IntoIterator<Item = (&'static str, &'a str)>) -> Option<Hit> {
    fields.into_iter().find_map(|(field, text)| secret::find(text).map(|kind| (field, kind)))
}

fn fact_secret(fact: &Fact) -> Option<Hit> {
    let fields = [
        ("content", fact.content.as_str()),
        ("memory_key", fact.memory_key.as_deref().unwrap_or_default()),
        ("source", fact.source.as_str()),
    ];
    first_secret(fields).or_else(|| {
        fact.evidence.iter().find_map(|(key, value)| {
            secret::find(key).map(|kind| ("evidence key", kind)).or_else(|| {
                secret::find(value)
                    .or_else(|| secret::find_in_pair(key, value))
                    .map(|kind| ("evidence value", kind))
            })
        })
    })
}

fn decision_secret(decision: &DiffDecision) -> Option<Hit> {
    first_secret([
        ("actor", decision.record.actor.as_str()),
        ("rationale", decision.record.rationale.as_str()),
        ("chosen_content", decision.chosen_content.as_deref().unwrap_or_default()),
        ("memory_key", decision.memory_key.as_deref().unwrap_or_default()),
    ])
}

fn entry_secret(entry: &Entry) -> Option<Hit> {
    first_secret([
        ("content", entry.content.as_str()),
        ("memory_key", entry.memory_key.as_deref().unwrap_or_default()),
    ])
}

/// Returns the lines of `after` that `before` lacks and those of `before`
/// that `after` lacks, counting repeated lines, blank lines left out.
fn context_lines(before: &str, after: &str) -> DiffContext {
    fn only_in(these: &str, others: &str) -> Vec<String> {
        let mut left: HashMap<&str, usize> = HashMap::new();
        for line in others.lines() {
            *left.entry(line).or_default() += 1;
        }
        let mut out = Vec::new();
        for line in these.lines().filter(|line| !line.trim().is_empty()) {
            match left.get_mut(line) {
                Some(count) if *count > 0 => *count -= 1,
                _ => out.push(line.to_owned()),
            }
        }
        out
    }
    DiffContext { added: only_in(after, before), removed: only_in(before, after), complete: true }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef";
    const DAY: &str = "daily/2026-01-05.jsonl";

    fn fact(id: &str, content: &str, workspace: &str) -> String {
        format!(
            "{{\"content\": \"{content}\", \"evidence\": {{}}, \"fact_id\": \"{id}\", \
             \"importance\": 3, \"kind\": \"outcome\", \"memory_key\": null, \
             \"recorded_at\": \"2026-01-05T09:00:00Z\", \"schema_version\": 2, \
             \"source\": \"agent\", \"workspace_id\": \"{workspace}\"}}\n"
        )
    }

    fn snapshot(log: &str) -> MemorySnapshot {
        MemorySnapshot::new("mem").with_file(DAY, Some(log.as_bytes().to_vec()))
    }

    fn pin(id: &str) -> Vec<u8> {
        format!("id = \"{id}\"\n").into_bytes()
    }

    #[test]
    fn an_appended_fact_is_added_and_a_rewritten_line_is_removed_and_added() {
        let base = snapshot(&fact("f-1", "first", ID));
        let appended = snapshot(&(fact("f-1", "first", ID) + &fact("f-2", "second", ID)));
        let diff = MemoryDiff::between(&base, &appended, &Config::default());
        assert_eq!(diff.facts_added.iter().map(Fact::fact_id).collect::<Vec<_>>(), ["f-2"]);
        assert!(diff.facts_removed.is_empty());
        assert_eq!(diff.context.added, ["- [outcome] second (2026-01-05)"]);

        let rewritten = snapshot(&fact("f-1", "changed", ID));
        let diff = MemoryDiff::between(&base, &rewritten, &Config::default());
        assert_eq!(diff.facts_removed.iter().map(Fact::content).collect::<Vec<_>>(), ["first"]);
        assert_eq!(diff.facts_added.iter().map(Fact::content).collect::<Vec<_>>(), ["changed"]);
        assert!(MemoryDiff::between(&base, &base, &Config::default()).is_empty());
    }

    #[test]
    fn records_of_another_workspace_and_a_changed_pin_are_problems_of_the_head() {
        let base = snapshot(&fact("f-1", "first", ID)).with_pin("ws.toml", Some(pin(ID)));
        let other = "fedcba9876543210";
        let head = snapshot(&(fact("f-1", "first", ID) + &fact("f-2", "theirs", other)))
            .with_pin("ws.toml", Some(pin(ID)));
        let diff = MemoryDiff::between(&base, &head, &Config::default());
        assert!(diff.facts_added.is_empty() && diff.facts_removed.is_empty());
        assert!(!diff.context.complete);
        let problem = &diff.problems_at_head[0];
        assert_eq!((problem.file.as_str(), problem.line), ("mem/daily/2026-01-05.jsonl", Some(2)));
        assert!(problem.message.contains(other), "{}", problem.message);

        let repinned = snapshot(&fact("f-1", "first", ID)).with_pin("ws.toml", Some(pin(other)));
        let diff = MemoryDiff::between(&base, &repinned, &Config::default());
        assert!(
            diff.problems_at_head
                .iter()
                .any(|p| p.file == "ws.toml" && p.message.contains("pinned workspace id changes")),
            "{:?}",
            diff.problems_at_head
        );
    }

    #[test]
    fn a_journal_in_flight_and_a_non_regular_file_are_reported() {
        let base = snapshot(&fact("f-1", "first", ID));
        let head = snapshot(&fact("f-1", "first", ID))
            .with_file("conflict-resolution-transactions.jsonl", Some(b"{}\n".to_vec()))
            .with_file("curated.json", None)
            .with_file("notes/other.txt", Some(b"\x1b]0;x".to_vec()));
        let diff = MemoryDiff::between(&base, &head, &Config::default());
        let files: Vec<&str> = diff.problems_at_head.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(files, ["mem/curated.json", "mem/conflict-resolution-transactions.jsonl"]);
        assert!(diff.problems_at_head[0].message.contains("not a regular file"));

        for (name, file) in [("", "mem"), ("daily", "mem/daily")] {
            let replaced = MemorySnapshot::new("mem").with_file(name, None);
            let diff = MemoryDiff::between(&base, &replaced, &Config::default());
            assert_eq!(diff.problems_at_head.len(), 1);
            assert_eq!(diff.problems_at_head[0].file, file);
            assert!(diff.problems_at_head[0].message.contains("is not a directory"));
        }
    }
}
