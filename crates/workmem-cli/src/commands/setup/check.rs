//! `workmem setup --check`: for each client found here (its directory in
//! the project or the home directory, or its program on `PATH`), whether
//! its configuration names workmem, whether the command it names exists,
//! and whether that server starts and lists its tools, by speaking MCP to
//! it (`initialize`, then `tools/list`) the way the client would, in the
//! project directory. Reads the client files, never writes them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::clients::{self, Client, McpFile, Places, Scope};
use super::{json as json_file, shown, toml, which};
use crate::command_error::CommandError;
use crate::commands::Ctx;
use crate::output::{ClientCheck, SetupCheckOutput};

/// How long a server has to answer both requests.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `workmem setup --check`.
///
/// Errors: exit 1 when a configured server cannot be found or started, or
/// a configuration cannot be read.
pub fn run(
    ctx: &Ctx,
    places: &Places,
    only: Option<Client>,
    scope: Option<Scope>,
) -> Result<(), CommandError> {
    let mut checks = Vec::new();
    for client in Client::ALL.into_iter().filter(|c| only.is_none_or(|o| o == *c)) {
        for s in [Scope::Project, Scope::User].into_iter().filter(|s| scope.is_none_or(|o| o == *s))
        {
            let plan = clients::plan(client, s, places);
            let found = plan.mcp.path().exists()
                || plan.marks.iter().any(|m| m.exists())
                || which(client.program()).is_some();
            if found || only.is_some() {
                checks.push(check(client, s, &plan.mcp, &places.project));
            }
        }
    }
    let failed = checks.iter().filter(|c| c.problem.is_some() && c.configured).count();
    if ctx.ui.is_json() {
        ctx.ui.json(&SetupCheckOutput { clients: checks })?;
    } else {
        print(ctx, places, &checks)?;
    }
    if failed > 0 {
        return Err(CommandError::check_failed(format!(
            "{failed} configured workmem server(s) cannot be started"
        ))
        .hinted("put `workmem` on PATH, or run `workmem setup CLIENT` again"));
    }
    Ok(())
}

fn print(ctx: &Ctx, places: &Places, checks: &[ClientCheck]) -> Result<(), CommandError> {
    if checks.is_empty() {
        return ctx.ui.line("no agent client found here (nor its program on PATH)");
    }
    let mut lines = Vec::new();
    for c in checks {
        let head = format!("{} ({}, {})", c.client, c.scope, shown(&c.path, places));
        lines.push(match (&c.tools, &c.problem) {
            _ if !c.configured => match &c.problem {
                Some(problem) => format!("{head}: {problem}"),
                None => format!(
                    "{head}: not configured (`workmem setup {} --scope {}`)",
                    c.client, c.scope
                ),
            },
            (Some(tools), None) => format!(
                "{head}: configured; {} -> {}; server started, {} tools: {}",
                c.command.as_deref().unwrap_or_default().join(" "),
                c.binary.as_deref().map_or_else(String::new, |b| b.display().to_string()),
                tools.len(),
                tools.join(", ")
            ),
            (_, Some(problem)) => format!("{head}: configured; {problem}"),
            (None, None) => format!("{head}: configured"),
        });
    }
    ctx.ui.lines(lines)
}

fn check(client: Client, scope: Scope, mcp: &McpFile, project: &Path) -> ClientCheck {
    let mut out = ClientCheck {
        client: client.name(),
        scope: scope.name(),
        path: mcp.path().to_path_buf(),
        configured: false,
        command: None,
        binary: None,
        tools: None,
        problem: None,
    };
    let text = match std::fs::read_to_string(mcp.path()) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return out,
        Err(err) => {
            out.problem = Some(format!("cannot read {}: {err}", mcp.path().display()));
            return out;
        }
    };
    let entry = match mcp {
        McpFile::Json(_, container) => json_file::server_command(&text, container, "workmem"),
        McpFile::Toml(_) => toml::server_command(&text),
    };
    let (command, args) = match entry {
        Ok(Some(entry)) => entry,
        Ok(None) => return out,
        Err(err) => {
            out.problem = Some(format!("{} does not parse: {err}", mcp.path().display()));
            return out;
        }
    };
    out.configured = true;
    let args: Vec<String> =
        args.iter().map(|a| a.replace("${workspaceFolder}", &project.to_string_lossy())).collect();
    out.command = Some(std::iter::once(command.clone()).chain(args.iter().cloned()).collect());
    let binary = if command.contains('/') || command.contains('\\') {
        Some(PathBuf::from(&command)).filter(|p| p.is_file())
    } else {
        which(&command)
    };
    let Some(binary) = binary else {
        out.problem = Some(format!("`{command}` is not found (not on PATH)"));
        return out;
    };
    out.binary = Some(binary.clone());
    match list_tools(&binary, &args, project) {
        Ok(tools) => out.tools = Some(tools),
        Err(problem) => out.problem = Some(problem.to_string()),
    }
    out
}

