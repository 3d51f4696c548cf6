//! Where the SHA-256 of a state file stood part way through it, so that
//! hashing its next version, which starts with the same bytes, resumes
//! there instead of hashing those bytes again.
//!
//! A resolution and a distill replace a few domains of curated.json and
//! conflicts.json and copy every other byte, but a schema-2 intent and the
//! known-valid hashes need the SHA-256 of the whole file after. SHA-256
//! reads its input in order, so the bytes before the first replaced
//! record hash as they did in the file before: its state there can be
//! taken from the file before. The hasher of a state file keeps its state
//! every [`EVERY`] bytes (a checkpoint); the writer records them with the
//! file's hash once the file is in place, and the next writer of that
//! file resumes from the last checkpoint before its first change. With
//! 1,000 closed cases behind it, conflicts.json is about 1.9 MB: hashing
//! it whole costs a resolution about 1.5 ms.
//!
//! The file, `.hash-checkpoints` in the memory directory, is a cache,
//! replaced atomically: the checkpoints of the last version of each state
//! file written, one per line, under its whole hash, which the reader
//! knows (a file whose hash is not the one the reader holds has no
//! checkpoints). Each line ends with a check of the rest (16 hex digits of
//! its SHA-256): a damaged line, and every line after it, is ignored. A
//! lost file only costs whole hashes.
//!
//! ```text
//! conflicts.json <sha256 of the whole file> <offset> <serialized state, hex> <check>
//! ```

use std::fmt::Write;
use std::path::Path;

use sha2::digest::common::hazmat::{SerializableState, SerializedState};
use sha2::{Digest, Sha256};

use crate::store::atomic_io;
use crate::store::names::CHECKPOINTS_FILE;

/// Bytes between two checkpoints: a resumed hash re-reads at most this
/// much before the first change (a state is 105 bytes: a 2 MB file keeps
/// 31 of them, about 10 KB of lines).
const EVERY: u64 = if cfg!(test) { 8 } else { 64 * 1024 };

/// The states of a file's SHA-256 at some offsets, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Checkpoints(Vec<(u64, Sha256)>);

impl Checkpoints {
    /// The last checkpoint at or before `offset`, with the ones before it.
    fn up_to(&self, offset: u64) -> Checkpoints {
        Checkpoints(self.0.iter().take_while(|(at, _)| *at <= offset).cloned().collect())
    }
}

/// A SHA-256 that keeps a checkpoint every [`EVERY`] bytes.
#[derive(Debug, Clone)]
pub(crate) struct Hasher {
    hasher: Sha256,
    /// Bytes hashed.
    at: u64,
    kept: Checkpoints,
}

impl Default for Hasher {
    fn default() -> Self {
        Hasher { hasher: Sha256::new(), at: 0, kept: Checkpoints::default() }
    }
}

impl Hasher {
    /// Returns a hasher of a file whose first `same` bytes are those of the
    /// file `before` holds the checkpoints of, resumed at the last of them
    /// at or before `same`, and the offset it stands at: the caller hashes
    /// the file from there.
    pub(crate) fn resume(before: &Checkpoints, same: u64) -> (Hasher, u64) {
        let kept = before.up_to(same);
        match kept.0.last() {
            Some((at, state)) => {
                let (hasher, at) = (state.clone(), *at);
                (Hasher { hasher, at, kept }, at)
            }
            None => (Hasher::default(), 0),
        }
    }

    /// Hashes the next `bytes`.
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let to_next = EVERY - self.at % EVERY;
            let now = usize::try_from(to_next).map_or(bytes.len(), |n| n.min(bytes.len()));
            self.hasher.update(&bytes[..now]);
            self.at += now as u64;
            bytes = &bytes[now..];
            if self.at.is_multiple_of(EVERY) {
                self.kept.0.push((self.at, self.hasher.clone()));
            }
        }
    }

    /// The SHA-256 of what was hashed, hex, and the checkpoints kept.
    pub(crate) fn finish(self) -> (String, Checkpoints) {
        (hex::encode(self.hasher.finalize()), self.kept)
    }
}

/// Returns the checkpoints recorded for the state file `file` of the
/// memory directory `dir` when its whole hash is `sha256`; none otherwise.
pub(crate) fn load(dir: &Path, file: &str, sha256: &str) -> Checkpoints {
    let Ok(Some(data)) = atomic_io::read_optional(&dir.join(CHECKPOINTS_FILE)) else {
        return Checkpoints::default();
    };
    let mut found: Vec<(u64, Sha256)> = Vec::new();
    for line in String::from_utf8_lossy(&data).lines() {
        let mut fields = line.split(' ');
        if fields.next() != Some(file) || fields.next() != Some(sha256) {
            continue;
        }
        let parsed = (|| {
            let (rest, check) = line.rsplit_once(' ')?;
            if check != line_check(rest) {
                return None;
            }
            let at: u64 = fields.next()?.parse().ok()?;
            let hasher = decode_state(fields.next()?)?;
            (fields.next() == Some(check) && fields.next().is_none()).then_some((at, hasher))
        })();
        // Only whole lines, in order: anything else ends what is trusted.
        match parsed {
            Some((at, hasher)) if found.last().is_none_or(|(last, _)| *last < at) => {
                found.push((at, hasher));
            }
            _ => break,
        }
    }
    Checkpoints(found)
}

/// A SHA-256 part way through its input, as hex (210 digits).
pub(crate) fn encode_state(hasher: &Sha256) -> String {
    hex::encode(hasher.serialize())
}

