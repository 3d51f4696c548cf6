//! Arbitrary bytes as `conflicts.json`: `ConflictQueue::decode` must never
//! panic, and every queue it accepts must round-trip through `encode`.
#![no_main]

#[path = "shared/state_file.rs"]
mod state_file;

use libfuzzer_sys::fuzz_target;
use workmem::ConflictQueue;

fuzz_target!(|data: &[u8]| {
    state_file::check(data, "conflicts.json", ConflictQueue::decode, ConflictQueue::encode, |q| &q.cases);
});
