//! The four tools: their input schemas (docs/format.md) and the checked
//! reading of their arguments.
//!
//! Arguments are read field by field rather than through one `Deserialize`
//! so that every rejection names the field it is about; value rules that
//! the library owns (kind names, importance range, memory_key form, secret
//! guard) are left to the library, which names the field too.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use workmem::{Config, ContextOptions, Error, Invalid, NewFact};

use workmem::{
    WRITE_MEMORY_DESCRIPTION, WRITE_MEMORY_TOOL, reject_unknown_fields, write_memory_schema,
};

/// Name of the tool that appends a fact.
pub const WRITE_MEMORY: &str = WRITE_MEMORY_TOOL;
/// Name of the tool that returns the bounded agent context.
pub const GET_CONTEXT: &str = "get_context";
/// Name of the tool that lists the newest facts.
pub const LIST_RECENT_FACTS: &str = "list_recent_facts";
/// Name of the tool that lists open conflict cases.
pub const LIST_CONFLICTS: &str = "list_conflicts";
/// Name of the tool that searches the memory.
pub const SEARCH_MEMORY: &str = workmem::SEARCH_MEMORY_TOOL;

/// Most recent facts `get_context` may be asked for (as `workmem context`).
pub const MAX_RECENT: u64 = 1_000;
/// Most pending keyed facts `get_context` may be asked for (as `workmem
/// context`).
pub const MAX_PENDING: u64 = *Config::PENDING_FACTS.end() as u64;
/// Facts `list_recent_facts` returns when no limit is given.
pub const DEFAULT_LIMIT: u64 = 20;
/// Most facts `list_recent_facts` may return.
pub const MAX_LIMIT: u64 = 1_000;

/// Returns the definitions of every tool, in a fixed order.
///
/// The schemas are portable JSON Schema (Draft 2020-12): one `type` per
/// property and no `format`, and every limit a schema states is repeated in
/// the property's description, because some clients strip `pattern`,
/// `minimum`/`maximum` and lengths before the model sees the schema.
pub fn definitions() -> Vec<Tool> {
    // Nothing here reaches beyond the project's own memory: every tool is
    // closed-world. Only write_memory changes anything, and only by appending.
    let read_only =
        |title: &str| ToolAnnotations::with_title(title).read_only(true).open_world(false);
    vec![
        Tool::new(WRITE_MEMORY, WRITE_MEMORY_DESCRIPTION, object_schema(write_memory_schema()))
            .with_title("Write memory")
            .with_annotations(
                ToolAnnotations::with_title("Write memory")
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(false),
            )
            .with_raw_output_schema(object_schema(write_memory_output())),
        Tool::new(
            GET_CONTEXT,
            "Return the bounded agent context: the curated project memory, the most recent unkeyed facts, and \
             the most recent keyed facts the memory policy has not accepted yet (\"Pending Keyed Facts\": \
             claims, not the curated value). At most 24,000 characters by default and never over 25,000.",
            object_schema(get_context_schema()),
        )
        .with_title("Get context")
        .with_annotations(read_only("Get context")),
        Tool::new(
            LIST_RECENT_FACTS,
            "List the most recent raw facts of the log (any kind, keyed or not) as JSON, newest page first and \
             oldest first within a page. A result holds at most 25,000 characters: when next_cursor is \
             present, call again with it for the next, older page (limit counts over all pages; given again, \
             it still bounds them). Long evidence values \
             are cut (evidence_cut: true; `workmem facts --json` shows them whole).",
            object_schema(list_recent_facts_schema()),
        )
        .with_title("List recent facts")
        .with_annotations(read_only("List recent facts"))
        .with_raw_output_schema(object_schema(list_recent_facts_output())),
        Tool::new(
            LIST_CONFLICTS,
            "List the open conflict cases (ties the policy refused to guess) as JSON: each with its \
             conflict_id, memory_key and the wordings of its competing candidates, and open_cases, how many \
             there are. A result holds at most 25,000 characters: when next_cursor is present, call again with \
             it for the next page. Give conflict_id instead for one case in detail, its candidates in pages \
             (next_cursor with the same conflict_id for the rest). Read-only: only a human can \
             resolve a case (`workmem review` or `workmem resolve`); tell the user when decisions await review.",
            object_schema(list_conflicts_schema()),
        )
        .with_title("List open conflicts")
        .with_annotations(read_only("List open conflicts"))
        .with_raw_output_schema(object_schema(list_conflicts_output())),
        Tool::new(
            SEARCH_MEMORY,
            workmem::SEARCH_MEMORY_DESCRIPTION,
            object_schema(workmem::search_memory_schema()),
        )
        .with_title("Search memory")
        .with_annotations(read_only("Search memory"))
        .with_raw_output_schema(object_schema(workmem::search_memory_output_schema())),
    ]
}

