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
    Some(if let Some(way_out) = way_out(damage) {
        way_out
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

/// Returns the command that is the way out of `damage`, when one is: a
/// merge git left unfinished is finished by `workmem merge --continue`,
/// work that arrived from another clone is shown and discarded by
/// `workmem journal`, a memory directory that does not exist is made by
/// `workmem init`. The library says what is wrong; this says what to run.
pub fn way_out(damage: &Damage) -> Option<&'static str> {
    match damage {
        Damage::MergeMarkers
        | Damage::MergeRecord { markers: true, .. }
        | Damage::NotStateFile { markers: true } => Some(MERGE_MARKERS),
        Damage::ForeignTransaction { .. }
        | Damage::ForeignJournal { .. }
        | Damage::ForeignDistillIntent => Some(FOREIGN_JOURNAL),
        Damage::NoMemoryDir => Some("run `workmem init`, or name the right one"),
        Damage::CorrectionWaiting { .. } => {
            Some("run `workmem memory` (or any command that writes to the memory) to apply it")
        }
        _ => None,
    }
}

/// Returns what to do about an error that is not corruption, for the
/// command line and the MCP server alike, when there is a command for it:
/// a record of another workspace is taken over by `workmem adopt`.
pub fn error_hint(err: &Error) -> Option<&'static str> {
    match err {
        Error::Corrupt { .. } => corruption_hint(err),
        Error::Scope { .. } => Some(
            "check -C/--project and --memory-dir (WORKMEM_MEMORY_DIR); if the project moved, \
             `workmem adopt` pins the memory's id, and `workmem share` keeps it fixed in every \
             clone",
        ),
        _ => None,
    }
}

/// Returns the message of `err` followed by its hint line, if any: how the
/// MCP server reports a library error.
pub fn explained(err: &Error) -> String {
    match error_hint(err) {
        Some(hint) => format!("{err}\nhint: {hint}"),
        None => err.to_string(),
    }
}

/// The way out of a memory file that git left with conflict markers.
pub const MERGE_MARKERS: &str = "finish the merge with `workmem merge --continue`, then commit; \
     `workmem share` sets up the merge driver that avoids this";

/// The way out of work in the journal (or a distill intent) that this
/// clone did not prepare.
pub const FOREIGN_JOURNAL: &str =
    "`workmem journal` shows it and `workmem journal --discard` discards it";

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
    fn only_corruption_and_scope_have_a_hint_here() {
        let err = Error::invalid("content", workmem::Invalid::Empty);
        assert_eq!(corruption_hint(&err), None);
        assert_eq!(explained(&err), err.to_string());
        let scope = Error::Scope {
            location: Location::file(std::path::Path::new("m/curated.json")),
            found: "0123456789abcdef".into(),
            expected: "fedcba9876543210".into(),
        };
        assert!(explained(&scope).ends_with(error_hint(&scope).unwrap()));
        assert!(error_hint(&scope).unwrap().contains("workmem adopt"));
    }

    #[test]
    fn work_from_another_clone_names_journal_discard_and_markers_merge_continue() {
        let foreign = [
            Damage::ForeignDistillIntent,
            Damage::ForeignJournal { detail: "line 1".into() },
            Damage::ForeignTransaction { transaction_id: "t".into(), decision: None },
        ];
        for damage in foreign {
            assert_eq!(way_out(&damage), Some(FOREIGN_JOURNAL), "{damage:?}");
            let err = corrupt("m/conflict-resolution-transactions.jsonl", damage);
            assert!(explained(&err).contains("workmem journal --discard"), "{err}");
            // The library's own words name no command.
            assert!(!err.to_string().contains("workmem "), "{err}");
        }
        let marked =
            Damage::MergeRecord { problem: "line 1 is not a record".into(), markers: true };
        assert_eq!(way_out(&marked), Some(MERGE_MARKERS));
        let plain =
            Damage::MergeRecord { problem: "line 1 is not a record".into(), markers: false };
        assert_eq!(way_out(&plain), None);
        assert!(way_out(&Damage::NoMemoryDir).unwrap().contains("workmem init"));
    }
}
