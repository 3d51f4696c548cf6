//! workmem-mcp: serves one workmem workspace to MCP clients over stdio.
//!
//! The server maps each MCP tool 1:1 onto a [`workmem::Workspace`] call and
//! adds no domain logic of its own:
//!
//! | tool | library call |
//! |---|---|
//! | `write_memory` | [`Workspace::remember`] with source `model_tool` |
//! | `get_context` | [`Workspace::context_with`] |
//! | `list_recent_facts` | [`Workspace::recent_facts`], [`Workspace::recent_facts_before`] |
//! | `list_conflicts` | [`Workspace::conflicts`], open cases only (or one case) |
//!
//! and two resources, [`MEMORY_URI`] ([`Workspace::memory_within`]) and
//! [`CONTEXT_URI`] ([`Workspace::context_with`]). No tool resolves a
//! conflict, distills or deletes anything: those stay with the human at the
//! CLI. Every tool result and resource holds at most [`MAX_RESULT_CHARS`]
//! characters; lists that can be long come in pages with a cursor.
//!
//! Invariants: stdout carries only protocol messages (this crate never
//! prints; the SDK's `tracing` output has no subscriber here), every line
//! the client sends gets an answer (a line that is not JSON gets a -32700
//! parse error, one over [`MAX_MESSAGE_BYTES`] an invalid-request error, and
//! the server keeps serving), invalid tool input comes back as a tool result
//! with `isError: true` naming the field and writes nothing, and the server
//! returns when the client closes stdin.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod framing;
mod pages;
mod server;
mod tools;

use rmcp::ServiceExt;
use rmcp::service::{QuitReason, ServerInitializeError};
use workmem::Workspace;

pub use framing::MAX_MESSAGE_BYTES;
pub use pages::MAX_RESULT_CHARS;
pub use server::WorkmemServer;

/// URI of the MEMORY.md resource.
pub const MEMORY_URI: &str = "workmem://memory";
/// URI of the bounded agent context resource.
pub const CONTEXT_URI: &str = "workmem://context";
/// The source recorded on every fact written through MCP.
pub use workmem::MODEL_TOOL_SOURCE;

/// Errors that stop the stdio server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The async runtime could not be built.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The MCP handshake failed for a reason other than the client leaving.
    #[error("MCP initialization failed: {0}")]
    Initialize(String),
    /// The server task ended abnormally.
    #[error("MCP server stopped abnormally: {0}")]
    Stopped(String),
}

/// Serves `workspace` over stdin/stdout until the client closes stdin.
///
/// Builds a current-thread tokio runtime and blocks on it. Library calls
/// are plain blocking file I/O and run inline: one client talks to one
/// server, so requests are simply handled in turn. A client that closes
/// stdin before or after the handshake ends the server normally.
///
/// Errors: [`ServeError::Runtime`], [`ServeError::Initialize`] for a broken
/// handshake, [`ServeError::Stopped`] when the server task panicked.
pub fn serve_stdio(workspace: Workspace) -> Result<(), ServeError> {
    serve_server_stdio(WorkmemServer::new(workspace))
}

/// Serves, over stdin/stdout until the client closes stdin, a project that
/// cannot be served: the handshake completes and every tool call and
/// resource read is answered with `problem`, what is wrong and what to do
/// ([`WorkmemServer::unavailable`]). A client then shows the reason rather
/// than a closed connection.
///
/// Errors: as [`serve_stdio`].
pub fn serve_stdio_unavailable(problem: impl Into<String>) -> Result<(), ServeError> {
    serve_server_stdio(WorkmemServer::unavailable(problem))
}

fn serve_server_stdio(server: WorkmemServer) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let outcome = runtime.block_on(async move {
        // client -> framing -> SDK, and SDK -> one writer <- framing errors.
        let (to_sdk, sdk_input) = tokio::io::duplex(PIPE_BYTES);
        let (sdk_output, from_sdk) = tokio::io::duplex(PIPE_BYTES);
        let (replies, lines) = tokio::sync::mpsc::channel(64);
        let shared = framing::Shared::default();
        let writer = tokio::spawn(framing::write_lines(lines, tokio::io::stdout()));
        let forward =
            tokio::spawn(framing::forward_sdk_lines(from_sdk, replies.clone(), shared.clone()));
        let reader =
            tokio::spawn(framing::read_messages(tokio::io::stdin(), to_sdk, replies, shared));
        let outcome = serve(server, sdk_input, sdk_output).await;
        // The SDK has dropped its transport; when it stopped on its own the
        // reader may still wait for input that will never be forwarded.
        reader.abort();
        // Everything the SDK wrote reaches stdout before the process ends;
        // a closed stdout just ends the writer, with nobody left to tell.
        let _ = forward.await;
        let _ = writer.await;
        outcome
    });
    // Tokio reads stdin on a blocking thread that cannot be interrupted; when
    // the server stops on its own (a broken handshake) that read may still
    // wait for input, and an ordinary drop of the runtime would wait with it.
    runtime.shutdown_background();
    outcome
}

/// Bytes buffered between the framing tasks and the SDK.
const PIPE_BYTES: usize = 64 * 1024;

/// Runs the MCP session over the framed streams until it ends.
async fn serve(
    server: WorkmemServer,
    input: tokio::io::DuplexStream,
    output: tokio::io::DuplexStream,
) -> Result<(), ServeError> {
    let service = match server.serve((input, output)).await {
        Ok(service) => service,
        // The client went away before finishing the handshake: nothing to
        // serve, not an error.
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(err) => return Err(ServeError::Initialize(err.to_string())),
    };
    match service.waiting().await {
        Ok(QuitReason::JoinError(err)) => Err(ServeError::Stopped(err.to_string())),
        Ok(_) => Ok(()),
        Err(err) => Err(ServeError::Stopped(err.to_string())),
    }
}
