//! The adjudication journal: the audit stream of human decisions
//! (`conflict-adjudications.jsonl`) and the transaction journal
//! (`conflict-resolution-transactions.jsonl`) that makes one decision's
//! three-file change recoverable (docs/policy.md and docs/format.md).
//!
//! A resolution appends a `prepared` line holding the whole intent (the
//! resolved domain's curated entries and conflict cases before and after,
//! the hashes of both files before and after, and the adjudication), then
//! applies each target and appends its phase line only once the target is
//! durable: `curated_applied`, `conflict_closed`, `audit_appended`,
//! `committed`. Recovery rolls an unfinished transaction forward
//! idempotently and stops, changing nothing, when a target matches neither
//! its before nor its after state or the intent does not hash to its
//! recorded digest. Schema-1 intents (full snapshots of both files, written
//! by the teaching implementation and earlier versions) are still read.
//!
//! The journal holds work in flight, not history: once a transaction
//! committed, the writer holding the workspace lock replaces the journal by
//! the lines of the transactions that did not ([`compact`]), so at rest it
//! is empty. Every change of the canonical files holds the lock and first
//! finishes any pending transaction, so only the last transaction of the
//! journal can be unfinished: opening a workspace reads the journal's last
//! line only, whatever its length. `verify` checks the whole journal.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Damage, Error, Location, Result};
use crate::model::canon::{self, JsonStyle};
use crate::model::fact::REDACTED;
use crate::model::id_list::IdList;
use crate::model::stamp::Stamp;
use crate::store::atomic_io;
use crate::store::conflict_queue::Case;
use crate::store::corrections::{Action, Correction};
use crate::store::curated_state::Entry;
pub use crate::store::names::{AUDIT_FILE, JOURNAL_FILE};

pub(crate) use crate::store::stream::append_record_placed;
pub use crate::store::stream::{
    JOURNAL_SCHEMA_VERSION, Numbered, StreamRecord, append_record, for_each_record,
    for_each_record_in, is_empty, parse_record, read_stream, repair_stream,
};
/// Schema version of the intents a resolution writes: domain-scoped
/// snapshots plus whole-file hashes.
pub const INTENT_SCHEMA_VERSION: u32 = 2;
/// Schema version of full-snapshot intents, still read and recovered.
pub const INTENT_SCHEMA_FULL: u32 = 1;

/// One human decision, as appended to the audit stream. Format-stable.
///
/// Fields are declared in sorted order: [`crate::model::canon::encode`] writes them
/// as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adjudication {
    /// Who decided.
    pub actor: String,
    /// The case revision the reviewer saw.
    pub case_revision: u32,
    /// The case decided.
    pub conflict_id: String,
    /// Caller-chosen idempotency key of the decision.
    pub event_id: String,
    /// Evidence of the chosen candidate.
    pub evidence_ids: IdList,
    /// The domain's active entry before the decision.
    pub prior_active_entry_key: Option<String>,
    /// Why.
    pub rationale: String,
    /// When.
    pub resolved_at: Stamp,
    /// The domain's active entry after the decision.
    pub resulting_active_entry_key: String,
    /// Always 1.
    pub schema_version: u32,
    /// The chosen candidate.
    pub selected_candidate_id: String,
    /// Owning workspace.
    pub workspace_id: String,
}

impl Adjudication {
    /// Returns the JSONL record, newline included.
    pub fn to_line(&self) -> String {
        line_of(self)
    }
}

