//! Time and fresh ids: the only places the library reads the system clock
//! or randomness, behind traits so tests can fix both.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::stamp::Stamp;

/// A source of the current time and of fresh fact ids.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Returns the current instant.
    fn now(&self) -> Stamp;
    /// Returns a fresh fact id.
    fn fresh_id(&self) -> String;
}

/// The system clock with random UUIDv4 ids (32 lowercase hex characters).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Stamp {
        #[allow(clippy::disallowed_methods)] // this is the one reader of the clock
        Stamp::from_timestamp(jiff::Timestamp::now())
    }

    fn fresh_id(&self) -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }
}

/// A clock fixed at one instant with sequential ids (`fact-000001`, ...),
/// for tests and the demo.
#[derive(Debug)]
pub struct FixedClock {
    now: Stamp,
    next: AtomicU64,
}

impl FixedClock {
    /// Returns a clock that always reads `now`.
    pub fn new(now: Stamp) -> FixedClock {
        FixedClock { now, next: AtomicU64::new(1) }
    }
}

impl Clock for FixedClock {
    fn now(&self) -> Stamp {
        self.now.clone()
    }

    fn fresh_id(&self) -> String {
        format!("fact-{:06}", self.next.fetch_add(1, Ordering::Relaxed))
    }
}
