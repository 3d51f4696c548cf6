//! The policy: distill, the plan of a human decision and the projection
//! into MEMORY.md and the agent context. Pure functions from state to
//! state: deterministic, cheap, and never touching the filesystem; the
//! workspace reads their inputs and writes their results.

pub(crate) mod adjudication;
pub(crate) mod check;
pub(crate) mod config;
pub(crate) mod correction;
pub mod distill;
pub(crate) mod merge;
pub mod projection;
pub(crate) mod rebuild;
pub(crate) mod report;
pub mod retractions;
pub(crate) mod rules;

use crate::error::{Damage, Error};

/// Why a step of the policy failed. The policy never knows which file a
/// state comes from or goes to: when the curated state it derives breaks a
/// rule of its format it returns the reason alone, and the workspace, which
/// knows the file, adds the location.
#[derive(Debug)]
pub enum PolicyError {
    /// The curated state being derived breaks a rule of its format (a new
    /// revision's key already taken).
    Curated(Damage),
    /// Any other error: an invalid policy, a stale or rejected resolution.
    Other(Error),
}

impl From<Error> for PolicyError {
    fn from(err: Error) -> PolicyError {
        PolicyError::Other(err)
    }
}
