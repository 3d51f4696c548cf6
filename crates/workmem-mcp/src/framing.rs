//! The stdio framing in front of the SDK: reads newline-delimited messages
//! from the client, answers the ones no handler can, splits JSON-RPC
//! batches, and serializes every line written to stdout.
//!
//! The SDK's own reader silently drops a line that is not JSON and a line
//! longer than its limit, so a client that sent one waits for its own
//! timeout, and it answers a message it cannot read as an MCP message with
//! an error that has no `id` at all. Here every line is checked first: one
//! longer than [`MAX_MESSAGE_BYTES`] is discarded as it streams in (never
//! buffered whole) and answered with an "Invalid Request" error, one that
//! is not JSON is answered with a "Parse error" (-32700), and a request the
//! SDK's own message type does not accept gets an "Invalid Request" error
//! with its id (`"id": null` when the id cannot be read, as JSON-RPC
//! requires). Everything else goes to the SDK unchanged.
//!
//! **Batches.** Protocol revisions up to 2025-03-26 carry JSON-RPC 2.0
//! batches (a JSON array of messages); 2025-06-18 removed them. The SDK
//! reads one message per line, so a batch is split here, once `initialize`
//! has negotiated a revision that has them: each request goes to the SDK in
//! turn and its response is held back, then all responses go out as one
//! array (none when the batch held only notifications and responses). An
//! invalid member gets its error in the array; `initialize` is refused in a
//! batch, as the revision says. Under a later revision, or before
//! initialization, a batch gets one "Invalid Request" error that says why.
//!
//! Invariant: stdout carries only whole JSON-RPC lines. The SDK's replies
//! and this module's errors reach stdout through one writer task, a line at
//! a time, so they never interleave.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{Receiver, Sender};
use tokio::sync::oneshot;

/// The largest message the server reads, in bytes, without its newline:
/// 4 MiB, far above any valid tool call (content is at most 2,000
/// characters) and small enough that a runaway client cannot exhaust memory.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC "Parse error": the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "Invalid Request": a message over [`MAX_MESSAGE_BYTES`], one
/// that is not an MCP message, or a batch the revision does not have.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "Invalid params": a request for a method this server knows
/// whose params are not that method's.
pub const INVALID_PARAMS: i64 = -32602;

/// The newest protocol revision that has JSON-RPC batches.
pub const LAST_REVISION_WITH_BATCHES: &str = "2025-03-26";

/// What the reader and the forwarder share about the session.
#[derive(Debug, Default)]
pub(crate) struct Session {
    /// The protocol revision the SDK's answer to `initialize` named.
    revision: Option<String>,
    /// The request of a batch the SDK is answering now.
    waiting: Option<Waiting>,
}

/// A request sent to the SDK whose response goes back to the reader: a
/// batch member's (held back from stdout), or `initialize`'s (also sent on
/// to stdout), so that the revision is known before the next line is read.
#[derive(Debug)]
struct Waiting {
    id: Value,
    reply: oneshot::Sender<Value>,
    /// Whether the response also goes to stdout.
    pass_on: bool,
}

/// The session state shared by the framing tasks.
pub(crate) type Shared = Arc<Mutex<Session>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Session> {
    // No code holding the lock can panic; a poisoned lock is still usable.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What one bounded line read found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A whole line (or a final line without newline) is in the buffer.
    Complete,
    /// The line had this many bytes, more than the cap; it was discarded.
    Oversized(usize),
    /// The client closed its end.
    Eof,
}

/// Reads one line into `line` (without its `\n`), never holding more than
/// `max` bytes of it.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    line.clear();
    let mut seen = 0_usize;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match seen {
                0 => Line::Eof,
                n if n > max => Line::Oversized(n),
                _ => Line::Complete,
            });
        }
        let newline = buf.iter().position(|b| *b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        seen = seen.saturating_add(chunk.len());
        if seen > max {
            // Drop what was kept: an oversized line is never held whole.
            line.clear();
        } else {
            line.extend_from_slice(chunk);
        }
        let consumed = chunk.len() + usize::from(newline.is_some());
        input.consume(consumed);
        if newline.is_some() {
            return Ok(if seen > max { Line::Oversized(seen) } else { Line::Complete });
        }
    }
}

/// Returns a JSON-RPC error reply with `"id": null`, as one line.
fn error_line(code: i64, message: &str) -> Vec<u8> {
    line_of(&error(Value::Null, code, message))
}

