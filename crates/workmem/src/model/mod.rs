//! The model: what a fact is, the text normal forms, ids and JSON encodings
//! every implementation must agree on byte for byte, timestamps, the clock
//! and the secret guard. Pure: nothing here touches the filesystem.

pub mod canon;
pub(crate) mod clock;
pub(crate) mod fact;
pub mod fact_line;
pub(crate) mod id_list;
pub(crate) mod json_args;
pub(crate) mod search_text;
pub mod secret;
pub(crate) mod stamp;
pub(crate) mod text;
