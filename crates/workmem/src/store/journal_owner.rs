//! Which transaction of the journal this clone prepared: the record that
//! lets recovery roll forward only its own work.
//!
//! The journal is git-ignored, but a branch can still deliver one (`git add
//! -f`, or a branch that edits `.workmem/.gitignore`), and a journal copied
//! from another machine is no decision of this clone either. So before a
//! resolution writes its `prepared` line, it records in `.journal-owner`
//! (git-ignored too) the journal file's identity on this machine (device
//! and inode) with the transaction id and the intent's digest, durably.
//! Recovery rolls a transaction forward only when the journal still has
//! that identity and the transaction is the one recorded. A git checkout
//! or a copy creates a new file, with another inode: even a forged record
//! delivered alongside names an identity the delivered journal does not
//! have. A crash at any point after the record is durable leaves a journal
//! it names, so real crash recovery keeps working.
//!
//! One line: `<device> <inode> <transaction id> <intent sha256>`.

use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{IoContext, Result};
use crate::store::atomic_io;
use crate::store::names::{DISTILL_OWNER_FILE, JOURNAL_FILE, JOURNAL_OWNER_FILE};

/// What the record says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    device: u64,
    inode: u64,
    transaction_id: String,
    digest: String,
}

/// Returns the journal's identity (device, inode), `None` when it does not
/// exist.
///
/// Errors: [`crate::Error::Io`].
fn identity(journal: &Path) -> Result<Option<(u64, u64)>> {
    match std::fs::symlink_metadata(journal) {
        Ok(meta) => Ok(Some((meta.dev(), meta.ino()))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).at(journal),
    }
}

/// Reads the record; `None` when it is missing or unreadable (then no
/// transaction counts as this clone's).
fn read(dir: &Path) -> Option<Owner> {
    read_record(&dir.join(JOURNAL_OWNER_FILE))
}

/// Reads the record at `path`.
fn read_record(path: &Path) -> Option<Owner> {
    let data = atomic_io::read_optional(path).ok()??;
    let text = String::from_utf8(data).ok()?;
    let mut fields = text.trim_end_matches('\n').split(' ');
    let owner = Owner {
        device: fields.next()?.parse().ok()?,
        inode: fields.next()?.parse().ok()?,
        transaction_id: fields.next()?.to_owned(),
        digest: fields.next()?.to_owned(),
    };
    fields.next().is_none().then_some(owner)
}

/// Records that this clone prepares transaction `transaction_id` (intent
/// digest `digest`) in the journal at `journal`, creating the journal
/// (empty, durable) when it does not exist: called under the workspace
/// lock before the `prepared` line is appended.
///
/// Errors: [`crate::Error::Io`], [`crate::Error::Corrupt`] for a symlinked
/// journal or record.
pub(crate) fn claim(dir: &Path, journal: &Path, transaction_id: &str, digest: &str) -> Result<()> {
    atomic_io::refuse_symlink(journal)?;
    let (device, inode) = if let Some(found) = identity(journal)? {
        found
    } else {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(journal)
            .at(journal)?;
        file.sync_all().at(journal)?;
        atomic_io::sync_dir(dir)?;
        let meta = file.metadata().at(journal)?;
        (meta.dev(), meta.ino())
    };
    let line = format!("{device} {inode} {transaction_id} {digest}\n");
    atomic_io::replace(&dir.join(JOURNAL_OWNER_FILE), line.as_bytes())
}

/// Records the distill intent `intent` (its temporary file, durable and
/// holding `bytes`, before it is renamed into place: the rename keeps its
/// identity) as this clone's. Claimed before it is in place, an intent a
/// crash leaves behind is always this clone's.
///
/// Errors: [`crate::Error::Io`].
pub(crate) fn claim_distill_intent(dir: &Path, intent: &std::fs::File, bytes: &[u8]) -> Result<()> {
    let meta = intent.metadata().at(&dir.join(DISTILL_OWNER_FILE))?;
    let (device, inode) = (meta.dev(), meta.ino());
    let digest = crate::model::canon::sha256_hex(bytes);
    let line = format!("{device} {inode} distill {digest}\n");
    atomic_io::replace(&dir.join(DISTILL_OWNER_FILE), line.as_bytes())
}

/// Returns whether the distill intent at `intent`, holding `bytes`, is the
/// one this clone wrote (same identity, same bytes).
///
/// Errors: [`crate::Error::Io`].
pub(crate) fn is_own_distill_intent(dir: &Path, intent: &Path, bytes: &[u8]) -> Result<bool> {
    let Some(found) = identity(intent)? else { return Ok(false) };
    let digest = crate::model::canon::sha256_hex(bytes);
    Ok(read_record(&dir.join(DISTILL_OWNER_FILE))
        .is_some_and(|owner| (owner.device, owner.inode) == found && owner.digest == digest))
}

/// Returns whether the journal at `journal` is the file this clone last
/// prepared a transaction in (same device and inode as recorded). A
/// journal that is not holds nothing this clone prepared.
///
/// Errors: [`crate::Error::Io`].
pub(crate) fn is_own_file(dir: &Path, journal: &Path) -> Result<bool> {
    let Some(found) = identity(journal)? else { return Ok(false) };
    Ok(read(dir).is_some_and(|owner| (owner.device, owner.inode) == found))
}

/// Returns whether transaction `transaction_id` with intent digest `digest`
/// of the journal at `journal` was prepared by this clone: the journal has
/// the identity recorded with it, and it is the transaction recorded.
///
/// Errors: [`crate::Error::Io`].
pub(crate) fn prepared_here(
    dir: &Path,
    journal: &Path,
    transaction_id: &str,
    digest: &str,
) -> Result<bool> {
    let Some(found) = identity(journal)? else { return Ok(false) };
    Ok(read(dir).is_some_and(|owner| {
        (owner.device, owner.inode) == found
            && owner.transaction_id == transaction_id
            && owner.digest == digest
    }))
}

/// Records the journal of `dir` as this clone's, with its unfinished
/// transaction (else its first line's, else none) as the one this clone
/// prepared: for tests that install a journal by hand, as a crash of this
/// clone would have left it (see `internals::own_journal`). Returns the
/// transaction id recorded.
///
/// Errors: as [`claim`].
pub(crate) fn adopt_for_tests(dir: &Path) -> Result<Vec<String>> {
    use crate::store::journal::{self, JournalLine};
    let path = dir.join(JOURNAL_FILE);
    if identity(&path)?.is_none() {
        return Ok(Vec::new());
    }
    // The first line, even without its newline (a torn `prepared` line
    // that repair keeps).
    let data = atomic_io::read_optional(&path)?.unwrap_or_default();
    let first = data
        .split(|&b| b == b'\n')
        .next()
        .and_then(|line| journal::parse_record::<JournalLine>(line).ok());
    let unfinished = first.as_ref().and_then(|line| {
        let all = journal::transactions(&path, &line.workspace_id).ok()?;
        all.into_iter().rfind(|t| !t.committed()).map(|t| (t.transaction_id, t.digest))
    });
    let (transaction_id, digest) = unfinished
        .or_else(|| first.map(|line| (line.transaction_id, line.intent_sha256)))
        .unwrap_or_else(|| ("-".to_owned(), "-".to_owned()));
    claim(dir, &path, &transaction_id, &digest)?;
    Ok(vec![transaction_id])
}
