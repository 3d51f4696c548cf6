//! Test fixtures shared by the workmem crates, used only as a
//! dev-dependency (never published):
//!
//! - [`Project`]: a temporary git-like project and a `workmem` binary run
//!   in it with a cleared environment (the CLI tests);
//! - [`FakeServer`]: a scripted fake of the Anthropic Messages API on
//!   127.0.0.1 (the agent and `workmem chat` tests);
//! - [`credential_corpus`]: generated credentials of every kind the secret
//!   guard knows, in every stored field and behind every evasion, and
//!   [`credential_samples`], one of each kind (the library's guard tests,
//!   the CLI's torture and scan tests).
//! - [`workload`]: a realistic generated fact log as JSON lines (the
//!   benchmarks' generator and the large MCP test);
//! - [`stored_fact_line`] and [`tied_fact_lines`]: facts as a daily log
//!   stores them, for lines a test writes by hand;
//! - [`history_fact`]: the keys and wordings of the facts the property
//!   tests' random histories draw.
//!
//! It depends on no workmem crate, so every crate of the workspace,
//! the library included, can use it.

#![forbid(unsafe_code)]

mod credentials;
mod fake_server;
mod history;
mod project;
mod stored;
mod workload;

pub use credentials::{
    Evasion, Field, Sample, credential_corpus, credential_in, credential_samples, describe,
    disguise,
};
pub use fake_server::{FakeServer, LIFETIME, Received, Reply, tool_use};
pub use history::{history_fact, history_key, history_key_number};
pub use project::{Project, files_holding};
pub use stored::{stored_fact_line, tied_fact_lines};
pub use workload::{Workload, workload};
