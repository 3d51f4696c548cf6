//! The tools offered to the model, their input schemas, and the checked
//! reading of `write_memory` and `search_memory` input.
//!
//! Exactly three tools exist: `bash`, `write_memory` and `search_memory`.
//! None can resolve a conflict, distill, or change or delete anything
//! already recorded: those stay with the human at the REPL
//! (docs/policy.md).

use serde_json::{Value, json};
use workmem::{Error, Invalid, NewFact, Workspace};

use crate::api::ToolDefinition;
use workmem::{
    WRITE_MEMORY_DESCRIPTION, WRITE_MEMORY_TOOL, reject_unknown_fields, write_memory_schema,
};

/// Name of the shell tool.
pub const BASH: &str = "bash";
/// Name of the tool that appends a fact.
pub const WRITE_MEMORY: &str = WRITE_MEMORY_TOOL;
/// Name of the tool that searches the memory.
pub const SEARCH_MEMORY: &str = workmem::SEARCH_MEMORY_TOOL;
/// The most characters of a `search_memory` result (as the MCP tool's).
pub const MAX_SEARCH_RESULT_CHARS: usize = 25_000;
/// The `source` of facts the model writes.
pub use workmem::MODEL_TOOL_SOURCE;

/// What a tool call returns to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text of the `tool_result`.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolOutput {
    /// Returns a successful output.
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput { content: content.into(), is_error: false }
    }

    /// Returns a failed output.
    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput { content: content.into(), is_error: true }
    }
}

/// Returns the definitions of the three tools, `bash` first.
pub fn definitions(bash_timeout_secs: u64, max_output_chars: usize) -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: BASH.to_owned(),
            description: format!(
                "Run one shell command with bash in the project directory and return its stdout, stderr and \
                 exit status. Stdin is closed; the command is killed after {bash_timeout_secs} s; output beyond \
                 {max_output_chars} characters is cut in the middle. Obviously destructive commands (removing \
                 / or ~, formatting disks, force pushes, git reset --hard) and any access to the memory \
                 directory (.workmem) are refused. Prefer small, read-only commands."
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "minLength": 1, "description": "The command line to run with bash -c."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        },
        ToolDefinition {
            name: WRITE_MEMORY.to_owned(),
            description: WRITE_MEMORY_DESCRIPTION.to_owned(),
            input_schema: write_memory_schema(),
        },
        ToolDefinition {
            name: SEARCH_MEMORY.to_owned(),
            description: workmem::SEARCH_MEMORY_DESCRIPTION.to_owned(),
            input_schema: workmem::search_memory_schema(),
        },
    ]
}

/// Runs `search_memory` against `workspace`: one page of hits as JSON,
/// within [`MAX_SEARCH_RESULT_CHARS`]; invalid input comes back as an
/// error naming the field.
pub fn search_memory(workspace: &Workspace, input: &Value) -> ToolOutput {
    let page = input
        .as_object()
        .ok_or_else(|| {
            Error::invalid(
                "input",
                Invalid::WrongType { expected: "a JSON object", got: "another value" },
            )
        })
        .and_then(workmem::search_memory_args)
        .and_then(|(query, mut options)| {
            options.max_chars = MAX_SEARCH_RESULT_CHARS - 500;
            workspace.search(&query, &options)
        });
    match page {
        Ok(page) => ToolOutput::ok(workmem::search_memory_result(&page).to_string()),
        Err(err) => ToolOutput::error(format!("the search failed: {err}")),
    }
}

/// Why the input of a `bash` call was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BashInputError {
    /// The input is not a JSON object.
    #[error("the tool input must be a JSON object")]
    NotAnObject,
    /// The input has a field other than `command`.
    #[error("{0}")]
    UnknownField(Error),
    /// `command` is not a string.
    #[error("invalid command: expected a string")]
    NotAString,
    /// `command` is absent.
    #[error("invalid command: missing")]
    Missing,
}

/// Returns the command of a `bash` call.
///
/// Errors: a [`BashInputError`] naming the missing, mistyped or unknown
/// field.
pub fn bash_command(input: &Value) -> Result<String, BashInputError> {
    let object = input.as_object().ok_or(BashInputError::NotAnObject)?;
    reject_unknown_fields(object, &["command"]).map_err(BashInputError::UnknownField)?;
    match object.get("command") {
        Some(Value::String(command)) => Ok(command.clone()),
        Some(_) => Err(BashInputError::NotAString),
        None => Err(BashInputError::Missing),
    }
}

/// Returns the fact a `write_memory` call asks for, with source
/// `model_tool`, before the library's own validation.
///
/// Errors: [`Error::InvalidInput`] naming an unknown, missing or mistyped
/// field.
pub fn write_memory_fact(input: &Value) -> Result<NewFact, Error> {
    let object = input.as_object().ok_or_else(|| {
        Error::invalid(
            "input",
            Invalid::WrongType { expected: "a JSON object", got: "another value" },
        )
    })?;
    NewFact::from_tool_input(object)
}

