//! The single integration-test binary of the library: every
//! `tests/test_<topic>.rs` file is a module of it (the crate sets `autotests = false`).

#![allow(
    clippy::too_many_lines,
    reason = "a scenario test reads as one story, from its setup to its last assertion"
)]

mod common;

mod test_adjudication;
mod test_append_safety;
mod test_bounded_context;
mod test_canon_pins;
mod test_concurrency;
mod test_correction_histories;
mod test_corrections;
mod test_corrupt_curated;
mod test_distill_gate;
mod test_domain_index;
mod test_explain;
mod test_fixpoint;
mod test_hostile_state;
mod test_id_index;
mod test_import;
mod test_incremental_distill;
mod test_instruction_data;
mod test_invalid_input;
mod test_journal;
mod test_log_crash;
mod test_merge;
mod test_parser_fuzz;
mod test_pending;
mod test_projection;
mod test_projection_index;
mod test_public_api;
mod test_redact;
mod test_retract;
mod test_retracted_readers;
mod test_scan;
mod test_schema1;
mod test_scope;
mod test_search;
mod test_secret_guard;
mod test_supersession;
mod test_ties;
mod test_torn_writes;
mod test_trust;
mod test_verify;

/// Fails when a `tests/test_*.rs` file exists that is not declared above,
/// or a declared module has no file: an unlisted file would silently never
/// run because the crate sets `autotests = false`.
#[test]
fn every_test_file_is_declared_in_the_runner() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let runner = std::fs::read_to_string(dir.join("runner.rs")).expect("runner.rs is readable");
    let declared: std::collections::BTreeSet<String> = runner
        .lines()
        .filter_map(|line| line.trim().strip_prefix("mod ")?.strip_suffix(';').map(str::to_owned))
        .filter(|name| name.starts_with("test_"))
        .collect();
    let mut files = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("tests/ is readable") {
        let name =
            entry.expect("directory entry").file_name().into_string().expect("UTF-8 file name");
        if let Some(stem) = name.strip_suffix(".rs")
            && stem.starts_with("test_")
        {
            files.insert(stem.to_owned());
        }
    }
    let undeclared: Vec<&String> = files.difference(&declared).collect();
    assert!(undeclared.is_empty(), "tests/{undeclared:?}.rs not declared in tests/runner.rs");
    let missing: Vec<&String> = declared.difference(&files).collect();
    assert!(missing.is_empty(), "runner.rs declares modules without a file: {missing:?}");
}
