//! `.checked-state`: the identities that curated.json and conflicts.json
//! had when this clone last wrote them, or last checked them in full
//! against the daily logs and the audit stream. A state file with any
//! other identity arrived from elsewhere (a `git pull`, a checkout, a copy,
//! a hand edit) and is checked in full before anything serves it or builds
//! on it (docs/trust.md).
//!
//! An identity is (inode, size, modification time in ns) on this machine:
//! a branch cannot forge the line of a file it delivers, because git
//! writes a new file whose inode and time it cannot know. The file is a
//! cache in the git-ignored part of the memory directory: a lost or damaged
//! record only costs one full check. A record that names a file which no
//! longer exists tells the check that a checkout or merge deleted it.
//!
//! One line:
//!
//! ```text
//! curated <inode> <size> <mtime_s> <mtime_ns> conflicts -
//! ```
//!
//! where `-` stands for a file that did not exist.

use std::path::Path;

use crate::store::atomic_io::{self, FileStamp};
use crate::store::names::CHECKED_STATE_FILE;

/// The identities of the two state files (`None`: no file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StatePair {
    /// curated.json's identity.
    pub(crate) curated: Option<FileStamp>,
    /// conflicts.json's identity.
    pub(crate) conflicts: Option<FileStamp>,
}

impl StatePair {
    fn encode(&self) -> String {
        let part = |stamp: Option<FileStamp>| match stamp {
            Some(s) => format!("{} {} {} {}", s[0], s[1], s[2], s[3]),
            None => "-".to_owned(),
        };
        format!("curated {} conflicts {}\n", part(self.curated), part(self.conflicts))
    }

    fn decode(text: &str) -> Option<StatePair> {
        let mut words = text.trim_end_matches('\n').split(' ');
        let mut stamp = |name: &str| -> Option<Option<FileStamp>> {
            if words.next()? != name {
                return None;
            }
            let first = words.next()?;
            if first == "-" {
                return Some(None);
            }
            let mut s = [first.parse().ok()?, 0, 0, 0];
            for slot in &mut s[1..] {
                *slot = words.next()?.parse().ok()?;
            }
            Some(Some(s))
        };
        let curated = stamp("curated")?;
        let conflicts = stamp("conflicts")?;
        words.next().is_none().then_some(StatePair { curated, conflicts })
    }
}

/// Returns the identities recorded in the memory directory `dir`, if a
/// readable record exists.
pub(crate) fn load(dir: &Path) -> Option<StatePair> {
    let Ok(Some(data)) = atomic_io::read_optional(&dir.join(CHECKED_STATE_FILE)) else {
        return None;
    };
    StatePair::decode(std::str::from_utf8(&data).ok()?)
}

/// Records `pair` as written or checked by this clone. Only a cache:
/// failing to write it costs the next command one full check.
pub(crate) fn record(dir: &Path, pair: StatePair) {
    let _ = atomic_io::replace_cache(&dir.join(CHECKED_STATE_FILE), pair.encode().as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_damage_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()), None);
        for pair in [
            StatePair { curated: Some([1, 2, 3, 4]), conflicts: None },
            StatePair { curated: None, conflicts: Some([5, -6, 7, 8]) },
            StatePair { curated: None, conflicts: None },
        ] {
            record(dir.path(), pair);
            assert_eq!(load(dir.path()), Some(pair));
        }
        for damaged in ["", "curated - conflicts", "curated 1 2 3 conflicts -", "x - y -"] {
            atomic_io::replace_cache(&dir.path().join(CHECKED_STATE_FILE), damaged.as_bytes())
                .unwrap();
            assert_eq!(load(dir.path()), None, "{damaged:?}");
        }
    }
}
