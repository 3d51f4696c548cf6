//! The agent loop against a scripted fake Messages API on 127.0.0.1,
//! through the real HTTP client: each test checks what the server received
//! (system prompt, tools, tool_result ids) and which facts were written.

#![allow(clippy::disallowed_methods)] // tests write fixtures directly

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use workmem::{NewFact, Workspace};
use workmem_agent::prompt::system_prompt;
use workmem_agent::{
    Agent, AgentError, AgentOptions, Cancel, ClientError, Events, HttpClient, RetryNotice,
    RetryPolicy, ToolOutput,
};

use workmem_testutil::{FakeServer, Received, Reply, tool_use};

/// Records what the loop reported.
#[derive(Default)]
struct Recorder {
    texts: Vec<String>,
    calls: Vec<(String, Value)>,
    results: Vec<ToolOutput>,
    retries: Vec<RetryNotice>,
}

impl Events for Recorder {
    fn text(&mut self, text: &str) {
        self.texts.push(text.to_owned());
    }
    fn tool_call(&mut self, name: &str, input: &Value) {
        self.calls.push((name.to_owned(), input.clone()));
    }
    fn tool_result(&mut self, _name: &str, output: &ToolOutput) {
        self.results.push(output.clone());
    }
    fn retry(&mut self, notice: &RetryNotice) {
        self.retries.push(notice.clone());
    }
}

struct Setup {
    _dir: TempDir,
    ws: Workspace,
    server: FakeServer,
    agent: Agent<HttpClient>,
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(10),
    }
}

fn setup(replies: Vec<Reply>) -> Setup {
    setup_with(replies, quick_retries())
}

fn setup_with(replies: Vec<Reply>, retry: RetryPolicy) -> Setup {
    let dir = tempfile::Builder::new().prefix("workmem-agent-").tempdir().unwrap();
    let ws = Workspace::open(dir.path(), None).unwrap();
    let server = FakeServer::start(replies);
    let client = HttpClient::new(format!("{}/v1/messages", server.url()), "test-key", retry);
    let agent = Agent::new(client, ws.clone(), AgentOptions::new("fake-model", 1024));
    Setup { _dir: dir, ws, server, agent }
}

fn expected_system(ws: &Workspace) -> String {
    system_prompt(ws.project(), &ws.context(None).unwrap(), &ws.now().utc_day())
}

