//! Arbitrary bytes as `conflicts.json`: `ConflictQueue::decode` must never
//! panic, and every queue it accepts must round-trip through `encode`.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use workmem::ConflictQueue;

/// A workspace id that is not the input's: exercises the scope check.
const OTHER: &str = "0123456789abcdef";

/// Returns the `workspace_id` the input claims, so that inputs derived
/// from the seeds (real files) reach the deep validation.
fn claimed_workspace(data: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(data).ok()?;
    Some(value.get("workspace_id")?.as_str()?.to_owned())
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("conflicts.json");
    let claimed = claimed_workspace(data);
    for workspace in [Some(OTHER), claimed.as_deref()].into_iter().flatten() {
        if let Ok(queue) = ConflictQueue::decode(data, path, workspace) {
            let bytes = queue.encode(path, workspace).expect("a decoded queue encodes");
            let back = ConflictQueue::decode(&bytes, path, workspace).expect("an encoded queue decodes");
            assert_eq!(back.cases, queue.cases, "conflicts.json does not round-trip");
            assert_eq!(back.encode(path, workspace).expect("re-encode"), bytes, "encoding is not stable");
        }
    }
});
