//! workmem: a durable, auditable memory of one project for AI coding agents.
//!
//! Agents append small structured facts to an append-only, fsynced JSONL
//! log ([`fact_log`]). A deterministic policy ([`distill`]) promotes the
//! facts that stay relevant into a curated state with revision history
//! ([`curated_state`]); ties between equally strong values become conflict
//! cases for a human ([`conflict_queue`]). Only active curated values and a
//! few recent facts reach a prompt ([`projection`]).
//!
//! Start with [`Workspace::open`]. The library never prints, never reads
//! the environment (except the crash-test failpoints) and never exits the
//! process.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod adjudication;
pub mod atomic_io;
pub mod canon;
pub mod clock;
pub mod config;
pub mod conflict_queue;
pub mod curated_state;
pub mod distill;
pub mod domain_index;
pub mod error;
pub mod explain;
pub mod fact;
pub mod fact_log;
pub mod failpoint;
pub mod history;
pub mod journal;
pub mod lock;
pub mod projection;
mod resolve;
pub mod secret;
pub mod stamp;
pub mod verify;
pub mod workspace;

pub use adjudication::Resolution;
pub use clock::{Clock, FixedClock, SystemClock};
pub use config::Config;
pub use conflict_queue::{Candidate, Case, CaseStatus, ConflictQueue};
pub use curated_state::{CuratedState, Entry, Status};
pub use distill::{Decision, Policy, Reason, Report, SourcePolicy};
pub use error::{Error, Location, Result};
pub use fact::{Fact, Kind, NewFact};
pub use history::History;
pub use journal::Adjudication;
pub use stamp::Stamp;
pub use verify::Problem;
pub use workspace::{Imported, Workspace};