fn user_text(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

/// The last message of a request, which must be the user's tool results.
fn tool_results(request: &Received) -> Vec<Value> {
    let messages = request.body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    last["content"].as_array().unwrap().clone()
}

#[test]
fn plain_text_reply_sends_context_tools_and_headers() {
    let mut s = setup(vec![Reply::text("Hello! How can I help?")]);
    s.ws.remember(NewFact::new("Released 0.1 to staging")).unwrap();
    let mut events = Recorder::default();
    let summary = s.agent.turn("hello", &mut events, &Cancel::new()).unwrap();
    assert_eq!(summary.text, "Hello! How can I help?");
    assert_eq!((summary.model_calls, summary.tool_calls), (1, 0));
    assert_eq!(summary.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(events.texts, ["Hello! How can I help?"]);

    let received = s.server.finish();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(request.headers["x-api-key"], "test-key");
    assert_eq!(request.headers["anthropic-version"], "2023-06-01");
    assert!(request.headers["content-type"].starts_with("application/json"));
    let body = &request.body;
    assert_eq!(body["model"], "fake-model");
    assert_eq!(body["max_tokens"], 1024);
    let system = body["system"].as_str().unwrap();
    assert_eq!(system, expected_system(&s.ws));
    assert!(system.contains("- [outcome] Released 0.1 to staging ("), "{system}");
    assert!(system.contains("never the answer"), "{system}");
    assert_eq!(body["messages"], json!([user_text("hello")]));

    // Exactly three tools; none can resolve, distill or delete.
    let tools = body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bash", "write_memory", "search_memory"]);
    assert_eq!(tools[0]["input_schema"]["required"], json!(["command"]));
    let schema = &tools[1]["input_schema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["content", "kind", "importance"]));
    let props = &schema["properties"];
    assert_eq!(props["kind"]["enum"], json!(["decision", "convention", "pitfall", "outcome"]));
    assert_eq!(
        (props["importance"]["type"].as_str(), props["importance"]["minimum"].as_i64()),
        (Some("integer"), Some(1))
    );
    assert_eq!(props["importance"]["maximum"], 5);
    assert_eq!(props["memory_key"]["pattern"], "^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$");
    assert_eq!(props["memory_key"]["maxLength"], 120);
    assert_eq!(props["evidence"]["additionalProperties"], json!({"type": "string"}));
    let mut keys: Vec<&str> = props.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["content", "evidence", "importance", "kind", "memory_key"]);
    assert_eq!(s.ws.facts().unwrap().len(), 1, "a text reply writes nothing");
}

#[test]
fn write_memory_then_text_rebuilds_the_prompt_and_continues_the_conversation() {
    let first = Reply::message(
        json!([
            {"type": "text", "text": "I'll note that."},
            tool_use("toolu_01", "write_memory", json!({
                "content": "Switched the HTTP layer to ureq 3",
                "kind": "outcome",
                "importance": 3,
                "evidence": {"commit": "1a2b3c"}
            }))
        ]),
        "tool_use",
    );
    let mut s = setup(vec![first, Reply::text("Noted."), Reply::text("Still here.")]);
    let mut events = Recorder::default();
    let summary = s.agent.turn("we moved to ureq 3", &mut events, &Cancel::new()).unwrap();
    assert_eq!(summary.text, "Noted.");
    assert_eq!((summary.model_calls, summary.tool_calls), (2, 1));
    assert_eq!(events.texts, ["I'll note that.", "Noted."]);

    let facts = s.ws.facts().unwrap();
    assert_eq!(facts.len(), 1);
    let fact = &facts[0];
    assert_eq!(fact.content(), "Switched the HTTP layer to ureq 3");
    assert_eq!(fact.source(), "model_tool");
    assert_eq!(fact.kind().as_str(), "outcome");
    assert_eq!(fact.importance(), 3);
    assert_eq!(fact.memory_key(), None);
    assert_eq!(fact.evidence().get("commit").map(String::as_str), Some("1a2b3c"));

    // A second turn carries the whole conversation.
    s.agent.turn("thanks", &mut events, &Cancel::new()).unwrap();
    let received = s.server.finish();
    assert_eq!(received.len(), 3);
    let (one, two, three) = (&received[0].body, &received[1].body, &received[2].body);
    assert!(!one["system"].as_str().unwrap().contains("ureq 3"));
    // The prompt is rebuilt before every call: the new fact is in the context.
    assert!(
        two["system"].as_str().unwrap().contains("- [outcome] Switched the HTTP layer to ureq 3 (")
    );
    assert_eq!(two["system"], expected_system(&s.ws));
    let messages = two["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0], user_text("we moved to ureq 3"));
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][1]["id"], "toolu_01");
    let results = tool_results(&received[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "toolu_01");
    assert_eq!(results[0].get("is_error"), None);
    let receipt: Value = serde_json::from_str(results[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(receipt["fact_id"], fact.fact_id());
    let messages = three["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(
        messages[3],
        json!({"role": "assistant", "content": [{"type": "text", "text": "Noted."}]})
    );
    assert_eq!(messages[4], user_text("thanks"));
}

#[test]
fn two_tool_uses_in_one_reply_get_two_results_in_order() {
    let first = Reply::message(
        json!([
            tool_use("toolu_a", "bash", json!({"command": "echo hello-from-bash; pwd"})),
            tool_use(
                "toolu_b",
                "write_memory",
                json!({
                    "content": "Use SQLite for the cache",
                    "kind": "decision",
                    "importance": 5,
                    "memory_key": "cache.engine"
                })
            )
        ]),
        "tool_use",
    );
    let mut s = setup(vec![first, Reply::text("Done.")]);
    let mut events = Recorder::default();
    let summary = s.agent.turn("set up the db", &mut events, &Cancel::new()).unwrap();
    assert_eq!((summary.model_calls, summary.tool_calls), (2, 2));
    let names: Vec<&str> = events.calls.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["bash", "write_memory"]);

    let received = s.server.finish();
    assert_eq!(received.len(), 2);
    let results = tool_results(&received[1]);
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["toolu_a", "toolu_b"]);
    let bash_out = results[0]["content"].as_str().unwrap();
    assert!(bash_out.contains("hello-from-bash"), "{bash_out}");
    assert!(bash_out.contains(s.ws.project().to_str().unwrap()), "runs in the project: {bash_out}");
    assert!(results.iter().all(|r| r.get("is_error").is_none()), "{results:?}");
    let facts = s.ws.facts().unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].memory_key(), Some("cache.engine"));
    assert_eq!(facts[0].source(), "model_tool");
    // A keyed raw fact reaches the prompt only as a pending claim, under
    // its own heading (docs/policy.md).
    let system = received[1].body["system"].as_str().unwrap();
    let (before, pending) = system
        .split_once("# Pending Keyed Facts (recorded, not in the curated memory)\n\n")
        .expect("the keyed fact is pending");
    assert!(!before.contains("SQLite"), "{system}");
    assert!(pending.starts_with("- [decision] cache.engine: "), "{system}");
    assert!(pending.lines().next().unwrap().contains("SQLite"), "{system}");
}