/// The full description of one resolution transaction. Format-stable: its
/// canonical JSON is hashed into every journal line.
///
/// Schema 2 ([`INTENT_SCHEMA_VERSION`], what resolutions write) is scoped to
/// the resolved domain: the snapshots hold only the entries and cases of
/// the case's memory_key, and the four `*_sha256_*` fields hash the whole
/// files. Schema 1 ([`INTENT_SCHEMA_FULL`]) holds full snapshots of both
/// files and no hashes.
///
/// Fields are declared in sorted order: [`crate::model::canon::encode`] writes them
/// as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// The audit record to append.
    pub adjudication: Adjudication,
    /// The case decided.
    pub conflict_id: String,
    /// Conflict cases after (of the domain, or all of them in schema 1), in
    /// canonical order.
    pub conflicts_after: Vec<Case>,
    /// Conflict cases before (of the domain, or all of them in schema 1), in
    /// canonical order.
    pub conflicts_before: Vec<Case>,
    /// Schema 2: SHA-256 of the whole conflicts.json after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts_sha256_after: Option<String>,
    /// Schema 2: SHA-256 of the whole conflicts.json before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts_sha256_before: Option<String>,
    /// Curated entries after (of the domain, or all of them in schema 1),
    /// in canonical order.
    pub curated_after: Vec<Entry>,
    /// Curated entries before (of the domain, or all of them in schema 1),
    /// in canonical order.
    pub curated_before: Vec<Entry>,
    /// Schema 2: SHA-256 of the whole curated.json after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curated_sha256_after: Option<String>,
    /// Schema 2: SHA-256 of the whole curated.json before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curated_sha256_before: Option<String>,
    /// The adjudication's event id.
    pub event_id: String,
    /// When the transaction was prepared.
    pub prepared_at: Stamp,
    /// [`INTENT_SCHEMA_VERSION`] or [`INTENT_SCHEMA_FULL`].
    pub schema_version: u32,
    /// `resolution-` + 24 hex of (workspace, event id).
    pub transaction_id: String,
    /// Owning workspace.
    pub workspace_id: String,
}

impl Intent {
    /// Returns the memory_key of the decided case: the domain a schema-2
    /// intent is scoped to. `None` when the case is not among the cases
    /// before (a modified intent, refused by [`transactions`]).
    pub fn memory_key(&self) -> Option<&str> {
        self.conflicts_before
            .iter()
            .find(|case| case.conflict_id == self.conflict_id)
            .map(|case| case.memory_key.as_str())
    }

    /// Returns the SHA-256 of the intent's canonical JSON: the
    /// `intent_sha256` of every line of its transaction.
    pub fn digest(&self) -> String {
        canon::sha256_hex(canon::encode(self, JsonStyle::Canonical).as_bytes())
    }

    /// Returns the journal line recording `phase` of this transaction,
    /// newline included; the `prepared` line carries the intent itself.
    pub fn phase_line(&self, digest: &str, phase: Phase, recorded_at: &Stamp) -> String {
        phase_line_of(self, &self.transaction_id, &self.workspace_id, digest, phase, recorded_at)
    }
}

/// Schema version of a correction's intent.
pub const CORRECTION_INTENT_SCHEMA_VERSION: u32 = 1;

/// The intent of a correction (a retraction, a restore or a redaction,
/// docs/corrections.md "One transaction"): the record to append, the
/// entries and cases it changes before and after, and the hashes of both
/// files before and after. A redaction's holds no text: no snapshot
/// before, and for each file it rewrites only the hashes. Told apart from a resolution's by its
/// transaction id (`correction-`). Format-stable.
///
/// Fields are declared in sorted order: [`crate::model::canon::encode`]
/// writes them as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorrectionIntent {
    /// The cases it changes (every case of each domain it touches), sorted.
    pub conflict_ids: Vec<String>,
    /// Those cases after, in canonical order.
    pub conflicts_after: Vec<Case>,
    /// Those cases before, in canonical order; absent for a redaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts_before: Option<Vec<Case>>,
    /// SHA-256 of the whole conflicts.json after.
    pub conflicts_sha256_after: String,
    /// SHA-256 of the whole conflicts.json before.
    pub conflicts_sha256_before: String,
    /// The record to append to the corrections stream.
    pub correction: Correction,
    /// The entries of `entry_keys` after, in canonical order.
    pub curated_after: Vec<Entry>,
    /// The entries of `entry_keys` before, in canonical order; absent for
    /// a redaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curated_before: Option<Vec<Entry>>,
    /// SHA-256 of the whole curated.json after.
    pub curated_sha256_after: String,
    /// SHA-256 of the whole curated.json before.
    pub curated_sha256_before: String,
    /// The keys of the entries it changes (every entry of each keyed
    /// domain it touches, and the unkeyed entries it touches), sorted.
    pub entry_keys: Vec<String>,
    /// The record's event id.
    pub event_id: String,
    /// For a redaction: each daily file or stream it rewrites, with its
    /// hashes before and after; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<RewrittenFile>>,
    /// When the transaction was prepared.
    pub prepared_at: Stamp,
    /// [`CORRECTION_INTENT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `correction-` + 24 hex of (workspace, event id).
    pub transaction_id: String,
    /// Owning workspace.
    pub workspace_id: String,
}