/// Returns a JSON-RPC error reply to the message with `id`.
fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn line_of(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// What to do with one message from the client.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// A request: the SDK answers it.
    Request(Value),
    /// A notification or a response: the SDK takes it, nobody answers.
    Unanswered,
    /// Answer this error instead of forwarding.
    Refuse(Value),
    /// Neither forward nor answer (a response that is not one).
    Drop,
}

/// Returns what to do with `message`, one JSON value from the client.
fn judge(message: &Value) -> Verdict {
    let Some(object) = message.as_object() else {
        return Verdict::Refuse(error(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: a JSON-RPC message is a JSON object",
        ));
    };
    let id = object.get("id").filter(|id| id.is_string() || id.is_i64()).cloned();
    let typed = || serde_json::from_value::<ClientJsonRpcMessage>(message.clone()).is_ok();
    let response = object.contains_key("result") || object.contains_key("error");
    let well_formed = object.get("jsonrpc").and_then(Value::as_str) == Some("2.0") && id.is_some();
    match (object.get("method"), object.contains_key("id")) {
        (Some(Value::String(method)), true)
            if well_formed && KNOWN_METHODS.contains(&method.as_str()) =>
        {
            match params_problem(method, message) {
                None => Verdict::Request(id.unwrap_or(Value::Null)),
                Some(problem) => Verdict::Refuse(error(
                    id.unwrap_or(Value::Null),
                    INVALID_PARAMS,
                    &format!("invalid params for {method}: {problem}"),
                )),
            }
        }
        (None, _) if response && typed() => Verdict::Unanswered,
        // A response nobody can read: it answers nothing of ours.
        (None, _) if response => Verdict::Drop,
        (Some(_), true) if typed() => Verdict::Request(id.unwrap_or(Value::Null)),
        (Some(method), true) => {
            let method: String =
                method.as_str().unwrap_or("(not a string)").chars().take(64).collect();
            Verdict::Refuse(error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                &format!(
                    "invalid request: not a valid MCP request (method {method:?}; the id must be a \
                     string or an integer, and the params those of the method)"
                ),
            ))
        }
        // Notifications are never answered; the SDK ignores those it does
        // not know.
        (Some(_), false) => Verdict::Unanswered,
        (None, _) => Verdict::Refuse(error(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "invalid request: neither a request, a notification nor a response",
        )),
    }
}

/// The MCP request methods whose params the SDK's message type reads: a
/// request for one of them whose params do not fit is answered with
/// "Invalid params" (-32602), where the SDK would take it for a custom
/// method and answer "Method not found".
///
/// `initialize` is left to the reader and the SDK (it is refused inside a
/// batch, and its params decide the session).
const KNOWN_METHODS: [&str; 11] = [
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
];

/// Returns what is wrong with the params of a well-formed request for
/// one of [`KNOWN_METHODS`], or `None` when the SDK reads it as that
/// method.
fn params_problem(method: &str, message: &Value) -> Option<String> {
    use rmcp::model::{
        CallToolRequestParams, ClientRequest, JsonRpcMessage, ReadResourceRequestParams,
    };
    let read = match serde_json::from_value::<ClientJsonRpcMessage>(message.clone()) {
        Ok(JsonRpcMessage::Request(request)) => {
            !matches!(request.request, ClientRequest::CustomRequest(_))
        }
        _ => false,
    };
    if read {
        return None;
    }
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    // serde's message names the field and the type expected, never the
    // value given.
    let detail = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params)
            .err()
            .map(|err| format!("{err}; expected {{\"name\": string, \"arguments\"?: object}}")),
        "resources/read" => serde_json::from_value::<ReadResourceRequestParams>(params)
            .err()
            .map(|err| format!("{err}; expected {{\"uri\": string}}")),
        _ => None,
    };
    Some(detail.unwrap_or_else(|| "they are not the params this method takes".to_owned()))
}

/// Returns why a batch is refused under the negotiated `revision`, or
/// `None` when the revision has batches.
fn batch_refusal(revision: Option<&str>) -> Option<String> {
    match revision {
        None => Some(
            "invalid request: a JSON-RPC batch before initialization; send `initialize` alone first"
                .to_owned(),
        ),
        Some(revision) if revision > LAST_REVISION_WITH_BATCHES => Some(format!(
            "invalid request: JSON-RPC batches are not part of MCP protocol revision {revision} \
             (negotiated; revision 2025-06-18 removed them): send one message per line"
        )),
        Some(_) => None,
    }
}