#[test]
fn tool_use_with_end_turn_still_runs_the_tool() {
    let first = Reply::message(
        json!([tool_use("toolu_x", "bash", json!({"command": "echo ran > ran.txt"}))]),
        "end_turn",
    );
    let mut s = setup(vec![first, Reply::text("Created ran.txt.")]);
    let summary = s.agent.turn("make a file", &mut Recorder::default(), &Cancel::new()).unwrap();
    assert_eq!(summary.text, "Created ran.txt.");
    assert_eq!(std::fs::read_to_string(s.ws.project().join("ran.txt")).unwrap(), "ran\n");
    let received = s.server.finish();
    assert_eq!(
        received.len(),
        2,
        "the loop must continue after a tool_use, whatever stop_reason says"
    );
    let results = tool_results(&received[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["tool_use_id"], "toolu_x");
}

#[test]
fn invalid_write_memory_input_is_an_error_result_and_writes_nothing() {
    let first = Reply::message(
        json!([
            tool_use(
                "toolu_1",
                "write_memory",
                json!({"content": "x", "kind": "decision", "importance": 9})
            ),
            tool_use(
                "toolu_2",
                "write_memory",
                json!({"content": "y", "kind": "decision", "importance": 3, "memory_key": "Not A Key!"})
            ),
            tool_use(
                "toolu_3",
                "write_memory",
                json!({"content": "z", "kind": "decision", "importance": 3, "source": "user"})
            ),
            tool_use(
                "toolu_4",
                "write_memory",
                json!({"content": "w", "kind": "opinion", "importance": 3})
            ),
            tool_use("toolu_5", "write_memory", json!({"kind": "decision", "importance": 3})),
            tool_use("toolu_6", "resolve_conflict", json!({"conflict_id": "conflict-1"})),
            tool_use(
                "toolu_7",
                "bash",
                json!({"command": "workmem resolve conflict-1 candidate-1 --revision 1 --event-id e --rationale r"})
            )
        ]),
        "tool_use",
    );
    let mut s = setup(vec![first, Reply::text("Sorry.")]);
    s.agent.turn("remember things", &mut Recorder::default(), &Cancel::new()).unwrap();
    let received = s.server.finish();
    assert_eq!(received.len(), 2);
    let results = tool_results(&received[1]);
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5", "toolu_6", "toolu_7"]);
    let expected =
        ["importance", "memory_key", "source", "kind", "content", "unknown tool", "refused"];
    for (result, word) in results.iter().zip(expected) {
        assert_eq!(result["is_error"], true, "{result}");
        let text = result["content"].as_str().unwrap();
        assert!(text.contains(word), "{word:?} not in {text:?}");
    }
    assert!(s.ws.facts().unwrap().is_empty(), "nothing may be written");
    assert!(!s.ws.memory_dir().join("daily").exists());
}

#[test]
fn overloaded_then_success_is_retried_honouring_retry_after() {
    // Without retry-after the client would wait 5 s per retry.
    let slow = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_secs(5),
        max_delay: Duration::from_secs(5),
    };
    let replies = vec![
        Reply::error(529, "overloaded_error", "Overloaded").header("retry-after", "0"),
        Reply::error(429, "rate_limit_error", "Slow down").header("retry-after", "0"),
        Reply::text("Finally."),
    ];
    let mut s = setup_with(replies, slow);
    let mut events = Recorder::default();
    let started = Instant::now();
    let summary = s.agent.turn("hi", &mut events, &Cancel::new()).unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(summary.text, "Finally.");
    assert_eq!(summary.model_calls, 1);
    assert_eq!(events.retries.len(), 2);
    assert_eq!(events.retries[0].reason, "HTTP 529 overloaded_error");
    assert_eq!(events.retries[1].reason, "HTTP 429 rate_limit_error");
    assert!(events.retries.iter().all(|n| n.delay == Duration::ZERO && n.max_attempts == 4));
    let received = s.server.finish();
    assert_eq!(received.len(), 3);
    assert_eq!(received[0].body, received[2].body, "a retry repeats the same request");
}

#[test]
fn server_errors_give_up_after_the_retry_budget() {
    let replies = (0..3).map(|_| Reply::error(500, "api_error", "Internal")).collect();
    let retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    };
    let mut s = setup_with(replies, retry);
    let err = s.agent.turn("hi", &mut Recorder::default(), &Cancel::new()).unwrap_err();
    match &err {
        AgentError::Client(ClientError::Api { status: 500, attempts: 3, message, .. }) => {
            assert_eq!(message, "Internal");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("after 3 attempts"), "{err}");
    assert!(s.agent.messages().is_empty(), "a failed turn leaves the conversation as it was");
    assert_eq!(s.server.finish().len(), 3);
}

