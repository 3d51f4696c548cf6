//! CLI tests
