//! workmem: a durable, auditable memory of one project for AI coding agents.
//!
//! Agents append small structured facts ([`Fact`]) to an append-only,
//! fsynced JSONL log. A deterministic [`Policy`] promotes the facts that
//! stay relevant into a curated state with revision history
//! ([`CuratedState`]); ties between equally strong values become conflict
//! cases ([`Case`]) that only a human resolves. Only active curated values
//! and a few recent facts reach a prompt ([`Workspace::context`]).
//!
//! Everything goes through a [`Workspace`]. The library never prints, never
//! reads the environment (except the crash-test failpoints) and never exits
//! the process.
//!
//! ```
//! # fn main() -> workmem::Result<()> {
//! use workmem::{DistillOptions, NewFact, Stamp, Workspace};
//!
//! let project = tempfile::tempdir().unwrap();
//! let ws = Workspace::open(project.path(), None)?;
//! ws.init()?;
//! // An agent records a decision...
//! ws.remember(NewFact {
//!     content: "Use SQLite in WAL mode for the cache".into(),
//!     kind: Some("decision".into()),
//!     importance: Some(4),
//!     recorded_at: Some("2026-01-05T09:00:00Z".into()),
//!     ..NewFact::default()
//! })?;
//! // ...the policy promotes it once it is 30 days old...
//! let as_of = Stamp::parse("2026-03-01T00:00:00Z").unwrap();
//! let distilled = ws.distill(&DistillOptions::new().as_of(as_of))?;
//! assert_eq!(distilled.report.created, 1);
//! // ...and it reaches the next prompt.
//! assert!(ws.context(None)?.contains("- Use SQLite in WAL mode for the cache"));
//! # Ok(())
//! # }
//! ```
//!
//! The source is layered, each layer using only those before it: `model`
//! (facts, normal forms, ids, timestamps, the secret guard), `store` (the
//! files of a memory directory and the only code that writes them),
//! `policy` (distill, adjudication plans, projection: pure),
//! `workspace` (this facade: every operation, the lock and the journal)
//! and `tool_input` (the model tools' schemas and arguments, on the
//! facade).

#![deny(missing_docs)]
#![deny(unreachable_pub)]
// The hidden `internals` re-export modules whose docs link to private
// items; the facade's docs never do.
#![allow(rustdoc::private_intra_doc_links)]
#![forbid(unsafe_code)]

mod error;
mod model;
mod policy;
mod store;
mod tool_input;
mod workspace;

use std::path::Path;

pub use error::{
    Damage, Error, ErrorKind, Invalid, Location, Rejected, RestoreRefusal, Result, Stale,
    StampError, WorkspaceSighting,
};
pub use model::clock::{Clock, FixedClock, SystemClock};
pub use model::fact::{Fact, Kind, MAX_CONTENT_CHARS, MODEL_TOOL_SOURCE, NewFact, REDACTED};
pub use model::id_list::{IdList, Ids};
pub use model::search_text::{MAX_QUERY_CHARS, MAX_QUERY_CLAUSES, SNIPPET_CHARS};
pub use model::stamp::Stamp;
pub use model::text::{first_refused_char, is_refused_char};
pub use policy::adjudication::Resolution;
pub use policy::config::Config;
pub use policy::report::{Decision, Reason, Report};
pub use policy::retractions::Retractions;
pub use policy::rules::{Policy, SourcePolicy};
pub use store::conflict_queue::{Candidate, Case, CaseStatus, ConflictQueue};
pub use store::corrections::{Action, Correction};
pub use store::curated_state::{CuratedState, Entry, Status};
pub use store::journal::Adjudication;
pub use store::names::{default_memory_dir, pin_file, workmem_dir};
pub use tool_input::{
    SEARCH_MEMORY_DESCRIPTION, SEARCH_MEMORY_TOOL, WRITE_MEMORY_DESCRIPTION, WRITE_MEMORY_TOOL,
    reject_unknown_fields, search_memory_args, search_memory_output_schema, search_memory_result,
    search_memory_schema, write_memory_schema,
};
pub use workspace::diff::{DiffContext, DiffDecision, DiffEntries, MemoryDiff, MemorySnapshot};
pub use workspace::explain::FactExplanation;
pub use workspace::history::History;
pub use workspace::overview::{CorrectionCounts, FactCounts, Overview};
pub use workspace::scan::{Finding, Scan, ScanRedaction};
pub use workspace::verify::Problem;
pub use workspace::{
    Adopted, ContextOptions, Corrected, DEFAULT_SEARCH_LIMIT, DaySummary, DistillIntentShown,
    DistillOptions, Distilled, HitType, Imported, JournalReport, JournalTransaction,
    MAX_SEARCH_LIMIT, MAX_SEARCH_OFFSET, MERGE_DRIVER, MemoryFile, MergeSides, NOT_COMMITTED,
    ReadOnlyWorkspace, Rebuilt, Redaction, RedactionPreview, Restoration, Retraction, SearchHit,
    SearchOptions, SearchPage, SearchScope, SetAside, Shared, Workspace, WorkspaceBuilder,
    has_conflict_markers, merge_memory_file, salvage_records,
};