/// A file a redaction rewrites, by its hashes (the intent holds no text).
/// Format-stable; fields in sorted order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewrittenFile {
    /// Its path, relative to the memory directory (`daily/DAY.jsonl`).
    pub name: String,
    /// SHA-256 of the whole file after.
    pub sha256_after: String,
    /// SHA-256 of the whole file before.
    pub sha256_before: String,
}

impl CorrectionIntent {
    /// Whether it rewrites files (a redaction).
    pub fn rewrites(&self) -> bool {
        self.files.is_some()
    }

    /// Returns the SHA-256 of the intent's canonical JSON.
    pub fn digest(&self) -> String {
        canon::sha256_hex(canon::encode(self, JsonStyle::Canonical).as_bytes())
    }

    /// Returns the journal line recording `phase`, newline included; the
    /// `prepared` line carries the intent itself.
    pub fn phase_line(&self, digest: &str, phase: Phase, recorded_at: &Stamp) -> String {
        phase_line_of(self, &self.transaction_id, &self.workspace_id, digest, phase, recorded_at)
    }
}

/// Whether `transaction_id` names a correction's transaction.
pub fn is_correction(transaction_id: &str) -> bool {
    transaction_id.starts_with("correction-")
}

/// Phases of a transaction, in the only order they may appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The intent is durable; nothing applied yet.
    Prepared,
    /// curated.json (and MEMORY.md) hold the after snapshot.
    CuratedApplied,
    /// conflicts.json holds the after snapshot.
    ConflictClosed,
    /// The adjudication is in the audit stream.
    AuditAppended,
    /// A redaction's daily files hold their tombstones.
    FilesRewritten,
    /// A redaction's caches are removed.
    CachesRemoved,
    /// The correction is in the corrections stream.
    CorrectionAppended,
    /// Done.
    Committed,
}

impl Phase {
    /// Every phase of a resolution, in order.
    pub const ALL: [Phase; 5] = [
        Phase::Prepared,
        Phase::CuratedApplied,
        Phase::ConflictClosed,
        Phase::AuditAppended,
        Phase::Committed,
    ];

    /// Every phase of a correction, in order.
    pub const CORRECTION: [Phase; 5] = [
        Phase::Prepared,
        Phase::CuratedApplied,
        Phase::ConflictClosed,
        Phase::CorrectionAppended,
        Phase::Committed,
    ];

    /// Every phase of a redaction, in order.
    pub const REDACTION: [Phase; 7] = [
        Phase::Prepared,
        Phase::CuratedApplied,
        Phase::ConflictClosed,
        Phase::FilesRewritten,
        Phase::CachesRemoved,
        Phase::CorrectionAppended,
        Phase::Committed,
    ];

    /// The phases of the transaction `transaction_id` (`redaction`: a
    /// correction that rewrites files), in order.
    pub fn of(transaction_id: &str, redaction: bool) -> &'static [Phase] {
        match (is_correction(transaction_id), redaction) {
            (true, true) => &Phase::REDACTION,
            (true, false) => &Phase::CORRECTION,
            (false, _) => &Phase::ALL,
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Phase::Prepared => "prepared",
            Phase::CuratedApplied => "curated_applied",
            Phase::ConflictClosed => "conflict_closed",
            Phase::AuditAppended => "audit_appended",
            Phase::FilesRewritten => "files_rewritten",
            Phase::CachesRemoved => "caches_removed",
            Phase::CorrectionAppended => "correction_appended",
            Phase::Committed => "committed",
        };
        f.write_str(name)
    }
}

