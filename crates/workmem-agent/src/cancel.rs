//! A cancellation flag shared between the REPL (set from a Ctrl-C signal
//! handler) and the work it interrupts: an HTTP request, a retry wait, a
//! running `bash` command.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A cheap, cloneable cancellation flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Returns a flag that is not set.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Returns a cancel handle over `flag`, e.g. one a signal handler sets.
    pub fn from_flag(flag: Arc<AtomicBool>) -> Cancel {
        Cancel(flag)
    }

    /// Returns the underlying flag.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }

    /// Sets the flag: the current request or command stops soon.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Clears the flag before new work starts.
    pub fn reset(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    /// Returns whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
