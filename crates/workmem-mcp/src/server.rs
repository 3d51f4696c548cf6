//! The MCP handler: tools and resources over one open workspace.
//!
//! Every request is one library call, its answer held within
//! [`MAX_RESULT_CHARS`] (see [`crate::pages`]). Failures of a tool (invalid
//! input, a detected secret, unreadable state) are tool results with
//! `isError` set, so the model reads the message; only an unknown tool or
//! resource is a protocol error.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;
use workmem::{ContextOptions, Workspace};

use crate::pages::{self, MAX_RESULT_CHARS};
use crate::tools::{self, ConflictsQuery};
use crate::{CONTEXT_URI, MEMORY_URI};

const INSTRUCTIONS: &str = "\
workmem is this project's durable memory. Call get_context at the start of a task (with the task as \
query), and search_memory to find what the project already knows before asking or writing. Record decisions, \
conventions and pitfalls worth keeping with write_memory (never credentials). Facts are promoted into \
memory by a deterministic policy, not by you; ties between competing values wait for a human, so when \
list_conflicts shows open cases, tell the user a decision awaits their review (`workmem conflicts`, \
`workmem resolve`).";

/// The text of the memory resource while MEMORY.md is empty: the line the
/// agent context gives on an empty workspace.
const EMPTY_MEMORY: &str = "(no workspace memory yet)";

/// The MCP server of one workspace.
#[derive(Debug, Clone)]
pub struct WorkmemServer {
    /// The workspace, or why there is none to serve: every call is then
    /// answered with that message.
    workspace: Result<Workspace, Arc<str>>,
    /// Whether the memory directory has been seen in place: once it has,
    /// its disappearance is reported, never papered over by a write that
    /// would create an empty one.
    seen: Arc<AtomicBool>,
}

impl WorkmemServer {
    /// Returns a server answering from `workspace`.
    pub fn new(workspace: Workspace) -> WorkmemServer {
        let seen = Arc::new(AtomicBool::new(workspace.memory_dir().is_dir()));
        WorkmemServer { workspace: Ok(workspace), seen }
    }

    /// Returns a server for a project it cannot serve (no workspace, a
    /// refused directory): it completes the handshake, lists its tools and
    /// resources, and answers every call and read with `problem` (what is
    /// wrong and what to do), so that a client shows it instead of a
    /// closed connection.
    pub fn unavailable(problem: impl Into<String>) -> WorkmemServer {
        let problem: String = problem.into();
        WorkmemServer { workspace: Err(problem.into()), seen: Arc::new(AtomicBool::new(false)) }
    }

    /// Returns the workspace to answer from, or the message to answer
    /// with instead: the server's problem, or a memory directory removed
    /// while the server ran.
    fn workspace(&self) -> Result<&Workspace, Unserved> {
        let ws = self.workspace.as_ref().map_err(|problem| Unserved::Problem(problem.clone()))?;
        if ws.memory_dir().is_dir() {
            self.seen.store(true, Ordering::Relaxed);
        } else if self.seen.load(Ordering::Relaxed) {
            return Err(Unserved::Removed(ws.memory_dir().to_path_buf()));
        }
        Ok(ws)
    }