/// Runs `write_memory` against `workspace`: validates everything, appends
/// one fact, and returns a short JSON receipt. Invalid input writes
/// nothing and comes back as an error naming the field.
pub fn write_memory(workspace: &Workspace, input: &Value) -> ToolOutput {
    let stored = write_memory_fact(input).and_then(|new| workspace.remember(new));
    match stored {
        Ok(fact) => ToolOutput::ok(
            json!({
                "stored": true,
                "fact_id": fact.fact_id(),
                "kind": fact.kind().as_str(),
                "importance": fact.importance(),
                "memory_key": fact.memory_key(),
                "recorded_at": fact.recorded_at().as_str(),
                "note": workspace.write_memory_note(&fact),
            })
            .to_string(),
        ),
        Err(err @ Error::InvalidInput { .. }) => {
            ToolOutput::error(format!("{err}; nothing was written"))
        }
        Err(err) => ToolOutput::error(format!("the fact could not be stored: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_mirror_the_fact_fields() {
        let tools = definitions(120, 50_000);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, [BASH, WRITE_MEMORY, SEARCH_MEMORY]);
        assert_eq!(tools[2].input_schema["required"], json!(["query"]));
        let schema = &tools[1].input_schema;
        assert_eq!(schema["required"], json!(["content", "kind", "importance"]));
        assert_eq!(schema["properties"]["memory_key"]["maxLength"], 120);
        assert_eq!(schema["properties"]["importance"]["maximum"], 5);
        assert!(tools[0].description.contains("120 s"));
    }

    #[test]
    fn write_memory_fields_are_checked() {
        let ok = write_memory_fact(&json!({
            "content": "x", "kind": "decision", "importance": 4, "memory_key": null, "evidence": {"file": "a"}
        }))
        .unwrap();
        assert_eq!(ok.source.as_deref(), Some(MODEL_TOOL_SOURCE));
        assert_eq!(ok.evidence.get("file").map(String::as_str), Some("a"));
        for (input, field) in [
            (json!("text"), "input"),
            (
                json!({"content": "x", "kind": "decision", "importance": 4, "source": "user"}),
                "source",
            ),
            (json!({"kind": "decision", "importance": 4}), "content"),
            (json!({"content": 1, "kind": "decision", "importance": 4}), "content"),
            (json!({"content": "x", "importance": 4}), "kind"),
            (json!({"content": "x", "kind": "decision", "importance": "4"}), "importance"),
            (json!({"content": "x", "kind": "decision", "importance": 4.5}), "importance"),
            (
                json!({"content": "x", "kind": "decision", "importance": 4, "memory_key": 3}),
                "memory_key",
            ),
            (
                json!({"content": "x", "kind": "decision", "importance": 4, "evidence": {"a": 1}}),
                "evidence",
            ),
            (
                json!({"content": "x", "kind": "decision", "importance": 4, "evidence": ["a"]}),
                "evidence",
            ),
        ] {
            match write_memory_fact(&input) {
                Err(Error::InvalidInput { field: got, .. }) => assert_eq!(got, field, "{input}"),
                other => panic!("{input}: {other:?}"),
            }
        }
    }

    #[test]
    fn search_memory_finds_what_was_written_and_names_bad_fields() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path(), None).unwrap();
        ws.init().unwrap();
        let written = write_memory(
            &ws,
            &json!({"content": "The parser rejects tabs", "kind": "pitfall", "importance": 3}),
        );
        assert!(!written.is_error, "{}", written.content);
        let found = search_memory(&ws, &json!({"query": "pars*", "in": "facts"}));
        assert!(!found.is_error, "{}", found.content);
        let value: Value = serde_json::from_str(&found.content).unwrap();
        assert_eq!(value["hits"][0]["snippet"], "The **parser** rejects tabs");
        assert_eq!(value["total"], 1);
        for (input, field) in [
            (json!({}), "query"),
            (json!({"query": 3}), "query"),
            (json!({"query": "x", "limit": 51}), "limit"),
            (json!({"query": "x", "in": "everything"}), "in"),
            (json!({"query": "x", "cursor": "forged"}), "cursor"),
            (json!({"query": "x", "rank": "bm25"}), "rank"),
        ] {
            let out = search_memory(&ws, &input);
            assert!(out.is_error && out.content.contains(field), "{input}: {}", out.content);
        }
    }

    #[test]
    fn bash_input_is_checked() {
        assert_eq!(bash_command(&json!({"command": "ls"})).unwrap(), "ls");
        assert!(bash_command(&json!({})).is_err());
        assert!(bash_command(&json!({"command": 1})).is_err());
        assert!(bash_command(&json!({"command": "ls", "restart": true})).is_err());
    }
}
