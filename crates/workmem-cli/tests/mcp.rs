//! End-to-end tests of `workmem mcp`, the MCP server on stdio.
//!
//! Two tests speak newline-delimited JSON-RPC to the real binary directly
//! (stdout carries protocol messages only; the server exits 0 when stdin
//! closes). The others drive it with the official Python MCP client
//! (`crates/workmem-mcp/tests/mcp_client.py`), run by the interpreter that
//! `WORKMEM_TEST_PYTHON` names; `cargo xtask test` sets that up. Without the
//! variable those tests fail with a message that says so.

#![allow(clippy::disallowed_methods)] // tests create fixture directories directly

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_workmem");
const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../workmem-mcp/tests/mcp_client.py");
const TIMEOUT: Duration = Duration::from_secs(60);

/// A temporary git-like project.
struct Project {
    root: TempDir,
}

impl Project {
    fn new() -> Project {
        let root = tempfile::Builder::new().prefix("workmem-mcp-").tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("project/.git")).unwrap();
        std::fs::create_dir(root.path().join("home")).unwrap();
        Project { root }
    }

    fn dir(&self) -> PathBuf {
        self.root.path().join("project")
    }

    /// Returns the binary with a cleared environment, run in the project.
    fn workmem(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.env_clear().env("HOME", self.root.path().join("home")).current_dir(self.dir());
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd
    }

    /// Returns every stored fact, via `workmem facts --all --json`.
    fn facts(&self) -> Vec<Value> {
        let out = self.workmem().args(["--json", "facts", "--all"]).output().unwrap();
        assert!(out.status.success(), "facts failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
    }

    /// Returns the raw bytes of every daily log, concatenated.
    fn daily_bytes(&self) -> String {
        let dir = self.dir().join(".workmem/memory/daily");
        let mut text = String::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
        }
        text
    }
}

/// Waits for `child` to exit, killing it and failing the test after `limit`.
fn wait(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process {} did not exit within {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `workmem mcp` process spoken to line by line.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    fn start(project: &Project) -> Server {
        let mut child = project
            .workmem()
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server { child, stdin, lines, seen: Vec::new() }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes `bytes` to the server's stdin as they are.
    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Returns the next message on stdout.
    fn next_message(&mut self) -> Value {
        let line = self.lines.recv_timeout(TIMEOUT).expect("no message from the server");
        self.seen.push(line.clone());
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line:?}"))
    }

    /// Sends a request and returns the response with the same id.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line =
                self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no response to {method}"));
            self.seen.push(line.clone());
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line:?}"));
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn call_tool(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        let response =
            self.request(id, "tools/call", json!({"name": name, "arguments": arguments}));
        response["result"].clone()
    }

    /// Closes stdin, waits for a clean exit and returns every stdout line
    /// and the whole stderr.
    fn finish(mut self) -> (Vec<String>, String) {
        drop(self.stdin.take());
        let status = wait(&mut self.child, TIMEOUT);
        let mut stderr = String::new();
        std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(
            status.success(),
            "server exited with {status} after stdin closed; stderr: {stderr}"
        );
        // The reader thread ends at EOF, which has come: the process is gone.
        self.seen.extend(self.lines.iter());
        (self.seen, stderr)
    }
}

fn initialize(server: &mut Server) -> Value {
    let response = server.request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "workmem-test", "version": "1"}
        }),
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    response
}

