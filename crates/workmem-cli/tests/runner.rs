//! The single integration-test binary of the CLI: every `tests/<topic>.rs`
//! file is a module of it, run against the `workmem` binary of this
//! package. `mcp` and `chat` exist only with the features of those names
//! (both on by default), and `trust` (which talks to the MCP server) with
//! `mcp`; `recovery` and `trust` need `--features failpoints`, which the
//! README's test command (`cargo xtask test`) passes.

#![allow(
    clippy::too_many_lines,
    reason = "a scenario test reads as one story, from its setup to its last assertion"
)]

#[cfg(feature = "chat")]
mod chat;
mod cli;
mod corrections_git;
mod corrections_merge_prop;
mod dayone;
mod diff;
mod explain;
mod git_world;
#[cfg(feature = "mcp")]
mod mcp;
mod recovery;
mod redact;
mod retract;
mod secrets;
mod setup;
mod sharing;
mod torture;
#[cfg(feature = "mcp")]
mod trust;

/// The binary under test.
const WORKMEM: &str = env!("CARGO_BIN_EXE_workmem");

/// Fails when a `tests/*.rs` file exists that is not declared above, or a
/// declared module has no file: an unlisted file would silently never run
/// because the crate sets `autotests = false`.
#[test]
fn every_test_file_is_declared_in_the_runner() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let runner = std::fs::read_to_string(dir.join("runner.rs")).expect("runner.rs is readable");
    let declared: std::collections::BTreeSet<String> = runner
        .lines()
        .filter_map(|line| line.trim().strip_prefix("mod ")?.strip_suffix(';').map(str::to_owned))
        .collect();
    let mut files = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("tests/ is readable") {
        let name =
            entry.expect("directory entry").file_name().into_string().expect("UTF-8 file name");
        if let Some(stem) = name.strip_suffix(".rs")
            && stem != "runner"
        {
            files.insert(stem.to_owned());
        }
    }
    let undeclared: Vec<&String> = files.difference(&declared).collect();
    assert!(undeclared.is_empty(), "tests/{undeclared:?}.rs not declared in tests/runner.rs");
    let missing: Vec<&String> = declared.difference(&files).collect();
    assert!(missing.is_empty(), "runner.rs declares modules without a file: {missing:?}");
}