/// One line of the transaction journal. Format-stable.
///
/// Fields are declared in sorted order: [`crate::model::canon::encode`] writes them
/// as declared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalLine {
    /// The intent, on the `prepared` line only (kept as read, so the digest
    /// is checked over exactly the stored bytes' value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Value>,
    /// SHA-256 of the intent's canonical JSON.
    pub intent_sha256: String,
    /// Which phase this line records.
    pub phase: Phase,
    /// When the line was written.
    pub recorded_at: Stamp,
    /// Always 1.
    pub schema_version: u32,
    /// The transaction.
    pub transaction_id: String,
    /// Owning workspace.
    pub workspace_id: String,
}

impl JournalLine {
    /// Returns the JSONL record, newline included.
    pub fn to_line(&self) -> String {
        line_of(self)
    }
}

/// Returns the digest of an intent value.
pub fn intent_digest(intent: &Value) -> String {
    canon::sha256_hex(canon::canonical_json(intent).as_bytes())
}

/// Returns the journal line recording `phase` of the transaction whose
/// intent is `intent` (a resolution's or a correction's), newline
/// included; the `prepared` line carries the intent itself.
fn phase_line_of<T: Serialize>(
    intent: &T,
    transaction_id: &str,
    workspace_id: &str,
    digest: &str,
    phase: Phase,
    recorded_at: &Stamp,
) -> String {
    /// A [`JournalLine`] as written, borrowing the typed intent.
    #[derive(Serialize)]
    struct Line<'a, T> {
        #[serde(skip_serializing_if = "Option::is_none")]
        intent: Option<&'a T>,
        intent_sha256: &'a str,
        phase: Phase,
        recorded_at: &'a Stamp,
        schema_version: u32,
        transaction_id: &'a str,
        workspace_id: &'a str,
    }
    line_of(&Line {
        intent: (phase == Phase::Prepared).then_some(intent),
        intent_sha256: digest,
        phase,
        recorded_at,
        schema_version: JOURNAL_SCHEMA_VERSION,
        transaction_id,
        workspace_id,
    })
}

fn line_of<T: Serialize>(record: &T) -> String {
    let mut line = canon::encode(record, JsonStyle::Line);
    line.push('\n');
    line
}

impl StreamRecord for Adjudication {
    fn workspace(&self) -> &str {
        &self.workspace_id
    }

    fn check(&self) -> std::result::Result<(), Damage> {
        self.check_fields().map_err(|err| Damage::record(err.to_string()))
    }
}

impl Adjudication {
    /// Checks ids, actor and rationale with the rules of
    /// [`crate::policy::adjudication::Resolution::validated`].
    ///
    /// Errors: [`Error::InvalidInput`] naming the field.
    pub fn check_fields(&self) -> Result<()> {
        canon::check_id("event_id", &self.event_id)?;
        canon::check_id("conflict_id", &self.conflict_id)?;
        canon::check_id("selected_candidate_id", &self.selected_candidate_id)?;
        for id in &self.evidence_ids {
            canon::check_id("evidence_ids", id)?;
        }
        crate::model::text::check_text("actor", &self.actor)?;
        crate::model::text::check_text("rationale", &self.rationale)
    }
}

impl crate::store::stream::Redactable for Adjudication {
    fn event_id(&self) -> &str {
        &self.event_id
    }

    fn is_marked(&self) -> bool {
        self.actor == REDACTED && self.rationale == REDACTED
    }

    fn marked(&self) -> Self {
        Adjudication { actor: REDACTED.to_owned(), rationale: REDACTED.to_owned(), ..self.clone() }
    }

    fn line(&self) -> String {
        self.to_line()
    }
}

impl StreamRecord for JournalLine {
    fn workspace(&self) -> &str {
        &self.workspace_id
    }
}