#[test]
fn stdout_carries_only_protocol_messages_and_stdin_close_ends_the_server() {
    let project = Project::new();
    let mut server = Server::start(&project);

    let init = initialize(&mut server);
    assert_eq!(init["result"]["serverInfo"]["name"], "workmem", "{init}");

    let tools = server.request(2, "tools/list", json!({}));
    let names: BTreeSet<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Exactly these: no tool retracts, restores or redacts (a person's
    // acts, docs/corrections.md), or resolves.
    assert_eq!(
        names,
        BTreeSet::from([
            "get_context",
            "list_conflicts",
            "list_recent_facts",
            "search_memory",
            "write_memory"
        ])
    );

    let written = server.call_tool(
        3,
        "write_memory",
        json!({"content": "Use WAL", "kind": "decision", "importance": 4}),
    );
    assert_eq!(written["isError"], false, "{written}");
    let fact_id = written["structuredContent"]["fact_id"].as_str().unwrap().to_owned();

    let refused = server.call_tool(
        4,
        "write_memory",
        json!({"content": "Use WAL", "kind": "guess", "importance": 4}),
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["content"][0]["text"].as_str().unwrap().starts_with("invalid kind:"),
        "{refused}"
    );

    let memory = server.request(5, "resources/read", json!({"uri": "workmem://memory"}));
    assert_eq!(memory["result"]["contents"][0]["uri"], "workmem://memory", "{memory}");
    // Nothing distilled yet: the resource says so rather than being empty.
    assert_eq!(memory["result"]["contents"][0]["text"], "(no workspace memory yet)", "{memory}");
    let unknown = server.request(6, "resources/read", json!({"uri": "workmem://nothing"}));
    assert!(unknown["error"].is_object(), "{unknown}");
    let unknown_tool = server.request(7, "tools/call", json!({"name": "resolve", "arguments": {}}));
    assert!(unknown_tool["error"].is_object(), "{unknown_tool}");

    let (lines, stderr) = server.finish();
    assert!(lines.len() >= 7, "{lines:?}");
    for line in &lines {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|_| panic!("stdout line is not JSON: {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "stdout line is not JSON-RPC: {line}");
    }
    assert!(stderr.contains("workmem mcp: serving"), "stderr: {stderr}");

    let facts = project.facts();
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(facts[0]["fact_id"], fact_id.as_str());
    assert_eq!(facts[0]["source"], "model_tool");
}

/// Asserts that `reply` is a JSON-RPC error with `code` and `"id": null`
/// (the id of a message that could not be read); returns its message.
fn null_id_error(reply: &Value, code: i64) -> String {
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert_eq!(reply["error"]["code"], code, "{reply}");
    reply["error"]["message"].as_str().unwrap().to_owned()
}

/// Asserts the server still answers: lists its tools under `id`.
fn still_serving(server: &mut Server, id: u64) {
    let tools = server.request(id, "tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(5), "{tools}");
}

#[test]
fn malformed_json_gets_a_parse_error_and_the_server_keeps_serving() {
    let project = Project::new();
    let mut server = Server::start(&project);
    // Before the handshake too: every line gets an answer.
    server.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1,\n");
    let message = null_id_error(&server.next_message(), -32700);
    assert!(message.starts_with("parse error"), "{message}");
    initialize(&mut server);

    for garbage in [&b"this is not json\n"[..], b"{\"id\": 2, \"method\": }\r\n", b"\xff\xfe\n"] {
        server.send_raw(garbage);
        null_id_error(&server.next_message(), -32700);
    }
    // Blank lines are not messages and get no reply.
    server.send_raw(b"\n   \n");
    still_serving(&mut server, 3);

    let (lines, _stderr) = server.finish();
    assert_eq!(lines.len(), 6, "{lines:?}");
    for line in &lines {
        let message: Value = serde_json::from_str(line).unwrap();
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}

#[test]
fn a_message_over_the_size_cap_is_refused_and_the_server_keeps_serving() {
    let project = Project::new();
    let mut server = Server::start(&project);
    initialize(&mut server);

    // A well-formed request, 5 MiB long: over the 4 MiB cap.
    let padding = "a".repeat(5 * 1024 * 1024);
    let huge = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "write_memory",
                   "arguments": {"content": padding, "kind": "outcome", "importance": 1}}
    });
    let mut line = huge.to_string().into_bytes();
    line.push(b'\n');
    server.send_raw(&line);
    let message = null_id_error(&server.next_message(), -32600);
    assert!(message.contains("too large") && message.contains("4194304"), "{message}");
    still_serving(&mut server, 3);

    // A message up to the cap is read (and here refused by the tool, which
    // names the field, not by the framing).
    let long = "b".repeat(3 * 1024 * 1024);
    let refused = server.call_tool(
        4,
        "write_memory",
        json!({"content": long, "kind": "outcome", "importance": 1}),
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused["content"][0]["text"].as_str().unwrap().starts_with("invalid content"));

    let (lines, _stderr) = server.finish();
    assert!(lines.iter().all(|l| l.len() < 64 * 1024), "a huge line reached stdout");
    assert!(!project.dir().join(".workmem/memory/daily").exists(), "nothing may be written");
}

/// Initializes with protocol revision `revision`; returns the answer.
fn initialize_as(server: &mut Server, revision: &str) -> Value {
    let response = server.request(
        1,
        "initialize",
        json!({
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": "workmem-test", "version": "1"}
        }),
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    response
}

#[test]
fn a_batch_is_answered_as_one_array_under_2025_03_26() {
    let project = Project::new();
    let mut server = Server::start(&project);
    // Before the handshake no revision has batches.
    server.send(&json!([{"jsonrpc": "2.0", "id": 0, "method": "ping"}]));
    let early = null_id_error(&server.next_message(), -32600);
    assert!(early.contains("before initialization"), "{early}");
    let init = initialize_as(&mut server, "2025-03-26");
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26", "{init}");

    server.send(&json!([
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "write_memory",
                    "arguments": {"content": "Batched write", "kind": "outcome", "importance": 2}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        {"jsonrpc": "2.0", "id": "three", "method": "tools/call",
         "params": {"name": "list_recent_facts", "arguments": {"limit": 5}}},
        {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}},
        7,
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    ]));
    let answer = server.next_message();
    let members = answer.as_array().unwrap_or_else(|| panic!("not an array: {answer}"));
    let by_id = |id: Value| {
        members.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("no {id} in {answer}"))
    };
    // One response per request, none for the notification.
    assert_eq!(members.len(), 5, "{answer}");
    assert_eq!(by_id(json!(2))["result"]["isError"], false, "{answer}");
    let listed = &by_id(json!("three"))["result"]["structuredContent"]["facts"];
    assert_eq!(listed[0]["content"], "Batched write", "members run in order: {answer}");
    assert_eq!(by_id(json!(4))["error"]["code"], -32600, "{answer}");
    assert_eq!(by_id(Value::Null)["error"]["code"], -32600, "{answer}");
    assert_eq!(by_id(json!(5))["result"]["tools"].as_array().map(Vec::len), Some(5));

    // A batch of notifications gets no answer; an empty one an error.
    server.send(&json!([{"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 1}}]));
    server.send(&json!([]));
    let empty = null_id_error(&server.next_message(), -32600);
    assert!(empty.contains("empty batch"), "{empty}");
    still_serving(&mut server, 6);
    let (lines, _stderr) = server.finish();
    for line in &lines {
        let message: Value = serde_json::from_str(line).unwrap();
        let messages = message.as_array().cloned().unwrap_or_else(|| vec![message.clone()]);
        for message in messages {
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            assert!(message.get("id").is_some(), "a reply without an id: {line}");
        }
    }
}

#[test]
fn a_batch_is_refused_with_a_reason_under_2025_06_18() {
    let project = Project::new();
    let mut server = Server::start(&project);
    let init = initialize_as(&mut server, "2025-06-18");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    server.send(&json!([
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "write_memory",
                    "arguments": {"content": "Never written", "kind": "outcome", "importance": 2}}}
    ]));
    let refused = null_id_error(&server.next_message(), -32600);
    assert!(
        refused.contains("2025-06-18") && refused.contains("one message per line"),
        "{refused}"
    );
    // Params a method does not take get invalid params with the id.
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "x"}));
    let reply = server.next_message();
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(3), json!(-32602)));
    still_serving(&mut server, 4);
    server.finish();
    assert!(!project.dir().join(".workmem/memory/daily").exists(), "nothing may be written");
}