/// Returns `raw` as a memory key in normal form (trimmed, case-folded),
/// checked against the key syntax and the secret guard: what every append
/// stores.
///
/// Errors: [`Error::InvalidInput`] naming `memory_key`.
pub fn clean_memory_key(raw: &str) -> Result<String> {
    model::secret::check("memory_key", raw)?;
    model::canon::clean_memory_key(raw)
}

/// Returns the kind of credential `text` holds (`"private key block"`,
/// `"GitHub token"`, ...), if the secret guard finds one: what stops any
/// write of that text. See docs/secrets.md for what it looks for.
pub fn find_secret(text: &str) -> Option<&'static str> {
    model::secret::find(text)
}

/// Refuses `text`, the value of `field`, when the secret guard finds a
/// credential in it: the check every stored field passes, for callers
/// that must screen a value before they quote it in a message.
///
/// Errors: [`Error::InvalidInput`] naming `field` and the kind of
/// credential, never the value.
pub fn check_secret(field: &str, text: &str) -> Result<()> {
    model::secret::check(field, text)
}

/// Reads a file of a project's `.workmem/` directory, which belongs to the
/// checkout and so may be hostile: a symlinked `.workmem` or file, or a
/// file that is not a regular file, is refused. `None` when it is missing.
///
/// Errors: [`Error::Corrupt`] for a link or a non-regular file,
/// [`Error::Io`].
pub fn read_workspace_file(project: &Path, name: &str) -> Result<Option<Vec<u8>>> {
    store::memory_dir::ReadOnlyMemoryDir::read_project_file(project, name)
}

/// Reads a file of the user's own (a configuration file, which may be a
/// link), refusing one that is not a regular file. `None` when it is
/// missing.
///
/// Errors: [`Error::Corrupt`] for a non-regular file, [`Error::Io`].
pub fn read_user_file(path: &Path) -> Result<Option<Vec<u8>>> {
    store::memory_dir::ReadOnlyMemoryDir::read_user_file(path)
}

/// The internals, for this crate's own tests, benches and fuzz targets
/// only: no part of the API and free to change.
#[doc(hidden)]
pub mod internals {
    pub use crate::model::{canon, fact_line, secret};
    pub use crate::policy::{distill, projection, retractions};
    pub use crate::store::{atomic_io, conflict_queue, corrections, curated_state, journal};
    pub use crate::workspace::IMPORT_BATCH;

    use std::path::PathBuf;

    use crate::{ConflictQueue, CuratedState, Result, Workspace};

    /// Replaces curated.json (and MEMORY.md) outside the lock and the
    /// journal, as a hand edit would: for tests that build hostile or
    /// stale state.
    ///
    /// Errors: as the save itself.
    pub fn save_curated(ws: &Workspace, state: &CuratedState) -> Result<()> {
        ws.save_curated(state)
    }