/// One transaction's lines, checked: phases form a prefix of the protocol,
/// every line carries the digest of the intent, and ids and workspace
/// agree.
#[derive(Debug, Clone)]
pub struct Transaction {
    /// The transaction id.
    pub transaction_id: String,
    /// Line of the `prepared` record.
    pub first_line: usize,
    /// Every line of the transaction, in order (what [`compact`] keeps of
    /// an uncommitted one).
    pub lines: Vec<usize>,
    /// The decoded intent of a resolution; `None` once the transaction
    /// committed: nothing reads a committed transaction (the audit stream
    /// is the history), and for a correction.
    pub intent: Option<Intent>,
    /// The decoded intent of a correction; `None` once it committed, and
    /// for a resolution.
    pub correction: Option<CorrectionIntent>,
    /// Its digest.
    pub digest: String,
    /// Phases recorded, in order.
    pub done: Vec<Phase>,
}

impl Transaction {
    /// Returns whether the transaction committed.
    pub fn committed(&self) -> bool {
        self.done.last() == Some(&Phase::Committed)
    }
}

/// Reads the journal at `path` line by line and groups its lines into
/// checked transactions, in journal order. The intent of a transaction is
/// dropped once it committed, so memory is bounded by the uncommitted
/// transactions and the longest line, not by the journal.
///
/// Errors: [`Error::Corrupt`] naming the journal line: a phase out of
/// order, a modified intent, mismatched ids; errors of
/// [`for_each_record`].
pub fn transactions(path: &Path, workspace_id: &str) -> Result<Vec<Transaction>> {
    let mut out: Vec<Transaction> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for_each_record::<JournalLine>(path, workspace_id, |Numbered { line, mut record }| {
        let here = || Location::line(path, line);
        let position = match index.get(&record.transaction_id) {
            None => {
                if record.phase != Phase::Prepared {
                    return Err(Error::corrupt(
                        here(),
                        Damage::TransactionStart {
                            transaction_id: record.transaction_id.clone(),
                            status: record.phase.to_string(),
                        },
                    ));
                }
                let Some(raw) = record.intent.take() else {
                    return Err(Error::corrupt(here(), Damage::NoIntent));
                };
                let digest = intent_digest(&raw);
                if digest != record.intent_sha256 {
                    return Err(Error::corrupt(
                        here(),
                        Damage::IntentHash { transaction_id: record.transaction_id.clone() },
                    ));
                }
                let unreadable = |err: serde_json::Error| {
                    Error::corrupt(here(), Damage::IntentUnreadable { detail: err.to_string() })
                };
                let (intent, correction) = if is_correction(&record.transaction_id) {
                    let intent: CorrectionIntent =
                        serde_json::from_value(raw).map_err(unreadable)?;
                    check_correction_intent(&intent, &record, workspace_id)
                        .map_err(|msg| Error::corrupt(here(), msg))?;
                    (None, Some(intent))
                } else {
                    let intent: Intent = serde_json::from_value(raw).map_err(unreadable)?;
                    check_intent(&intent, &record, workspace_id)
                        .map_err(|msg| Error::corrupt(here(), msg))?;
                    (Some(intent), None)
                };
                index.insert(record.transaction_id.clone(), out.len());
                out.push(Transaction {
                    transaction_id: record.transaction_id.clone(),
                    first_line: line,
                    lines: vec![line],
                    intent,
                    correction,
                    digest,
                    done: vec![Phase::Prepared],
                });
                return Ok(());
            }
            Some(&position) => position,
        };
        let transaction = &mut out[position];
        if record.intent_sha256 != transaction.digest {
            return Err(Error::corrupt(
                here(),
                Damage::IntentDigestChanged {
                    status: record.phase.to_string(),
                    transaction_id: record.transaction_id.clone(),
                },
            ));
        }
        if record.intent.is_some() {
            return Err(Error::corrupt(
                here(),
                Damage::IntentRepeated {
                    status: record.phase.to_string(),
                    transaction_id: record.transaction_id.clone(),
                },
            ));
        }
        let redaction = transaction.correction.as_ref().is_some_and(CorrectionIntent::rewrites);
        let expected =
            Phase::of(&transaction.transaction_id, redaction).get(transaction.done.len()).copied();
        if Some(record.phase) != expected {
            return Err(Error::corrupt(
                here(),
                Damage::TransactionOrder {
                    transaction_id: record.transaction_id.clone(),
                    status: record.phase.to_string(),
                    after: transaction.done.last().map_or("nothing".to_owned(), Phase::to_string),
                },
            ));
        }
        transaction.done.push(record.phase);
        transaction.lines.push(line);
        if record.phase == Phase::Committed {
            transaction.intent = None;
            transaction.correction = None;
        }
        Ok(())
    })?;
    Ok(out)
}