/// Reads the client's messages from `input` until it closes, forwards each
/// valid message to `to_sdk` (a batch member by member, see the module
/// docs) and sends an error reply to `replies` for each line that is not
/// JSON, is too large or is not an MCP message.
///
/// Returns when `input` ends (dropping `to_sdk`, which ends the SDK's
/// session), or with the error of a failed read or forward.
pub(crate) async fn read_messages<R, W>(
    input: R,
    mut to_sdk: W,
    replies: Sender<Vec<u8>>,
    shared: Shared,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    loop {
        let reply = match read_line(&mut input, &mut line, MAX_MESSAGE_BYTES).await? {
            Line::Eof => return Ok(()),
            Line::Oversized(bytes) => error_line(
                INVALID_REQUEST,
                &format!(
                    "message too large: {bytes} bytes; the server reads at most {MAX_MESSAGE_BYTES} \
                     bytes (4 MiB) per message, and discarded this one"
                ),
            ),
            Line::Complete => {
                let body = line.strip_suffix(b"\r").unwrap_or(&line);
                let body = body.strip_prefix(UTF8_BOM).unwrap_or(body);
                if body.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match serde_json::from_slice::<Value>(body) {
                    Ok(Value::Array(members)) => {
                        match batch(members, &mut to_sdk, &shared).await? {
                            Some(reply) => line_of(&reply),
                            None => continue,
                        }
                    }
                    Ok(message) => match judge(&message) {
                        Verdict::Request(id) if message["method"] == "initialize" => {
                            // Read on only once the revision is known: a
                            // batch right after the handshake depends on it.
                            let answered = ask(id, body, true, &mut to_sdk, &shared).await?;
                            if answered.is_none() {
                                return Ok(());
                            }
                            continue;
                        }
                        Verdict::Request(_) | Verdict::Unanswered => {
                            forward(body, &mut to_sdk).await?;
                            continue;
                        }
                        Verdict::Refuse(reply) => line_of(&reply),
                        Verdict::Drop => continue,
                    },
                    // serde_json's message names the position, never the text.
                    Err(err) => error_line(PARSE_ERROR, &format!("parse error: not JSON ({err})")),
                }
            }
        };
        if replies.send(reply).await.is_err() {
            // The writer is gone: stdout is closed, nobody can be answered.
            return Ok(());
        }
    }
}

/// Writes one message to the SDK, as one line.
async fn forward<W: AsyncWrite + Unpin>(message: &[u8], to_sdk: &mut W) -> std::io::Result<()> {
    to_sdk.write_all(message).await?;
    to_sdk.write_all(b"\n").await?;
    to_sdk.flush().await
}

/// Handles one batch (see the module docs): returns the one line to answer
/// it with, if any.
async fn batch<W: AsyncWrite + Unpin>(
    members: Vec<Value>,
    to_sdk: &mut W,
    shared: &Shared,
) -> std::io::Result<Option<Value>> {
    let revision = lock(shared).revision.clone();
    if let Some(why) = batch_refusal(revision.as_deref()) {
        return Ok(Some(error(Value::Null, INVALID_REQUEST, &why)));
    }
    if members.is_empty() {
        return Ok(Some(error(Value::Null, INVALID_REQUEST, "invalid request: an empty batch")));
    }
    let mut responses = Vec::new();
    for member in members {
        match judge(&member) {
            Verdict::Refuse(reply) => responses.push(reply),
            Verdict::Drop => {}
            Verdict::Unanswered => forward(member.to_string().as_bytes(), to_sdk).await?,
            Verdict::Request(id) if member["method"] == "initialize" => responses.push(error(
                id,
                INVALID_REQUEST,
                "invalid request: initialize must not be part of a JSON-RPC batch",
            )),
            Verdict::Request(id) => {
                match ask(id, member.to_string().as_bytes(), false, to_sdk, shared).await? {
                    Some(response) => responses.push(response),
                    // The SDK is gone: nobody will answer anything.
                    None => return Ok(None),
                }
            }
        }
    }
    Ok((!responses.is_empty()).then_some(Value::Array(responses)))
}

/// Sends the request `message` with `id` to the SDK and returns its
/// response (`None` when the SDK has gone); `pass_on` also sends the
/// response to stdout.
async fn ask<W: AsyncWrite + Unpin>(
    id: Value,
    message: &[u8],
    pass_on: bool,
    to_sdk: &mut W,
    shared: &Shared,
) -> std::io::Result<Option<Value>> {
    let (reply, response) = oneshot::channel();
    lock(shared).waiting = Some(Waiting { id, reply, pass_on });
    forward(message, to_sdk).await?;
    Ok(response.await.ok())
}

