//! `verify`: a read-only check of every durable file of a workspace against
//! the invariants of docs/format.md and the journal protocol of section 7.
//! It reports every problem it finds, each with its file and, where there
//! is one, its line, and never writes: no recovery, no MEMORY.md repair, no
//! cache, no lock file, no directory. Work a crash left unfinished (an
//! uncommitted transaction, a leftover distill intent) and a tampered
//! journal are problems in the list like any other; finishing them is the
//! job of the next writing command. Call it on a handle from
//! [`crate::WorkspaceBuilder::open_read_only`] to check a workspace as it is
//! on disk.
//!
//! Beyond the load-time invariants of docs/format.md, it cross-checks the
//! files (docs/design.md, "derived state is checked"): evidence cited by
//! entries and candidates is in the log; each entry's wording is the
//! content of one of its evidence facts; every resolved case has exactly
//! one matching audit record and every audit record a resolved case; and
//! audit records equal the adjudication of the journal's unfinished
//! transactions, whose targets are checked as recovery would check them
//! (of a committed transaction only the form is checked: at rest the
//! journal is empty).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Serialize;

use crate::error::{Damage, Error, Result};
use crate::model::fact::Fact;
use crate::policy::check::{self, FactDigest, Facts};
use crate::policy::projection::Projection;
use crate::store::conflict_queue::{Case, CaseStatus, ConflictQueue};
use crate::store::curated_state::CuratedState;
use crate::store::journal::{self, Adjudication, Phase, Transaction};
use crate::store::memory_dir::{ReadOnlyMemoryDir, lines};
use crate::store::names::{
    AUDIT_FILE, CONFLICTS_FILE, CURATED_FILE, DISTILL_INTENT_FILE, JOURNAL_FILE, LOCK_FILE,
    MEMORY_FILE,
};
use crate::store::state_file::Output;
use crate::workspace::Workspace;

/// One violated invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file, as a path.
    pub file: String,
    /// The 1-based line, where the file has lines that matter.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// What is wrong, typed, when the problem is damage a caller may act
    /// on (say how to get out of): the message says the same in words.
    #[serde(skip)]
    pub damage: Option<Damage>,
}

/// Returns a problem of `path` (at `line`).
pub(crate) fn problem(path: &Path, line: Option<usize>, message: impl Into<String>) -> Problem {
    Problem { file: path.display().to_string(), line, message: message.into(), damage: None }
}

/// Returns a problem of `path` (at `line`) that is `damage`, in the words
/// of `message` (the damage's own when `None`).
pub(crate) fn damaged(
    path: &Path,
    line: Option<usize>,
    damage: Damage,
    message: Option<String>,
) -> Problem {
    let message = message.unwrap_or_else(|| damage.to_string());
    Problem { file: path.display().to_string(), line, message, damage: Some(damage) }
}

/// Returns the problem a decoder's error names (about `fallback` when the
/// error names no file).
pub(crate) fn from_error(err: Error, fallback: &Path) -> Problem {
    match err {
        Error::Corrupt { location, damage } => damaged(&location.path, location.line, damage, None),
        Error::Scope { location, found, expected } => problem(
            &location.path,
            location.line,
            format!("belongs to workspace {found}, not {expected}"),
        ),
        Error::UnsupportedVersion { location, what, found, supported } => problem(
            &location.path,
            location.line,
            format!("unsupported {what} schema_version {found} (supported: {supported})"),
        ),
        other => problem(fallback, None, other.to_string()),
    }
}

/// The line of each entry key and conflict id of a state file's text
/// (curated.json or conflicts.json), so that a problem names its line
/// without a scan of the text per problem.
#[derive(Default)]
struct SubjectLines(HashMap<String, usize>);

impl SubjectLines {
    fn new(text: &str) -> SubjectLines {
        let mut lines = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim_start();
            let Some(rest) = line
                .strip_prefix("\"key\": \"")
                .or_else(|| line.strip_prefix("\"conflict_id\": \""))
            else {
                continue;
            };
            if let Some((subject, _)) = rest.split_once('"') {
                lines.entry(subject.to_owned()).or_insert(index + 1);
            }
        }
        SubjectLines(lines)
    }

    /// Returns the 1-based line that defines `subject`.
    fn of(&self, subject: Option<&str>) -> Option<usize> {
        self.0.get(subject?).copied()
    }
}

