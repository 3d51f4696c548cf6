//! The hashes of state files known to be valid: the SHA-256 of every
//! curated.json that workmem checked whole (decoded, every invariant) and
//! found canonical, or wrote itself, the newest few. A writer that reads a
//! file whose hash is listed trusts its layout and decodes only the entries
//! it changes ([`crate::store::curated_file`]); any other file is decoded
//! and checked whole, as always.
//!
//! The file, `.valid-hashes`, is a cache bound to contents, not to names
//! or times: a hash is a fact about the bytes it hashes, so a stale or
//! lost list only costs a whole read. One line per hash:
//!
//! ```text
//! curated.json <sha256>
//! ```

use std::path::Path;

use crate::store::atomic_io;

/// The cache file, in the memory directory.
pub(crate) const VALID_HASHES_FILE: &str = ".valid-hashes";

/// Hashes kept per state file: the file before and after the last few
/// writes, so a reader of either finds its hash.
const KEPT: usize = 4;

fn lines(dir: &Path) -> Vec<(String, String)> {
    let Ok(Some(data)) = atomic_io::read_optional(&dir.join(VALID_HASHES_FILE)) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&data)
        .lines()
        .filter_map(|line| {
            let (file, hash) = line.split_once(' ')?;
            let valid = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
            valid.then(|| (file.to_owned(), hash.to_owned()))
        })
        .collect()
}

/// Returns whether `sha256` is a known-valid content of the state file
/// `file` of the memory directory `dir`.
pub(crate) fn contains(dir: &Path, file: &str, sha256: &str) -> bool {
    lines(dir).iter().any(|(f, h)| f == file && h == sha256)
}

/// Records `sha256` as a known-valid content of `file`. Only a cache:
/// failing to write it costs the next writer a whole read.
pub(crate) fn record(dir: &Path, file: &str, sha256: &str) {
    let mut kept = lines(dir);
    kept.retain(|(f, h)| !(f == file && h == sha256));
    kept.push((file.to_owned(), sha256.to_owned()));
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out = String::new();
    for (f, h) in kept.iter().rev() {
        let count = counts.entry(f.clone()).or_default();
        *count += 1;
        if *count <= KEPT {
            out.insert_str(0, &format!("{f} {h}\n"));
        }
    }
    let _ = atomic_io::replace_cache(&dir.join(VALID_HASHES_FILE), out.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_hashes_of_each_file_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let hash = |n: usize| format!("{n:064x}");
        assert!(!contains(dir.path(), "curated.json", &hash(1)));
        for n in 0..10 {
            record(dir.path(), "curated.json", &hash(n));
        }
        record(dir.path(), "conflicts.json", &hash(3));
        for n in 0..10 {
            assert_eq!(contains(dir.path(), "curated.json", &hash(n)), n >= 6, "{n}");
        }
        assert!(contains(dir.path(), "conflicts.json", &hash(3)));
        assert!(!contains(dir.path(), "conflicts.json", &hash(4)));
        // A damaged cache is a miss, never an error.
        atomic_io::replace_cache(&dir.path().join(VALID_HASHES_FILE), b"\xff garbage\nx y\n")
            .unwrap();
        assert!(!contains(dir.path(), "curated.json", &hash(9)));
        record(dir.path(), "curated.json", &hash(9));
        assert!(contains(dir.path(), "curated.json", &hash(9)));
    }
}