/// Why a server did not list its tools.
#[derive(Debug, thiserror::Error)]
enum HandshakeError {
    /// The program could not be started.
    #[error("cannot start {}: {source}", binary.display())]
    Start { binary: PathBuf, source: std::io::Error },
    /// A pipe to the child was not set up.
    #[error("no {0}")]
    NoPipe(&'static str),
    /// Writing a request failed.
    #[error("the server closed its input: {0}")]
    InputClosed(std::io::Error),
    /// No answer in time.
    #[error("the server did not answer within {} s", TIMEOUT.as_secs())]
    Timeout,
    /// The server exited first.
    #[error("the server exited before answering")]
    Exited,
    /// A JSON-RPC error answer.
    #[error("the server refused the request: {0}")]
    Refused(Value),
    /// An answer with neither result nor error.
    #[error("an answer without a result")]
    NoResult,
    /// A `tools/list` result without tools.
    #[error("tools/list answered without tools")]
    NoTools,
    /// One of the above, with the first `error:` line the server wrote.
    #[error("{problem}; the server said: {said}")]
    Said { problem: Box<HandshakeError>, said: String },
}

/// Starts the server, initializes an MCP session, lists the tools and
/// closes the session; returns the tool names.
fn list_tools(
    binary: &Path,
    args: &[String],
    project: &Path,
) -> Result<Vec<String>, HandshakeError> {
    let mut child = Command::new(binary)
        .args(args)
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| HandshakeError::Start { binary: binary.to_path_buf(), source })?;
    let result = session(&mut child);
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if child.try_wait().ok().flatten().is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    result.map_err(|problem| {
        let mut stderr = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut err, &mut stderr);
        }
        match stderr.lines().find(|l| l.starts_with("error:")) {
            Some(line) => {
                HandshakeError::Said { problem: Box::new(problem), said: line.to_owned() }
            }
            None => problem,
        }
    })
}

fn session(child: &mut Child) -> Result<Vec<String>, HandshakeError> {
    let mut stdin = child.stdin.take().ok_or(HandshakeError::NoPipe("stdin"))?;
    let stdout = child.stdout.take().ok_or(HandshakeError::NoPipe("stdout"))?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + TIMEOUT;
    let mut send = |message: Value| {
        writeln!(stdin, "{message}")
            .and_then(|()| stdin.flush())
            .map_err(HandshakeError::InputClosed)
    };
    let answer = |id: i64| -> Result<Value, HandshakeError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).map_err(|err| match err {
                mpsc::RecvTimeoutError::Timeout => HandshakeError::Timeout,
                mpsc::RecvTimeoutError::Disconnected => HandshakeError::Exited,
            })?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
            if message.get("id") == Some(&json!(id)) {
                if let Some(error) = message.get("error") {
                    return Err(HandshakeError::Refused(error.clone()));
                }
                return message.get("result").cloned().ok_or(HandshakeError::NoResult);
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "workmem-setup-check", "version": env!("CARGO_PKG_VERSION")}
    }}))?;
    answer(1)?;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))?;
    let result = answer(2)?;
    let tools = result
        .get("tools")
        .and_then(Value::as_array)
        .ok_or(HandshakeError::NoTools)?
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    Ok(tools)
}
