//! The `write_memory` tool as models see it (name, description, JSON input
//! schema) and the unknown-field check of tool arguments: one definition
//! for the MCP server and the agent loop, beside
//! [`NewFact::from_tool_input`](crate::NewFact::from_tool_input), which reads
//! exactly the fields the schema describes.

use crate::error::{Error, Invalid};
use serde_json::{Map, Value, json};

/// Name of the tool that appends a fact.
pub const WRITE_MEMORY_TOOL: &str = "write_memory";

/// What `write_memory` does, for the model.
pub const WRITE_MEMORY_DESCRIPTION: &str = "Append one fact to this project's durable memory log (recorded with \
     source model_tool) and return its fact_id. Record only what a future session should know: decision, \
     convention or pitfall for knowledge worth keeping, outcome for what just happened. Give a memory_key when \
     the fact answers a question whose answer may change. Facts reach the curated memory only through the \
     project's deterministic distill policy; ties between competing values wait for a human. A fact with a \
     memory_key is a claim, not yet the value: until the policy has reviewed it (by default once it is 30 days \
     old) get_context lists it under \"Pending Keyed Facts\", so do not write it again; the policy then makes \
     it the curated value, keeps the current one, or leaves a tie for a human. Nothing written can be edited or \
     deleted through this tool.";

/// Returns the JSON Schema of `write_memory`'s input: the fields
/// `NewFact::from_tool_input` reads, with the library's value rules (kinds,
/// importance range, content length, memory_key form).
pub fn write_memory_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "content": {
                "type": "string",
                "minLength": 1,
                "maxLength": crate::model::fact::MAX_CONTENT_CHARS,
                "description": "One short, self-contained statement in your own words: 1 to 2000 characters. Never credentials or secrets (they are refused)."
            },
            "kind": {
                "type": "string",
                "enum": ["decision", "convention", "pitfall", "outcome"],
                "description": "decision, convention or pitfall (may be promoted into the curated memory), or outcome (what just happened; stays in the log)."
            },
            "importance": {
                "type": "integer",
                "minimum": 1,
                "maximum": 5,
                "description": "An integer from 1 (trivia) to 5 (critical)."
            },
            "memory_key": {
                "type": "string",
                "pattern": "^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$",
                "maxLength": 120,
                "description": "The question the fact answers, e.g. runtime.python-version, for a value that may later be replaced. Name the question, never the answer; reuse the same key for the same question. At most 120 characters, matching ^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$ (lowercase words of letters and digits joined by single dots, underscores or hyphens, starting with a letter)."
            },
            "evidence": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Where the fact comes from, as string pairs, e.g. {\"file\": \"pyproject.toml\", \"commit\": \"1a2b3c\"}."
            }
        },
        "required": ["content", "kind", "importance"],
        "additionalProperties": false
    })
}

/// Checks that `args` holds no field outside `known`.
///
/// Errors: [`Error::InvalidInput`] naming the first unknown field.
pub fn reject_unknown_fields(args: &Map<String, Value>, known: &[&str]) -> Result<(), Error> {
    match args.keys().find(|key| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => {
            // The message names the field; a field named like a
            // credential is not repeated.
            let field = if crate::model::secret::find(key).is_some() {
                "(an unknown field, not shown: it looks like a credential)"
            } else {
                key.as_str()
            };
            Err(Error::invalid(
                field,
                Invalid::UnknownField { expected: known.iter().map(|k| (*k).to_owned()).collect() },
            ))
        }
    }
}
