//! workmem-mcp: serves one workmem workspace to MCP clients over stdio.
//!
//! The server maps each MCP tool 1:1 onto a [`workmem::Workspace`] call and
//! adds no domain logic of its own:
//!
//! | tool | library call |
//! |---|---|
//! | `write_memory` | [`Workspace::remember`] with source `model_tool` |
//! | `get_context` | [`Workspace::context`] |
//! | `list_recent_facts` | [`Workspace::recent_facts`] |
//! | `list_conflicts` | [`Workspace::conflicts`], open cases only |
//!
//! and two resources, [`MEMORY_URI`] ([`Workspace::memory`]) and
//! [`CONTEXT_URI`] ([`Workspace::context`]). No tool resolves a conflict,
//! distills or deletes anything: those stay with the human at the CLI.
//!
//! Invariants: stdout carries only protocol messages (this crate never
//! prints; the SDK's `tracing` output has no subscriber here), invalid tool
//! input comes back as a tool result with `isError: true` naming the field
//! and writes nothing, and the server returns when the client closes stdin.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod server;
mod tools;

use rmcp::ServiceExt;
use rmcp::service::{QuitReason, ServerInitializeError};
use workmem::Workspace;

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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let outcome = runtime.block_on(async move {
        let service = match WorkmemServer::new(workspace).serve(rmcp::transport::stdio()).await {
            Ok(service) => service,
            // The client went away before finishing the handshake: nothing
            // to serve, not an error.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(err) => return Err(ServeError::Initialize(err.to_string())),
        };
        match service.waiting().await {
            Ok(QuitReason::JoinError(err)) => Err(ServeError::Stopped(err.to_string())),
            Ok(_) => Ok(()),
            Err(err) => Err(ServeError::Stopped(err.to_string())),
        }
    });
    // Tokio reads stdin on a blocking thread that cannot be interrupted; when
    // the server stops on its own (a broken handshake) that read may still
    // wait for input, and an ordinary drop of the runtime would wait with it.
    runtime.shutdown_background();
    outcome
}