fn check_intent(
    intent: &Intent,
    line: &JournalLine,
    workspace_id: &str,
) -> std::result::Result<(), Damage> {
    let tid = &line.transaction_id;
    if !matches!(intent.schema_version, INTENT_SCHEMA_FULL | INTENT_SCHEMA_VERSION)
        || intent.adjudication.schema_version != JOURNAL_SCHEMA_VERSION
    {
        return Err(Damage::record(format!(
            "transaction {tid} has an unsupported schema_version {} (supported: {INTENT_SCHEMA_FULL}, {INTENT_SCHEMA_VERSION})",
            intent.schema_version
        )));
    }
    if intent.workspace_id != workspace_id || intent.adjudication.workspace_id != workspace_id {
        return Err(Damage::record(format!("transaction {tid} belongs to another workspace")));
    }
    if intent.transaction_id != line.transaction_id
        || intent.transaction_id != canon::transaction_id(workspace_id, &intent.event_id)
    {
        return Err(Damage::record(format!(
            "intent was modified: transaction id {tid} does not match its event id"
        )));
    }
    intent
        .adjudication
        .check_fields()
        .map_err(|err| Damage::record(format!("transaction {tid}: {err}")))?;
    if intent.adjudication.event_id != intent.event_id
        || intent.adjudication.conflict_id != intent.conflict_id
    {
        return Err(Damage::record(format!(
            "intent was modified: adjudication of {tid} names another event or case"
        )));
    }
    let hashes = [
        &intent.curated_sha256_before,
        &intent.curated_sha256_after,
        &intent.conflicts_sha256_before,
        &intent.conflicts_sha256_after,
    ];
    if intent.schema_version == INTENT_SCHEMA_FULL {
        if hashes.iter().any(|hash| hash.is_some()) {
            return Err(Damage::record(format!(
                "transaction {tid}: a schema {INTENT_SCHEMA_FULL} intent holds file hashes"
            )));
        }
        return Ok(());
    }
    if !hashes.iter().all(|hash| hash.as_deref().is_some_and(is_sha256_hex)) {
        return Err(Damage::record(format!(
            "transaction {tid}: a schema {INTENT_SCHEMA_VERSION} intent needs the four file hashes as 64 lowercase hex characters"
        )));
    }
    // Scoped to one domain: the decided case's.
    let Some(memory_key) = intent.memory_key() else {
        return Err(Damage::record(format!(
            "intent was modified: transaction {tid} does not hold case {} before",
            intent.conflict_id
        )));
    };
    let outside_entry = intent
        .curated_before
        .iter()
        .chain(&intent.curated_after)
        .any(|entry| entry.memory_key.as_deref() != Some(memory_key));
    let outside_case = intent
        .conflicts_before
        .iter()
        .chain(&intent.conflicts_after)
        .any(|case| case.memory_key != memory_key);
    if outside_entry || outside_case {
        return Err(Damage::record(format!(
            "intent was modified: transaction {tid} holds entries or cases outside domain {memory_key}"
        )));
    }
    Ok(())
}

