//! The four tools: their input schemas (docs/format.md) and the checked
//! reading of their arguments.
//!
//! Arguments are read field by field rather than through one `Deserialize`
//! so that every rejection names the field it is about; value rules that
//! the library owns (kind names, importance range, memory_key form, secret
//! guard) are left to the library, which names the field too.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use workmem::{Error, Invalid, NewFact};

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

/// Most recent facts `get_context` may be asked for (as `workmem context`).
pub const MAX_RECENT: u64 = 1_000;
/// Facts `list_recent_facts` returns when no limit is given.
pub const DEFAULT_LIMIT: u64 = 20;
/// Most facts `list_recent_facts` may return.
pub const MAX_LIMIT: u64 = 1_000;

/// Input of `get_context`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)] // only its schema is used
struct GetContextInput {
    /// How many recent unkeyed facts to include (default 6).
    #[schemars(range(min = 0, max = 1000))]
    recent: Option<u16>,
}

/// Input of `list_recent_facts`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)] // only its schema is used
struct ListRecentFactsInput {
    /// How many facts to return, newest last (default 20).
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<u16>,
}

/// Input of `list_conflicts`: none.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)] // only its schema is used
struct ListConflictsInput {}

/// Returns the definitions of every tool, in a fixed order.
pub fn definitions() -> Vec<Tool> {
    vec![
        Tool::new(WRITE_MEMORY, WRITE_MEMORY_DESCRIPTION, object_schema(write_memory_schema()))
            .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false)),
        Tool::new(
            GET_CONTEXT,
            "Return the bounded agent context: the curated project memory plus the most recent unkeyed facts.",
            schema::<GetContextInput>(),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new(
            LIST_RECENT_FACTS,
            "List the most recent raw facts of the log (any kind, keyed or not), oldest first, as JSON.",
            schema::<ListRecentFactsInput>(),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new(
            LIST_CONFLICTS,
            "List the open conflict cases (ties the policy refused to guess) as JSON. Read-only: only a \
             human can resolve a case, with `workmem resolve`; tell the user when a decision awaits review.",
            schema::<ListConflictsInput>(),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
    ]
}

/// Returns `schema` as the object a tool definition holds.
fn object_schema(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(object) => Arc::new(object),
        // The schemas are JSON object literals.
        _ => Arc::new(JsonObject::new()),
    }
}

fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    // The input types above are object structs, which is all this can fail on.
    rmcp::handler::server::common::schema_for_input::<T>().unwrap_or_else(|_| {
        let mut object = JsonObject::new();
        object.insert("type".into(), Value::from("object"));
        Arc::new(object)
    })
}

/// Returns the fact `write_memory` asked for, before library validation (the
/// library's one reading of the tool input, shared with `workmem chat`).
///
/// Errors: [`Error::InvalidInput`] naming an unknown, missing or mistyped
/// field.
pub fn write_memory_args(args: &JsonObject) -> Result<NewFact, Error> {
    NewFact::from_tool_input(args)
}

/// Returns the `recent` count of `get_context` (`None`: the default).
///
/// Errors: [`Error::InvalidInput`] naming the field.
pub fn get_context_args(args: &JsonObject) -> Result<Option<usize>, Error> {
    reject_unknown_fields(args, &["recent"])?;
    let recent = bounded(args, "recent", 0, MAX_RECENT)?;
    Ok(recent.map(to_usize))
}

/// Returns the `limit` of `list_recent_facts`.
///
/// Errors: [`Error::InvalidInput`] naming the field.
pub fn list_recent_facts_args(args: &JsonObject) -> Result<usize, Error> {
    reject_unknown_fields(args, &["limit"])?;
    Ok(to_usize(bounded(args, "limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT)))
}

/// Checks `list_conflicts` got no arguments.
///
/// Errors: [`Error::InvalidInput`] naming an unknown field.
pub fn list_conflicts_args(args: &JsonObject) -> Result<(), Error> {
    reject_unknown_fields(args, &[])
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
        Some(value) => serde_json::from_value(value.clone()).map(Some).map_err(|_| {
            Error::invalid(field, Invalid::WrongType { expected, got: describe(value) })
        }),
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
        Value::Number(n) if n.is_i64() => "a negative integer",
        Value::Number(_) => "a number",
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
        assert_eq!(get_context_args(&object(json!({}))).unwrap(), None);
        assert_eq!(get_context_args(&object(json!({"recent": 0}))).unwrap(), Some(0));
        assert_eq!(
            field_of(get_context_args(&object(json!({"recent": 1001}))).unwrap_err()),
            "recent"
        );
        assert_eq!(
            field_of(get_context_args(&object(json!({"recent": -1}))).unwrap_err()),
            "recent"
        );
        assert_eq!(list_recent_facts_args(&object(json!({}))).unwrap(), 20);
        assert_eq!(list_recent_facts_args(&object(json!({"limit": 3}))).unwrap(), 3);
        assert_eq!(
            field_of(list_recent_facts_args(&object(json!({"limit": 0}))).unwrap_err()),
            "limit"
        );
        assert_eq!(
            field_of(list_conflicts_args(&object(json!({"status": "all"}))).unwrap_err()),
            "status"
        );
    }

    #[test]
    fn schemas_mirror_the_spec() {
        let tools = definitions();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, [WRITE_MEMORY, GET_CONTEXT, LIST_RECENT_FACTS, LIST_CONFLICTS]);
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