    /// Returns the result of the tool `name` with `args`.
    ///
    /// Errors: an MCP "invalid params" error for an unknown tool; every
    /// other failure is an `isError` result.
    pub fn call(&self, name: &str, args: &JsonObject) -> Result<CallToolResult, ErrorData> {
        if ![
            tools::WRITE_MEMORY,
            tools::GET_CONTEXT,
            tools::LIST_RECENT_FACTS,
            tools::LIST_CONFLICTS,
            tools::SEARCH_MEMORY,
        ]
        .contains(&name)
        {
            let name = shown(name);
            return Err(ErrorData::invalid_params(format!("unknown tool {name:?}"), None));
        }
        let ws = match self.workspace() {
            Ok(ws) => ws,
            Err(problem) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(problem.to_string())]));
            }
        };
        let outcome = match name {
            tools::WRITE_MEMORY => Self::write_memory(ws, args),
            tools::GET_CONTEXT => Self::get_context(ws, args),
            tools::LIST_RECENT_FACTS => Self::list_recent_facts(ws, args),
            tools::SEARCH_MEMORY => Self::search_memory(ws, args),
            _ => Self::list_conflicts(ws, args),
        };
        Ok(outcome
            .unwrap_or_else(|err| CallToolResult::error(vec![ContentBlock::text(explained(&err))])))
    }

    fn write_memory(ws: &Workspace, args: &JsonObject) -> Result<CallToolResult, workmem::Error> {
        let fact = ws.remember(tools::write_memory_args(args)?)?;
        let mut receipt = json!({ "fact_id": fact.fact_id() });
        if let Some(key) = fact.memory_key() {
            receipt["memory_key"] = key.into();
        }
        receipt["note"] = ws.write_memory_note(&fact).into();
        Ok(CallToolResult::structured(receipt))
    }

    fn get_context(ws: &Workspace, args: &JsonObject) -> Result<CallToolResult, workmem::Error> {
        let context = Self::context(ws, tools::get_context_args(args)?)?;
        Ok(CallToolResult::success(vec![ContentBlock::text(context)]))
    }

    /// Returns the context with `options`, within the configured budget
    /// and never over [`MAX_RESULT_CHARS`].
    fn context(ws: &Workspace, mut options: ContextOptions) -> Result<String, workmem::Error> {
        let configured = ws.config().context_budget;
        options.budget =
            Some(if configured == 0 { MAX_RESULT_CHARS } else { configured.min(MAX_RESULT_CHARS) });
        ws.context_with(&options)
    }

    fn list_recent_facts(
        ws: &Workspace,
        args: &JsonObject,
    ) -> Result<CallToolResult, workmem::Error> {
        let (limit, cursor) = tools::list_recent_facts_args(args)?;
        let page = pages::recent_facts_page(ws, limit, cursor.as_deref(), MAX_RESULT_CHARS)?;
        Ok(CallToolResult::structured(page))
    }

    fn list_conflicts(ws: &Workspace, args: &JsonObject) -> Result<CallToolResult, workmem::Error> {
        let page = match tools::list_conflicts_args(args)? {
            ConflictsQuery::Page(cursor) => {
                pages::conflicts_page(ws, cursor.as_deref(), MAX_RESULT_CHARS)?
            }
            ConflictsQuery::Detail { conflict_id, cursor } => {
                pages::conflict_detail(ws, &conflict_id, cursor.as_deref(), MAX_RESULT_CHARS)?
            }
        };
        Ok(CallToolResult::structured(page))
    }

    fn search_memory(ws: &Workspace, args: &JsonObject) -> Result<CallToolResult, workmem::Error> {
        let (query, mut options) = workmem::search_memory_args(args)?;
        // The page's envelope (total, next_cursor) stays well within what
        // the hits leave of the bound.
        options.max_chars = MAX_RESULT_CHARS - 500;
        let page = ws.search(&query, &options)?;
        Ok(CallToolResult::structured(workmem::search_memory_result(&page)))
    }

    /// Returns the text of the resource at `uri`.
    ///
    /// Errors: an MCP "resource not found" error for an unknown URI, an
    /// internal error when the workspace cannot be read.
    pub fn read(&self, uri: &str) -> Result<ResourceContents, ErrorData> {
        if uri != MEMORY_URI && uri != CONTEXT_URI {
            let uri = shown(uri);
            return Err(ErrorData::resource_not_found(format!("no resource {uri:?}"), None));
        }
        let ws = self
            .workspace()
            .map_err(|problem| ErrorData::internal_error(problem.to_string(), None))?;
        let text = match uri {
            // An empty resource reads as a failure to clients and models;
            // say what get_context says instead. A MEMORY.md too long for
            // one result keeps its highest-priority entries and says how
            // many it leaves out.
            MEMORY_URI => ws
                .memory_within(MAX_RESULT_CHARS)
                .map(|memory| if memory.is_empty() { EMPTY_MEMORY.to_owned() } else { memory }),
            _ => Self::context(ws, ContextOptions::new()),
        }
        .map_err(|err| ErrorData::internal_error(explained(&err), None))?;
        Ok(ResourceContents::text(text, uri).with_mime_type("text/markdown"))
    }
}

/// Why the server answers a call with a problem instead of the workspace.
#[derive(Debug, thiserror::Error)]
enum Unserved {
    /// The server was started for a project it cannot serve.
    #[error("{0}")]
    Problem(Arc<str>),
    /// The memory directory was removed while the server ran.
    #[error(
        "the memory directory {} was removed while the server ran; nothing was read or \
         written\nhint: restore it (e.g. `git checkout -- .workmem`), or run `workmem init` \
         for a new memory, then restart the MCP server",
        .0.display()
    )]
    Removed(std::path::PathBuf),
}

/// Returns the message of a library error with the hint the CLI gives for
/// it (what to do about damaged state, for one).
fn explained(err: &workmem::Error) -> String {
    workmem_hints::explained(err)
}

/// Returns `text` cut after 80 characters, for an error message that must
/// stay small whatever the client sent.
fn shown(text: &str) -> String {
    match text.char_indices().nth(80) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}...", &text[..end]),
    }
}

/// Returns the two resources this server offers.
pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new(MEMORY_URI, workmem::MemoryFile::View.pattern())
            .with_title("Workspace memory")
            .with_description(
                "The curated project memory (MEMORY.md), rebuilt from curated.json when stale; \
                 `(no workspace memory yet)` until distill has promoted a fact. At most 25,000 \
                 characters: a longer MEMORY.md keeps its highest-priority entries and ends with \
                 a line saying how many are not shown (`workmem memory` shows them all)",
            )
            .with_mime_type("text/markdown"),
        Resource::new(CONTEXT_URI, "context")
            .with_title("Agent context")
            .with_description(
                "The bounded agent context, as get_context returns it: curated memory, the most \
                 recent unkeyed facts and the pending keyed facts",
            )
            .with_mime_type("text/markdown"),
    ]
}

