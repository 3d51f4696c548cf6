//! The fields of a fact, listed once.
//!
//! A fact's fields are spelled by several codecs: the line encoder (the
//! [`crate::Fact`] struct itself, serialized in sorted order), the two line
//! decoders of [`crate::model::fact_line`] (serde's and the fast scanner's),
//! the slim summary whole-log scans hold, the distill cache's `p` line and
//! the `write_memory` tool's input schema. [`FACT_FIELDS`] is the list they
//! are held to: the tests of `fact_line` (its `fields_tests` module) fail
//! when the struct writes a field the list lacks, or when a codec does not
//! know a field of the list. The checklist for adding a field is in the
//! header of [`crate::model`].

/// One field of a fact's line, and where it travels besides the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FactField {
    /// Its key in the JSONL line.
    pub(crate) name: &'static str,
    /// Whether the summary of whole-log scans (and so the distill cache's
    /// `p` line) keeps it.
    pub(crate) in_summary: bool,
    /// Whether a model may set it through the `write_memory` tool.
    pub(crate) from_tool: bool,
}

/// Every field of a fact's line, in the line's (sorted) order.
pub(crate) const FACT_FIELDS: [FactField; 10] = [
    FactField { name: "content", in_summary: true, from_tool: true },
    FactField { name: "evidence", in_summary: false, from_tool: true },
    FactField { name: "fact_id", in_summary: true, from_tool: false },
    FactField { name: "importance", in_summary: true, from_tool: true },
    FactField { name: "kind", in_summary: true, from_tool: true },
    FactField { name: "memory_key", in_summary: true, from_tool: true },
    FactField { name: "recorded_at", in_summary: true, from_tool: false },
    FactField { name: "schema_version", in_summary: false, from_tool: false },
    FactField { name: "source", in_summary: true, from_tool: false },
    FactField { name: "workspace_id", in_summary: false, from_tool: false },
];
