//! The workspace's identity on disk: the pin in `.workmem/workspace.toml`,
//! which makes the id independent of the project's path, and the census of
//! the ids that a memory directory's records carry (what adopting a moved
//! memory checks).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Damage, Error, Location, Result};
use crate::store::atomic_io;
use crate::store::fact_log::FactLog;
use crate::store::names::IDENTITY_FILE;

/// Returns the pinned id of `.workmem/workspace.toml` under `dot_workmem`,
/// `None` when the file does not exist.
///
/// Errors: [`Error::Corrupt`] naming the file, line and column for a file
/// that is not `id = "<16 lowercase hex>"` (comments allowed, nothing
/// else), a symlink or a non-regular file; [`Error::Io`].
pub(crate) fn read_pin(dot_workmem: &Path) -> Result<Option<String>> {
    let path = dot_workmem.join(IDENTITY_FILE);
    let Some(data) = atomic_io::read_optional(&path)? else { return Ok(None) };
    parse_pin(&data, &path).map(Some)
}

/// Returns the id of the pin `data`, read from `path` (a file or another
/// source, such as a git object, named for messages).
///
/// Errors: [`Error::Corrupt`] as [`read_pin`] says.
pub(crate) fn parse_pin(data: &[u8], path: &Path) -> Result<String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Pin {
        id: String,
    }
    let text = std::str::from_utf8(data)
        .map_err(|_| super::corrupt_in(data, Location::file(path), Damage::NotUtf8))?;
    let pin: Pin = toml::from_str(text).map_err(|err| {
        let offset = err.span().map_or(0, |span| span.start.min(text.len()));
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        super::corrupt_in(
            data,
            Location::line(path, line),
            Damage::Toml { column, detail: err.message().trim_end().to_owned() },
        )
    })?;
    if !is_workspace_id(&pin.id) {
        return Err(Error::corrupt(Location::file(path), Damage::PinId));
    }
    Ok(pin.id)
}

/// Returns the text of a pin file for `id`.
pub(crate) fn pin_text(id: &str) -> String {
    format!(
        "# The id of this project's workspace memory. Every record carries it;\n\
         # pinned here, it stays the same in every clone and at every path.\n\
         id = \"{id}\"\n"
    )
}

/// Returns whether `id` has the form of a workspace id.
pub(crate) fn is_workspace_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Where the records carrying one workspace id were found: how many, and
/// the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sighting {
    /// Records carrying the id.
    pub(crate) records: usize,
    /// The first record found with it.
    pub(crate) first: Location,
}

/// Returns every workspace id carried by a record of the memory directory
/// (daily logs, curated.json, conflicts.json and its cases, the audit
/// stream, the journal), with where it was seen. An unterminated final line
/// is ignored, as readers ignore it.
///
/// Errors: [`Error::Corrupt`] for a complete line or state file that is not
/// a JSON object with a string `workspace_id`; [`Error::Io`].
pub(crate) fn census(memory_dir: &Path, log: &FactLog) -> Result<BTreeMap<String, Sighting>> {
    let mut ids: BTreeMap<String, Sighting> = BTreeMap::new();
    let mut see = |id: String, at: Location| {
        ids.entry(id).or_insert(Sighting { records: 0, first: at }).records += 1;
    };
    let mut streams: Vec<_> = log.days()?.into_iter().map(|day| day.path).collect();
    streams.push(memory_dir.join(crate::store::names::AUDIT_FILE));
    streams.push(memory_dir.join(crate::store::names::CORRECTIONS_FILE));
    streams.push(memory_dir.join(crate::store::names::JOURNAL_FILE));
    for path in streams {
        let Some(data) = atomic_io::read_optional(&path)? else { continue };
        for (number, line, terminated) in atomic_io::lines(&data) {
            if !terminated || line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let at = Location::line(&path, number);
            see(workspace_of(line, &at)?, at);
        }
    }
    for name in [crate::store::names::CURATED_FILE, crate::store::names::CONFLICTS_FILE] {
        let path = memory_dir.join(name);
        let Some(data) = atomic_io::read_optional(&path)? else { continue };
        let at = Location::file(&path);
        see(workspace_of(&data, &at)?, at.clone());
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(&data)
            && let Some(cases) = value.get("cases").and_then(|c| c.as_array())
        {
            for case in cases {
                if let Some(id) = case.get("workspace_id").and_then(|id| id.as_str()) {
                    see(id.to_owned(), at.clone());
                }
            }
        }
    }
    Ok(ids)
}

/// Returns the `workspace_id` of one JSON record.
fn workspace_of(record: &[u8], at: &Location) -> Result<String> {
    #[derive(serde::Deserialize)]
    struct Scoped {
        workspace_id: String,
    }
    serde_json::from_slice::<Scoped>(record)
        .map(|s| s.workspace_id)
        .map_err(|_| Error::corrupt(at.clone(), Damage::NoWorkspaceId))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_reads_its_id_and_refuses_anything_else_with_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_pin(dir.path()).unwrap(), None);
        let path = dir.path().join(IDENTITY_FILE);
        atomic_io::replace(&path, pin_text("0123456789abcdef").as_bytes()).unwrap();
        assert_eq!(read_pin(dir.path()).unwrap().as_deref(), Some("0123456789abcdef"));

        atomic_io::replace(&path, b"# c\nid = \"0123456789abcdef\"\nname = \"x\"\n").unwrap();
        let err = read_pin(dir.path()).unwrap_err().to_string();
        assert!(err.contains("workspace.toml:3") && err.contains("name"), "{err}");
        atomic_io::replace(&path, b"id = \"0123456789ABCDEF\"\n").unwrap();
        let err = read_pin(dir.path()).unwrap_err().to_string();
        assert!(err.contains("16 lowercase hexadecimal"), "{err}");
        atomic_io::replace(&path, b"id = [\n").unwrap();
        let err = read_pin(dir.path()).unwrap_err().to_string();
        assert!(err.contains("workspace.toml:"), "{err}");
    }
}