/// The SHA-256 that [`encode_state`] wrote; `None` for anything else.
pub(crate) fn decode_state(text: &str) -> Option<Sha256> {
    let bytes = hex::decode(text).ok()?;
    Sha256::deserialize(&SerializedState::<Sha256>::try_from(&bytes[..]).ok()?).ok()
}

/// The check that ends a line: 16 hex digits of the SHA-256 of the rest.
fn line_check(rest: &str) -> String {
    crate::model::canon::short_hash(rest, 16)
}

/// Records `checkpoints` as those of the state file `file`, whose whole
/// hash is `sha256`, in place of any recorded before for that file. Only
/// a cache: a failure to write it is ignored.
pub(crate) fn record(dir: &Path, file: &str, sha256: &str, checkpoints: &Checkpoints) {
    let path = dir.join(CHECKPOINTS_FILE);
    let mut out = String::new();
    if let Ok(Some(data)) = atomic_io::read_optional(&path) {
        for line in String::from_utf8_lossy(&data).lines() {
            if line.split(' ').next().is_some_and(|name| name != file) {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    for (at, state) in &checkpoints.0 {
        let line = format!("{file} {sha256} {at} {}", encode_state(state));
        let _ = writeln!(out, "{line} {}", line_check(&line));
    }
    let _ = atomic_io::replace_cache(&path, out.as_bytes());
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn hashed(bytes: &[u8]) -> (String, Checkpoints) {
        let mut hasher = Hasher::default();
        // In uneven pieces: checkpoints fall where they fall.
        for piece in bytes.chunks(5) {
            hasher.update(piece);
        }
        hasher.finish()
    }

    #[test]
    fn a_hash_resumed_from_a_checkpoint_is_the_whole_hash() {
        let before = b"the first bytes stay, the rest of the file changes".to_vec();
        let (sha256, checkpoints) = hashed(&before);
        assert_eq!(sha256, crate::model::canon::sha256_hex(&before));
        assert_eq!(checkpoints.0.len(), before.len() / 8);
        let mut after = before[..20].to_vec();
        after.extend_from_slice(b" and something else entirely");
        for same in 0..=20 {
            let (mut hasher, from) = Hasher::resume(&checkpoints, same);
            assert!(from <= same && same - from < EVERY, "{same}: {from}");
            hasher.update(&after[from as usize..]);
            let (resumed, kept) = hasher.finish();
            assert_eq!(resumed, crate::model::canon::sha256_hex(&after), "{same}");
            // Its checkpoints are those of the new file.
            let (_, whole) = hashed(&after);
            let offsets = |c: &Checkpoints| c.0.iter().map(|(at, _)| *at).collect::<Vec<_>>();
            assert_eq!(offsets(&kept), offsets(&whole));
        }
    }

    /// Records the checkpoints of a 36-byte conflicts.json in `dir`;
    /// returns its bytes, hash and checkpoints.
    fn recorded(dir: &Path) -> (Vec<u8>, String, Checkpoints) {
        let bytes = b"0123456789abcdefghijklmnopqrstuvwxyz".to_vec();
        let (sha256, checkpoints) = hashed(&bytes);
        record(dir, "conflicts.json", &sha256, &checkpoints);
        (bytes, sha256, checkpoints)
    }

    #[test]
    fn checkpoints_are_found_under_their_file_and_hash_only() {
        let dir = tempfile::tempdir().unwrap();
        let (bytes, sha256, checkpoints) = recorded(dir.path());
        record(dir.path(), "curated.json", &sha256, &hashed(b"other").1);
        let loaded = load(dir.path(), "conflicts.json", &sha256);
        assert_eq!(loaded.0.len(), checkpoints.0.len());
        let (mut hasher, from) = Hasher::resume(&loaded, 30);
        assert_eq!(from, 24);
        hasher.update(&bytes[24..]);
        assert_eq!(hasher.finish().0, sha256);
        assert!(load(dir.path(), "conflicts.json", &"0".repeat(64)).0.is_empty());
        assert!(load(dir.path(), "journal", &sha256).0.is_empty());
        // A new version replaces the file's checkpoints, not the others'.
        let (other, newer) = hashed(b"a newer conflicts.json");
        record(dir.path(), "conflicts.json", &other, &newer);
        assert!(load(dir.path(), "conflicts.json", &sha256).0.is_empty());
        assert_eq!(load(dir.path(), "conflicts.json", &other).0.len(), newer.0.len());
        assert!(load(dir.path(), "curated.json", &sha256).0.is_empty());
    }

    #[test]
    fn a_damaged_line_ends_what_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let (_, sha256, _) = recorded(dir.path());
        let path = dir.path().join(CHECKPOINTS_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        // One digit of the state changed: the line still parses.
        let digit = lines[2].len() - 30;
        let changed = if &lines[2][digit..=digit] == "0" { "1" } else { "0" };
        lines[2].replace_range(digit..=digit, changed);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let loaded = load(dir.path(), "conflicts.json", &sha256);
        assert_eq!(loaded.0.len(), 2);
        let cut = lines[1].len() - 3;
        lines[1].truncate(cut);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        assert_eq!(load(dir.path(), "conflicts.json", &sha256).0.len(), 1);
        std::fs::write(&path, b"\xff\xfe garbage\n").unwrap();
        assert!(load(dir.path(), "conflicts.json", &sha256).0.is_empty());
    }
}
