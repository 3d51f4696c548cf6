//! The model tools as models see them (`write_memory`, `search_memory`:
//! name, description, JSON input schema) and the reading of their
//! arguments: one definition for the MCP server and the agent loop, beside
//! [`NewFact::from_tool_input`](crate::NewFact::from_tool_input), which reads
//! exactly the fields the write schema describes. Built on the facade: a
//! search's arguments are the workspace's search options.

use serde_json::{Map, Value, json};

use crate::error::{Error, Invalid};
pub use crate::model::json_args::reject_unknown_fields;

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

/// Name of the tool that searches the memory.
pub const SEARCH_MEMORY_TOOL: &str = "search_memory";

/// What `search_memory` does, for the model.
pub const SEARCH_MEMORY_DESCRIPTION: &str = "Search this project's memory: the active curated entries \
     (first) and every recorded fact, ranked by relevance (BM25). The query is words that must all match \
     (in the content or the memory key), \"a phrase\" in double quotes, or a prefix such as pars*; Chinese \
     and Japanese text is found by its characters. At most 1000 characters and 32 words. Each hit says what \
     it is (type entry with its revision, or fact), its id, kind, memory_key, dates and status, with a \
     snippet whose matched words are between **. A result holds at most 25,000 characters and at most 50 \
     hits (default 10): when next_cursor is present, call again with it and the same query and filters for \
     the next page. Use it before writing a fact, to find what the project already knows.";

/// Returns the JSON Schema of `search_memory`'s input (the MCP tool and the
/// agent loop's tool).
pub fn search_memory_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": crate::model::search_text::MAX_QUERY_CHARS,
                "description": "What to look for: 1 to 1000 characters, at most 32 words, phrases or prefixes. Words must all match; \"a phrase\" matches words in order; pars* matches words starting with pars."
            },
            "kind": {
                "type": "string",
                "enum": ["decision", "convention", "pitfall", "outcome"],
                "description": "Optional. Only items of this kind: decision, convention, pitfall or outcome."
            },
            "key": {
                "type": "string",
                "description": "Optional. Only items whose memory_key starts with this, e.g. runtime. for runtime.python-version."
            },
            "since": {
                "type": "string",
                "description": "Optional. Only facts recorded (entries last seen) at or after this RFC 3339 instant, e.g. 2026-01-01T00:00:00Z."
            },
            "until": {
                "type": "string",
                "description": "Optional. Only facts recorded (entries last seen) at or before this RFC 3339 instant."
            },
            "in": {
                "type": "string",
                "enum": ["memory", "facts", "all"],
                "description": "Optional. Where to look: memory (active curated entries), facts (the log) or all (default: entries first, then facts)."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": crate::workspace::MAX_SEARCH_LIMIT,
                "description": "Optional. Hits per page: an integer from 1 to 50 (default 10)."
            },
            "cursor": {
                "type": "string",
                "description": "Optional. The next_cursor of the previous page, unchanged, with the same query and filters."
            }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

/// Returns the JSON Schema of `search_memory`'s result ([`search_memory_result`]).
pub fn search_memory_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "hits": {
                "type": "array",
                "description": "The hits of this page: active entries first, then facts, each part best first.",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "description": "entry or fact."},
                        "id": {"type": "string", "description": "The entry key, or the fact id."},
                        "revision": {"type": "integer"},
                        "kind": {"type": "string"},
                        "memory_key": {"type": "string"},
                        "content": {"type": "string"},
                        "snippet": {"type": "string", "description": "Up to 200 characters around the first match, matches between **."},
                        "score": {"type": "number"},
                        "status": {"type": "string", "description": "active (entry); curated, superseded, under review, rejected, pending or recorded (fact)."},
                        "conflict_id": {"type": "string"},
                        "entry_key": {"type": "string"},
                        "recorded_at": {"type": "string"},
                        "first_seen": {"type": "string"},
                        "last_seen": {"type": "string"}
                    },
                    "required": ["type", "id", "kind", "content", "snippet", "score", "status"]
                }
            },
            "total": {"type": "integer", "description": "How many items match in all."},
            "next_cursor": {"type": "string", "description": "Present when more hits remain: pass it as cursor."}
        },
        "required": ["hits", "total"]
    })
}

/// Reads `search_memory`'s arguments: the query and the options.
///
/// Errors: [`Error::InvalidInput`] naming an unknown, missing, mistyped or
/// invalid field.
pub fn search_memory_args(
    args: &Map<String, Value>,
) -> Result<(String, crate::workspace::SearchOptions), Error> {
    use crate::model::stamp::Stamp;
    reject_unknown_fields(
        args,
        &["query", "kind", "key", "since", "until", "in", "limit", "cursor"],
    )?;
    let text = |field: &str| -> Result<Option<String>, Error> {
        match args.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Error::invalid(
                field,
                Invalid::WrongType {
                    expected: "a string",
                    got: crate::model::fact::json_type(other),
                },
            )),
        }
    };
    let query = text("query")?
        .ok_or_else(|| Error::invalid("query", Invalid::Missing { expected: "a string" }))?;
    let mut options = crate::workspace::SearchOptions::new();
    options.kind = text("kind")?.as_deref().map(crate::model::fact::Kind::parse).transpose()?;
    options.key_prefix = text("key")?;
    let instant = |field: &str| -> Result<Option<Stamp>, Error> {
        text(field)?
            .map(|t| {
                Stamp::parse_normalized(&t).map_err(|e| Error::invalid(field, Invalid::Instant(e)))
            })
            .transpose()
    };
    options.since = instant("since")?;
    options.until = instant("until")?;
    if let Some(scope) = text("in")? {
        options.scope = crate::workspace::SearchScope::parse(&scope)?;
    }
    options.limit = match args.get("limit") {
        None | Some(Value::Null) => None,
        Some(value) => {
            let max = crate::workspace::MAX_SEARCH_LIMIT as i64;
            let n = value
                .as_i64()
                .or_else(|| {
                    value.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15).map(|f| f as i64)
                })
                .ok_or_else(|| {
                    Error::invalid(
                        "limit",
                        Invalid::WrongType {
                            expected: "an integer",
                            got: crate::model::fact::json_type(value),
                        },
                    )
                })?;
            if !(1..=max).contains(&n) {
                return Err(Error::invalid("limit", Invalid::OutOfRange { value: n, min: 1, max }));
            }
            Some(n as usize)
        }
    };
    options.cursor = text("cursor")?;
    Ok((query, options))
}

/// Returns a page of hits as `search_memory` returns it: its JSON without
/// null fields (a fact without a memory key has none), `next_cursor` only
/// when there is a next page.
pub fn search_memory_result(page: &crate::workspace::SearchPage) -> Value {
    let mut value = serde_json::to_value(page).unwrap_or_else(|_| json!({"hits": [], "total": 0}));
    if let Some(hits) = value.get_mut("hits").and_then(Value::as_array_mut) {
        for hit in hits {
            if let Some(hit) = hit.as_object_mut() {
                hit.retain(|_, v| !v.is_null());
            }
        }
    }
    if let Some(object) = value.as_object_mut() {
        object.retain(|_, v| !v.is_null());
    }
    value
}