    /// Records curated.json and conflicts.json as they are now as written
    /// by this clone, so that they are served without the check of state
    /// from elsewhere: for tests that copy a memory directory and mean the
    /// copy to stand for the same clone.
    pub fn record_state_as_written(ws: &Workspace) {
        ws.record_written(crate::store::names::CURATED_FILE);
        ws.record_written(crate::store::names::CONFLICTS_FILE);
    }

    /// Replaces conflicts.json outside the lock and the journal.
    ///
    /// Errors: as the save itself.
    pub fn save_conflicts(ws: &Workspace, queue: &ConflictQueue) -> Result<()> {
        ws.save_conflicts(queue)
    }

    /// Runs a resolution up to its durable `prepared` journal line and
    /// stops, leaving the memory directory exactly as a crash right after
    /// that line would (recovery, run by the next open or writer, finishes
    /// it); returns the intent written, or `None` when the event id is
    /// already in the audit stream with the same decision. For tests that
    /// need an unfinished transaction: the journal is empty at rest.
    ///
    /// Errors: as [`Workspace::resolve`].
    pub fn prepare_resolution(
        ws: &Workspace,
        resolution: crate::Resolution,
    ) -> Result<Option<journal::Intent>> {
        ws.prepare_resolution(resolution)
    }

    /// Records the unfinished transaction of the journal of `memory_dir`
    /// as prepared by this clone, as a crash of this clone would have left
    /// it: for tests that install a journal by hand (recovery rolls
    /// forward only what this clone prepared). Returns the transaction ids
    /// recorded; nothing for an empty journal.
    ///
    /// Errors: the journal's read errors; I/O errors.
    pub fn own_journal(memory_dir: &std::path::Path) -> Result<Vec<String>> {
        crate::store::journal_owner::adopt_for_tests(memory_dir)
    }

    /// Returns the fact `new` makes, validated as on append, without a
    /// workspace: for tests of the validation and the line codec.
    ///
    /// Errors: as the validation.
    pub fn fact_from_new(
        new: crate::NewFact,
        workspace_id: &str,
        now: crate::Stamp,
        fresh_id: impl FnOnce() -> String,
    ) -> Result<crate::Fact> {
        crate::Fact::from_new(new, workspace_id, now, fresh_id)
    }

    /// Parses and checks one fact line as every reader does; the message
    /// names the bad field.
    pub fn parse_fact_line(line: &[u8]) -> std::result::Result<crate::Fact, crate::Damage> {
        crate::Fact::parse_line(line)
    }

    /// The facts `status` counts at `as_of` under `policy` (distinct
    /// facts, those waiting for their age, when the first becomes old
    /// enough), from the distill cache; `None` when it cannot answer.
    ///
    /// Errors: as [`Workspace::overview`].
    pub fn fact_counts_from_cache(
        ws: &Workspace,
        policy: &crate::Policy,
        as_of: &crate::Stamp,
    ) -> Result<Option<(usize, usize, Option<crate::Stamp>)>> {
        Ok(ws
            .counts_from_cache(policy, as_of)?
            .map(|c| (c.total, c.waiting_for_age, c.first_eligible_at)))
    }

    /// The same counts from the whole log (a dry run of the policy).
    ///
    /// Errors: as [`Workspace::overview`].
    pub fn fact_counts_from_log(
        ws: &Workspace,
        policy: &crate::Policy,
        as_of: &crate::Stamp,
    ) -> Result<(usize, usize, Option<crate::Stamp>)> {
        let c = ws.counts_from_log(policy, as_of)?;
        Ok((c.total, c.waiting_for_age, c.first_eligible_at))
    }

    /// The facts of each daily file from the distill cache; `None` when
    /// it cannot answer ([`Workspace::log_days`] then reads the log).
    ///
    /// Errors: as [`Workspace::log_days`].
    pub fn day_counts_from_cache(ws: &Workspace) -> Result<Option<Vec<crate::DaySummary>>> {
        ws.day_counts_from_cache()
    }

    /// Returns the path of the daily log of `day`.
    pub fn day_file(ws: &Workspace, day: &str) -> PathBuf {
        ws.log().path_for_day(day)
    }
}
