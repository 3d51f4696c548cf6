//! `scan`: finds credentials already stored in a memory directory (written
//! before the guard existed, by another tool, by hand, or carried in by a
//! cloned repository), so that a user can check a memory before trusting
//! it and know what to remove.
//!
//! It reads the daily logs, the audit stream, the journal, curated.json,
//! conflicts.json and MEMORY.md *without* requiring them to be valid: a
//! line or document that parses as JSON has every string in it checked
//! (keys and values, at any depth), anything else is checked as raw text,
//! line by line. A finding names the file, the line, the record (fact id,
//! event id, entry key, conflict id or transaction id) and the field, and
//! the kind of credential; never the value, and never an id or a field
//! name that itself looks like a credential.
//!
//! It never writes: no recovery, no repair, no lock, no cache. Like every
//! reader it refuses to follow a symlink or open a file that is not a
//! regular file; such a file is reported as not scanned.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, IoContext, Result};
use crate::model::{canon, secret};
use crate::store::memory_dir::{ReadOnlyMemoryDir, lines};
use crate::store::names::{
    AUDIT_FILE, CONFLICTS_FILE, CORRECTIONS_FILE, CURATED_FILE, JOURNAL_FILE, MEMORY_FILE,
};
use crate::workspace::Workspace;
use crate::workspace::merge::MemoryFile;
use crate::workspace::verify::Problem;

/// One credential found in a stored file. Never holds the credential.
///
/// ```json
/// {"file": ".../daily/2026-01-05.jsonl", "line": 3, "fact_id": "f-17",
///  "record": "fact f-17", "field": "content", "kind": "GitHub token"}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file, as a path.
    pub file: String,
    /// The 1-based line, when it could be told.
    pub line: Option<usize>,
    /// The id of the fact holding it, for a fact line (absent when the id
    /// is missing, malformed or itself the credential).
    pub fact_id: Option<String>,
    /// The record holding it: `fact <id>`, `event <id>`, `transaction
    /// <id>`, `conflict <id>` or `entry <key>`; the word alone when the id
    /// cannot be shown.
    pub record: Option<String>,
    /// The field: `content`, `memory_key`, `evidence value`, `actor`,
    /// `candidates.content`, ...; `text` for a line that is not JSON.
    pub field: String,
    /// The kind of credential (`GitHub token`, `password in URL`, ...).
    pub kind: &'static str,
}

/// What [`Workspace::scan`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Scan {
    /// Every credential found, in file order.
    pub findings: Vec<Finding>,
    /// Files that could not be read (a symlink, a FIFO, a permission
    /// error): the scan could not check them.
    pub unreadable: Vec<Problem>,
}

impl Scan {
    /// Returns whether nothing was found and every file was read.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty() && self.unreadable.is_empty()
    }

    /// Sorts the findings by what a redaction does with them
    /// (`workmem redact --scan`, docs/corrections.md "Redact").
    pub fn redaction(&self) -> ScanRedaction {
        let mut out = ScanRedaction::default();
        for finding in &self.findings {
            let file = MemoryFile::for_path(Path::new(&finding.file));
            let field = finding.field.as_str();
            let event = finding.record.as_deref().and_then(|r| r.strip_prefix("event "));
            match (file, &finding.fact_id, event) {
                (Some(MemoryFile::DailyLog), Some(id), _)
                    if field == "content"
                        || field == "source"
                        || field == "memory_key"
                        || field.starts_with("evidence") =>
                {
                    out.fact_ids.push(id.clone());
                }
                (Some(MemoryFile::Audit | MemoryFile::Corrections), _, Some(id))
                    if field == "actor" || field == "rationale" =>
                {
                    out.event_ids.push(id.to_owned());
                }
                (Some(MemoryFile::Curated | MemoryFile::Conflicts | MemoryFile::View), _, _) => {
                    out.copies.push(finding.clone());
                }
                _ => out.elsewhere.push(finding.clone()),
            }
        }
        for ids in [&mut out.fact_ids, &mut out.event_ids] {
            ids.sort_unstable();
            ids.dedup();
        }
        out
    }
}

/// The findings of a [`Scan`] by what a redaction does with them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanRedaction {
    /// The facts holding a credential in a field their tombstone replaces
    /// (content, source, evidence, a memory key), sorted.
    pub fact_ids: Vec<String>,
    /// The decisions and corrections holding one in their actor or
    /// rationale, sorted.
    pub event_ids: Vec<String>,
    /// Findings in the derived files (curated.json, conflicts.json,
    /// MEMORY.md), copies of the text of those facts and records that a
    /// redaction of them rewrites: scan again to confirm.
    pub copies: Vec<Finding>,
    /// Findings a redaction does not remove: a field it keeps (an id), a
    /// line that is not a record, the journal.
    pub elsewhere: Vec<Finding>,
}

