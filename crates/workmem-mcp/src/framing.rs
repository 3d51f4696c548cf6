//! The stdio framing in front of the SDK: reads newline-delimited messages
//! from the client, answers the ones no handler can, and serializes every
//! line written to stdout.
//!
//! The SDK's own reader silently drops a line that is not JSON and a line
//! longer than its limit, so a client that sent one waits for its own
//! timeout. Here every line is checked first: one longer than
//! [`MAX_MESSAGE_BYTES`] is discarded as it streams in (never buffered
//! whole) and answered with an "Invalid Request" error, one that is not
//! JSON is answered with a "Parse error" (-32700); both replies have
//! `"id": null`, as JSON-RPC requires when the id cannot be read. Valid JSON
//! goes to the SDK unchanged.
//!
//! Invariant: stdout carries only whole JSON-RPC lines. The SDK's replies
//! and this module's errors reach stdout through one writer task, a line at
//! a time, so they never interleave.

use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{Receiver, Sender};

/// The largest message the server reads, in bytes, without its newline:
/// 4 MiB, far above any valid tool call (content is at most 2,000
/// characters) and small enough that a runaway client cannot exhaust memory.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC "Parse error": the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "Invalid Request": here, a message over [`MAX_MESSAGE_BYTES`].
pub const INVALID_REQUEST: i64 = -32600;

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
    let reply = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut line = reply.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Reads the client's messages from `input` until it closes, forwards each
/// valid JSON line to `to_sdk` and sends an error reply to `replies` for
/// each line that is not JSON or is too large.
///
/// Returns when `input` ends (dropping `to_sdk`, which ends the SDK's
/// session), or with the error of a failed read or forward.
pub(crate) async fn read_messages<R, W>(
    input: R,
    mut to_sdk: W,
    replies: Sender<Vec<u8>>,
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
                match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                    Ok(_) => {
                        to_sdk.write_all(body).await?;
                        to_sdk.write_all(b"\n").await?;
                        to_sdk.flush().await?;
                        continue;
                    }
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

/// Sends every line the SDK writes to `from_sdk` to `replies`, until the SDK
/// closes its end.
pub(crate) async fn forward_sdk_lines<R: AsyncRead + Unpin>(
    from_sdk: R,
    replies: Sender<Vec<u8>>,
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
        if replies.send(line).await.is_err() {
            return Ok(());
        }
    }
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
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\"\nnot json\n\xEF\xBB\xBF{\"a\":1}\r\n   \n";
        read_messages(input, &mut forwarded, tx).await.unwrap();
        let mut replies = Vec::new();
        while let Some(line) = rx.recv().await {
            replies.push(serde_json::from_slice::<serde_json::Value>(&line).unwrap());
        }
        assert_eq!(forwarded, b"{\"a\":1}\n");
        assert_eq!(replies.len(), 2, "{replies:?}");
        for reply in &replies {
            assert_eq!(reply["error"]["code"], PARSE_ERROR, "{reply}");
            assert_eq!(reply["id"], serde_json::Value::Null, "{reply}");
            assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        }
    }
}
