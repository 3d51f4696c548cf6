//! The layout of the last conflicts.json workmem wrote: where each case
//! starts and ends and its head (memory key, revision, id), so that the
//! next writer of a file it knows by that hash finds the cases it replaces
//! without reading the file.
//!
//! conflicts.json keeps every closed case: with 1,000 resolutions behind
//! it, it is 1.9 MB, and reading its layout (each case's end and head)
//! cost a resolution about 1.3 ms; this file holds the same in 1,000 short
//! lines. Only a cache: the file, `.conflicts-layout` in the memory
//! directory, is replaced atomically by each writer of conflicts.json and
//! names the hash of the file it describes; it ends with a check of all
//! its lines, and the layout it gives is checked whole (cases one after
//! another from the file's head to its tail, in order) before it is used.
//! Anything else costs one read of the layout.
//!
//! ```text
//! workmem-layout 1 conflicts.json <sha256 of the file>
//! <start> <end> <head>          one line per case, in order
//! end <check>                   16 hex digits of the SHA-256 of the lines above
//! ```

use std::fmt::Write;
use std::path::Path;

use crate::store::atomic_io;

const HEADER: &str = "workmem-layout 1";

/// One record's place in the file and its head, as a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) head: String,
}

/// The check that ends the file: 16 hex digits of the SHA-256 of the rest.
fn check(text: &str) -> String {
    crate::model::canon::short_hash(text, 16)
}

/// Returns the records' lines recorded in `cache` for the state file
/// `file` with hash `sha256`; `None` when the cache is missing, describes
/// another file, or fails its check.
pub(crate) fn load(cache: &Path, file: &str, sha256: &str) -> Option<Vec<Line>> {
    let data = atomic_io::read_optional(cache).ok()??;
    let text = std::str::from_utf8(&data).ok()?;
    let body = text.strip_suffix('\n')?;
    let (body, last) = body.rsplit_once('\n')?;
    if last.strip_prefix("end ")? != check(&format!("{body}\n")) {
        return None;
    }
    let mut lines = body.split('\n');
    if lines.next()? != format!("{HEADER} {file} {sha256}") {
        return None;
    }
    lines
        .map(|line| {
            let mut fields = line.splitn(3, ' ');
            Some(Line {
                start: fields.next()?.parse().ok()?,
                end: fields.next()?.parse().ok()?,
                head: fields.next()?.to_owned(),
            })
        })
        .collect()
}

/// Records `lines` as the layout of the state file `file` with hash
/// `sha256`, in place of what `cache` held. A failure to write it is
/// ignored.
pub(crate) fn record(cache: &Path, file: &str, sha256: &str, lines: &[Line]) {
    let mut text = format!("{HEADER} {file} {sha256}\n");
    for line in lines {
        let _ = writeln!(text, "{} {} {}", line.start, line.end, line.head);
    }
    let check = check(&text);
    let _ = writeln!(text, "end {check}");
    let _ = atomic_io::replace_cache(cache, text.as_bytes());
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_is_found_under_its_file_and_hash_only_and_never_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join(crate::store::names::CONFLICTS_LAYOUT_FILE);
        assert_eq!(load(&cache, "conflicts.json", "aa"), None);
        let lines = vec![
            Line { start: 14, end: 40, head: "1 conflict-1 db.engine".into() },
            Line { start: 42, end: 90, head: "2 conflict-2 db.engine".into() },
        ];
        record(&cache, "conflicts.json", "aa", &lines);
        assert_eq!(load(&cache, "conflicts.json", "aa"), Some(lines.clone()));
        assert_eq!(load(&cache, "conflicts.json", "bb"), None);
        assert_eq!(load(&cache, "curated.json", "aa"), None);
        record(&cache, "conflicts.json", "bb", &[]);
        assert_eq!(load(&cache, "conflicts.json", "bb"), Some(Vec::new()));
        assert_eq!(load(&cache, "conflicts.json", "aa"), None);
        // Any changed byte fails the check; so does a torn file.
        record(&cache, "conflicts.json", "aa", &lines);
        let text = std::fs::read_to_string(&cache).unwrap();
        for changed in [text.replace("90 2", "91 2"), text[..text.len() - 5].to_owned()] {
            std::fs::write(&cache, changed).unwrap();
            assert_eq!(load(&cache, "conflicts.json", "aa"), None);
        }
    }
}
