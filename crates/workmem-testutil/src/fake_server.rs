//! A scripted fake of the Messages API for tests: a tiny HTTP/1.1 server on
//! 127.0.0.1 (port chosen by the OS) that answers each request with the
//! next scripted reply and records what it received.
//!
//! It is bounded: it serves at most the scripted replies (plus a few
//! unscripted ones answered with HTTP 400), gives up after
//! [`LIFETIME`], and stops when [`FakeServer::finish`] is called or it is
//! dropped. Shared by the agent tests and the `workmem chat` tests.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest a server lives.
pub const LIFETIME: Duration = Duration::from_secs(60);
/// Unscripted requests answered before the server stops.
const MAX_UNSCRIPTED: usize = 3;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// JSON body.
    pub body: Value,
    /// Wait before answering.
    pub delay: Duration,
}

impl Reply {
    /// A 200 reply with these content blocks and stop reason.
    pub fn message(content: Value, stop_reason: &str) -> Reply {
        Reply::json(
            200,
            json!({
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": "fake-model",
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 5}
            }),
        )
    }

    /// A 200 reply with one text block.
    pub fn text(text: &str) -> Reply {
        Reply::message(json!([{"type": "text", "text": text}]), "end_turn")
    }

    /// An API error reply.
    pub fn error(status: u16, kind: &str, message: &str) -> Reply {
        Reply::json(status, json!({"type": "error", "error": {"type": kind, "message": message}}))
    }

    /// A reply with any status and JSON body.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply { status, headers: Vec::new(), body, delay: Duration::ZERO }
    }

    /// This reply with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// This reply sent only after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// A tool_use content block.
pub fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Request method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
}

/// A running fake server.
pub struct FakeServer {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a server answering with `replies` in order.
    pub fn start(replies: Vec<Reply>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking listener");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let received = Arc::clone(&received);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || serve(&listener, replies, &received, &stop))
        };
        FakeServer { url, received, stop, thread: Some(thread) }
    }

    /// Returns the base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Returns the requests received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("received lock").clone()
    }

    /// Stops the server and returns every request it received.
    pub fn finish(mut self) -> Vec<Received> {
        self.shutdown();
        self.received()
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn serve(
    listener: &TcpListener,
    replies: Vec<Reply>,
    received: &Mutex<Vec<Received>>,
    stop: &AtomicBool,
) {
    let deadline = Instant::now() + LIFETIME;
    let mut replies = replies.into_iter();
    let mut unscripted = 0;
    while !stop.load(Ordering::SeqCst) && Instant::now() < deadline && unscripted < MAX_UNSCRIPTED {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(_) => break,
        };
        let Some(request) = read_request(&stream) else { continue };
        received.lock().expect("received lock").push(request);
        let reply = replies.next().unwrap_or_else(|| {
            unscripted += 1;
            Reply::error(400, "invalid_request_error", "fake server: no scripted reply left")
        });
        let waited_until = Instant::now() + reply.delay;
        while Instant::now() < waited_until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        // The client may have given up (a cancelled request): ignore write errors.
        let _ = write_reply(stream, &reply);
    }
}

fn read_request(stream: &TcpStream) -> Option<Received> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let length: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0u8; length.min(16 * 1024 * 1024)];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Received { method, path, headers, body })
}

fn write_reply(mut stream: TcpStream, reply: &Reply) -> std::io::Result<()> {
    let body = reply.body.to_string();
    let mut head = format!(
        "HTTP/1.1 {} Fake\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reply.status,
        body.len()
    );
    for (name, value) in &reply.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}