/// The `structuredContent` of `write_memory`.
fn write_memory_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "fact_id": {"type": "string", "description": "The id of the appended fact."},
            "memory_key": {"type": "string", "description": "The fact's memory key, when it has one."},
            "note": {
                "type": "string",
                "description": "What happens to the fact next: where get_context shows it, and when the memory policy reviews it."
            }
        },
        "required": ["fact_id", "note"]
    })
}

/// The `structuredContent` of `list_recent_facts`.
fn list_recent_facts_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "description": "The facts of this page, oldest first. memory_key is present on keyed facts, evidence when there is some.",
                "items": {
                    "type": "object",
                    "properties": {
                        "fact_id": {"type": "string"},
                        "recorded_at": {"type": "string"},
                        "kind": {"type": "string"},
                        "importance": {"type": "integer"},
                        "source": {"type": "string"},
                        "memory_key": {"type": "string"},
                        "content": {"type": "string"},
                        "evidence": {"type": "object", "additionalProperties": {"type": "string"}},
                        "evidence_cut": {"type": "boolean"}
                    },
                    "required": ["fact_id", "recorded_at", "kind", "importance", "source", "content"]
                }
            },
            "next_cursor": {
                "type": "string",
                "description": "Present when older facts of the same listing remain: pass it as cursor."
            }
        },
        "required": ["facts"]
    })
}

/// The `structuredContent` of `list_conflicts`: a page of open cases, or one
/// case in detail.
fn list_conflicts_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "open_cases": {"type": "integer", "description": "How many cases are open in all."},
            "conflicts": {
                "type": "array",
                "description": "The open cases of this page, by conflict_id.",
                "items": {
                    "type": "object",
                    "properties": {
                        "conflict_id": {"type": "string"},
                        "memory_key": {"type": "string"},
                        "candidates": {"type": "array", "items": {"type": "string"}},
                        "more_candidates": {"type": "integer"}
                    },
                    "required": ["conflict_id", "memory_key", "candidates"]
                }
            },
            "next_cursor": {
                "type": "string",
                "description": "Present when more open cases remain: pass it as cursor."
            },
            "conflict": {
                "type": "object",
                "description": "The case asked for by conflict_id, in detail.",
                "properties": {
                    "conflict_id": {"type": "string"},
                    "memory_key": {"type": "string"},
                    "status": {"type": "string"},
                    "revision": {"type": "integer"},
                    "candidates": {"type": "array", "items": {"type": "object"}}
                },
                "required": ["conflict_id", "memory_key", "status", "revision", "candidates"]
            }
        }
    })
}

fn get_context_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "recent": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_RECENT,
                "description": format!(
                    "Optional. How many recent unkeyed facts to include: an integer from 0 to {MAX_RECENT} \
                     (default 6)."
                ),
            },
            "pending": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_PENDING,
                "description": format!(
                    "Optional. How many pending keyed facts (written with a memory_key, not yet accepted by \
                     the memory policy) to include: an integer from 0 to {MAX_PENDING} (default 6; 0 leaves \
                     them out)."
                ),
            },
            "query": {
                "type": "string",
                "maxLength": workmem::MAX_QUERY_CHARS,
                "description": "Optional. The task at hand, at most 1000 characters (search_memory's syntax): when \
                    the curated memory does not fit whole, the entries relevant to it come first."
            }
        },
        "additionalProperties": false
    })
}

fn list_recent_facts_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": format!(
                    "Optional. How many of the newest facts to list, over all pages: an integer from 1 to \
                     {MAX_LIMIT} (default {DEFAULT_LIMIT})."
                ),
            },
            "cursor": {
                "type": "string",
                "description": "Optional. The next_cursor of the previous page, unchanged, to get the next, older page."
            }
        },
        "additionalProperties": false
    })
}