#[test]
fn unauthorized_is_not_retried_and_names_the_key() {
    let mut s = setup(vec![Reply::error(401, "authentication_error", "invalid x-api-key")]);
    let err = s.agent.turn("hi", &mut Recorder::default(), &Cancel::new()).unwrap_err();
    assert!(
        matches!(&err, AgentError::Client(ClientError::Unauthorized { message }) if message == "invalid x-api-key"),
        "{err:?}"
    );
    assert!(err.to_string().contains("API key was rejected (HTTP 401)"), "{err}");
    assert!(s.agent.messages().is_empty());
    assert_eq!(s.server.finish().len(), 1);
}

#[test]
fn network_errors_are_reported_not_panics() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path(), None).unwrap();
    let client =
        HttpClient::new(format!("http://127.0.0.1:{port}/v1/messages"), "k", quick_retries());
    let mut agent = Agent::new(client, ws, AgentOptions::new("m", 10));
    let mut events = Recorder::default();
    let err = agent.turn("hi", &mut events, &Cancel::new()).unwrap_err();
    assert!(
        matches!(&err, AgentError::Client(ClientError::Network { attempts: 4, .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "{err}");
    assert_eq!(events.retries.len(), 3);
}

#[test]
fn cancel_abandons_a_slow_request() {
    let mut s = setup(vec![Reply::text("too late").delayed(Duration::from_secs(20))]);
    let cancel = Cancel::new();
    let setter = cancel.clone();
    let thread = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        setter.cancel();
    });
    let started = Instant::now();
    let err = s.agent.turn("hi", &mut Recorder::default(), &cancel).unwrap_err();
    thread.join().unwrap();
    assert!(matches!(err, AgentError::Cancelled), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(s.agent.messages().is_empty());
    assert_eq!(s.server.finish().len(), 1);
}

#[test]
fn a_turn_that_never_stops_calling_tools_is_stopped() {
    let looping = || {
        Reply::message(
            json!([tool_use("toolu_loop", "bash", json!({"command": "true"}))]),
            "tool_use",
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path(), None).unwrap();
    let server = FakeServer::start(vec![looping(), looping(), looping()]);
    let client = HttpClient::new(format!("{}/v1/messages", server.url()), "k", quick_retries());
    let mut options = AgentOptions::new("m", 10);
    options.max_model_calls = 2;
    let mut agent = Agent::new(client, ws, options);
    let err = agent.turn("loop", &mut Recorder::default(), &Cancel::new()).unwrap_err();
    assert!(matches!(err, AgentError::TooManyCalls(2)), "{err:?}");
    assert!(agent.messages().is_empty());
    assert_eq!(server.finish().len(), 2);
}

/// The agent's `write_memory` tool refuses a credential in every field it
/// takes, names the field and the kind in the tool result the model reads,
/// repeats nothing of the credential, and writes nothing.
#[test]
fn write_memory_refuses_a_credential_in_every_field_without_repeating_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::open(dir.path(), None).expect("open");
    ws.init().expect("init");
    let (token, kind) = workmem_testutil::credential_samples()
        .into_iter()
        .find(|(text, _)| !text.contains(' '))
        .expect("a bare token");
    let base = || json!({"content": "Deploy the worker.", "kind": "decision", "importance": 3});
    let mut cases = Vec::new();
    let mut content = base();
    content["content"] = json!(format!("The deploy used {token} once"));
    cases.push(("content", content, kind));
    let mut key = base();
    key["memory_key"] = json!(token);
    cases.push(("memory_key", key, kind));
    let mut value = base();
    value["evidence"] = json!({"log": token});
    cases.push(("evidence value", value, kind));
    let mut evidence_key = base();
    evidence_key["evidence"] = json!({token.clone(): "ci.log"});
    cases.push(("evidence key", evidence_key, kind));
    let mut pair = base();
    pair["evidence"] = json!({"api_key": "Zk3Lm9Qp2Rt7Wx4Yb8Nc"});
    cases.push(("evidence value", pair, "password or secret assignment"));
    for (field, input, kind) in cases {
        let output = workmem_agent::tools::write_memory(&ws, &input);
        assert!(output.is_error, "{field}: {}", output.content);
        assert!(
            output.content.contains(field) && output.content.contains(kind),
            "{field}: {}",
            output.content
        );
        assert!(!output.content.contains(&token[token.len() - 12..]), "{}", output.content);
        assert!(!output.content.contains("Zk3Lm9Qp2Rt7"), "{}", output.content);
    }
    assert!(ws.facts().expect("facts").is_empty(), "a refused call wrote a fact");
}