impl Workspace {
    /// Looks for credentials in every file of the memory directory, without
    /// requiring the files to be valid, and without writing anything.
    ///
    /// ```
    /// # fn main() -> workmem::Result<()> {
    /// # let project = tempfile::tempdir().unwrap();
    /// use workmem::{NewFact, Workspace};
    /// let ws = Workspace::open(project.path(), None)?;
    /// ws.init()?;
    /// ws.remember(NewFact::new("Read the API key from the environment"))?;
    /// let checker = Workspace::builder(project.path()).open_read_only()?;
    /// assert!(checker.scan()?.is_clean());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Errors: [`Error::Io`] when the memory directory cannot be read (or
    /// does not exist); a file that cannot be read is listed in
    /// [`Scan::unreadable`] instead.
    pub fn scan(&self) -> Result<Scan> {
        let dir = self.memory_dir();
        let meta = std::fs::metadata(dir).at(dir)?;
        if !meta.is_dir() {
            return Err(Error::Io {
                path: dir.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        let mut scan = Scan::default();
        match self.log().days() {
            Ok(days) => {
                for day in days {
                    scan_jsonl(&self.dir, &day.path, &mut scan);
                }
            }
            Err(err) => scan.unreadable.push(unreadable(self.log().dir(), &err)),
        }
        scan_jsonl(&self.dir, &self.file(AUDIT_FILE), &mut scan);
        scan_jsonl(&self.dir, &self.file(CORRECTIONS_FILE), &mut scan);
        scan_jsonl(&self.dir, &self.file(JOURNAL_FILE), &mut scan);
        scan_document(&self.dir, &self.file(CURATED_FILE), &mut scan);
        scan_document(&self.dir, &self.file(CONFLICTS_FILE), &mut scan);
        scan_text(&self.dir, &self.file(MEMORY_FILE), &mut scan);
        Ok(scan)
    }
}

fn unreadable(path: &Path, err: &Error) -> Problem {
    let (message, damage) = match err {
        Error::Corrupt { damage, .. } => (damage.to_string(), Some(damage.clone())),
        other => (other.to_string(), None),
    };
    Problem {
        file: path.display().to_string(),
        line: None,
        message: format!("not scanned: {message}"),
        damage,
    }
}

fn read(dir: &ReadOnlyMemoryDir, path: &Path, scan: &mut Scan) -> Option<Vec<u8>> {
    match dir.read_path(path) {
        Ok(data) => data,
        Err(err) => {
            scan.unreadable.push(unreadable(path, &err));
            None
        }
    }
}

/// Scans a JSONL stream line by line.
fn scan_jsonl(dir: &ReadOnlyMemoryDir, path: &Path, scan: &mut Scan) {
    let Some(data) = read(dir, path, scan) else { return };
    let file = path.display().to_string();
    for (number, bytes, _) in lines(&data) {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(value @ Value::Object(_)) => {
                let mut walker = Walker { file: &file, text: None, fixed_line: Some(number), scan };
                walker.walk(&value, &mut Vec::new(), &Record::default());
            }
            _ => scan_raw_line(&file, number, bytes, scan),
        }
    }
}

/// Scans a whole JSON document, or its lines when it is not valid JSON.
fn scan_document(dir: &ReadOnlyMemoryDir, path: &Path, scan: &mut Scan) {
    let Some(data) = read(dir, path, scan) else { return };
    let file = path.display().to_string();
    match serde_json::from_slice::<Value>(&data) {
        Ok(value) => {
            let text = String::from_utf8_lossy(&data);
            let mut walker = Walker { file: &file, text: Some(&text), fixed_line: None, scan };
            walker.walk(&value, &mut Vec::new(), &Record::default());
        }
        Err(_) => {
            for (number, bytes, _) in lines(&data) {
                scan_raw_line(&file, number, bytes, scan);
            }
        }
    }
}

/// Scans a text file (MEMORY.md) line by line.
fn scan_text(dir: &ReadOnlyMemoryDir, path: &Path, scan: &mut Scan) {
    let Some(data) = read(dir, path, scan) else { return };
    let file = path.display().to_string();
    for (number, bytes, _) in lines(&data) {
        scan_raw_line(&file, number, bytes, scan);
    }
}

fn scan_raw_line(file: &str, number: usize, bytes: &[u8], scan: &mut Scan) {
    if let Some(kind) = secret::find(&String::from_utf8_lossy(bytes)) {
        scan.findings.push(Finding {
            file: file.to_owned(),
            line: Some(number),
            fact_id: None,
            record: None,
            field: "text".to_owned(),
            kind,
        });
    }
}

/// The record a string belongs to: the innermost object with an id.
#[derive(Debug, Clone, Default)]
struct Record {
    /// `fact`, `event`, `transaction`, `conflict` or `entry`.
    what: Option<&'static str>,
    /// The id, when it can be shown.
    id: Option<String>,
}

impl Record {
    /// Returns the record an object introduces, if it has an id field.
    fn of(map: &serde_json::Map<String, Value>) -> Option<Record> {
        let fields = [
            ("fact_id", "fact"),
            ("event_id", "event"),
            ("transaction_id", "transaction"),
            ("conflict_id", "conflict"),
            ("key", "entry"),
        ];
        fields.iter().find_map(|(field, what)| {
            let value = map.get(*field)?;
            let id = value
                .as_str()
                .filter(|id| canon::check_id(field, id).is_ok() && secret::find(id).is_none())
                .map(str::to_owned);
            Some(Record { what: Some(what), id })
        })
    }

    fn label(&self) -> Option<String> {
        let what = self.what?;
        Some(match &self.id {
            Some(id) => format!("{what} {id}"),
            None => what.to_owned(),
        })
    }
}

/// Walks one JSON value, recording each string that holds a credential.
struct Walker<'a> {
    file: &'a str,
    /// The whole document, to tell the line of a finding.
    text: Option<&'a str>,
    /// The line of a JSONL record.
    fixed_line: Option<usize>,
    scan: &'a mut Scan,
}

impl Walker<'_> {
    fn walk(&mut self, value: &Value, path: &mut Vec<String>, record: &Record) {
        match value {
            Value::String(text) => {
                if let Some(kind) = secret::find(text) {
                    let field = field_name(path);
                    self.push(record, field, kind, text);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.walk(item, path, record);
                }
            }
            Value::Object(map) => {
                // A record starts its own field paths; an evidence map is
                // never a record, whatever keys it has.
                let in_evidence = path.last().is_some_and(|p| p == "evidence");
                let inner = if in_evidence { None } else { Record::of(map) };
                let (record, mut own_path) = match inner {
                    Some(inner) => (inner, Vec::new()),
                    None => (record.clone(), path.clone()),
                };
                let prefix = field_name(&own_path);
                for (key, item) in map {
                    if let Some(kind) = secret::find(key) {
                        let field = format!("{prefix} key").trim().to_owned();
                        self.push(&record, field, kind, key);
                        continue;
                    }
                    own_path.push(safe_component(key));
                    if let Value::String(text) = item {
                        // The value alone, or as the value of its key
                        // (`"password": "hunter2"`).
                        if let Some(kind) =
                            secret::find(text).or_else(|| secret::find_in_pair(key, text))
                        {
                            let field = if in_evidence {
                                format!("{prefix} value")
                            } else {
                                field_name(&own_path)
                            };
                            self.push(&record, field, kind, text);
                        }
                    } else {
                        self.walk(item, &mut own_path, &record);
                    }
                    own_path.pop();
                }
            }
            _ => {}
        }
    }

