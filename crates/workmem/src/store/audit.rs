//! The audit stream as a resolve reads it: the one adjudication of an
//! event id, found without decoding the prefix of the stream already
//! checked (`.valid-hashes` keeps its length and hash, and the hash state
//! while the stream keeps its identity), and that check recorded again
//! once the resolve appended its own record.

use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::store::journal::{self, Adjudication};
use crate::store::memory_dir::{MemoryDir, Placement, ReadOnlyMemoryDir};
use crate::store::names::AUDIT_FILE;
use crate::store::valid_hashes::{self, CheckedPrefix};

impl ReadOnlyMemoryDir {
    /// Returns the adjudication of the audit stream with `event_id`, if
    /// any, checking the records it reads. The stream is append-only: the
    /// records of the prefix an earlier resolve checked (still hashing as
    /// it did) are parsed only when its bytes may hold the id, so the check
    /// costs a hash and a substring search of the history, not a parse of
    /// it. (An id is written as its plain JSON string unless the stream
    /// holds an escape, `\u` or `\/`; then every record is read.) A stream
    /// that still has the identity recorded with its prefix (nothing was
    /// written since the last resolve appended to it) is not hashed at all.
    /// Also returns what was read and checked: the caller records it once
    /// its own work succeeded.
    ///
    /// Errors: [`crate::Error::Corrupt`] naming file and line, [`crate::Error::Scope`],
    /// [`crate::Error::Io`].
    pub(crate) fn find_adjudication(
        &self,
        event_id: &str,
    ) -> Result<(Option<Adjudication>, Option<AuditRead>)> {
        let path = self.file(AUDIT_FILE);
        let Some((data, stamp)) = self.read_stamped(AUDIT_FILE)? else {
            return Ok((None, None));
        };
        // Complete lines only: an unterminated last line is not a record.
        let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
        let data = &data[..complete];
        // One pass hashes the recorded prefix, then goes on to the end.
        let recorded = valid_hashes::checked_prefix(self.path(), AUDIT_FILE)
            .and_then(|prefix| Some((usize::try_from(prefix.len).ok()?, prefix)))
            .filter(|(len, _)| *len <= complete);
        let (mut hasher, hashed, checked) = match recorded {
            Some((len, CheckedPrefix { at: Some((at, state)), .. }))
                if at == stamp && len == complete =>
            {
                (state, len, len)
            }
            Some((len, prefix)) => {
                let mut hasher = Sha256::new();
                hasher.update(&data[..len]);
                let same = hex::encode(hasher.clone().finalize()) == prefix.sha256;
                (hasher, len, if same { len } else { 0 })
            }
            None => (Sha256::new(), 0, 0),
        };
        let escaped = memchr::memchr_iter(b'\\', data)
            .any(|at| matches!(data.get(at + 1), Some(b'u' | b'/')));
        let quoted = format!("\"{event_id}\"");
        let in_checked =
            escaped || memchr::memmem::find(&data[..checked], quoted.as_bytes()).is_some();
        let start = if in_checked { 0 } else { checked };
        let first_line = 1 + memchr::memchr_iter(b'\n', &data[..start]).count();
        let mut found = None;
        journal::for_each_record_in::<Adjudication>(
            &path,
            &data[start..],
            first_line,
            self.workspace_id(),
            |numbered| {
                if found.is_none() && numbered.record.event_id == event_id {
                    found = Some(numbered.record);
                }
                Ok(())
            },
        )?;
        hasher.update(&data[hashed..]);
        let read = AuditRead { len: complete as u64, hasher, grown: checked < complete };
        Ok((found, Some(read)))
    }
}

/// The audit stream as a resolve read and checked it.
#[derive(Debug)]
pub(crate) struct AuditRead {
    /// The length of its complete lines.
    len: u64,
    /// Their SHA-256, not finished.
    hasher: Sha256,
    /// Whether they go beyond the checked prefix recorded before.
    grown: bool,
}

impl AuditRead {
    /// Records the stream as checked, with `appended` (the record this
    /// resolve appended and where it landed): when that record went right
    /// after what was read, and nobody else wrote to the stream, the record
    /// is hashed on and the stream's identity kept with the hash state,
    /// so the next resolve hashes nothing it has not written.
    pub(crate) fn record(mut self, dir: &MemoryDir, appended: Option<(Placement, String)>) {
        let at = match appended {
            Some((placement, line))
                if placement.offset == self.len && placement.alone(line.len()) =>
            {
                self.hasher.update(line.as_bytes());
                self.len += line.len() as u64;
                Some((placement.after, self.hasher.clone()))
            }
            _ if self.grown => None,
            _ => return,
        };
        let sha256 = hex::encode(self.hasher.finalize());
        valid_hashes::record_prefix(
            dir.path(),
            AUDIT_FILE,
            &CheckedPrefix { len: self.len, sha256, at },
        );
    }
}
