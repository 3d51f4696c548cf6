//! The model: what a fact is, the text normal forms, ids and JSON encodings
//! every implementation must agree on byte for byte, timestamps, the clock
//! and the secret guard. Pure: nothing here touches the filesystem.
//!
//! To add a field to a fact:
//!
//! 1. add it to [`fact_fields::FACT_FIELDS`], in sorted order, saying
//!    whether the summary and the `write_memory` tool carry it;
//! 2. add it to `Fact` (whose fields are declared in the line's sorted
//!    order), to `NewFact` if callers give it, and to its validation in
//!    `fact.rs`;
//! 3. teach `fact_line.rs` to read it: `RawFact` (serde), `scan_compact`
//!    (the fast decoder) and, if it is in the summary, `FactSummary`;
//! 4. if it is in the summary, add it to the distill cache's `p` line
//!    (`store/distill_cache.rs`) and raise that cache's `FORMAT_VERSION`;
//! 5. if the tool carries it, add it to `write_memory_schema` and
//!    `NewFact::from_tool_input` (the crate's `tool_input.rs`);
//! 6. raise `FACT_SCHEMA_VERSION` and describe the field in
//!    docs/format.md.
//!
//! `fact_line`'s `fields_tests` fail until steps 1 to 5 agree.

pub mod canon;
pub(crate) mod clock;
pub(crate) mod fact;
// The codecs spell the fields out (a generic walk would cost the hot line
// decoder its speed); the list is what their tests hold them to.
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "read by the codec tests, which hold the codecs to it")
)]
pub(crate) mod fact_fields;
pub mod fact_line;
pub(crate) mod id_list;
pub(crate) mod json_args;
pub(crate) mod search_rank;
pub(crate) mod search_text;
pub mod secret;
pub(crate) mod stamp;
pub(crate) mod text;
