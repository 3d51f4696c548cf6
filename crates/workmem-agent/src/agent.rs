//! The agent loop: one conversation, one user turn at a time.
//!
//! A turn appends the user's message, then repeats: rebuild the system
//! prompt from the workspace's bounded context, call the model, and if the
//! reply holds `tool_use` blocks (whatever `stop_reason` says) run each one
//! and send all their `tool_result`s back in one user message. It ends with
//! the first reply that holds no tool use. A turn that fails or is
//! cancelled is removed from the conversation, so the next request is
//! always well-formed; facts it already wrote stay in the log.

use std::time::Duration;

use serde_json::Value;
use workmem::Workspace;

use crate::api::{Block, Message, MessagesRequest, Role, ToolDefinition};
use crate::bash::{self, BashTool};
use crate::cancel::Cancel;
use crate::client::{ClientError, MessagesClient, RetryNotice};
use crate::prompt;
use crate::tools::{self, ToolOutput};

/// Model calls one turn may make before it is stopped.
pub const DEFAULT_MAX_MODEL_CALLS: usize = 50;

/// What the loop reports while it works. Every method has an empty
/// default.
pub trait Events {
    /// The model wrote text.
    fn text(&mut self, _text: &str) {}
    /// A tool is about to run with `input`.
    fn tool_call(&mut self, _name: &str, _input: &Value) {}
    /// A tool finished.
    fn tool_result(&mut self, _name: &str, _output: &ToolOutput) {}
    /// A model call failed and will be retried after a wait.
    fn retry(&mut self, _notice: &RetryNotice) {}
}

/// An [`Events`] that ignores everything.
#[derive(Debug, Default)]
pub struct Silent;

impl Events for Silent {}

/// How the agent calls the model and runs tools.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The model id.
    pub model: String,
    /// Reply token budget.
    pub max_tokens: u32,
    /// Model calls one turn may make.
    pub max_model_calls: usize,
    /// Time a bash command may run.
    pub bash_timeout: Duration,
    /// Characters of bash output returned at most.
    pub max_output_chars: usize,
}

impl AgentOptions {
    /// Returns the defaults for `model`.
    pub fn new(model: impl Into<String>, max_tokens: u32) -> AgentOptions {
        AgentOptions {
            model: model.into(),
            max_tokens,
            max_model_calls: DEFAULT_MAX_MODEL_CALLS,
            bash_timeout: bash::DEFAULT_TIMEOUT,
            max_output_chars: bash::DEFAULT_MAX_OUTPUT_CHARS,
        }
    }
}

/// Why a turn failed. The turn was removed from the conversation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model call failed.
    #[error(transparent)]
    Client(ClientError),
    /// The user cancelled the turn.
    #[error("cancelled")]
    Cancelled,
    /// The workspace context could not be read.
    #[error("cannot read the workspace memory: {0}")]
    Memory(#[from] workmem::Error),
    /// The model kept calling tools past the limit.
    #[error("the model made {0} calls in one turn without finishing; the turn was stopped")]
    TooManyCalls(usize),
}

impl From<ClientError> for AgentError {
    fn from(err: ClientError) -> Self {
        match err {
            ClientError::Cancelled => AgentError::Cancelled,
            other => AgentError::Client(other),
        }
    }
}

/// What one successful turn did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSummary {
    /// The text of the final reply (text blocks joined by newlines).
    pub text: String,
    /// Model calls made.
    pub model_calls: usize,
    /// Tools run.
    pub tool_calls: usize,
    /// `stop_reason` of the final reply.
    pub stop_reason: Option<String>,
}

/// A conversation with a model about one workspace.
#[derive(Debug)]
pub struct Agent<C> {
    client: C,
    workspace: Workspace,
    options: AgentOptions,
    bash: BashTool,
    tools: Vec<ToolDefinition>,
    messages: Vec<Message>,
}