impl ServerHandler for WorkmemServer {
    fn get_info(&self) -> ServerConfig {
        let instructions = match &self.workspace {
            Ok(_) => INSTRUCTIONS.to_owned(),
            Err(problem) => format!(
                "workmem cannot serve this project's memory; every call answers with why:\n{problem}"
            ),
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("workmem", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::definitions()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        self.call(&request.name, &args).map(CallToolResponse::from)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(resources()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let contents = self.read(&request.uri)?;
        Ok(ReadResourceResponse::from(ReadResourceResult::new(vec![contents])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `write_memory` call with a credential in any field is an `isError`
    /// result that names the field and the kind, repeats nothing of the
    /// credential, and writes nothing.
    #[test]
    fn write_memory_refuses_a_credential_in_every_field_without_repeating_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::open(dir.path(), None).expect("open");
        ws.init().expect("init");
        let server = WorkmemServer::new(ws.clone());
        let (token, kind) = workmem_testutil::credential_samples()
            .into_iter()
            .find(|(text, _)| !text.contains(' '))
            .expect("a bare token");
        let base = || json!({"content": "Deploy the worker.", "kind": "decision", "importance": 3});
        let mut cases = Vec::new();
        let mut content = base();
        content["content"] = json!(format!("CI uses {token} today"));
        cases.push(("content", content, kind));
        let mut key = base();
        key["memory_key"] = json!(token);
        cases.push(("memory_key", key, kind));
        let mut value = base();
        value["evidence"] = json!({"file": token});
        cases.push(("evidence value", value, kind));
        let mut evidence_key = base();
        evidence_key["evidence"] = json!({token.clone(): "src/deploy.rs"});
        cases.push(("evidence key", evidence_key, kind));
        let mut pair = base();
        pair["evidence"] = json!({"db_password": "hunter42"});
        cases.push(("evidence value", pair, "password or secret assignment"));
        for (field, args, kind) in cases {
            let result = server
                .call(crate::tools::WRITE_MEMORY, args.as_object().expect("object"))
                .expect("a tool result, not a protocol error");
            let text = serde_json::to_string(&result).expect("serializable");
            assert_eq!(result.is_error, Some(true), "{field}: {text}");
            assert!(text.contains(field), "{field}: {text}");
            assert!(text.contains(kind), "{field}: {text}");
            assert!(
                !text.contains(&token[token.len() - 12..]),
                "{field} repeats the credential: {text}"
            );
            assert!(!text.contains("hunter42"), "{field} repeats the password: {text}");
        }
        assert!(ws.facts().expect("facts").is_empty(), "a refused call wrote a fact");
    }

    /// An emoji joined with U+200D is content; the secret guard still sees
    /// a credential next to it.
    #[test]
    fn write_memory_takes_an_emoji_sequence_and_still_refuses_a_credential_beside_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::open(dir.path(), None).expect("open");
        ws.init().expect("init");
        let server = WorkmemServer::new(ws.clone());
        let technologist = "\u{1F469}\u{200D}\u{1F4BB}";
        let args = json!({"content": format!("On call: {technologist} Ada"), "kind": "outcome", "importance": 2});
        let result = server.call(crate::tools::WRITE_MEMORY, args.as_object().unwrap()).unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        let facts = ws.facts().expect("facts");
        assert_eq!(facts.len(), 1);
        assert!(facts[0].content().contains(technologist));
        let (token, kind) = workmem_testutil::credential_samples()
            .into_iter()
            .find(|(text, _)| !text.contains(' '))
            .expect("a bare token");
        let args = json!({
            "content": format!("{technologist} deploys with {token}"), "kind": "outcome", "importance": 2
        });
        let result = server.call(crate::tools::WRITE_MEMORY, args.as_object().unwrap()).unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(serde_json::to_string(&result).unwrap().contains(kind));
        assert_eq!(ws.facts().expect("facts").len(), 1);
    }

    #[test]
    fn an_unknown_tool_or_resource_is_named_briefly() {
        let dir = tempfile::tempdir().unwrap();
        let server = WorkmemServer::new(Workspace::open(dir.path(), None).unwrap());
        let huge = "x".repeat(1_000_000);
        let err = server.call(&huge, &JsonObject::new()).unwrap_err();
        assert!(err.message.len() < 200, "{}", err.message.len());
        assert!(err.message.starts_with("unknown tool \"xxx"), "{}", err.message);
        let err = server.read(&format!("workmem://{huge}")).unwrap_err();
        assert!(err.message.len() < 200, "{}", err.message.len());
    }
}