    fn push(&mut self, record: &Record, field: String, kind: &'static str, found_in: &str) {
        let line = self.fixed_line.or_else(|| self.line_of(found_in, record));
        let fact_id = (record.what == Some("fact")).then(|| record.id.clone()).flatten();
        self.scan.findings.push(Finding {
            file: self.file.to_owned(),
            line,
            fact_id,
            record: record.label(),
            field: if field.is_empty() { "value".to_owned() } else { field },
            kind,
        });
    }

    /// Returns the line of a document where `found_in` (a string of it) is
    /// written, else the line of its record's id.
    fn line_of(&self, found_in: &str, record: &Record) -> Option<usize> {
        let text = self.text?;
        let encoded = serde_json::to_string(found_in).ok()?;
        let offset = text.find(&encoded).or_else(|| {
            let id = record.id.as_ref()?;
            text.find(&format!("\"{id}\""))
        })?;
        Some(text[..offset].bytes().filter(|&b| b == b'\n').count() + 1)
    }
}

/// Returns a field path as dotted names (`candidates.content`).
fn field_name(path: &[String]) -> String {
    path.join(".")
}

/// Returns a key as a part of a field name: itself when it is a plain
/// name, else a stand-in (a hostile key must not reach the output).
fn safe_component(key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= 40
        && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if plain { key.to_owned() } else { "(field)".to_owned() }
}