fn list_conflicts_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "cursor": {
                "type": "string",
                "description": "Optional. The next_cursor of the previous page, unchanged, to get the next page (of the list, or with conflict_id of that case's candidates)."
            },
            "conflict_id": {
                "type": "string",
                "description": "Optional. One case's conflict_id, as listed, to get that case in detail (any status): its candidates' ids, kinds, whole wordings, counts and dates. With cursor (that detail's next_cursor), the next page of its candidates."
            }
        },
        "additionalProperties": false
    })
}

/// Returns `schema` as the object a tool definition holds.
fn object_schema(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(object) => Arc::new(object),
        // The schemas are JSON object literals.
        _ => Arc::new(JsonObject::new()),
    }
}

/// Returns the fact `write_memory` asked for, before library validation (the
/// library's one reading of the tool input, shared with `workmem chat`).
///
/// Errors: [`Error::InvalidInput`] naming an unknown, missing or mistyped
/// field.
pub fn write_memory_args(args: &JsonObject) -> Result<NewFact, Error> {
    NewFact::from_tool_input(args)
}

/// Returns the options of `get_context` (`None`s: the defaults).
///
/// Errors: [`Error::InvalidInput`] naming the field.
pub fn get_context_args(args: &JsonObject) -> Result<ContextOptions, Error> {
    reject_unknown_fields(args, &["recent", "pending", "query"])?;
    let mut options = ContextOptions::new();
    options.query = optional::<String>(args, "query", "a string")?;
    options.recent = bounded(args, "recent", 0, MAX_RECENT)?.map(to_usize);
    options.pending = bounded(args, "pending", 0, MAX_PENDING)?.map(to_usize);
    Ok(options)
}

/// Returns the `limit` and `cursor` of `list_recent_facts`.
///
/// Errors: [`Error::InvalidInput`] naming the field.
pub fn list_recent_facts_args(args: &JsonObject) -> Result<(Option<usize>, Option<String>), Error> {
    reject_unknown_fields(args, &["limit", "cursor"])?;
    let limit = bounded(args, "limit", 1, MAX_LIMIT)?.map(to_usize);
    Ok((limit, optional::<String>(args, "cursor", "a string")?))
}

/// What `list_conflicts` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictsQuery {
    /// A page of open cases: the first, or the one after the cursor.
    Page(Option<String>),
    /// One case in detail: its first candidates, or those after the
    /// cursor.
    Detail {
        /// The case.
        conflict_id: String,
        /// The `next_cursor` of the case's previous page.
        cursor: Option<String>,
    },
}

/// Returns what `list_conflicts` was asked for.
///
/// Errors: [`Error::InvalidInput`] naming an unknown or mistyped field.
pub fn list_conflicts_args(args: &JsonObject) -> Result<ConflictsQuery, Error> {
    reject_unknown_fields(args, &["cursor", "conflict_id"])?;
    let cursor = optional::<String>(args, "cursor", "a string")?;
    Ok(match optional::<String>(args, "conflict_id", "a string")? {
        Some(conflict_id) => ConflictsQuery::Detail { conflict_id, cursor },
        None => ConflictsQuery::Page(cursor),
    })
}

fn to_usize(n: u64) -> usize {
    // Bounded by MAX_RECENT / MAX_LIMIT, far below usize::MAX.
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Returns the field's value; absent and `null` are both `None`.
fn optional<T: DeserializeOwned>(
    args: &JsonObject,
    field: &str,
    expected: &'static str,
) -> Result<Option<T>, Error> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(integral(value)).map(Some).map_err(|_| {
            Error::invalid(field, Invalid::WrongType { expected, got: describe(value) })
        }),
    }
}

/// Returns `value` with an integral float (`10.0`) turned into that
/// integer, as `NewFact::from_tool_input` reads `importance`: JSON Schema
/// counts it as an integer, and clients that carry numbers as floats send
/// it so. A fraction, or a float beyond 2^53, is returned unchanged.
fn integral(value: &Value) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    match value.as_f64() {
        Some(f) if value.is_f64() && f.fract() == 0.0 && f.abs() <= EXACT => Value::from(f as i64),
        _ => value.clone(),
    }
}

fn bounded(args: &JsonObject, field: &str, min: u64, max: u64) -> Result<Option<u64>, Error> {
    match optional::<u64>(args, field, "a non-negative integer")? {
        Some(n) if !(min..=max).contains(&n) => Err(Error::invalid(
            field,
            Invalid::OutOfRange {
                value: i64::try_from(n).unwrap_or(i64::MAX),
                min: i64::try_from(min).unwrap_or(i64::MAX),
                max: i64::try_from(max).unwrap_or(i64::MAX),
            },
        )),
        other => Ok(other),
    }
}

