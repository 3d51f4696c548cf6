//! End-to-end tests of `workmem chat` against a scripted fake Messages API
//! on 127.0.0.1: piped sessions (no prompt on stdout, slash commands, the
//! human `/resolve` path, errors and exit codes) and one session on a
//! pseudo-terminal (rustyline, Ctrl-C cancelling a request).

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use workmem_testutil::{FakeServer, Reply, tool_use};

const AS_OF: &str = "2026-06-01T00:00:00Z";

/// A temporary root holding `home/` and `project/` (a git-like project).
struct Env {
    root: TempDir,
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Env {
    fn new() -> Env {
        let root = tempfile::Builder::new().prefix("workmem-chat-").tempdir().unwrap();
        std::fs::create_dir(root.path().join("home")).unwrap();
        std::fs::create_dir_all(root.path().join("project/.git")).unwrap();
        Env { root }
    }

    fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    /// The binary in the project with a cleared environment.
    fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_workmem"));
        cmd.env_clear()
            .env("HOME", self.root.path().join("home"))
            .env("USER", "tester")
            .current_dir(self.project());
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd
    }

    /// `workmem chat` configured for `server`.
    fn chat(&self, server: &FakeServer) -> Command {
        let mut cmd = self.cmd();
        cmd.arg("chat")
            .env("MODEL_ID", "fake-model")
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", server.url());
        cmd
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.cmd().args(args).arg("--json").output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Records a promotable decision and a keyed tie, then distills: one
    /// open conflict case. Returns its id and first candidate.
    fn seed_conflict(&self) -> (String, String) {
        for (content, kind, importance, key, at) in [
            ("Use WAL mode", "decision", "5", None, "2026-01-01T10:00:00Z"),
            ("Use nextest", "convention", "4", Some("test.runner"), "2026-01-03T10:00:00Z"),
            ("Use cargo test", "convention", "4", Some("test.runner"), "2026-01-03T10:00:00Z"),
        ] {
            let mut cmd = self.cmd();
            cmd.args(["remember", content, "-k", kind, "-i", importance, "--at", at]);
            if let Some(key) = key {
                cmd.args(["--key", key]);
            }
            assert!(cmd.output().unwrap().status.success());
        }
        let report = self.json(&["distill", "--as-of", AS_OF]);
        assert_eq!(report["queued_conflicts"], 1);
        let cases = self.json(&["conflicts"]);
        let case = &cases[0];
        (
            case["conflict_id"].as_str().unwrap().to_owned(),
            case["candidates"][0]["candidate_id"].as_str().unwrap().to_owned(),
        )
    }
}

/// Runs `cmd` with `input` on stdin, killing it after a minute.
fn run(mut cmd: Command, input: &str) -> Run {
    let mut child =
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // A process that exits before reading its input (e.g. on a missing
    // MODEL_ID) closes the pipe first: that is not a failure of the test.
    if let Err(err) = child.stdin.take().unwrap().write_all(input.as_bytes()) {
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "writing stdin: {err}");
    }
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("workmem chat did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run { code: status.code(), stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

#[test]
fn missing_model_id_exits_2_with_a_hint() {
    let env = Env::new();
    let server = FakeServer::start(vec![]);
    let mut cmd = env.chat(&server);
    cmd.env_remove("MODEL_ID");
    let out = run(cmd, "hello\n");
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("error: MODEL_ID is not set"), "{}", out.stderr);
    assert!(out.stderr.contains("hint: set MODEL_ID"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
    assert!(server.finish().is_empty());
}

#[test]
fn dotenv_in_the_project_configures_the_chat() {
    let env = Env::new();
    let server = FakeServer::start(vec![Reply::text("Configured from .env.")]);
    std::fs::write(
        env.project().join(".env"),
        format!(
            "# chat settings\nMODEL_ID=model-from-dotenv\nANTHROPIC_API_KEY=key-from-dotenv\n\
             ANTHROPIC_BASE_URL={}\nWORKMEM_MAX_TOKENS=321\n",
            server.url()
        ),
    )
    .unwrap();
    let mut cmd = env.cmd();
    cmd.arg("chat");
    let out = run(cmd, "hello\n");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "Configured from .env.\n");
    let received = server.finish();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body["model"], "model-from-dotenv");
    assert_eq!(received[0].body["max_tokens"], 321);
    assert_eq!(received[0].headers["x-api-key"], "key-from-dotenv");

    // The environment wins over .env, and a .env cannot send the
    // environment's key elsewhere.
    let server = FakeServer::start(vec![]);
    let mut cmd = env.cmd();
    cmd.arg("chat").env("ANTHROPIC_API_KEY", "key-from-env");
    let out = run(cmd, "hello\n");
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("sets ANTHROPIC_BASE_URL but the API key comes from the environment"),
        "{}",
        out.stderr
    );
    drop(server);
}