impl<C: MessagesClient> Agent<C> {
    /// Returns an agent with an empty conversation.
    pub fn new(client: C, workspace: Workspace, options: AgentOptions) -> Agent<C> {
        let bash = BashTool {
            dir: workspace.project().to_path_buf(),
            memory_dir: Some(workspace.memory_dir().to_path_buf()),
            timeout: options.bash_timeout,
            max_output_chars: options.max_output_chars,
        };
        let tools = tools::definitions(options.bash_timeout.as_secs(), options.max_output_chars);
        Agent { client, workspace, options, bash, tools, messages: Vec::new() }
    }

    /// Returns the conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Returns the workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Forgets the conversation (the memory is kept).
    pub fn reset(&mut self) {
        self.messages.clear();
    }

    /// Returns the request for the conversation as it stands, with the
    /// system prompt rebuilt from the current context.
    ///
    /// Errors: the workspace's errors reading the context.
    pub fn request(&self) -> Result<MessagesRequest, AgentError> {
        let context = self.workspace.context(None)?;
        let today = self.workspace.now().utc_day();
        Ok(MessagesRequest {
            model: self.options.model.clone(),
            max_tokens: self.options.max_tokens,
            system: prompt::system_prompt(self.workspace.project(), &context, &today),
            messages: self.messages.clone(),
            tools: self.tools.clone(),
        })
    }

    /// Runs one user turn to its end.
    ///
    /// Errors: [`AgentError`]; the turn is then removed from the
    /// conversation.
    pub fn turn(
        &mut self,
        user: &str,
        events: &mut dyn Events,
        cancel: &Cancel,
    ) -> Result<TurnSummary, AgentError> {
        let start = self.messages.len();
        let outcome = self.run_turn(user, events, cancel);
        if outcome.is_err() {
            self.messages.truncate(start);
        }
        outcome
    }

    fn run_turn(
        &mut self,
        user: &str,
        events: &mut dyn Events,
        cancel: &Cancel,
    ) -> Result<TurnSummary, AgentError> {
        self.messages.push(Message { role: Role::User, content: vec![Block::text(user)] });
        let mut model_calls = 0;
        let mut tool_calls = 0;
        loop {
            if model_calls >= self.options.max_model_calls {
                return Err(AgentError::TooManyCalls(model_calls));
            }
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled);
            }
            let request = self.request()?;
            let response =
                self.client.create(&request, cancel, &mut |notice| events.retry(notice))?;
            model_calls += 1;
            for block in &response.content {
                if let Some(text) = block.as_text() {
                    events.text(text);
                }
            }
            let uses: Vec<(String, String, Value)> = response
                .content
                .iter()
                .filter_map(Block::as_tool_use)
                .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
                .collect();
            let text =
                response.content.iter().filter_map(Block::as_text).collect::<Vec<_>>().join("\n");
            self.messages.push(Message { role: Role::Assistant, content: response.content });
            if uses.is_empty() {
                return Ok(TurnSummary {
                    text,
                    model_calls,
                    tool_calls,
                    stop_reason: response.stop_reason,
                });
            }
            let mut results = Vec::with_capacity(uses.len());
            for (id, name, input) in uses {
                if cancel.is_cancelled() {
                    return Err(AgentError::Cancelled);
                }
                events.tool_call(&name, &input);
                let output = self.run_tool(&name, &input, cancel);
                tool_calls += 1;
                events.tool_result(&name, &output);
                results.push(Block::tool_result(id, output.content, output.is_error));
            }
            self.messages.push(Message { role: Role::User, content: results });
        }
    }

    fn run_tool(&self, name: &str, input: &Value, cancel: &Cancel) -> ToolOutput {
        match name {
            tools::BASH => match tools::bash_command(input) {
                Ok(command) => self.bash.run(&command, cancel),
                Err(err) => ToolOutput::error(err.to_string()),
            },
            tools::WRITE_MEMORY => tools::write_memory(&self.workspace, input),
            tools::SEARCH_MEMORY => tools::search_memory(&self.workspace, input),
            other => ToolOutput::error(format!(
                "unknown tool {other:?}; the tools are {}, {} and {}",
                tools::BASH,
                tools::WRITE_MEMORY,
                tools::SEARCH_MEMORY
            )),
        }
    }
}
