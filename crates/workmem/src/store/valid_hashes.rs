//! The hashes of state files known to be valid: the SHA-256 of every
//! curated.json that workmem checked whole (decoded, every invariant) and
//! found canonical, or wrote itself, the newest few. A writer that reads a
//! file whose hash is listed trusts its layout and decodes only the entries
//! it changes ([`crate::store::curated_file`]); any other file is decoded
//! and checked whole, as always.
//!
//! The file, `.valid-hashes`, is a cache: a hash is a fact about the
//! bytes it hashes, so a stale or lost list only costs a whole read. Each
//! line may also carry the identity (inode, size, modification time) the
//! file had when workmem wrote or checked it: while the file keeps that
//! identity, a writer takes its hash from the line instead of hashing the
//! whole file again (the trust the projection index and the distill cache
//! already give those identities). One line per hash:
//!
//! ```text
//! curated.json <sha256> [<inode> <size> <mtime_s> <mtime_ns>]
//! conflict-adjudications.jsonl <sha256> <length> [<inode> <size> <mtime_s> <mtime_ns> <state>]
//! ```
//!
//! The second form is for an append-only stream: its first `length` bytes,
//! which hash to `sha256`, were checked record by record. With an identity
//! (the stream's when it held exactly those bytes) it also carries the
//! SHA-256 state after them ([`hash_checkpoints::encode_state`]): while the
//! stream keeps that identity nothing needs hashing, and the writer that
//! appends the next record hashes only that record.

use std::path::Path;

use sha2::Sha256;

use crate::store::atomic_io::{self, FileStamp};
use crate::store::hash_checkpoints;
use crate::store::names::VALID_HASHES_FILE;

/// Hashes kept per state file: the file before and after the last few
/// writes, so a reader of either finds its hash.
const KEPT: usize = 4;

/// One line: the state file, a known-valid hash, the file's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    file: String,
    sha256: String,
    stamp: Option<FileStamp>,
    /// For a stream: the length of the checked prefix.
    prefix: Option<u64>,
    /// For a stream with its identity: the hash state after the prefix.
    state: Option<String>,
}

/// The prefix of an append-only stream that was checked record by record.
#[derive(Debug, Clone)]
pub(crate) struct CheckedPrefix {
    /// Its length.
    pub len: u64,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// The stream's identity when it held exactly the prefix, and the
    /// SHA-256 state after it.
    pub at: Option<(FileStamp, Sha256)>,
}

fn lines(dir: &Path) -> Vec<Known> {
    let Ok(Some(data)) = atomic_io::read_optional(&dir.join(VALID_HASHES_FILE)) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&data)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let file = fields.next()?.to_owned();
            let sha256 = fields.next()?.to_owned();
            if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let rest: Vec<&str> = fields.collect();
            let (numbers, state) = match rest[..] {
                [len, a, b, c, d, state] => ([len, a, b, c, d].to_vec(), Some(state.to_owned())),
                _ => (rest, None),
            };
            let numbers: Vec<i64> =
                numbers.iter().map(|n| n.parse()).collect::<Result<_, _>>().ok()?;
            let (stamp, prefix) = match numbers[..] {
                [] => (None, None),
                [len] => (None, Some(u64::try_from(len).ok()?)),
                [a, b, c, d] => (Some([a, b, c, d]), None),
                [len, a, b, c, d] => (Some([a, b, c, d]), Some(u64::try_from(len).ok()?)),
                _ => return None,
            };
            Some(Known { file, sha256, stamp, prefix, state })
        })
        .collect()
}

/// Returns whether `sha256` is a known-valid content of the state file
/// `file` of the memory directory `dir`. Tests only: a hash alone proves
/// nothing about a file a branch delivered (see [`hash_of`]).
#[cfg(test)]
fn contains(dir: &Path, file: &str, sha256: &str) -> bool {
    lines(dir).iter().any(|k| k.file == file && k.sha256 == sha256 && k.prefix.is_none())
}

/// Returns the checked prefix recorded for the stream `file`.
pub(crate) fn checked_prefix(dir: &Path, file: &str) -> Option<CheckedPrefix> {
    lines(dir).into_iter().rev().filter(|k| k.file == file).find_map(|k| {
        let at = match (k.stamp, &k.state) {
            (Some(stamp), Some(state)) => Some((stamp, hash_checkpoints::decode_state(state)?)),
            _ => None,
        };
        Some(CheckedPrefix { len: k.prefix?, sha256: k.sha256, at })
    })
}

/// Records `prefix` as the checked prefix of the stream `file`, in place
/// of the one recorded before.
pub(crate) fn record_prefix(dir: &Path, file: &str, prefix: &CheckedPrefix) {
    let mut kept = lines(dir);
    kept.retain(|k| k.file != file);
    kept.push(Known {
        file: file.to_owned(),
        sha256: prefix.sha256.clone(),
        stamp: prefix.at.as_ref().map(|(stamp, _)| *stamp),
        prefix: Some(prefix.len),
        state: prefix.at.as_ref().map(|(_, state)| hash_checkpoints::encode_state(state)),
    });
    save(dir, &kept);
}

