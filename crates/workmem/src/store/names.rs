//! Every name in a memory directory, defined once: the canonical files,
//! the logs, the audit stream and the journal, the owner records and every
//! cache. What each cache holds, its invariant and how it is checked is
//! told in [`crate::store::memory_dir`]; nothing else spells a file name.

use std::path::{Path, PathBuf};

/// The project's own folder, which holds the pin and, by default, the
/// memory directory.
pub(crate) const DOT_DIR: &str = ".workmem";
/// The default memory directory, relative to the project.
pub(crate) const DEFAULT_MEMORY_DIR: &str = ".workmem/memory";
/// The pin of the workspace id, in the project's `.workmem/`.
pub(crate) const IDENTITY_FILE: &str = "workspace.toml";

/// The folder of the daily logs, one `YYYY-MM-DD.jsonl` file a day.
pub(crate) const DAILY_DIR: &str = "daily";
/// The extension of a daily log.
pub(crate) const DAY_EXTENSION: &str = ".jsonl";
/// Every daily log, as `.gitattributes` names them.
pub(crate) const DAILY_PATTERN: &str = "daily/*.jsonl";
/// The name of a daily log that stands for them all when a question is
/// asked of the pattern (git's attributes of a path).
pub(crate) const SAMPLE_DAY: &str = "2000-01-01.jsonl";
/// The canonical curated state.
pub(crate) const CURATED_FILE: &str = "curated.json";
/// The canonical review queue.
pub(crate) const CONFLICTS_FILE: &str = "conflicts.json";
/// The derived prompt view.
pub(crate) const MEMORY_FILE: &str = "MEMORY.md";
/// The audit stream of adjudications.
pub const AUDIT_FILE: &str = "conflict-adjudications.jsonl";
/// The corrections stream: retractions, restores and redactions.
pub const CORRECTIONS_FILE: &str = "memory-corrections.jsonl";
/// The transaction journal of resolutions.
pub const JOURNAL_FILE: &str = "conflict-resolution-transactions.jsonl";
/// The intent of a distill that changes curated.json, present only
/// between its first and last write.
pub(crate) const DISTILL_INTENT_FILE: &str = ".distill-pending.json";
/// The git-ignore rules of the memory directory.
pub(crate) const GITIGNORE_FILE: &str = ".gitignore";
/// The git attributes of the memory directory (the merge driver).
pub(crate) const GITATTRIBUTES_FILE: &str = ".gitattributes";

/// The workspace lock.
pub(crate) const LOCK_FILE: &str = ".lock";
/// Which journal transaction this clone prepared.
pub(crate) const JOURNAL_OWNER_FILE: &str = ".journal-owner";
/// Which distill intent this clone wrote.
pub(crate) const DISTILL_OWNER_FILE: &str = ".distill-owner";

/// Cache: the identities of the state files this clone last wrote or
/// checked.
pub(crate) const CHECKED_STATE_FILE: &str = ".checked-state";
/// Cache: SHA-256 states part way through the state files.
pub(crate) const CHECKPOINTS_FILE: &str = ".hash-checkpoints";
/// Cache: hashes of state files known to be valid.
pub(crate) const VALID_HASHES_FILE: &str = ".valid-hashes";
/// Cache: the layout of the last conflicts.json written.
pub(crate) const CONFLICTS_LAYOUT_FILE: &str = ".conflicts-layout";
/// Cache: what `context` needs of curated.json.
pub(crate) const PROJECTION_INDEX_FILE: &str = ".projection.json";
/// Cache: the newest pending keyed facts.
pub(crate) const PENDING_INDEX_FILE: &str = ".pending.json";
/// Cache: the keyed fact ids of each daily file, by memory key.
pub(crate) const DOMAIN_INDEX_FILE: &str = ".domain-index";
/// Cache: the appends workmem made to the daily files under the lock.
pub(crate) const TRAIL_FILE: &str = ".append-trail";
/// Cache: where every fact id of the log is written (a folder).
pub(crate) const ID_INDEX_DIR: &str = ".id-index";
/// Cache: the small file of the distill cache.
pub(crate) const DISTILL_CACHE_FILE: &str = ".distill-cache";
/// Cache: the units file of the distill cache.
pub(crate) const DISTILL_UNITS_FILE: &str = ".distill-cache.units";
/// Cache: the id filter of the distill cache.
pub(crate) const DISTILL_IDS_FILE: &str = ".distill-cache.ids";
/// Cache: where each unit's records are in the units file.
pub(crate) const DISTILL_PLACES_FILE: &str = ".distill-cache.places";
/// Cache: the search index (a folder).
pub(crate) const SEARCH_INDEX_DIR: &str = ".search-index";

/// The files of the distill cache, dropped together.
pub(crate) const DISTILL_CACHE_FILES: [&str; 4] =
    [DISTILL_CACHE_FILE, DISTILL_UNITS_FILE, DISTILL_IDS_FILE, DISTILL_PLACES_FILE];

/// Every cache file of a memory directory besides the distill cache's:
/// what a redaction removes, with [`DISTILL_CACHE_FILES`] and
/// [`CACHE_DIRS`].
pub(crate) const CACHE_FILES: [&str; 6] = [
    CHECKPOINTS_FILE,
    CONFLICTS_LAYOUT_FILE,
    PROJECTION_INDEX_FILE,
    PENDING_INDEX_FILE,
    DOMAIN_INDEX_FILE,
    TRAIL_FILE,
];

/// The cache directories of a memory directory.
pub(crate) const CACHE_DIRS: [&str; 2] = [ID_INDEX_DIR, SEARCH_INDEX_DIR];
/// The lock that serializes updates of the search index.
pub(crate) const SEARCH_INDEX_LOCK_FILE: &str = ".search-index.lock";

/// Returns the folder where `project` keeps workmem's own files
/// (`.workmem/`): the pin of the workspace id, the configuration and, by
/// default, the memory directory.
pub fn workmem_dir(project: &Path) -> PathBuf {
    project.join(DOT_DIR)
}

/// Returns the memory directory of `project` when none is given
/// (`.workmem/memory`).
pub fn default_memory_dir(project: &Path) -> PathBuf {
    project.join(DEFAULT_MEMORY_DIR)
}

/// Returns the pin of `project`'s workspace id (`.workmem/workspace.toml`),
/// which `share` writes and `adopt` takes over.
pub fn pin_file(project: &Path) -> PathBuf {
    workmem_dir(project).join(IDENTITY_FILE)
}

/// Returns whether `day` has the `YYYY-MM-DD` shape of a daily file name.
pub(crate) fn is_day_name(day: &str) -> bool {
    let b = day.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daily_pattern_and_sample_agree_with_the_daily_names() {
        assert_eq!(DAILY_PATTERN, format!("{DAILY_DIR}/*{DAY_EXTENSION}"));
        let day = SAMPLE_DAY.strip_suffix(DAY_EXTENSION).unwrap();
        assert!(is_day_name(day));
        assert_eq!(default_memory_dir(Path::new("p")), workmem_dir(Path::new("p")).join("memory"));
    }
}