fn check_correction_intent(
    intent: &CorrectionIntent,
    line: &JournalLine,
    workspace_id: &str,
) -> std::result::Result<(), Damage> {
    let tid = &line.transaction_id;
    if intent.schema_version != CORRECTION_INTENT_SCHEMA_VERSION {
        return Err(Damage::record(format!(
            "transaction {tid} has an unsupported schema_version {} (supported: {CORRECTION_INTENT_SCHEMA_VERSION})",
            intent.schema_version
        )));
    }
    if intent.workspace_id != workspace_id || intent.correction.workspace_id != workspace_id {
        return Err(Damage::record(format!("transaction {tid} belongs to another workspace")));
    }
    if intent.transaction_id != *tid
        || intent.transaction_id != canon::correction_transaction_id(workspace_id, &intent.event_id)
        || intent.correction.event_id != intent.event_id
    {
        return Err(Damage::record(format!(
            "intent was modified: transaction id {tid} does not match its event id"
        )));
    }
    intent
        .correction
        .check_rules()
        .map_err(|err| Damage::record(format!("transaction {tid}: {err}")))?;
    let hashes = [
        &intent.curated_sha256_before,
        &intent.curated_sha256_after,
        &intent.conflicts_sha256_before,
        &intent.conflicts_sha256_after,
    ];
    if !hashes.iter().all(|hash| is_sha256_hex(hash)) {
        return Err(Damage::record(format!(
            "transaction {tid}: a correction's intent needs the four file hashes as 64 lowercase hex characters"
        )));
    }
    fn keys(entries: &[Entry]) -> Vec<&str> {
        let mut keys: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
        keys.sort_unstable();
        keys
    }
    fn ids(cases: &[Case]) -> Vec<&str> {
        let mut ids: Vec<&str> = cases.iter().map(|c| c.conflict_id.as_str()).collect();
        ids.sort_unstable();
        ids
    }
    let named_keys: Vec<&str> = intent.entry_keys.iter().map(String::as_str).collect();
    let named_ids: Vec<&str> = intent.conflict_ids.iter().map(String::as_str).collect();
    let redaction = intent.correction.action == Action::Redact;
    // A redaction's intent holds no text: no snapshot before, and the
    // hashes of each file it rewrites; any other holds both snapshots.
    let shaped = match (&intent.curated_before, &intent.conflicts_before, &intent.files) {
        (None, None, Some(files)) => {
            redaction
                && files
                    .iter()
                    .all(|f| is_sha256_hex(&f.sha256_before) && is_sha256_hex(&f.sha256_after))
        }
        (Some(curated), Some(conflicts), None) => {
            !redaction && keys(curated) == named_keys && ids(conflicts) == named_ids
        }
        _ => false,
    };
    if !shaped
        || keys(&intent.curated_after) != named_keys
        || ids(&intent.conflicts_after) != named_ids
    {
        return Err(Damage::record(format!(
            "intent was modified: transaction {tid} holds other entries or cases than it names"
        )));
    }
    Ok(())
}

/// Returns whether `text` is a SHA-256 digest in lowercase hex.
fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Compacts the journal at `path`: atomically replaces it by the lines of
/// the transactions of `transactions` that did not commit, in their order
/// (nothing at all when every transaction committed). `transactions` must
/// describe the journal as read under the workspace lock, with the phases
/// appended since then; lines after the last one read belong to
/// transactions that committed since. Does nothing when the journal is
/// absent or already holds exactly what it would keep.
///
/// Errors: [`Error::Io`], [`Error::Corrupt`] for a link or a file that is
/// not regular.
pub fn compact(path: &Path, transactions: &[Transaction]) -> Result<()> {
    let keep: HashSet<usize> = transactions
        .iter()
        .filter(|t| !t.committed())
        .flat_map(|t| t.lines.iter().copied())
        .collect();
    let kept = if keep.is_empty() {
        if is_empty(path)? {
            return Ok(());
        }
        Vec::new()
    } else {
        let Some(data) = atomic_io::read_optional(path)? else { return Ok(()) };
        let mut kept = Vec::with_capacity(data.len());
        for (number, line, terminated) in atomic_io::lines(&data) {
            if terminated && keep.contains(&number) {
                kept.extend_from_slice(line);
                kept.push(b'\n');
            }
        }
        if kept == data {
            return Ok(());
        }
        kept
    };
    atomic_io::replace(path, &kept)
}

