//! The single integration-test binary of the library.