/// Returns the known-valid hash recorded for `file` with the identity
/// `stamp`, if any.
pub(crate) fn hash_of(dir: &Path, file: &str, stamp: FileStamp) -> Option<String> {
    lines(dir)
        .into_iter()
        .find(|k| k.file == file && k.stamp == Some(stamp) && k.prefix.is_none())
        .map(|k| k.sha256)
}

/// Records `sha256` as a known-valid content of `file`, which has the
/// identity `stamp` when given. Only a cache: failing to write it costs
/// the next writer a whole read.
pub(crate) fn record(dir: &Path, file: &str, sha256: &str, stamp: Option<FileStamp>) {
    let mut kept = lines(dir);
    kept.retain(|k| !(k.file == file && k.sha256 == sha256));
    kept.push(Known {
        file: file.to_owned(),
        sha256: sha256.to_owned(),
        stamp,
        prefix: None,
        state: None,
    });
    save(dir, &kept);
}

/// Writes the newest `KEPT` lines of each file.
fn save(dir: &Path, kept: &[Known]) {
    let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut out: Vec<String> = Vec::new();
    for known in kept.iter().rev() {
        let count = counts.entry(&known.file).or_default();
        *count += 1;
        if *count <= KEPT {
            let extra = match (known.prefix, known.stamp, &known.state) {
                (Some(len), Some(s), Some(state)) => {
                    format!(" {len} {} {} {} {} {state}", s[0], s[1], s[2], s[3])
                }
                (Some(len), _, _) => format!(" {len}"),
                (None, Some(s), _) => format!(" {} {} {} {}", s[0], s[1], s[2], s[3]),
                (None, None, _) => String::new(),
            };
            out.push(format!("{} {}{extra}\n", known.file, known.sha256));
        }
    }
    out.reverse();
    let _ = atomic_io::replace_cache(&dir.join(VALID_HASHES_FILE), out.concat().as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_hashes_of_each_file_are_kept_with_their_identities() {
        let dir = tempfile::tempdir().unwrap();
        let hash = |n: usize| format!("{n:064x}");
        assert!(!contains(dir.path(), "curated.json", &hash(1)));
        for n in 0..10 {
            record(dir.path(), "curated.json", &hash(n), Some([n as i64, 2, 3, 4]));
        }
        record(dir.path(), "conflicts.json", &hash(3), None);
        for n in 0..10 {
            assert_eq!(contains(dir.path(), "curated.json", &hash(n)), n >= 6, "{n}");
            let found = hash_of(dir.path(), "curated.json", [n as i64, 2, 3, 4]);
            assert_eq!(found, (n >= 6).then(|| hash(n)), "{n}");
        }
        assert!(contains(dir.path(), "conflicts.json", &hash(3)));
        assert!(!contains(dir.path(), "conflicts.json", &hash(4)));
        assert_eq!(hash_of(dir.path(), "curated.json", [9, 2, 3, 5]), None);
        // A damaged cache is a miss, never an error.
        atomic_io::replace_cache(&dir.path().join(VALID_HASHES_FILE), b"\xff garbage\nx y\n")
            .unwrap();
        assert!(!contains(dir.path(), "curated.json", &hash(9)));
        record(dir.path(), "curated.json", &hash(9), None);
        assert!(contains(dir.path(), "curated.json", &hash(9)));
        // A stream's checked prefix: the last one recorded.
        let prefix = |len: u64, sha256: String, at: Option<(FileStamp, Sha256)>| CheckedPrefix {
            len,
            sha256,
            at,
        };
        let found = |file: &str| {
            checked_prefix(dir.path(), file).map(|p| {
                let at = p.at.map(|(stamp, state)| (stamp, hash_checkpoints::encode_state(&state)));
                (p.len, p.sha256, at)
            })
        };
        assert_eq!(found("audit"), None);
        record_prefix(dir.path(), "audit", &prefix(10, hash(1), None));
        record_prefix(dir.path(), "audit", &prefix(20, hash(2), None));
        assert_eq!(found("audit"), Some((20, hash(2), None)));
        // With the stream's identity, the hash state after the prefix.
        let mut state = <Sha256 as sha2::Digest>::new();
        sha2::Digest::update(&mut state, b"twenty-one bytes long");
        let encoded = hash_checkpoints::encode_state(&state);
        record_prefix(dir.path(), "audit", &prefix(21, hash(3), Some(([7, 21, 1, 2], state))));
        assert_eq!(found("audit"), Some((21, hash(3), Some(([7, 21, 1, 2], encoded)))));
        assert_eq!(hash_of(dir.path(), "audit", [7, 21, 1, 2]), None);
        assert!(!contains(dir.path(), "audit", &hash(2)));
        assert!(contains(dir.path(), "curated.json", &hash(9)));
    }
}
