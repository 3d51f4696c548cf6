//! `verify`: a read-only check of every durable file of a workspace against
//! the invariants of SPEC section 4 and the journal protocol of section 7.
//! It reports every problem it finds, each with its file and, where there
//! is one, its line, and never writes.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Serialize;

use crate::atomic_io;
use crate::conflict_queue::{CaseStatus, ConflictQueue};
use crate::curated_state::CuratedState;
use crate::error::{Error, Result};
use crate::fact::Fact;
use crate::journal::{self, AUDIT_FILE, Adjudication, JOURNAL_FILE};
use crate::workspace::{CONFLICTS_FILE, CURATED_FILE, Workspace};

/// One violated invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file, as a path.
    pub file: String,
    /// The 1-based line, where the file has lines that matter.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

fn problem(path: &Path, line: Option<usize>, message: impl Into<String>) -> Problem {
    Problem { file: path.display().to_string(), line, message: message.into() }
}

fn from_error(err: Error, fallback: &Path) -> Problem {
    match err {
        Error::Corrupt { location, message } => problem(&location.path, location.line, message),
        Error::Scope { location, found, expected } => {
            problem(&location.path, location.line, format!("belongs to workspace {found}, not {expected}"))
        }
        other => problem(fallback, None, other.to_string()),
    }
}

/// Returns the line of `text` that defines the first 16-hex or prefixed id
/// mentioned in `message` (an entry key or conflict id), if any.
fn line_of_id(text: &str, message: &str) -> Option<usize> {
    message.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).find_map(|token| {
        let looks_like_id = token.len() >= 16 && token.bytes().any(|b| b.is_ascii_digit());
        if !looks_like_id {
            return None;
        }
        let needles = [format!("\"key\": \"{token}\""), format!("\"conflict_id\": \"{token}\"")];
        text.lines().position(|line| needles.iter().any(|n| line.contains(n.as_str()))).map(|i| i + 1)
    })
}