/// Returns whether the journal's last transaction is finished, reading
/// only the end of the file: true when the journal is absent, empty, or its
/// last complete line is a `committed` record.
///
/// Errors: [`Error::Corrupt`] / [`Error::Scope`] for a bad last record;
/// [`Error::Io`].
pub fn last_is_committed(path: &Path, workspace_id: &str) -> Result<bool> {
    let Some(last) = atomic_io::last_complete_line(path)? else { return Ok(true) };
    let record: JournalLine = parse_record(&last).map_err(|damage| {
        super::corrupt_in(&last, Location::file(path), Damage::LastLine(Box::new(damage)))
    })?;
    if record.workspace_id != workspace_id {
        return Err(Error::Scope {
            location: Location::file(path),
            found: record.workspace_id,
            expected: workspace_id.to_owned(),
        });
    }
    Ok(record.phase == Phase::Committed)
}

/// The schema version of the distill intent.
pub(crate) const DISTILL_INTENT_SCHEMA_VERSION: u32 = 1;

/// The intent of a distill that changes curated.json, durable before its
/// first write and removed after its last, so that a crash between them is
/// finished by the next writer: the hash of the curated.json it writes and
/// the conflicts.json it writes after it. Like a transaction of the journal
/// (one crash protocol: make the intent durable, apply, drop it), but one
/// distill at a time, so a single file replaced atomically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DistillIntent {
    // Fields in sorted order: the encoding is canonical.
    /// The new conflicts.json, when the distill changes it.
    pub(crate) conflicts: Option<String>,
    /// SHA-256 of the new curated.json.
    pub(crate) curated_sha256: String,
    /// [`DISTILL_INTENT_SCHEMA_VERSION`].
    pub(crate) schema_version: u32,
    /// The workspace it belongs to.
    pub(crate) workspace_id: String,
}

impl DistillIntent {
    /// Returns the intent of writing the curated.json whose SHA-256 is
    /// `curated_sha256`, then `conflicts`.
    pub(crate) fn new(
        workspace_id: &str,
        curated_sha256: &str,
        conflicts: Option<&[u8]>,
    ) -> DistillIntent {
        DistillIntent {
            conflicts: conflicts.map(|bytes| String::from_utf8_lossy(bytes).into_owned()),
            curated_sha256: curated_sha256.to_owned(),
            schema_version: DISTILL_INTENT_SCHEMA_VERSION,
            workspace_id: workspace_id.to_owned(),
        }
    }

    /// Returns the file's bytes: pretty JSON with sorted keys.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut text = canon::encode(self, JsonStyle::Pretty);
        text.push('\n');
        text.into_bytes()
    }

    /// Reads the intent file's bytes.
    ///
    /// Errors: [`Error::Corrupt`] for bytes that are not an intent,
    /// [`Error::UnsupportedVersion`], [`Error::Scope`].
    pub(crate) fn decode(data: &[u8], path: &Path, workspace_id: &str) -> Result<DistillIntent> {
        let intent: DistillIntent = serde_json::from_slice(data).map_err(|err| {
            super::corrupt_in(
                data,
                Location::file(path),
                Damage::NotDistillIntent { detail: err.to_string() },
            )
        })?;
        if intent.schema_version != DISTILL_INTENT_SCHEMA_VERSION {
            return Err(Error::UnsupportedVersion {
                location: Location::file(path),
                what: "distill intent",
                found: i64::from(intent.schema_version),
                supported: "1",
            });
        }
        if intent.workspace_id != workspace_id {
            return Err(Error::Scope {
                location: Location::file(path),
                found: intent.workspace_id,
                expected: workspace_id.to_owned(),
            });
        }
        Ok(intent)
    }
}
