//! The policy: distill, the plan of a human decision and the projection
//! into MEMORY.md and the agent context. Pure functions from state to
//! state: deterministic, cheap, and never touching the filesystem; the
//! workspace reads their inputs and writes their results.

pub(crate) mod adjudication;
pub(crate) mod check;
pub(crate) mod config;
pub mod distill;
pub(crate) mod merge;
pub mod projection;
pub(crate) mod rebuild;
pub(crate) mod report;
pub mod retractions;
pub(crate) mod rules;