/// Sends every line the SDK writes to `from_sdk` to `replies`, until the SDK
/// closes its end; notes the revision the SDK's answer to `initialize`
/// names, hands the response a batch member waits for back to the reader,
/// and gives an error the SDK sent without an id `"id": null`.
pub(crate) async fn forward_sdk_lines<R: AsyncRead + Unpin>(
    from_sdk: R,
    replies: Sender<Vec<u8>>,
    shared: Shared,
) -> std::io::Result<()> {
    let mut from_sdk = BufReader::new(from_sdk);
    loop {
        let mut line = Vec::new();
        if from_sdk.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        let Some(line) = route(line, &shared) else { continue };
        if replies.send(line).await.is_err() {
            return Ok(());
        }
    }
}

/// Returns the SDK's `line` as it goes to stdout, or `None` when a batch
/// member's response was handed to the reader.
fn route(line: Vec<u8>, shared: &Shared) -> Option<Vec<u8>> {
    let mut session = lock(shared);
    let id_less = line.starts_with(br#"{"jsonrpc":"2.0","error""#);
    if session.revision.is_some() && session.waiting.is_none() && !id_less {
        return Some(line);
    }
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(&line) else {
        return Some(line);
    };
    if session.revision.is_none()
        && let Some(revision) = message
            .get("result")
            .filter(|result| result.get("serverInfo").is_some())
            .and_then(|result| result.get("protocolVersion"))
            .and_then(Value::as_str)
    {
        session.revision = Some(revision.to_owned());
    }
    let is_response = !message.contains_key("method");
    if is_response && !message.contains_key("id") {
        message.insert("id".to_owned(), Value::Null);
    }
    let for_reader = is_response
        && session.waiting.as_ref().is_some_and(|waiting| {
            message.get("id") == Some(&waiting.id) || message.get("id") == Some(&Value::Null)
        });
    if for_reader && let Some(waiting) = session.waiting.take() {
        let mut response = Value::Object(message);
        response["id"] = waiting.id;
        let passed = waiting.pass_on.then(|| line_of(&response));
        // The reader is gone only when the session ends.
        let _ = waiting.reply.send(response);
        return passed;
    }
    if id_less { Some(line_of(&Value::Object(message))) } else { Some(line) }
}

/// Writes every line received to `output`, flushing after each, until all
/// senders are gone.
pub(crate) async fn write_lines<W: AsyncWrite + Unpin>(
    mut lines: Receiver<Vec<u8>>,
    mut output: W,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        output.write_all(&line).await?;
        output.flush().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            let read = read_line(&mut reader, &mut line, max).await.unwrap();
            if read == Line::Eof {
                return out;
            }
            out.push((read, line.clone()));
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lines_are_read_whole_and_oversized_ones_are_dropped_as_they_stream() {
        let read = lines_of(b"{}\nabcdefghij\n\n[1]\r\ntail", 8).await;
        assert_eq!(
            read,
            [
                (Line::Complete, b"{}".to_vec()),
                (Line::Oversized(10), Vec::new()),
                (Line::Complete, Vec::new()),
                (Line::Complete, b"[1]\r".to_vec()),
                (Line::Complete, b"tail".to_vec()),
            ]
        );
        assert_eq!(lines_of(b"", 8).await, []);
        assert_eq!(lines_of(b"123456789", 8).await, [(Line::Oversized(9), Vec::new())]);
        assert_eq!(lines_of(b"12345678\n", 8).await, [(Line::Complete, b"12345678".to_vec())]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn bad_lines_are_answered_and_good_ones_forwarded() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(8);
        let mut forwarded = Vec::new();
        let good = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let mut input = b"{\"jsonrpc\":\"2.0\"\nnot json\n\xEF\xBB\xBF".to_vec();
        input.extend_from_slice(good);
        input.extend_from_slice(b"\r\n   \n");
        read_messages(&input[..], &mut forwarded, tx, Shared::default()).await.unwrap();
        let mut replies = Vec::new();
        while let Some(line) = rx.recv().await {
            replies.push(serde_json::from_slice::<Value>(&line).unwrap());
        }
        assert_eq!(forwarded, [&good[..], b"\n"].concat());
        assert_eq!(replies.len(), 2, "{replies:?}");
        for reply in &replies {
            assert_eq!(reply["error"]["code"], PARSE_ERROR, "{reply}");
            assert_eq!(reply["id"], Value::Null, "{reply}");
            assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        }
    }

    #[test]
    fn messages_are_judged_by_the_sdk_message_type() {
        let refused = |message: Value| match judge(&message) {
            Verdict::Refuse(reply) => reply,
            other => panic!("{message} was not refused: {other:?}"),
        };
        assert_eq!(
            judge(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})),
            Verdict::Request(json!(3))
        );
        assert_eq!(
            judge(&json!({"jsonrpc": "2.0", "id": "a", "method": "tools/list"})),
            Verdict::Request(json!("a"))
        );
        // Unknown methods are the SDK's to answer (method not found).
        assert_eq!(
            judge(&json!({"jsonrpc": "2.0", "id": 4, "method": "no/such"})),
            Verdict::Request(json!(4))
        );
        assert_eq!(
            judge(&json!({"jsonrpc": "2.0", "method": "notifications/anything"})),
            Verdict::Unanswered
        );
        assert_eq!(judge(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})), Verdict::Unanswered);
        assert_eq!(
            judge(&json!({"jsonrpc": "2.0", "id": 1, "result": 5, "error": 1})),
            Verdict::Drop
        );
        let bad_params =
            refused(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "x"}));
        assert_eq!(bad_params["id"], 6);
        assert_eq!(bad_params["error"]["code"], INVALID_PARAMS);
        for params in [json!({"arguments": {}}), json!({"name": 5}), json!([1])] {
            let reply = refused(
                json!({"jsonrpc": "2.0", "id": "p", "method": "tools/call", "params": params}),
            );
            assert_eq!(reply["id"], "p", "{params}");
            assert_eq!(reply["error"]["code"], INVALID_PARAMS, "{params}");
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("invalid params for tools/call: "), "{message}");
        }
        let reply =
            refused(json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {}}));
        assert_eq!(reply["error"]["code"], INVALID_PARAMS);
        assert!(reply["error"]["message"].as_str().unwrap().contains("uri"), "{reply}");
        assert_eq!(
            judge(
                &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "get_context"}})
            ),
            Verdict::Request(json!(9))
        );
        for (message, id) in [
            (json!({"jsonrpc": "1.0", "id": 7, "method": "ping"}), json!(7)),
            (json!({"jsonrpc": "2.0", "id": 8.5, "method": "ping"}), Value::Null),
            (json!({"jsonrpc": "2.0", "id": [1], "method": "ping"}), Value::Null),
            (json!({"id": 9}), json!(9)),
            (json!({"jsonrpc": "2.0"}), Value::Null),
            (json!(5), Value::Null),
        ] {
            assert_eq!(refused(message.clone())["id"], id, "{message}");
        }
    }

    #[test]
    fn batches_belong_to_the_revisions_that_have_them() {
        assert!(batch_refusal(Some("2024-11-05")).is_none());
        assert!(batch_refusal(Some("2025-03-26")).is_none());
        for later in ["2025-06-18", "2025-11-25", "2026-07-28"] {
            let why = batch_refusal(Some(later)).unwrap();
            assert!(why.contains(later) && why.contains("2025-06-18 removed them"), "{why}");
        }
        assert!(batch_refusal(None).unwrap().contains("before initialization"));
    }

    #[test]
    fn the_sdk_output_names_the_revision_and_errors_get_an_id() {
        let shared = Shared::default();
        let init = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","serverInfo":{"name":"w","version":"1"}}}
"#;
        assert_eq!(route(init.to_vec(), &shared).as_deref(), Some(&init[..]));
        assert_eq!(lock(&shared).revision.as_deref(), Some("2025-03-26"));
        let id_less = br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request"}}
"#;
        let fixed: Value =
            serde_json::from_slice(&route(id_less.to_vec(), &shared).unwrap()).unwrap();
        assert_eq!(fixed["id"], Value::Null);
        assert_eq!(fixed["error"]["code"], -32600);
        // A batch member's response goes to the reader, not to stdout.
        let (reply, mut response) = oneshot::channel();
        lock(&shared).waiting = Some(Waiting { id: json!(5), reply, pass_on: false });
        let other = b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n";
        assert_eq!(route(other.to_vec(), &shared).as_deref(), Some(&other[..]));
        assert!(response.try_recv().is_err());
        assert_eq!(
            route(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n".to_vec(), &shared),
            None
        );
        assert_eq!(response.try_recv().unwrap(), json!({"jsonrpc": "2.0", "id": 5, "result": {}}));
        assert!(lock(&shared).waiting.is_none());
    }
}