impl Workspace {
    /// Checks every durable file and returns the problems found (empty when
    /// the workspace is clean). Never writes, and reports rather than
    /// fails: unreadable or damaged files, unfinished transactions, a
    /// tampered journal and a missing memory directory are all problems in
    /// the list.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{NewFact, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// ws.init()?;
    /// ws.remember(NewFact::new("Release 1.2 shipped"))?;
    /// // A read-only handle checks the state as it is, and never repairs it.
    /// let checker = Workspace::builder(project.path()).open_read_only()?;
    /// assert!(checker.verify()?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: none in practice; the `Result` is kept for callers.
    #[expect(
        clippy::too_many_lines,
        reason = "each memory file checked in turn into one list of problems, keeping the records that the later checks of the other files reuse"
    )]
    pub fn verify(&self) -> Result<Vec<Problem>> {
        let mut problems = Vec::new();
        match std::fs::metadata(self.memory_dir()) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                problems.push(problem(
                    self.memory_dir(),
                    None,
                    "memory directory is not a directory",
                ));
                return Ok(problems);
            }
            // A clone of a shared memory that holds nothing yet: git
            // carries no empty directory, only the pin.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && self.is_pinned() => {
                return Ok(problems);
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                problems.push(damaged(self.memory_dir(), None, Damage::NoMemoryDir, None));
                return Ok(problems);
            }
            Err(err) => {
                problems.push(problem(
                    self.memory_dir(),
                    None,
                    format!("memory directory cannot be read ({})", err.kind()),
                ));
                return Ok(problems);
            }
        }
        problems.extend(self.deleted_state_problems());
        let (mut facts, ambiguous) = self.verify_logs(&mut problems);

        let curated_path = self.file(CURATED_FILE);
        let mut curated: Option<CuratedState> = None;
        let mut curated_lines = SubjectLines::default();
        if let Some(data) = read(&self.dir, &curated_path, &mut problems) {
            // The text is only needed for the lines of its records: kept as
            // their index, not as a second copy of the file.
            curated_lines = SubjectLines::new(&String::from_utf8_lossy(&data));
            match CuratedState::decode(&data, &curated_path, self.workspace_id()) {
                Err(err) => problems.push(from_error(err, &curated_path)),
                Ok(state) => {
                    let lines = &curated_lines;
                    for entry in &state.entries {
                        let mut cited = 0;
                        let mut worded = false;
                        for id in &entry.evidence_ids {
                            if let Some(fact) = facts.get(id) {
                                cited += 1;
                                // An id used twice with other content: any
                                // of its versions may have been the one read.
                                worded |= fact.has_content(&entry.content)
                                    || ambiguous.get(id).is_some_and(|v| {
                                        v.iter().any(|f| f.has_content(&entry.content))
                                    });
                            } else {
                                let message = format!(
                                    "entry {} cites fact {id}, which is not in the log",
                                    entry.key
                                );
                                problems.push(problem(
                                    &curated_path,
                                    lines.of(Some(&entry.key)),
                                    message,
                                ));
                            }
                        }
                        // Every wording comes from a fact (docs/policy.md): another
                        // wording was put there by hand. (With no evidence
                        // in the log, the missing facts are the problem.)
                        if cited > 0 && !worded {
                            let message = format!(
                                "entry {} has wording that is not the content of any of its evidence facts",
                                entry.key
                            );
                            problems.push(problem(
                                &curated_path,
                                lines.of(Some(&entry.key)),
                                message,
                            ));
                        }
                    }
                    curated = Some(state);
                }
            }
            // decode stops at the first violation; list every one.
            if let Ok(raw) = serde_json::from_slice::<serde_json::Value>(&data)
                && let Some(entries) = raw.get("entries").cloned()
                && let Ok(entries) = serde_json::from_value(entries)
            {
                let state = CuratedState { schema_version: 2, entries };
                let lines = &curated_lines;
                let first = problems
                    .iter()
                    .position(|p| p.file == curated_path.display().to_string() && p.line.is_none());
                let listed = state.problems();
                if !listed.is_empty() {
                    if let Some(index) = first {
                        problems.remove(index);
                    }
                    for finding in listed {
                        let line = lines.of(finding.subject.as_deref());
                        problems.push(problem(&curated_path, line, finding.message));
                    }
                }
            }
        }

        let conflicts_path = self.file(CONFLICTS_FILE);
        let mut queue = ConflictQueue::default();
        let mut queue_valid = true;
        let mut conflicts_text = String::new();
        if let Some(data) = read(&self.dir, &conflicts_path, &mut problems) {
            conflicts_text = String::from_utf8_lossy(&data).into_owned();
            match ConflictQueue::decode(&data, &conflicts_path, self.workspace_id()) {
                Ok(decoded) => queue = decoded,
                Err(err) => {
                    queue_valid = false;
                    let listed = serde_json::from_slice::<serde_json::Value>(&data)
                        .ok()
                        .and_then(|raw| raw.get("cases").cloned())
                        .and_then(|cases| serde_json::from_value(cases).ok())
                        .map(|cases| ConflictQueue::of(cases).problems(self.workspace_id()))
                        .unwrap_or_default();
                    if listed.is_empty() {
                        problems.push(from_error(err, &conflicts_path));
                    }
                    let lines = SubjectLines::new(&conflicts_text);
                    for finding in listed {
                        let line = lines.of(finding.subject.as_deref());
                        problems.push(problem(&conflicts_path, line, finding.message));
                    }
                }
            }
        }
        for case in &queue.cases {
            for candidate in &case.candidates {
                for id in candidate.evidence_ids.iter().filter(|id| !facts.contains(id)) {
                    problems.push(problem(
                        &conflicts_path,
                        None,
                        format!(
                            "case {} candidate {} cites fact {id}, which is not in the log",
                            case.conflict_id, candidate.candidate_id
                        ),
                    ));
                }
            }
        }

        let records = self.read_audit(&mut problems);
        let corrected =
            self.verify_corrections(&facts, &records, curated.as_ref(), &queue, &mut problems);
        // The policy checks skip an id used twice with other content: which
        // version a run read is not known (the duplicate is reported).
        facts.remove_all(&ambiguous.keys().map(String::as_str).collect());
        let found = check::check(
            &facts,
            curated.as_ref(),
            queue_valid.then_some(&queue),
            &records.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(),
            &corrected.iter().map(String::as_str).collect(),
        );
        let conflicts_lines = SubjectLines::new(&conflicts_text);
        for finding in found.curated {
            let line = curated_lines.of(finding.subject.as_deref());
            problems.push(problem(&curated_path, line, finding.message));
        }
        for finding in found.conflicts {
            let line = conflicts_lines.of(finding.subject.as_deref());
            problems.push(problem(&conflicts_path, line, finding.message));
        }

        let transactions = self.verify_journal(&mut problems);
        self.verify_audit(
            &records,
            &queue,
            &conflicts_text,
            transactions.as_deref(),
            &mut problems,
        );
        self.verify_views(curated.as_ref(), &mut problems);
        Ok(problems)
    }

    /// Checks the files every command opens besides the state: MEMORY.md
    /// and the lock must be regular files (a link, a directory or a FIFO
    /// from a branch would make `memory`, `context` or `distill` fail),
    /// and MEMORY.md must be the rendering of curated.json.
    fn verify_views(&self, curated: Option<&CuratedState>, problems: &mut Vec<Problem>) {
        for name in [MEMORY_FILE, LOCK_FILE] {
            let path = self.file(name);
            match self.dir.symlink_metadata(name) {
                Ok(meta) if meta.is_file() => {}
                Ok(meta) => problems.push(problem(
                    &path,
                    None,
                    format!(
                        "{name} is {}, not a regular file; remove it (it is written again)",
                        ReadOnlyMemoryDir::kind_of(&meta)
                    ),
                )),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => problems.push(problem(
                    &path,
                    None,
                    format!("{name} cannot be read ({})", err.kind()),
                )),
            }
        }
        // A MEMORY.md older than curated.json is only stale (a merge or a
        // pull replaced curated.json; the next reader renders it again). One
        // written after curated.json that says something else was edited.
        let path = self.file(MEMORY_FILE);
        let Some(state) = curated else { return };
        let modified = |name: &str| self.dir.symlink_metadata(name).and_then(|m| m.modified()).ok();
        if modified(MEMORY_FILE) < modified(CURATED_FILE) {
            return;
        }
        let rendered = Projection::of_entries(&state.entries).render_memory();
        match self.dir.symlink_metadata(MEMORY_FILE) {
            Ok(meta) if meta.is_file() => match self.dir.read_raw(MEMORY_FILE) {
                Ok(data) if data == rendered.as_bytes() => {}
                Ok(_) => problems.push(problem(
                    &path,
                    Some(1),
                    "MEMORY.md was edited: it is not the rendering of curated.json; it is never \
                     served, and the next command that reads the memory renders it again",
                )),
                Err(err) => problems.push(problem(
                    &path,
                    None,
                    format!("MEMORY.md cannot be read ({})", err.kind()),
                )),
            },
            _ => {}
        }
    }

    /// Checks every daily log; returns the facts (the first of each id)
    /// and, for each id used again with other content, its other versions.
    fn verify_logs(
        &self,
        problems: &mut Vec<Problem>,
    ) -> (Facts, HashMap<String, Vec<FactDigest>>) {
        let mut facts = Facts::default();
        let mut ambiguous: HashMap<String, Vec<FactDigest>> = HashMap::new();
        let days = match self.log().days() {
            Ok(days) => days,
            Err(err) => {
                problems.push(from_error(err, self.log().dir()));
                return (facts, ambiguous);
            }
        };
        for (index, day) in days.iter().enumerate() {
            let Some(data) = read(&self.dir, &day.path, problems) else { continue };
            for (number, bytes, terminated) in lines(&data) {
                match Fact::parse_line(bytes) {
                    Err(_) if !terminated => {}
                    Err(message) => {
                        problems.push(problem(&day.path, Some(number), message.to_string()));
                    }
                    Ok(fact) => {
                        if fact.workspace_id != self.workspace_id() {
                            problems.push(problem(
                                &day.path,
                                Some(number),
                                format!(
                                    "belongs to workspace {}, not {}",
                                    fact.workspace_id,
                                    self.workspace_id()
                                ),
                            ));
                            continue;
                        }
                        if fact.recorded_at.utc_day() != day.day {
                            problems.push(problem(
                                &day.path,
                                Some(number),
                                format!(
                                    "fact {} was recorded on {}, not {}",
                                    fact.fact_id,
                                    fact.recorded_at.utc_day(),
                                    day.day
                                ),
                            ));
                        }
                        let place = (
                            u32::try_from(index).unwrap_or(u32::MAX),
                            u32::try_from(number).unwrap_or(u32::MAX),
                        );
                        let digest = facts.digest(&fact, place);
                        facts.push(&fact.fact_id, digest);
                    }
                }
            }
        }
        for (id, digest) in facts.seal() {
            let (file, line) = digest.place();
            let path = days.get(file as usize).map_or(self.log().dir(), |day| day.path.as_path());
            problems.push(problem(
                path,
                Some(line as usize),
                format!("fact id {id} is used twice with different content"),
            ));
            ambiguous.entry(id.into()).or_default().push(digest);
        }
        (facts, ambiguous)
    }

    fn read_audit(&self, problems: &mut Vec<Problem>) -> Vec<(usize, Adjudication)> {
        let path = self.file(AUDIT_FILE);
        let mut records: Vec<(usize, Adjudication)> = Vec::new();
        let mut events = HashSet::new();
        for (number, bytes, terminated) in
            read(&self.dir, &path, problems).as_deref().map(lines).into_iter().flatten()
        {
            if !terminated {
                break;
            }
            let record = match journal::parse_record::<Adjudication>(bytes) {
                Ok(record) => record,
                Err(message) => {
                    problems.push(problem(&path, Some(number), message.to_string()));
                    continue;
                }
            };
            if record.workspace_id != self.workspace_id() {
                problems.push(problem(
                    &path,
                    Some(number),
                    format!("belongs to workspace {}", record.workspace_id),
                ));
            }
            if !events.insert(record.event_id.clone()) {
                problems.push(problem(
                    &path,
                    Some(number),
                    format!("event id {} appears twice", record.event_id),
                ));
            }
            records.push((number, record));
        }
        records
    }

    #[expect(
        clippy::too_many_lines,
        reason = "the checks of the audit stream against the queue and the journal, in order, each over the same maps of records by case and event"
    )]
    fn verify_audit(
        &self,
        records: &[(usize, Adjudication)],
        queue: &ConflictQueue,
        conflicts_text: &str,
        transactions: Option<&[Transaction]>,
        problems: &mut Vec<Problem>,
    ) {
        let path = self.file(AUDIT_FILE);

        // Every record closes a case, with the decision the case records,
        // or is a decision a merge set aside (docs/sharing.md): one of two
        // or more records about one case, naming one of its candidates.
        let mut per_case: HashMap<&str, usize> = HashMap::new();
        for (_, record) in records {
            *per_case.entry(record.conflict_id.as_str()).or_default() += 1;
        }
        let cases: HashMap<&str, &Case> =
            queue.cases.iter().map(|case| (case.conflict_id.as_str(), case)).collect();
        // A case `rebuild` derived again carries the decision under a new
        // conflict id (the facts it observes grew since): matched by event.
        let reapplied: HashMap<&str, &Case> = queue
            .cases
            .iter()
            .filter_map(|c| Some((c.resolution_event_id.as_deref()?, c)))
            .filter(|(event, c)| {
                records.iter().any(|(_, r)| r.event_id == *event && r.conflict_id != c.conflict_id)
            })
            .collect();
        for (number, record) in records {
            let (event, conflict) = (&record.event_id, &record.conflict_id);
            let message = match (cases.get(conflict.as_str()), reapplied.get(event.as_str())) {
                (_, Some(case)) => {
                    let differing: Vec<&str> = differing_fields(case, record)
                        .into_iter()
                        .filter(|f| *f != "resulting_active_entry_key")
                        .collect();
                    (!differing.is_empty()).then(|| {
                        format!(
                            "adjudication {event} differs from case {}, which re-applies it, in {}",
                            case.conflict_id,
                            differing.join(", ")
                        )
                    })
                }
                (None, None) => Some(format!(
                    "adjudication {event} names conflict {conflict}, which is not in conflicts.json"
                )),
                (Some(case), None)
                    if case.resolution_event_id.as_deref() != Some(event.as_str())
                        && per_case.get(conflict.as_str()).copied().unwrap_or(0) > 1
                        && case.candidate(&record.selected_candidate_id).is_some() =>
                {
                    set_aside_problem(case, record, records)
                }
                (Some(case), None)
                    if case.resolution_event_id.as_deref() != Some(event.as_str()) =>
                {
                    Some(format!(
                        "adjudication {event} has no matching resolved case: conflict {conflict} is {}{}",
                        case.status.as_str(),
                        case.resolution_event_id
                            .as_deref()
                            .map(|e| format!(" by event {e}"))
                            .unwrap_or_default()
                    ))
                }
                (Some(case), None) => {
                    let differing = differing_fields(case, record);
                    (!differing.is_empty()).then(|| {
                        format!(
                            "adjudication {event} differs from resolved case {conflict} in {}",
                            differing.join(", ")
                        )
                    })
                }
            };
            if let Some(message) = message {
                problems.push(problem(&path, Some(*number), message));
            }
        }
        // Every resolved case has its record.
        let conflicts_path = self.file(CONFLICTS_FILE);
        let recorded: HashSet<(&str, &str)> =
            records.iter().map(|(_, r)| (r.event_id.as_str(), r.conflict_id.as_str())).collect();
        let lines = SubjectLines::new(conflicts_text);
        for case in queue.cases.iter().filter(|c| c.status == CaseStatus::Resolved) {
            let event = case.resolution_event_id.as_deref().unwrap_or_default();
            let matched = recorded.contains(&(event, case.conflict_id.as_str()))
                || reapplied.get(event).is_some_and(|c| c.conflict_id == case.conflict_id);
            if !matched {
                let message = format!(
                    "resolved case {} has no adjudication {event} in {AUDIT_FILE}",
                    case.conflict_id
                );
                problems.push(problem(&conflicts_path, lines.of(Some(&case.conflict_id)), message));
            }
        }
        // Records equal the intent of the unfinished transaction that
        // writes them (a committed transaction's intent is not used: the
        // audit stream is the history).
        let journal_path = self.dir.journal().path().to_owned();
        for transaction in transactions.unwrap_or_default() {
            let Some(intent) = &transaction.intent else { continue };
            let intended = &intent.adjudication;
            match records.iter().find(|(_, r)| r.event_id == intended.event_id) {
                Some((number, record)) if record != intended => problems.push(problem(
                    &path,
                    Some(*number),
                    format!(
                        "adjudication {} differs from the one transaction {} of {JOURNAL_FILE} recorded",
                        record.event_id, transaction.transaction_id
                    ),
                )),
                Some(_) => {}
                None if transaction.done.contains(&Phase::AuditAppended) => problems.push(problem(
                    &journal_path,
                    Some(transaction.first_line),
                    format!(
                        "transaction {} appended adjudication {}, which is missing from {AUDIT_FILE}",
                        transaction.transaction_id, intended.event_id
                    ),
                )),
                None => {}
            }
        }
    }

    /// Checks the journal and reports unfinished work; returns the
    /// transactions when the journal could be read.
    fn verify_journal(&self, problems: &mut Vec<Problem>) -> Option<Vec<Transaction>> {
        if self.distill_pending() {
            let path = self.file(DISTILL_INTENT_FILE);
            let own = self.dir.read_path(&path).ok().flatten().is_some_and(|data| {
                crate::store::journal_owner::is_own_distill_intent(self.dir.path(), &path, &data)
                    .unwrap_or(false)
            });
            problems.push(if own {
                problem(
                    &path,
                    None,
                    "a distill was interrupted between its writes; the next writing command (e.g. distill) finishes it",
                )
            } else {
                damaged(&path, None, Damage::ForeignDistillIntent, None)
            });
        }
        let path = self.dir.journal().path().to_owned();
        // Work this clone did not prepare (a journal that arrived through
        // git or was copied) is never applied: reported, and left out of
        // the checks of what recovery would do.
        let foreign = match self.journal() {
            Ok(report) if report.unreadable.is_some() && !report.written_here => {
                let detail = report.unreadable.clone().unwrap_or_default();
                problems.push(damaged(&path, None, Damage::ForeignJournal { detail }, None));
                return None;
            }
            Ok(report) => report
                .transactions
                .into_iter()
                .filter(|t| !t.prepared_here)
                .map(|t| t.transaction_id)
                .collect::<Vec<_>>(),
            Err(err) => {
                problems.push(from_error(err, &path));
                return None;
            }
        };
        match self.dir.journal().transactions() {
            Err(err) => {
                problems.push(from_error(err, &path));
                None
            }
            Ok(mut transactions) => {
                for t in transactions.iter().filter(|t| foreign.contains(&t.transaction_id)) {
                    let by = t.intent.as_ref().map_or_else(String::new, |intent| {
                        format!(
                            " (a decision by {:?} on case {})",
                            intent.adjudication.actor, intent.adjudication.conflict_id
                        )
                    });
                    let decision = t.intent.as_ref().map(|intent| {
                        (intent.adjudication.actor.clone(), intent.adjudication.conflict_id.clone())
                    });
                    let message = format!(
                        "transaction {}{by} was not prepared by this clone (it arrived through \
                         git or was copied); it is never applied, and writing commands refuse \
                         to run until it is gone",
                        t.transaction_id
                    );
                    let damage = Damage::ForeignTransaction {
                        transaction_id: t.transaction_id.clone(),
                        decision,
                    };
                    problems.push(damaged(&path, Some(t.first_line), damage, Some(message)));
                }
                transactions.retain(|t| !foreign.contains(&t.transaction_id));
                for t in transactions.iter().filter(|t| !t.committed()) {
                    problems.push(problem(
                        &path,
                        Some(t.first_line),
                        format!(
                            "transaction {} is not committed (last phase {}); the next writing command finishes it",
                            t.transaction_id,
                            t.done.last().map_or("none".to_owned(), ToString::to_string)
                        ),
                    ));
                    // Would recovery finish it, or stop? Checked as recovery
                    // checks, without writing. (A file that cannot be read
                    // at all is reported by its own check.)
                    if let Some(intent) = &t.intent
                        && let Err(err @ Error::Corrupt { .. }) =
                            self.recovery_targets(intent, Output::Held)
                        && err.to_string().contains(&intent.transaction_id)
                    {
                        problems.push(from_error(err, &path));
                    }
                }
                Some(transactions)
            }
        }
    }
}

