//! What to do about a workmem error, in the words of the command line.
//!
//! The library's errors say what is wrong and where; they never name a
//! command, because a caller of the library may have none. The command line
//! and the MCP server both speak of `workmem` commands, and they give the
//! same advice: this crate is that advice, keyed on the error's kind and
//! its typed damage. It reads no file and holds no state.

#![forbid(unsafe_code)]

use workmem::{Damage, Error, MemoryFile};

/// Returns what to do about a corruption error, for the command line and
/// the MCP server alike; nothing for the other errors (the command line
/// adds its own hints for those, e.g. about flags).
///
/// A merge that git left unfinished is finished by `workmem merge
/// --continue`; a damaged curated.json or conflicts.json is restored or
/// derived again by `workmem rebuild`; any other damage is left to the
/// user, with `workmem verify` to list every problem.
pub fn corruption_hint(err: &Error) -> Option<&'static str> {
    let Error::Corrupt { location, damage } = err else { return None };
    Some(if matches!(damage, Damage::MergeMarkers) {
        MERGE_MARKERS
    } else if is_derived_state(&location.path) {
        "nothing was changed and nothing of this file is served; `workmem verify` lists \
         every problem; restore the file from git if a checkout or a merge damaged or \
         deleted it, or run `workmem rebuild` to derive curated.json and conflicts.json \
         again from the daily logs and the audit stream"
    } else {
        "nothing was changed; inspect the named file and line (`workmem verify` lists \
         every problem)"
    })
}

/// Returns the message of `err` followed by its hint line, if any: how the
/// MCP server reports a library error.
pub fn explained(err: &Error) -> String {
    match corruption_hint(err) {
        Some(hint) => format!("{err}\nhint: {hint}"),
        None => err.to_string(),
    }
}

/// The way out of a memory file that git left with conflict markers.
pub const MERGE_MARKERS: &str = "finish the merge with `workmem merge --continue`, then commit; \
     `workmem share` sets up the merge driver that avoids this";

/// Whether `path` names one of the files `workmem rebuild` derives again.
fn is_derived_state(path: &std::path::Path) -> bool {
    matches!(MemoryFile::for_path(path), Some(MemoryFile::Curated | MemoryFile::Conflicts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use workmem::Location;

    fn corrupt(path: &str, damage: Damage) -> Error {
        Error::corrupt(Location::file(std::path::Path::new(path)), damage)
    }

    #[test]
    fn merge_markers_name_merge_continue_whatever_the_file() {
        for path in ["m/curated.json", "m/daily/2026-01-05.jsonl", ".workmem/workspace.toml"] {
            let hint = corruption_hint(&corrupt(path, Damage::MergeMarkers)).unwrap();
            assert!(hint.contains("workmem merge --continue"), "{path}: {hint}");
        }
    }

    #[test]
    fn derived_state_names_rebuild_and_other_files_verify() {
        let derived = corruption_hint(&corrupt("m/conflicts.json", Damage::NoIntent)).unwrap();
        assert!(derived.contains("workmem rebuild"), "{derived}");
        let log = corruption_hint(&corrupt("m/daily/2026-01-05.jsonl", Damage::NoIntent)).unwrap();
        assert!(!log.contains("workmem rebuild") && log.contains("workmem verify"), "{log}");
    }

    #[test]
    fn only_corruption_has_a_hint_here() {
        let err = Error::invalid("content", workmem::Invalid::Empty);
        assert_eq!(corruption_hint(&err), None);
        assert_eq!(explained(&err), err.to_string());
    }
}
