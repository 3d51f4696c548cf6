//! The wire types of the Anthropic Messages API (`POST /v1/messages`),
//! written by hand: only the fields this agent sends or reads.
//!
//! Content blocks of a kind this crate does not know (thinking, citations,
//! server tools, ...) are kept verbatim as [`Block::Other`] so that an
//! assistant turn goes back to the API exactly as it came.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The API version header value this crate speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side, which also carries tool results.
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content blocks.
    pub content: Vec<Block>,
}

/// A content block this crate understands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum KnownBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks for a tool call.
    ToolUse {
        /// The id the matching `tool_result` must name.
        id: String,
        /// The tool.
        name: String,
        /// Its input (an object when well-formed).
        input: Value,
    },
    /// The answer to one `tool_use`.
    ToolResult {
        /// The `id` of the `tool_use` it answers.
        tool_use_id: String,
        /// The tool's output or error message.
        content: String,
        /// Whether the call failed (invalid input, refused, non-zero exit).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// A content block: a known kind, or any other JSON object kept verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Block {
    /// A block this crate reads and writes.
    Known(KnownBlock),
    /// Any other block, passed through unchanged.
    Other(Value),
}

impl Block {
    /// Returns a text block.
    pub fn text(text: impl Into<String>) -> Block {
        Block::Known(KnownBlock::Text { text: text.into() })
    }

    /// Returns a tool result block answering `tool_use_id`.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Block {
        Block::Known(KnownBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error,
        })
    }

    /// Returns the text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Block::Known(KnownBlock::Text { text }) => Some(text),
            _ => None,
        }
    }

    /// Returns `(id, name, input)` of a tool use block.
    pub fn as_tool_use(&self) -> Option<(&str, &str, &Value)> {
        match self {
            Block::Known(KnownBlock::ToolUse { id, name, input }) => Some((id, name, input)),
            _ => None,
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its input object.
    pub input_schema: Value,
}

/// The body of one `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessagesRequest {
    /// The model id (`MODEL_ID`).
    pub model: String,
    /// Upper bound of tokens in the reply.
    pub max_tokens: u32,
    /// The system prompt, rebuilt for every call.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools on offer.
    pub tools: Vec<ToolDefinition>,
}

/// A successful reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessagesResponse {
    /// The message id.
    #[serde(default)]
    pub id: String,
    /// The reply's content blocks.
    pub content: Vec<Block>,
    /// Why the model stopped (`end_turn`, `tool_use`, `max_tokens`, ...).
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// The body of an error reply: `{"type": "error", "error": {"type", "message"}}`.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What an error reply says.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorDetail {
    /// The error type (`overloaded_error`, `authentication_error`, ...).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The human message.
    #[serde(default)]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_blocks_round_trip_verbatim() {
        let raw = json!([
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}},
            {"type": "thinking", "thinking": "hm", "signature": "abc"}
        ]);
        let blocks: Vec<Block> = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(blocks[0].as_text(), Some("hi"));
        assert_eq!(blocks[1].as_tool_use().map(|(id, name, _)| (id, name)), Some(("t1", "bash")));
        assert!(matches!(blocks[2], Block::Other(_)));
        assert_eq!(serde_json::to_value(&blocks).unwrap(), raw);
    }

    #[test]
    fn tool_result_omits_is_error_when_false() {
        let ok = serde_json::to_value(Block::tool_result("t1", "done", false)).unwrap();
        assert_eq!(ok, json!({"type": "tool_result", "tool_use_id": "t1", "content": "done"}));
        let failed = serde_json::to_value(Block::tool_result("t1", "bad", true)).unwrap();
        assert_eq!(failed["is_error"], true);
    }
}