#[test]
fn a_client_that_leaves_before_the_handshake_ends_the_server_cleanly() {
    let project = Project::new();
    let server = Server::start(&project);
    let (lines, _stderr) = server.finish();
    assert!(lines.is_empty(), "{lines:?}");
    assert!(!project.dir().join(".workmem").exists(), "serving nothing must write nothing");
}

/// Returns the Python interpreter with `mcp` installed, named by
/// `WORKMEM_TEST_PYTHON`; `cargo xtask test` sets it up. Without it the test
/// fails: a client test that did not run must not count as passed.
fn python() -> PathBuf {
    match std::env::var_os("WORKMEM_TEST_PYTHON") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => panic!(
            "WORKMEM_TEST_PYTHON is not set. These tests drive `workmem mcp` with the Python MCP SDK (mcp==2.3.0): \
             run the test suite with `cargo xtask test`, which installs it into target/mcp-venv and sets the \
             variable, or point WORKMEM_TEST_PYTHON at an interpreter that has it"
        ),
    }
}

/// Runs the client script with `args`, failing the test on a non-zero exit
/// or after `limit`; returns its stdout.
fn run_client(python: &Path, project: &Project, args: &[&str], limit: Duration) -> String {
    let out_path = project.root.path().join("client.out");
    let err_path = project.root.path().join("client.err");
    let mut child = Command::new(python)
        .arg(CLIENT)
        .args(args)
        .env_remove("WORKMEM_MEMORY_DIR")
        .current_dir(project.root.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", python.display()));
    let status = wait(&mut child, limit);
    let stdout = std::fs::read_to_string(&out_path).unwrap();
    let stderr = std::fs::read_to_string(&err_path).unwrap();
    assert!(
        status.success(),
        "{CLIENT} {args:?} exited with {status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

#[test]
fn python_client_writes_reads_and_is_refused_invalid_and_secret_input() {
    let python = python();
    let project = Project::new();
    let dir = project.dir();
    let stdout = run_client(
        &python,
        &project,
        &["scenario", BIN, dir.to_str().unwrap()],
        Duration::from_secs(180),
    );
    assert!(stdout.contains("scenario: ok"), "{stdout}");

    // Three facts through MCP, two tied ones through the CLI; nothing from
    // the refused calls, and no secret on disk.
    let facts = project.facts();
    let sources: Vec<&str> = facts.iter().map(|f| f["source"].as_str().unwrap()).collect();
    assert_eq!(sources.iter().filter(|s| **s == "model_tool").count(), 3, "{facts:?}");
    assert_eq!(facts.len(), 5, "{facts:?}");
    let raw = project.daily_bytes();
    assert!(
        !raw.contains("AKIAIOSFODNN7EXAMPLE") && !raw.contains("ghp_"),
        "a secret reached the log"
    );
    assert!(!raw.contains("Ship it"), "a refused write reached the log");
}

#[test]
fn ten_servers_writing_concurrently_lose_nothing() {
    let python = python();
    const SERVERS: usize = 10;
    const FACTS: usize = 100;
    let project = Project::new();
    let dir = project.dir();
    let ids_path = project.root.path().join("ids.json");
    let (servers, facts) = (SERVERS.to_string(), FACTS.to_string());
    let args =
        ["concurrent", BIN, dir.to_str().unwrap(), &servers, &facts, ids_path.to_str().unwrap()];
    run_client(&python, &project, &args, Duration::from_secs(600));

    let returned: BTreeSet<String> =
        serde_json::from_str::<Vec<String>>(&std::fs::read_to_string(ids_path).unwrap())
            .unwrap()
            .into_iter()
            .collect();
    assert_eq!(returned.len(), SERVERS * FACTS);

    let stored = project.facts();
    assert_eq!(stored.len(), SERVERS * FACTS, "facts were lost or duplicated");
    let stored_ids: BTreeSet<String> =
        stored.iter().map(|f| f["fact_id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(stored_ids, returned, "stored ids differ from the ids the servers returned");
    let contents: BTreeSet<String> =
        stored.iter().map(|f| f["content"].as_str().unwrap().to_owned()).collect();
    let expected: BTreeSet<String> = (0..SERVERS)
        .flat_map(|s| (0..FACTS).map(move |n| format!("server {s} fact {n}")))
        .collect();
    assert_eq!(contents, expected);
    assert!(stored.iter().all(|f| f["source"] == "model_tool"));
}

/// Runs `workmem ARGS` in `project` and returns its stdout, failing the test
/// on a non-zero exit.
fn workmem_out(project: &Project, args: &[&str]) -> String {
    let out = project.workmem().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "workmem {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn python_client_pages_a_large_workspace_within_the_bound() {
    let python = python();
    let project = Project::new();
    // 41,200 facts: the benchmarks' mix with 2,000 distinct statements (a
    // MEMORY.md of some 300 KB) and 300 keys whose two values tie (300 open
    // cases once distilled).
    let workload =
        workmem_testutil::Workload { count: 40_000, seed: 7, statements: 2_000, ties: 300 };
    let log = project.root.path().join("workload.jsonl");
    std::fs::write(&log, workmem_testutil::workload(&workload)).unwrap();
    workmem_out(&project, &["import", log.to_str().unwrap(), "-q"]);
    workmem_out(&project, &["distill", "--as-of", "2026-07-01T00:00:00Z", "-q"]);

    // Unbounded, as `workmem` prints them: far over the bound.
    let memory = workmem_out(&project, &["memory"]).chars().count();
    let conflicts = workmem_out(&project, &["--json", "conflicts"]).chars().count();
    let facts = workmem_out(&project, &["--json", "facts", "--recent", "1000"]).chars().count();
    let open = serde_json::from_str::<Value>(&workmem_out(&project, &["--json", "conflicts"]))
        .unwrap()
        .as_array()
        .unwrap()
        .len();
    assert_eq!(open, 300);
    for size in [memory, conflicts, facts] {
        assert!(size > 4 * 25_000, "the workspace is too small to show anything: {size}");
    }

    let dir = project.dir();
    let report_path = project.root.path().join("large.json");
    let stdout = run_client(
        &python,
        &project,
        &["large", BIN, dir.to_str().unwrap(), report_path.to_str().unwrap()],
        Duration::from_secs(300),
    );
    assert!(stdout.contains("large: ok"), "{stdout}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let maxima = report["max_chars"].as_object().unwrap();
    for name in [
        "get_context",
        "list_recent_facts",
        "list_conflicts",
        "search_memory",
        "write_memory",
        "workmem://memory",
        "workmem://context",
    ] {
        let max = maxima[name].as_u64().unwrap_or_else(|| panic!("{name} was not measured"));
        assert!(max <= 25_000, "{name}: {max} characters");
    }
    assert!(report["fact_pages"].as_u64().unwrap() > 1, "{report}");
    assert!(report["case_pages"].as_u64().unwrap() > 1, "{report}");
    // The figures, for the record (`cargo test ... -- --nocapture`).
    eprintln!(
        "unbounded: memory {memory}, conflicts {conflicts}, 1000 facts {facts} characters; \
         through MCP: {report}"
    );
}

#[test]
fn malformed_tool_call_params_get_invalid_params_with_the_id() {
    let project = Project::new();
    let mut server = Server::start(&project);
    initialize(&mut server);
    for (id, params) in
        [(2, json!({"arguments": {}})), (3, json!({"name": 7})), (4, json!("get_context"))]
    {
        let reply = server.request(id, "tools/call", params.clone());
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["error"]["code"], -32602, "{params}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("invalid params for tools/call: "), "{message}");
    }
    still_serving(&mut server, 5);
    server.finish();
}

#[test]
fn python_client_gets_the_error_of_a_directory_it_cannot_serve() {
    let python = python();
    let project = Project::new();
    // Outside any project: no .workmem or .git in it or above.
    let outside = project.root.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    let stdout = run_client(
        &python,
        &project,
        &["unavailable", BIN, outside.to_str().unwrap(), "is not inside a project"],
        Duration::from_secs(120),
    );
    assert!(stdout.contains("unavailable: ok"), "{stdout}");
    assert!(!outside.join(".workmem").exists(), "a workspace was created");
    // A workspace whose configuration cannot be read.
    let dir = project.dir();
    workmem_out(&project, &["init", "-q"]);
    std::fs::write(dir.join(".workmem/config.toml"), "[policy]\nminimum_importance = 9\n").unwrap();
    let stdout = run_client(
        &python,
        &project,
        &["unavailable", BIN, dir.to_str().unwrap(), "config.toml"],
        Duration::from_secs(120),
    );
    assert!(stdout.contains("unavailable: ok"), "{stdout}");
}

#[test]
fn python_client_pages_a_35_way_tie_and_honours_a_new_limit_with_a_cursor() {
    let python = python();
    let project = Project::new();
    let dir = project.dir();
    let mut lines = String::new();
    for n in 0..35 {
        let item = json!({
            "content": format!("Option {n:02}: {}", "a considered alternative ".repeat(40)),
            "kind": "decision", "importance": 4, "memory_key": "build.tool",
            "recorded_at": "2026-01-05T09:00:00Z", "fact_id": format!("opt-{n:02}"),
        });
        lines.push_str(&item.to_string());
        lines.push('\n');
    }
    let import = project.root.path().join("tie.jsonl");
    std::fs::write(&import, lines).unwrap();
    workmem_out(&project, &["import", import.to_str().unwrap()]);
    workmem_out(&project, &["distill", "--as-of", "2026-07-01T00:00:00Z", "-q"]);
    let stdout = run_client(
        &python,
        &project,
        &["paging", BIN, dir.to_str().unwrap()],
        Duration::from_secs(180),
    );
    assert!(stdout.contains("paging: ok"), "{stdout}");
}

#[test]
fn python_client_gets_the_hint_for_damage_and_a_removed_memory_is_not_recreated() {
    let python = python();
    let project = Project::new();
    let dir = project.dir();
    workmem_out(&project, &["init", "-q"]);
    let stdout = run_client(
        &python,
        &project,
        &["damage", BIN, dir.to_str().unwrap()],
        Duration::from_secs(120),
    );
    assert!(stdout.contains("damage: ok"), "{stdout}");
    assert!(!dir.join(".workmem").exists());
}
