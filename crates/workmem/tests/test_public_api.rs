//! The library's public API is its facade: the crate root re-exports a
//! short list of types and functions, every module is private, and the
//! one public module, `internals`, is hidden from the documentation and
//! exists for this crate's own tests, benches and fuzz targets. A change
//! to the facade must change the list below on purpose.

use std::path::Path;

/// Every name the crate root makes public, sorted.
const FACADE: &[&str] = &[
    "Action",
    "Adjudication",
    "Adopted",
    "Candidate",
    "Case",
    "CaseStatus",
    "Clock",
    "Config",
    "ConflictQueue",
    "ContextOptions",
    "Corrected",
    "Correction",
    "CorrectionCounts",
    "CuratedState",
    "DEFAULT_SEARCH_LIMIT",
    "Damage",
    "DaySummary",
    "Decision",
    "DiffContext",
    "DiffDecision",
    "DiffEntries",
    "DistillIntentShown",
    "DistillOptions",
    "Distilled",
    "Entry",
    "Error",
    "ErrorKind",
    "Fact",
    "FactCounts",
    "FactExplanation",
    "Finding",
    "FixedClock",
    "History",
    "HitType",
    "IdList",
    "Ids",
    "Imported",
    "Invalid",
    "JournalReport",
    "JournalTransaction",
    "Kind",
    "Location",
    "MAX_CONTENT_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_CLAUSES",
    "MAX_SEARCH_LIMIT",
    "MAX_SEARCH_OFFSET",
    "MERGE_DRIVER",
    "MODEL_TOOL_SOURCE",
    "MemoryDiff",
    "MemoryFile",
    "MemorySnapshot",
    "MergeSides",
    "NOT_COMMITTED",
    "NewFact",
    "Overview",
    "Policy",
    "Problem",
    "REDACTED",
    "ReadOnlyWorkspace",
    "Reason",
    "Rebuilt",
    "Redaction",
    "RedactionPreview",
    "Rejected",
    "Report",
    "Resolution",
    "Restoration",
    "RestoreRefusal",
    "Result",
    "Retraction",
    "Retractions",
    "SEARCH_MEMORY_DESCRIPTION",
    "SEARCH_MEMORY_TOOL",
    "SNIPPET_CHARS",
    "Scan",
    "ScanRedaction",
    "SearchHit",
    "SearchOptions",
    "SearchPage",
    "SearchScope",
    "SetAside",
    "Shared",
    "SourcePolicy",
    "Stale",
    "Stamp",
    "StampError",
    "Status",
    "SystemClock",
    "WRITE_MEMORY_DESCRIPTION",
    "WRITE_MEMORY_TOOL",
    "Workspace",
    "WorkspaceBuilder",
    "WorkspaceSighting",
    "check_secret",
    "clean_memory_key",
    "default_memory_dir",
    "find_secret",
    "first_refused_char",
    "has_conflict_markers",
    "internals",
    "is_refused_char",
    "merge_memory_file",
    "pin_file",
    "read_user_file",
    "read_workspace_file",
    "reject_unknown_fields",
    "salvage_records",
    "search_memory_args",
    "search_memory_output_schema",
    "search_memory_result",
    "search_memory_schema",
    "workmem_dir",
    "write_memory_schema",
];

fn lib_rs() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    std::fs::read_to_string(path).expect("src/lib.rs is readable")
}

/// Returns the items of the crate root (outside the `internals` module)
/// as whole statements, comments dropped.
fn root_items(source: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or("").trim();
        if code.is_empty() || code.starts_with("#!") {
            continue;
        }
        current.push_str(code);
        current.push(' ');
        depth += code.matches('{').count();
        depth = depth.saturating_sub(code.matches('}').count());
        if depth == 0 && (code.ends_with(';') || code.ends_with('}')) {
            items.push(std::mem::take(&mut current));
        }
    }
    items
}

/// Returns the public names an item of the crate root introduces.
fn public_names(item: &str) -> Vec<String> {
    let item = item.trim_start_matches("#[doc(hidden)] ");
    if let Some(rest) = item.strip_prefix("pub use ") {
        let list = rest.trim_end_matches("; ").trim_end_matches(';');
        let names = match list.split_once('{') {
            Some((_, inner)) => inner.trim_end_matches('}').split(',').map(str::to_owned).collect(),
            None => vec![list.rsplit("::").next().unwrap_or(list).to_owned()],
        };
        return names
            .into_iter()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .map(|name| {
                name.rsplit(" as ")
                    .next()
                    .unwrap_or(&name)
                    .rsplit("::")
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect();
    }
    for keyword in
        ["pub fn ", "pub mod ", "pub struct ", "pub enum ", "pub const ", "pub trait ", "pub type "]
    {
        if let Some(rest) = item.strip_prefix(keyword) {
            let name: String =
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            return vec![name];
        }
    }
    Vec::new()
}

#[test]
fn the_crate_root_exports_the_facade_and_nothing_else() {
    let source = lib_rs();
    let mut names: Vec<String> =
        root_items(&source).iter().flat_map(|item| public_names(item)).collect();
    names.sort();
    assert_eq!(
        names, FACADE,
        "the public facade changed: update FACADE on purpose, or make the item private"
    );
}

#[test]
fn every_module_is_private_but_the_hidden_internals() {
    let source = lib_rs();
    for item in root_items(&source) {
        let item = item.trim();
        if item.contains("mod ") && item.starts_with("pub") {
            assert!(
                item.starts_with("#[doc(hidden)]") || item.starts_with("pub mod internals"),
                "a public module: {item}"
            );
        }
    }
    let hidden = source.lines().collect::<Vec<_>>();
    let at = hidden
        .iter()
        .position(|line| line.starts_with("pub mod internals"))
        .expect("internals module");
    assert_eq!(
        hidden[at - 1],
        "#[doc(hidden)]",
        "internals must stay hidden from the documentation"
    );
    assert!(source.contains("#![deny(unreachable_pub)]"), "unreachable_pub must stay an error");
}
