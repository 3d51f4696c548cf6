//! Fault injection at durable boundaries (cargo feature `failpoints`).
//!
//! Built with the feature, [`hit`] aborts the process, with no cleanup, like
//! a crash, when the environment variable `WORKMEM_FAILPOINT` names the
//! boundary. Without the feature it compiles to nothing. This is the one
//! place the library reads the environment, and only in crash-test builds.

/// Aborts the process when the `failpoints` feature is on and
/// `WORKMEM_FAILPOINT` equals `name`.
#[inline]
pub(crate) fn hit(name: &str) {
    #[cfg(feature = "failpoints")]
    if std::env::var("WORKMEM_FAILPOINT").is_ok_and(|wanted| wanted == name) {
        std::process::abort();
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}
