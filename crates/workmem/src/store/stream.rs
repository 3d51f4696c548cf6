//! The JSONL streams of a memory directory (the audit stream, the
//! journal, the corrections): one record a line, each checked for its
//! schema version and workspace when read, appended one fsynced line at a
//! time with a torn tail repaired first.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Damage, Error, IoContext, Location, Result};
use crate::store::atomic_io;

/// Schema version of the records of every stream (adjudications, journal lines,
/// corrections).
pub const JOURNAL_SCHEMA_VERSION: u32 = 1;

/// A record read from a JSONL stream with its 1-based line number.
#[derive(Debug, Clone)]
pub struct Numbered<T> {
    /// 1-based line in the file.
    pub line: usize,
    /// The record.
    pub record: T,
}

/// Reads every complete record of a JSONL stream (unterminated final line
/// ignored), checking schema version and workspace.
///
/// Errors: [`Error::Corrupt`] naming file and line; [`Error::Scope`].
pub fn read_stream<T>(path: &Path, workspace_id: &str) -> Result<Vec<Numbered<T>>>
where
    T: for<'de> Deserialize<'de> + StreamRecord,
{
    let mut out = Vec::new();
    for_each_record(path, workspace_id, |record| {
        out.push(record);
        Ok(())
    })?;
    Ok(out)
}

/// Calls `visit` with every complete record of a JSONL stream in order,
/// reading one line at a time: memory stays bounded by the longest line,
/// whatever the length of the stream (the `prepared` lines of schema-1
/// intents, such as the teaching implementation writes, hold whole
/// snapshots of the state).
///
/// Errors: [`Error::Corrupt`] naming file and line; [`Error::Scope`];
/// [`Error::Io`]; whatever `visit` returns.
pub fn for_each_record<T>(
    path: &Path,
    workspace_id: &str,
    mut visit: impl FnMut(Numbered<T>) -> Result<()>,
) -> Result<()>
where
    T: for<'de> Deserialize<'de> + StreamRecord,
{
    use std::io::BufRead;
    let Some(file) = atomic_io::open_optional(path)? else { return Ok(()) };
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let mut bytes = Vec::new();
    let mut line = 0;
    loop {
        bytes.clear();
        if reader.read_until(b'\n', &mut bytes).at(path)? == 0 || bytes.last() != Some(&b'\n') {
            // The end, or an unterminated final line: an unacknowledged
            // append.
            return Ok(());
        }
        line += 1;
        if let Some(record) = checked_line(path, line, &bytes[..bytes.len() - 1], workspace_id)? {
            visit(record)?;
        }
    }
}

/// Calls `visit` with every record of `data`, complete lines of a stream
/// at `path` whose first is line `first_line`, as [`for_each_record`]
/// does.
///
/// Errors: as [`for_each_record`].
pub fn for_each_record_in<T>(
    path: &Path,
    data: &[u8],
    first_line: usize,
    workspace_id: &str,
    mut visit: impl FnMut(Numbered<T>) -> Result<()>,
) -> Result<()>
where
    T: for<'de> Deserialize<'de> + StreamRecord,
{
    for (n, text) in data.split_inclusive(|&b| b == b'\n').enumerate() {
        let Some(text) = text.strip_suffix(b"\n") else { return Ok(()) };
        if let Some(record) = checked_line(path, first_line + n, text, workspace_id)? {
            visit(record)?;
        }
    }
    Ok(())
}

/// Parses and checks one line of a stream (without its newline); `None`
/// for a blank line.
fn checked_line<T>(
    path: &Path,
    line: usize,
    text: &[u8],
    workspace_id: &str,
) -> Result<Option<Numbered<T>>>
where
    T: for<'de> Deserialize<'de> + StreamRecord,
{
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let record = parse_record::<T>(text)
        .map_err(|damage| super::corrupt_in(text, Location::line(path, line), damage))?;
    if record.workspace() != workspace_id {
        return Err(Error::Scope {
            location: Location::line(path, line),
            found: record.workspace().to_owned(),
            expected: workspace_id.to_owned(),
        });
    }
    Ok(Some(Numbered { line, record }))
}

