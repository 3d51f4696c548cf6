//! The check shared by the `curated` and `conflicts` targets: a canonical
//! state file must decode without panicking, and whatever decodes must
//! round-trip through its encoder to equal contents and stable bytes.

use std::fmt::Debug;
use std::path::Path;

/// A workspace id that is not the input's: exercises the scope check.
const OTHER: &str = "0123456789abcdef";

/// Returns the `workspace_id` the input claims, so that inputs derived
/// from the seeds (real files) reach the deep validation.
fn claimed_workspace(data: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(data).ok()?;
    Some(value.get("workspace_id")?.as_str()?.to_owned())
}

/// Decodes `data` as the file `name` for a foreign and for the claimed
/// workspace; every accepted value must encode, decode back to equal
/// `contents`, and encode again to the same bytes.
pub fn check<S, C: PartialEq + Debug, E: Debug>(
    data: &[u8],
    name: &str,
    decode: impl Fn(&[u8], &Path, &str) -> Result<S, E>,
    encode: impl Fn(&S, &Path, &str) -> Result<Vec<u8>, E>,
    contents: impl Fn(&S) -> &C,
) {
    let path = Path::new(name);
    let claimed = claimed_workspace(data);
    for workspace in [Some(OTHER), claimed.as_deref()].into_iter().flatten() {
        if let Ok(state) = decode(data, path, workspace) {
            let bytes = encode(&state, path, workspace).expect("a decoded state encodes");
            let back = decode(&bytes, path, workspace).expect("an encoded state decodes");
            assert_eq!(contents(&back), contents(&state), "{name} does not round-trip");
            assert_eq!(encode(&back, path, workspace).expect("re-encode"), bytes, "encoding is not stable");
        }
    }
}