#[test]
fn piped_session_runs_tools_lists_and_resolves_a_conflict() {
    let env = Env::new();
    let (conflict_id, candidate_id) = env.seed_conflict();
    // A git identity: /resolve records it, as `workmem resolve` does.
    std::fs::write(
        env.root.path().join("home/.gitconfig"),
        "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n",
    )
    .unwrap();
    let first = Reply::message(
        json!([
            {"type": "text", "text": "Checking the project."},
            tool_use("toolu_1", "bash", json!({"command": "echo bash-was-here"})),
            tool_use("toolu_2", "write_memory", json!({
                "content": "The HTTP client is ureq 3", "kind": "decision", "importance": 4,
                "evidence": {"file": "Cargo.toml"}
            }))
        ]),
        "tool_use",
    );
    let server = FakeServer::start(vec![first, Reply::text("Done: noted the HTTP client.")]);
    let input = format!(
        "What HTTP client do we use?\n\n/conflicts\n/resolve {conflict_id} {candidate_id} --revision 1 \
         --event-id review:chat:1 --rationale 'We standardise on this runner'\n/conflicts\n/today\n/quit\nnever sent to the model\n"
    );
    let out = run(env.chat(&server), &input);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);

    // stdout: the model's text and the slash commands' output, no prompt.
    assert!(!out.stdout.contains("workmem>"), "{}", out.stdout);
    assert!(
        out.stdout.starts_with("Checking the project.\nDone: noted the HTTP client.\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!("{conflict_id}  open  key test.runner  revision 1")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!("resolved {conflict_id} (revision 1) with {candidate_id}")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("The HTTP client is ureq 3"),
        "/today lists the new fact: {}",
        out.stdout
    );
    // stderr: what the tools ran.
    assert!(out.stderr.contains("$ echo bash-was-here"), "{}", out.stderr);
    assert!(
        out.stderr.contains("+ write_memory [decision 4] The HTTP client is ureq 3"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("no open conflict cases (1 resolved"),
        "the second /conflicts lists none: {}",
        out.stderr
    );

    let received = server.finish();
    assert_eq!(received.len(), 2, "slash commands and lines after /quit never reach the model");
    let system = received[0].body["system"].as_str().unwrap();
    assert!(
        system.contains("- Use WAL mode (seen 1x; evidence: 1)"),
        "curated memory in the prompt: {system}"
    );
    let tools: Vec<&str> = received[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["bash", "write_memory", "search_memory"]);
    let results = received[1].body["messages"][2]["content"].as_array().unwrap();
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert!(results[0]["content"].as_str().unwrap().contains("bash-was-here"));
    assert_eq!(results[1]["tool_use_id"], "toolu_2");

    // The decision went through the adjudication path, by the human.
    let adjudications = env.json(&["adjudications"]);
    assert_eq!(adjudications.as_array().unwrap().len(), 1);
    assert_eq!(adjudications[0]["conflict_id"], conflict_id.as_str());
    assert_eq!(adjudications[0]["selected_candidate_id"], candidate_id.as_str());
    assert_eq!(adjudications[0]["actor"], "Ada Lovelace <ada@example.com>");
    assert_eq!(adjudications[0]["event_id"], "review:chat:1");
    assert_eq!(adjudications[0]["rationale"], "We standardise on this runner");
    assert!(env.json(&["conflicts"]).as_array().unwrap().is_empty());
    let facts = env.json(&["facts", "--all"]);
    let model_facts: Vec<&Value> =
        facts.as_array().unwrap().iter().filter(|f| f["source"] == "model_tool").collect();
    assert_eq!(model_facts.len(), 1);
    assert_eq!(model_facts[0]["evidence"], json!({"file": "Cargo.toml"}));
}

#[test]
fn slash_command_errors_are_reported_and_the_session_goes_on() {
    let env = Env::new();
    let server = FakeServer::start(vec![Reply::text("still alive")]);
    let input = "/resolve conflict-0000000000000000 candidate-0000000000000000 1 because\n/resolve x\n/bogus\nping\n";
    let out = run(env.chat(&server), input);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("error: resolution rejected"), "{}", out.stderr);
    assert!(
        out.stderr.contains("usage: /resolve CONFLICT_ID CANDIDATE --revision N"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("unknown command /bogus"), "{}", out.stderr);
    assert_eq!(out.stdout, "still alive\n");
    assert_eq!(server.finish().len(), 1);
}

#[test]
fn unauthorized_ends_a_piped_session_with_exit_1() {
    let env = Env::new();
    let server =
        FakeServer::start(vec![Reply::error(401, "authentication_error", "invalid x-api-key")]);
    let out = run(env.chat(&server), "hello\nsecond line\n");
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("rejected the API key (HTTP 401): invalid x-api-key"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("hint: check ANTHROPIC_API_KEY"), "{}", out.stderr);
    assert_eq!(server.finish().len(), 1, "a 401 is not retried");
}

#[test]
fn overloaded_is_retried_and_reported() {
    let env = Env::new();
    let server = FakeServer::start(vec![
        Reply::error(529, "overloaded_error", "Overloaded").header("retry-after", "0"),
        Reply::text("Back."),
    ]);
    let out = run(env.chat(&server), "hello\n");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "Back.\n");
    assert!(
        out.stderr.contains(
            "model API unavailable (HTTP 529 overloaded_error); retrying in 0.0 s (attempt 2 of 6)"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(server.finish().len(), 2);
}

#[test]
fn network_failure_is_an_error_not_a_panic() {
    let env = Env::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cmd = env.cmd();
    cmd.arg("chat")
        .env("MODEL_ID", "m")
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"));
    // Connection refused is retried with backoff (1 + 2 + 4 + 8 + 16 s by
    // default), so only the first attempt is awaited here: the process is
    // checked for a panic message, then stopped.
    let mut child =
        cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    std::thread::sleep(Duration::from_millis(1500));
    let _ = child.kill();
    let _ = child.wait();
    let stderr = reader.join().unwrap();
    assert!(stderr.contains("retrying in 1.0 s (attempt 2 of 6)"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn pty_session_chat_conflicts_resolve_cancel_quit() {
    let env = Env::new();
    let (conflict_id, candidate_id) = env.seed_conflict();
    let server = FakeServer::start(vec![
        Reply::text("Hi from the fake model."),
        Reply::text("too late").delayed(Duration::from_secs(30)),
    ]);
    let mut cmd = env.chat(&server);
    cmd.env("TERM", "xterm");
    let mut session = rexpect::session::spawn_command(cmd, Some(20_000)).unwrap();
    session.exp_string("workmem> ").unwrap();
    session.send_line("hello there").unwrap();
    session.exp_string("Hi from the fake model.").unwrap();
    session.exp_string("workmem> ").unwrap();
    session.send_line("/conflicts").unwrap();
    session.exp_string(&format!("{conflict_id}  open  key test.runner")).unwrap();
    session.exp_string("workmem> ").unwrap();
    session.send_line(&format!("/resolve {conflict_id} 1 1 Chosen at the terminal")).unwrap();
    session.exp_string(&format!("resolved {conflict_id} (revision 1)")).unwrap();
    session.exp_string("workmem> ").unwrap();
    // Ctrl-C cancels a request that hangs, and the REPL goes on.
    session.send_line("a slow question").unwrap();
    std::thread::sleep(Duration::from_millis(700));
    session.send_control('c').unwrap();
    session.exp_string("cancelled; this turn was dropped from the conversation").unwrap();
    session.exp_string("workmem> ").unwrap();
    session.send_line("/quit").unwrap();
    session.exp_eof().unwrap();

    let received = server.finish();
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[1].body["messages"].as_array().unwrap().len(),
        3,
        "the first turn stayed in the conversation"
    );
    let adjudications = env.json(&["adjudications"]);
    assert!(adjudications[0]["event_id"].as_str().unwrap().starts_with("review:"));
    assert_eq!(adjudications[0]["selected_candidate_id"], candidate_id.as_str());
    assert_eq!(adjudications[0]["rationale"], "Chosen at the terminal");
}

#[test]
fn chat_help_lists_the_environment() {
    let env = Env::new();
    let out = env.cmd().args(["chat", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "Talk to an agent that remembers this project",
        "MODEL_ID",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "WORKMEM_MAX_TOKENS",
        "/resolve",
    ] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

/// A model that tries to store a credential through `write_memory` is
/// refused: the tool result it reads names the field and the kind, the
/// terminal does not show the call's content, nothing of the credential is
/// printed, and nothing is written.
#[test]
fn a_credential_in_a_write_memory_call_is_refused_and_never_shown() {
    let env = Env::new();
    let (token, kind) = workmem_testutil::credential_samples()
        .into_iter()
        .find(|(text, _)| !text.contains(' ') && text.len() > 30)
        .expect("a bare token");
    let call = Reply::message(
        json!([tool_use(
            "toolu_1",
            "write_memory",
            json!({
                "content": format!("Deploys push with {token}"), "kind": "decision", "importance": 4,
            })
        )]),
        "tool_use",
    );
    let server = FakeServer::start(vec![call, Reply::text("Understood, not stored.")]);
    let out = run(env.chat(&server), "Remember the deploy token.\n/quit\n");
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let tail = &token[token.len() - 12..];
    assert!(
        !out.stdout.contains(tail) && !out.stderr.contains(tail),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(out.stderr.contains("+ write_memory (not shown"), "{}", out.stderr);
    assert!(out.stderr.contains("write_memory failed: invalid content"), "{}", out.stderr);
    let received = server.finish();
    let result = &received[1].body["messages"][2]["content"][0];
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["content"].as_str().unwrap();
    assert!(text.contains("content") && text.contains(kind) && !text.contains(tail), "{text}");
    assert_eq!(env.json(&["facts", "--all"]), json!([]));
}