impl Workspace {
    /// Checks every durable file and returns the problems found (empty when
    /// the workspace is clean). Never writes.
    ///
    /// Errors: [`Error::Io`] when a file cannot be read at all.
    pub fn verify(&self) -> Result<Vec<Problem>> {
        let mut problems = Vec::new();
        let facts = self.verify_logs(&mut problems)?;
        let fact_ids: HashSet<&str> = facts.iter().map(|f| f.fact_id.as_str()).collect();

        let curated_path = self.file(CURATED_FILE);
        if let Some(data) = atomic_io::read_optional(&curated_path)? {
            match CuratedState::decode(&data, &curated_path, self.workspace_id()) {
                Err(err) => problems.push(from_error(err, &curated_path)),
                Ok(state) => {
                    let text = String::from_utf8_lossy(&data);
                    for entry in &state.entries {
                        for id in entry.evidence_ids.iter().filter(|id| !fact_ids.contains(id.as_str())) {
                            let message = format!("entry {} cites fact {id}, which is not in the log", entry.key);
                            problems.push(problem(&curated_path, line_of_id(&text, &message), message));
                        }
                    }
                }
            }
            // decode stops at the first violation; list every one.
            if let Ok(raw) = serde_json::from_slice::<serde_json::Value>(&data)
                && let Some(entries) = raw.get("entries").cloned()
                && let Ok(entries) = serde_json::from_value(entries)
            {
                let state = CuratedState { schema_version: 2, entries };
                let text = String::from_utf8_lossy(&data);
                let first =
                    problems.iter().position(|p| p.file == curated_path.display().to_string() && p.line.is_none());
                let listed: Vec<String> = state.problems();
                if !listed.is_empty() {
                    if let Some(index) = first {
                        problems.remove(index);
                    }
                    for message in listed {
                        problems.push(problem(&curated_path, line_of_id(&text, &message), message));
                    }
                }
            }
        }

        let conflicts_path = self.file(CONFLICTS_FILE);
        let mut queue = ConflictQueue::default();
        if let Some(data) = atomic_io::read_optional(&conflicts_path)? {
            match ConflictQueue::decode(&data, &conflicts_path, self.workspace_id()) {
                Ok(decoded) => queue = decoded,
                Err(err) => {
                    let text = String::from_utf8_lossy(&data);
                    let listed = serde_json::from_slice::<serde_json::Value>(&data)
                        .ok()
                        .and_then(|raw| raw.get("cases").cloned())
                        .and_then(|cases| serde_json::from_value(cases).ok())
                        .map(|cases| ConflictQueue { cases }.problems(self.workspace_id()))
                        .unwrap_or_default();
                    if listed.is_empty() {
                        problems.push(from_error(err, &conflicts_path));
                    }
                    for message in listed {
                        problems.push(problem(&conflicts_path, line_of_id(&text, &message), message));
                    }
                }
            }
        }
        for case in &queue.cases {
            for candidate in &case.candidates {
                for id in candidate.evidence_ids.iter().filter(|id| !fact_ids.contains(id.as_str())) {
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

        self.verify_audit(&queue, &mut problems)?;
        self.verify_journal(&mut problems)?;
        Ok(problems)
    }

    fn verify_logs(&self, problems: &mut Vec<Problem>) -> Result<Vec<Fact>> {
        let mut facts: Vec<Fact> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let days = match self.log().days() {
            Ok(days) => days,
            Err(err) => {
                problems.push(from_error(err, self.log().dir()));
                return Ok(facts);
            }
        };
        for day in days {
            let Some(data) = atomic_io::read_optional(&day.path)? else { continue };
            for (number, bytes, terminated) in atomic_io::lines(&data) {
                match Fact::parse_line(bytes) {
                    Err(_) if !terminated => {}
                    Err(message) => problems.push(problem(&day.path, Some(number), message)),
                    Ok(fact) => {
                        if fact.workspace_id != self.workspace_id() {
                            problems.push(problem(
                                &day.path,
                                Some(number),
                                format!("belongs to workspace {}, not {}", fact.workspace_id, self.workspace_id()),
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
                        match seen.get(&fact.fact_id) {
                            Some(&index) if facts[index] != fact => problems.push(problem(
                                &day.path,
                                Some(number),
                                format!("fact id {} is used twice with different content", fact.fact_id),
                            )),
                            Some(_) => {}
                            None => {
                                seen.insert(fact.fact_id.clone(), facts.len());
                                facts.push(fact);
                            }
                        }
                    }
                }
            }
        }
        Ok(facts)
    }

    fn verify_audit(&self, queue: &ConflictQueue, problems: &mut Vec<Problem>) -> Result<()> {
        let path = self.file(AUDIT_FILE);
        let Some(data) = atomic_io::read_optional(&path)? else { return Ok(()) };
        let mut events = HashSet::new();
        for (number, bytes, terminated) in atomic_io::lines(&data) {
            if !terminated {
                break;
            }
            let record = match journal::parse_record::<Adjudication>(bytes) {
                Ok(record) => record,
                Err(message) => {
                    problems.push(problem(&path, Some(number), message));
                    continue;
                }
            };
            if record.workspace_id != self.workspace_id() {
                problems.push(problem(&path, Some(number), format!("belongs to workspace {}", record.workspace_id)));
            }
            if !events.insert(record.event_id.clone()) {
                problems.push(problem(&path, Some(number), format!("event id {} appears twice", record.event_id)));
            }
            let closes = queue.cases.iter().any(|c| {
                c.status == CaseStatus::Resolved
                    && c.resolution_event_id.as_deref() == Some(record.event_id.as_str())
                    && c.selected_candidate_id.as_deref() == Some(record.selected_candidate_id.as_str())
            });
            if !closes {
                problems.push(problem(
                    &path,
                    Some(number),
                    format!("adjudication {} has no matching resolved case in conflicts.json", record.event_id),
                ));
            }
        }
        Ok(())
    }

    fn verify_journal(&self, problems: &mut Vec<Problem>) -> Result<()> {
        let path = self.file(JOURNAL_FILE);
        match journal::transactions(&path, self.workspace_id()) {
            Err(err) => problems.push(from_error(err, &path)),
            Ok(transactions) => {
                for t in transactions.iter().filter(|t| !t.committed()) {
                    problems.push(problem(
                        &path,
                        Some(t.first_line),
                        format!(
                            "transaction {} is not committed (last phase {})",
                            t.transaction_id,
                            t.done.last().map_or("none".to_owned(), ToString::to_string)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
