//! workmem-agent: the interactive agent of `workmem chat` (docs/cli.md).
//!
//! An [`Agent`] keeps one conversation with a model behind the
//! [`MessagesClient`] trait (the real one, [`HttpClient`], speaks the
//! Anthropic Messages API over blocking HTTP). Before every model call it
//! rebuilds the system prompt from the workspace's bounded context
//! ([`prompt`]), and it keeps calling the model while a reply holds
//! `tool_use` blocks, answering every one with a `tool_result`. The tools
//! are `bash` ([`bash`]) and `write_memory` ([`tools`]); no tool can resolve
//! a conflict, distill or delete anything: that stays with the human at the
//! REPL.
//!
//! This crate never reads the environment or prints: configuration comes
//! in as values ([`Settings::from_lookup`]) and everything worth showing is
//! reported through [`Events`].

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod agent;
pub mod api;
pub mod bash;
pub mod cancel;
pub mod client;
pub mod prompt;
pub mod settings;
pub mod tools;

pub use agent::{Agent, AgentError, AgentOptions, Events, Silent, TurnSummary};
pub use api::{Block, Message, MessagesRequest, MessagesResponse, Role};
pub use cancel::Cancel;
pub use client::{ClientError, HttpClient, MessagesClient, RetryNotice, RetryPolicy};
pub use settings::{Settings, SettingsError};
pub use tools::ToolOutput;