/// Returns a short description of a JSON value for an error message,
/// without echoing long or sensitive text.
fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a fractional number",
        Value::Number(n) if n.is_u64() => "an integer",
        Value::Number(_) => "a negative integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => panic!("test input must be an object"),
        }
    }

    fn field_of(err: Error) -> String {
        match err {
            Error::InvalidInput { field, .. } => field,
            other => panic!("expected invalid input, got {other}"),
        }
    }

    #[test]
    fn write_memory_reads_every_field_and_sets_the_source() {
        let args = object(json!({
            "content": "Use WAL", "kind": "decision", "importance": 4,
            "memory_key": "db.mode", "evidence": {"file": "db.rs"}
        }));
        let new = write_memory_args(&args).unwrap();
        assert_eq!(new.content, "Use WAL");
        assert_eq!(new.kind.as_deref(), Some("decision"));
        assert_eq!(new.importance, Some(4));
        assert_eq!(new.memory_key.as_deref(), Some("db.mode"));
        assert_eq!(new.source.as_deref(), Some("model_tool"));
        assert_eq!(new.evidence.get("file").map(String::as_str), Some("db.rs"));
        assert_eq!(new.fact_id, None);
        assert_eq!(new.recorded_at, None);
    }

    #[test]
    fn write_memory_names_the_bad_field() {
        let base = json!({"content": "x", "kind": "decision", "importance": 3});
        let cases = [
            (json!({"kind": "decision", "importance": 3}), "content"),
            (json!({"content": 7, "kind": "decision", "importance": 3}), "content"),
            (json!({"content": "x", "importance": 3}), "kind"),
            (json!({"content": "x", "kind": "decision", "importance": 2.5}), "importance"),
            (json!({"content": "x", "kind": "decision", "importance": "3"}), "importance"),
            (
                json!({"content": "x", "kind": "decision", "importance": 3, "evidence": {"a": 1}}),
                "evidence",
            ),
            (
                json!({"content": "x", "kind": "decision", "importance": 3, "evidence": ["a"]}),
                "evidence",
            ),
            (
                json!({"content": "x", "kind": "decision", "importance": 3, "memory_key": 5}),
                "memory_key",
            ),
            (
                json!({"content": "x", "kind": "decision", "importance": 3, "source": "user"}),
                "source",
            ),
        ];
        assert!(write_memory_args(&object(base)).is_ok());
        for (args, field) in cases {
            assert_eq!(
                field_of(write_memory_args(&object(args.clone())).unwrap_err()),
                field,
                "{args}"
            );
        }
    }

    #[test]
    fn counts_are_bounded() {
        let recent = |v: Value| get_context_args(&object(v)).map(|o| o.recent);
        let pending = |v: Value| get_context_args(&object(v)).map(|o| o.pending);
        assert_eq!(recent(json!({})).unwrap(), None);
        assert_eq!(recent(json!({"recent": 0})).unwrap(), Some(0));
        assert_eq!(field_of(recent(json!({"recent": 1001})).unwrap_err()), "recent");
        assert_eq!(field_of(recent(json!({"recent": -1})).unwrap_err()), "recent");
        assert_eq!(pending(json!({})).unwrap(), None);
        assert_eq!(pending(json!({"pending": 0})).unwrap(), Some(0));
        assert_eq!(pending(json!({"pending": 100})).unwrap(), Some(100));
        assert_eq!(field_of(pending(json!({"pending": 101})).unwrap_err()), "pending");
        assert_eq!(field_of(pending(json!({"pending": "6"})).unwrap_err()), "pending");
        let limit = |v: Value| list_recent_facts_args(&object(v)).map(|(limit, _)| limit);
        assert_eq!(limit(json!({})).unwrap(), None);
        assert_eq!(limit(json!({"limit": 3})).unwrap(), Some(3));
        assert_eq!(field_of(limit(json!({"limit": 0})).unwrap_err()), "limit");
        assert_eq!(
            list_recent_facts_args(&object(json!({"cursor": "wm1.00"}))).unwrap(),
            (None, Some("wm1.00".to_owned()))
        );
        assert_eq!(field_of(limit(json!({"cursor": 5})).unwrap_err()), "cursor");
        let conflicts = |v: Value| list_conflicts_args(&object(v));
        assert_eq!(field_of(conflicts(json!({"status": "all"})).unwrap_err()), "status");
        assert_eq!(conflicts(json!({})).unwrap(), ConflictsQuery::Page(None));
        assert_eq!(
            conflicts(json!({"cursor": "c"})).unwrap(),
            ConflictsQuery::Page(Some("c".to_owned()))
        );
        assert_eq!(
            conflicts(json!({"conflict_id": "conflict-1"})).unwrap(),
            ConflictsQuery::Detail { conflict_id: "conflict-1".to_owned(), cursor: None }
        );
        assert_eq!(
            conflicts(json!({"conflict_id": "x", "cursor": "c"})).unwrap(),
            ConflictsQuery::Detail { conflict_id: "x".to_owned(), cursor: Some("c".to_owned()) }
        );
        for (given, named) in [(json!(42), "got an integer"), (json!(-3), "got a negative integer")]
        {
            let err = conflicts(json!({ "conflict_id": given })).unwrap_err().to_string();
            assert!(err.contains(named), "{err}");
        }
        let err = write_memory_args(&object(
            json!({"content": "x", "kind": "decision", "importance": 3, "evidence": {"a": 1}}),
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("got an object with an integer value"), "{err}");
    }

    #[test]
    fn integral_floats_are_integers_and_fractions_are_refused() {
        assert_eq!(get_context_args(&object(json!({"recent": 10.0}))).unwrap().recent, Some(10));
        assert_eq!(get_context_args(&object(json!({"recent": 0.0}))).unwrap().recent, Some(0));
        assert_eq!(get_context_args(&object(json!({"pending": 3.0}))).unwrap().pending, Some(3));
        assert_eq!(list_recent_facts_args(&object(json!({"limit": 10.0}))).unwrap().0, Some(10));
        for (field, bad) in [
            ("recent", json!(2.5)),
            ("recent", json!(1001.0)),
            ("recent", json!(-1.0)),
            ("recent", json!(1e300)),
        ] {
            let err = get_context_args(&object(json!({ field: bad }))).unwrap_err();
            assert_eq!(field_of(err), field, "{bad}");
        }
        for bad in [json!(0.5), json!(0.0), json!(1000.5)] {
            let err = list_recent_facts_args(&object(json!({ "limit": bad }))).unwrap_err();
            assert_eq!(field_of(err), "limit", "{bad}");
        }
        let whole = object(json!({"content": "x", "kind": "decision", "importance": 3.0}));
        assert_eq!(write_memory_args(&whole).unwrap().importance, Some(3));
        let half = object(json!({"content": "x", "kind": "decision", "importance": 3.5}));
        assert_eq!(field_of(write_memory_args(&half).unwrap_err()), "importance");
    }

    /// Keywords of JSON Schema Draft 2020-12 a tool schema may use, with the
    /// JSON type each keyword's value must have.
    const KEYWORDS: [(&str, &str); 12] = [
        ("type", "string"),
        ("properties", "object"),
        ("required", "array"),
        ("additionalProperties", "any"),
        ("description", "string"),
        ("enum", "array"),
        ("minimum", "number"),
        ("maximum", "number"),
        ("minLength", "number"),
        ("maxLength", "number"),
        ("pattern", "string"),
        ("title", "string"),
    ];

    /// Returns the problems of one (sub)schema at `at`, walking into its
    /// properties and additionalProperties.
    fn portability_problems(schema: &Value, at: &str, problems: &mut Vec<String>) {
        let Some(object) = schema.as_object() else {
            if !schema.is_boolean() {
                problems.push(format!("{at}: a schema must be an object or a boolean"));
            }
            return;
        };
        for (keyword, value) in object {
            let Some((_, expected)) = KEYWORDS.iter().find(|(k, _)| k == keyword) else {
                problems.push(format!("{at}: keyword {keyword:?} is not allowed"));
                continue;
            };
            let fits = match *expected {
                "string" => value.is_string(),
                "object" => value.is_object(),
                "array" => value.is_array(),
                "number" => value.is_number(),
                _ => true,
            };
            if !fits {
                problems.push(format!("{at}: {keyword} must be a JSON {expected}, got {value}"));
            }
        }
        match object.get("type").and_then(Value::as_str) {
            Some("object" | "string" | "integer" | "number" | "boolean" | "array") => {}
            _ => problems.push(format!("{at}: needs exactly one standard type, got {schema}")),
        }
        for keyword in ["minLength", "maxLength"] {
            if let Some(n) = object.get(keyword)
                && n.as_u64().is_none()
            {
                problems.push(format!("{at}: {keyword} must be a non-negative integer"));
            }
        }
        // Some clients strip these before the model sees the schema: the
        // description must say the same.
        let description = object.get("description").and_then(Value::as_str).unwrap_or("");
        let plain = description.replace(',', "");
        let words: Vec<&str> =
            plain.split(|c: char| !c.is_ascii_digit()).filter(|w| !w.is_empty()).collect();
        for keyword in ["minimum", "maximum", "minLength", "maxLength"] {
            if let Some(n) = object.get(keyword)
                && !words.contains(&n.to_string().as_str())
            {
                problems.push(format!("{at}: description does not state {keyword} {n}"));
            }
        }
        if let Some(pattern) = object.get("pattern").and_then(Value::as_str)
            && !description.contains(pattern)
        {
            problems.push(format!("{at}: description does not state the pattern {pattern}"));
        }
        if let Some(Value::Object(properties)) = object.get("properties") {
            for (name, property) in properties {
                if property.get("description").and_then(Value::as_str).is_none() {
                    problems.push(format!("{at}.{name}: no description"));
                }
                portability_problems(property, &format!("{at}.{name}"), problems);
            }
        }
        if let Some(additional @ Value::Object(_)) = object.get("additionalProperties") {
            portability_problems(additional, &format!("{at}.additionalProperties"), problems);
        }
    }

    #[test]
    fn every_schema_is_portable_and_states_its_limits_in_words() {
        let mut problems = Vec::new();
        for tool in definitions() {
            let schema = Value::Object(tool.input_schema.as_ref().clone());
            assert_eq!(schema["type"], "object", "{}", tool.name);
            portability_problems(&schema, &tool.name, &mut problems);
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn the_portability_check_catches_what_schemars_emits() {
        let schemars_like = json!({
            "type": "object",
            "properties": {
                "recent": {
                    "type": ["integer", "null"], "format": "uint16",
                    "minimum": 0, "maximum": 1000, "description": "How many."
                }
            }
        });
        let mut problems = Vec::new();
        portability_problems(&schemars_like, "t", &mut problems);
        let text = problems.join("\n");
        assert!(text.contains("\"format\" is not allowed"), "{text}");
        assert!(text.contains("exactly one standard type"), "{text}");
        assert!(text.contains("does not state maximum 1000"), "{text}");
        assert!(text.contains("does not state minimum 0"), "{text}");
    }

    #[test]
    fn every_tool_has_a_title_closed_world_hints_and_an_output_schema_when_structured() {
        for tool in definitions() {
            let name = tool.name.as_ref();
            assert!(tool.title.as_deref().is_some_and(|t| !t.is_empty()), "{name}: no title");
            let hints = tool.annotations.as_ref().unwrap();
            assert_eq!(hints.open_world_hint, Some(false), "{name}");
            assert_eq!(hints.read_only_hint, Some(name != WRITE_MEMORY), "{name}");
            if name == WRITE_MEMORY {
                assert_eq!(hints.destructive_hint, Some(false), "{name}");
            }
            // get_context returns text; the others return structuredContent.
            assert_eq!(tool.output_schema.is_some(), name != GET_CONTEXT, "{name}");
            if let Some(output) = &tool.output_schema {
                assert_eq!(output["type"], "object", "{name}");
            }
        }
    }

    #[test]
    fn schemas_mirror_the_spec() {
        let tools = definitions();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [WRITE_MEMORY, GET_CONTEXT, LIST_RECENT_FACTS, LIST_CONFLICTS, SEARCH_MEMORY]
        );
        let schema = Value::Object(tools[0].input_schema.as_ref().clone());
        let text = schema.to_string();
        assert!(text.contains(r#""pattern":"^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$""#), "{text}");
        assert!(text.contains(r#""maxLength":120"#), "{text}");
        assert!(text.contains(r#""minimum":1"#) && text.contains(r#""maximum":5"#), "{text}");
        for kind in ["decision", "convention", "pitfall", "outcome"] {
            assert!(text.contains(&format!("\"{kind}\"")), "{text}");
        }
        let required = schema["required"].as_array().unwrap();
        assert_eq!(required.len(), 3, "{text}");
        assert_eq!(schema["additionalProperties"], json!(false), "{text}");
    }
}