/// Parses one stream record and checks its schema version.
pub fn parse_record<T>(bytes: &[u8]) -> std::result::Result<T, Damage>
where
    T: for<'de> Deserialize<'de> + StreamRecord,
{
    let value: Value = serde_json::from_slice(bytes).map_err(|err| Damage::json(&err))?;
    // No workmem record holds a float; one in the free-form intent would not
    // survive a write and re-read bit for bit, and the digest covers it.
    if has_float(&value) {
        return Err(Damage::record(
            "invalid record: holds a floating-point number; workmem records hold integers only",
        ));
    }
    let version = value.get("schema_version").and_then(Value::as_i64);
    if version != Some(i64::from(JOURNAL_SCHEMA_VERSION)) {
        return Err(Damage::record(format!(
            "unsupported schema_version {} (supported: {JOURNAL_SCHEMA_VERSION})",
            value.get("schema_version").map_or("missing".to_owned(), Value::to_string)
        )));
    }
    let record: T = serde_json::from_value(value)
        .map_err(|err| Damage::record(format!("invalid record: {err}")))?;
    record.check()?;
    Ok(record)
}

fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

/// Records of the two streams.
pub trait StreamRecord {
    /// Returns the record's workspace id.
    fn workspace(&self) -> &str;

    /// Checks the record's text fields as on append (a hostile stream may
    /// carry anything); returns damage naming the bad field.
    fn check(&self) -> std::result::Result<(), Damage> {
        Ok(())
    }
}

/// A record of the audit or corrections stream whose actor and rationale
/// a redaction can replace by the marker (docs/corrections.md, "Records
/// that are not facts"), keeping every other field.
pub(crate) trait Redactable: for<'de> Deserialize<'de> + StreamRecord {
    /// The record's event id.
    fn event_id(&self) -> &str;

    /// Whether its actor and rationale are both the marker.
    fn is_marked(&self) -> bool;

    /// The record with the marker in its actor and rationale.
    fn marked(&self) -> Self;

    /// The record's line, newline included.
    fn line(&self) -> String;
}

/// Each record line of the stream `data` with the record read from it and
/// the SHA-256 (hex) of the line without its newline; lines that are not
/// records of `T` (a torn tail) are left out.
pub(crate) fn record_lines<T: Redactable>(data: &[u8]) -> Vec<(T, String)> {
    atomic_io::lines(data)
        .filter_map(|(_, line, _)| {
            let record = parse_record::<T>(line).ok()?;
            Some((record, crate::model::canon::sha256_hex(line)))
        })
        .collect()
}

/// Returns `data` (a stream of `T` records) with the line of each record
/// `hashes` names (by event id, with the SHA-256 of the line it replaces)
/// holding the record marked instead; every other line, a torn tail
/// included, is kept byte for byte.
pub(crate) fn with_marked_records<T: Redactable>(
    data: &[u8],
    hashes: &std::collections::BTreeMap<String, String>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for chunk in data.split_inclusive(|&b| b == b'\n') {
        let line = chunk.strip_suffix(b"\n").unwrap_or(chunk);
        let marked = parse_record::<T>(line).ok().filter(|record| {
            !record.is_marked()
                && hashes
                    .get(record.event_id())
                    .is_some_and(|hash| *hash == crate::model::canon::sha256_hex(line))
        });
        match marked {
            Some(record) if chunk.ends_with(b"\n") => {
                out.extend_from_slice(record.marked().line().as_bytes());
            }
            _ => out.extend_from_slice(chunk),
        }
    }
    out
}

/// Appends `line` to a stream, repairing a torn tail first (a complete
/// record of type `T` is kept, anything else truncated).
///
/// Errors: [`Error::Io`].
pub fn append_record<T>(path: &Path, line: &str) -> Result<()>
where
    T: for<'de> Deserialize<'de> + StreamRecord,
{
    atomic_io::append(path, line.as_bytes(), &|fragment| parse_record::<T>(fragment).is_ok())
}

/// Appends one record like [`append_record`] and returns where it landed
/// ([`atomic_io::Placement`]), for a cache of what the stream holds.
///
/// Errors: as [`append_record`].
pub(crate) fn append_record_placed<T>(
    path: &Path,
    line: &str,
) -> Result<Option<atomic_io::Placement>>
where
    T: for<'de> Deserialize<'de> + StreamRecord,
{
    atomic_io::append_placed(path, line.as_bytes(), &|fragment| parse_record::<T>(fragment).is_ok())
}

/// Repairs a torn tail of a stream without appending.
///
/// Errors: [`Error::Io`].
pub fn repair_stream<T>(path: &Path) -> Result<()>
where
    T: for<'de> Deserialize<'de> + StreamRecord,
{
    atomic_io::repair(path, &|fragment| parse_record::<T>(fragment).is_ok())
}

/// Returns whether the stream at `path` holds nothing: absent or empty
/// (a journal's state at rest).
///
/// Errors: [`Error::Corrupt`] for a link or a file that is not regular;
/// [`Error::Io`].
pub fn is_empty(path: &Path) -> Result<bool> {
    match atomic_io::open_optional(path)? {
        None => Ok(true),
        Some(file) => Ok(file.metadata().at(path)?.len() == 0),
    }
}
