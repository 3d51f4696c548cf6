//! Arbitrary bytes as `curated.json`: `CuratedState::decode` must never
//! panic, and every state it accepts must round-trip through `encode`.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use workmem::CuratedState;

/// A workspace id that is not the input's: exercises the scope check.
const OTHER: &str = "0123456789abcdef";

/// Returns the `workspace_id` the input claims, so that inputs derived
/// from the seeds (real files) reach the deep validation.
fn claimed_workspace(data: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(data).ok()?;
    Some(value.get("workspace_id")?.as_str()?.to_owned())
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("curated.json");
    let claimed = claimed_workspace(data);
    for workspace in [Some(OTHER), claimed.as_deref()].into_iter().flatten() {
        if let Ok(state) = CuratedState::decode(data, path, workspace) {
            let bytes = state.encode(path, workspace).expect("a decoded state encodes");
            let back = CuratedState::decode(&bytes, path, workspace).expect("an encoded state decodes");
            assert_eq!(back.entries, state.entries, "curated.json does not round-trip");
            assert_eq!(back.encode(path, workspace).expect("re-encode"), bytes, "encoding is not stable");
        }
    }
});