/// Returns the bytes of `path`, `None` when it does not exist or cannot be
/// read (which is reported).
fn read(dir: &ReadOnlyMemoryDir, path: &Path, problems: &mut Vec<Problem>) -> Option<Vec<u8>> {
    match dir.read_path(path) {
        Ok(data) => data,
        Err(err) => {
            problems.push(from_error(err, path));
            None
        }
    }
}

/// A decision a merge set aside (one of two or more records about one
/// case) must be explained by the merge rule: decisions for different
/// candidates leave the case open again, so the one that closes it came
/// after the others; decisions that all chose the same candidate are
/// closed by the earliest. Returns what is wrong.
fn set_aside_problem(
    case: &Case,
    record: &Adjudication,
    records: &[(usize, Adjudication)],
) -> Option<String> {
    if case.status != CaseStatus::Resolved {
        return None;
    }
    let (event, conflict) = (&record.event_id, &record.conflict_id);
    let about: Vec<&Adjudication> =
        records.iter().map(|(_, r)| r).filter(|r| r.conflict_id == *conflict).collect();
    let closing =
        about.iter().find(|r| case.resolution_event_id.as_deref() == Some(r.event_id.as_str()))?;
    let order = |r: &Adjudication| (r.resolved_at.instant(), r.event_id.clone());
    let disagree = about.iter().any(|r| r.selected_candidate_id != closing.selected_candidate_id);
    if disagree {
        // Reopened, then decided again: the closing decision was made after
        // the merge brought the others (an equal instant is given the
        // benefit of the doubt).
        (record.resolved_at.instant() > closing.resolved_at.instant()).then(|| {
            format!(
                "adjudication {event} on case {conflict} disagrees with {}, which closes the case, \
                 and was made after it: two different decisions leave a case open for a person",
                closing.event_id
            )
        })
    } else {
        (order(record) < order(closing)).then(|| {
            format!(
                "adjudication {event} made the same decision on case {conflict} earlier than {}, \
                 which closes it: the earlier decision closes a case",
                closing.event_id
            )
        })
    }
}

/// Returns the names of the decision fields in which an audit record and
/// the case it resolved disagree.
fn differing_fields(case: &Case, record: &Adjudication) -> Vec<&'static str> {
    // `case_revision` is the revision the reviewer saw; a merge may have
    // renumbered the case since (docs/sharing.md), so it is not compared.
    let mut out = Vec::new();
    if case.selected_candidate_id.as_deref() != Some(record.selected_candidate_id.as_str()) {
        out.push("selected_candidate_id");
    }
    if case.resolution_actor.as_deref() != Some(record.actor.as_str()) {
        out.push("actor");
    }
    if case.resolution_rationale.as_deref() != Some(record.rationale.as_str()) {
        out.push("rationale");
    }
    if case.resolved_at.as_ref() != Some(&record.resolved_at) {
        out.push("resolved_at");
    }
    if case.resulting_active_entry_key.as_deref()
        != Some(record.resulting_active_entry_key.as_str())
    {
        out.push("resulting_active_entry_key");
    }
    out
}
