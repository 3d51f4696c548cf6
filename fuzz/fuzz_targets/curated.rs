//! Arbitrary bytes as `curated.json`: `CuratedState::decode` must never
//! panic, and every state it accepts must round-trip through `encode`.
#![no_main]

#[path = "shared/state_file.rs"]
mod state_file;

use libfuzzer_sys::fuzz_target;
use workmem::CuratedState;

fuzz_target!(|data: &[u8]| {
    state_file::check(data, "curated.json", CuratedState::decode, CuratedState::encode, |s| &s.entries);
});
