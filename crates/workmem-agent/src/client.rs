//! Calling the model: the [`MessagesClient`] seam and [`HttpClient`], the
//! blocking Messages API client with retries.
//!
//! Retry policy: 408, 429, 529 and every 5xx status, and network errors,
//! are retried up to [`RetryPolicy::max_retries`] times, waiting what the
//! server's `retry-after` header asks (capped) or else an exponential
//! backoff. A 401 is never retried: the key is wrong. Every request runs on
//! a helper thread so that a [`Cancel`] stops waiting at once; the
//! abandoned thread finishes (or times out) on its own and its answer is
//! dropped. Nothing here panics on a bad network or a bad reply.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::api::{ANTHROPIC_VERSION, ErrorBody, MessagesRequest, MessagesResponse};
use crate::cancel::Cancel;

/// How often a waiting call looks at the cancel flag.
const POLL: Duration = Duration::from_millis(20);
/// Largest response body read.
const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// Something that answers Messages API requests.
pub trait MessagesClient {
    /// Returns the model's reply to `request`. `on_retry` is told before
    /// each wait for a retry.
    ///
    /// Errors: a [`ClientError`]; [`ClientError::Cancelled`] as soon as
    /// `cancel` is set.
    fn create(
        &self,
        request: &MessagesRequest,
        cancel: &Cancel,
        on_retry: &mut dyn FnMut(&RetryNotice),
    ) -> Result<MessagesResponse, ClientError>;
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server refused the API key (HTTP 401).
    #[error("the API key was rejected (HTTP 401): {message}")]
    Unauthorized {
        /// The server's message.
        message: String,
    },
    /// The server answered with an error status (after any retries).
    #[error("the model API answered HTTP {status}{}: {message}", attempts_note(*.attempts))]
    Api {
        /// The HTTP status.
        status: u16,
        /// The error type the server named, if any.
        kind: String,
        /// The server's message.
        message: String,
        /// Requests made.
        attempts: u32,
    },
    /// The server could not be reached (after any retries).
    #[error("cannot reach the model API at {url}{}: {message}", attempts_note(*.attempts))]
    Network {
        /// The URL called.
        url: String,
        /// What went wrong.
        message: String,
        /// Requests made.
        attempts: u32,
    },
    /// A success status came with a body that is not a Messages reply.
    #[error("the model API sent an unreadable reply: {0}")]
    InvalidResponse(String),
    /// The user cancelled the request.
    #[error("cancelled")]
    Cancelled,
}

fn attempts_note(attempts: u32) -> String {
    if attempts > 1 { format!(" after {attempts} attempts") } else { String::new() }
}

/// What a retry is waiting for, reported before the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// Attempts allowed in all.
    pub max_attempts: u32,
    /// How long the client waits before the next attempt.
    pub delay: Duration,
    /// Why: `HTTP 529 overloaded_error`, or the network error.
    pub reason: String,
}

/// When and how often to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Wait before the first retry when the server gives no `retry-after`;
    /// doubled for each further retry.
    pub base_delay: Duration,
    /// Longest wait between attempts, also the cap on `retry-after`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Returns the wait before retry number `retry` (1-based): the server's
    /// `retry_after` when given, else `base_delay * 2^(retry-1)`, capped by
    /// `max_delay`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = || self.base_delay.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
        retry_after.unwrap_or_else(backoff).min(self.max_delay)
    }
}

/// Returns whether an HTTP status is worth retrying.
pub fn is_retryable(status: u16) -> bool {
    matches!(status, 408 | 429 | 529) || (500..600).contains(&status)
}

/// Returns the wait a `retry-after` header asks for (whole or fractional
/// seconds; an HTTP date is ignored).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(86_400.0)))
}

/// The Messages API over blocking HTTP (ureq).
#[derive(Clone)]
pub struct HttpClient {
    agent: ureq::Agent,
    url: String,
    api_key: String,
    retry: RetryPolicy,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("url", &self.url)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// One HTTP exchange: status, `retry-after` and body text.
type Exchange = Result<(u16, Option<String>, String), ExchangeError>;

/// Why an HTTP exchange got no answer to read.
#[derive(Debug, thiserror::Error)]
enum ExchangeError {
    /// The request could not be sent or got no response.
    #[error("{0}")]
    Send(ureq::Error),
    /// The response's body could not be read.
    #[error("reading the reply: {0}")]
    Read(ureq::Error),
    /// The thread making the request ended without an answer.
    #[error("the request thread ended without an answer")]
    NoAnswer,
}

impl HttpClient {
    /// Returns a client posting to `messages_url` with `api_key`.
    pub fn new(
        messages_url: impl Into<String>,
        api_key: impl Into<String>,
        retry: RetryPolicy,
    ) -> HttpClient {
        let config = ureq::Agent::config_builder()
            // Error statuses are answers to read (retry-after, message), not errors.
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(30)))
            // A long reply can take minutes; a dead connection must not hang forever.
            .timeout_global(Some(Duration::from_secs(600)))
            .user_agent(concat!("workmem/", env!("CARGO_PKG_VERSION")))
            .build();
        HttpClient {
            agent: config.into(),
            url: messages_url.into(),
            api_key: api_key.into(),
            retry,
        }
    }

    /// Returns the URL posted to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs one exchange on a helper thread, returning early on cancel.
    fn exchange(&self, body: &[u8], cancel: &Cancel) -> Result<Exchange, ClientError> {
        let (tx, rx) = mpsc::channel();
        let agent = self.agent.clone();
        let url = self.url.clone();
        let key = self.api_key.clone();
        let body = body.to_vec();
        std::thread::Builder::new()
            .name("workmem-http".to_owned())
            .spawn(move || {
                // The receiver is gone when the request was cancelled.
                let _ = tx.send(post(&agent, &url, &key, &body));
            })
            .map_err(|err| ClientError::Network {
                url: self.url.clone(),
                message: format!("cannot start a request thread: {err}"),
                attempts: 0,
            })?;
        loop {
            if cancel.is_cancelled() {
                return Err(ClientError::Cancelled);
            }
            match rx.recv_timeout(POLL) {
                Ok(exchange) => return Ok(exchange),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(Err(ExchangeError::NoAnswer));
                }
            }
        }
    }
}

fn post(agent: &ureq::Agent, url: &str, key: &str, body: &[u8]) -> Exchange {
    let mut response = agent
        .post(url)
        .header("x-api-key", key)
        .header("anthropic-version", ANTHROPIC_VERSION)
        .header("content-type", "application/json")
        .send(body)
        .map_err(ExchangeError::Send)?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let text = response
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_string()
        .map_err(ExchangeError::Read)?;
    Ok((status, retry_after, text))
}

/// Returns `(kind, message)` of an error reply body, or the raw text.
fn error_detail(text: &str) -> (String, String) {
    if let Ok(body) = serde_json::from_str::<ErrorBody>(text) {
        (body.error.kind, body.error.message)
    } else {
        let snippet: String = text.chars().take(300).collect();
        (String::new(), if snippet.trim().is_empty() { "(empty body)".to_owned() } else { snippet })
    }
}

/// Sleeps `delay` in small steps, returning early on cancel.
fn wait(delay: Duration, cancel: &Cancel) -> Result<(), ClientError> {
    let deadline = Instant::now() + delay;
    loop {
        if cancel.is_cancelled() {
            return Err(ClientError::Cancelled);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(());
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

impl MessagesClient for HttpClient {
    fn create(
        &self,
        request: &MessagesRequest,
        cancel: &Cancel,
        on_retry: &mut dyn FnMut(&RetryNotice),
    ) -> Result<MessagesResponse, ClientError> {
        let body = serde_json::to_vec(request)
            .map_err(|err| ClientError::InvalidResponse(err.to_string()))?;
        let max_attempts = self.retry.max_retries.saturating_add(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (failure, retry_after) = match self.exchange(&body, cancel)? {
                Ok((status, _, text)) if (200..300).contains(&status) => {
                    return serde_json::from_str(&text)
                        .map_err(|err| ClientError::InvalidResponse(err.to_string()));
                }
                Ok((401, _, text)) => {
                    return Err(ClientError::Unauthorized { message: error_detail(&text).1 });
                }
                Ok((status, retry_after, text)) => {
                    let (kind, message) = error_detail(&text);
                    let error = ClientError::Api { status, kind, message, attempts: attempt };
                    if !is_retryable(status) {
                        return Err(error);
                    }
                    (error, retry_after.as_deref().and_then(parse_retry_after))
                }
                Err(err) => (
                    ClientError::Network {
                        url: self.url.clone(),
                        message: err.to_string(),
                        attempts: attempt,
                    },
                    None,
                ),
            };
            if attempt >= max_attempts {
                return Err(failure);
            }
            let delay = self.retry.delay(attempt, retry_after);
            let reason = match &failure {
                ClientError::Api { status, kind, .. } if kind.is_empty() => {
                    format!("HTTP {status}")
                }
                ClientError::Api { status, kind, .. } => format!("HTTP {status} {kind}"),
                ClientError::Network { message, .. } => message.clone(),
                other => other.to_string(),
            };
            on_retry(&RetryNotice { attempt, max_attempts, delay, reason });
            wait(delay, cancel)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 9,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        assert_eq!(policy.delay(1, None), Duration::from_millis(100));
        assert_eq!(policy.delay(2, None), Duration::from_millis(200));
        assert_eq!(policy.delay(4, None), Duration::from_millis(800));
        assert_eq!(policy.delay(5, None), Duration::from_secs(1));
        assert_eq!(policy.delay(60, None), Duration::from_secs(1));
        assert_eq!(policy.delay(3, Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(policy.delay(1, Some(Duration::from_secs(30))), Duration::from_secs(1));
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn retryable_statuses() {
        for status in [408, 429, 500, 502, 503, 504, 529] {
            assert!(is_retryable(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!is_retryable(status), "{status}");
        }
    }

    #[test]
    fn error_bodies() {
        let (kind, message) = error_detail(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!((kind.as_str(), message.as_str()), ("overloaded_error", "Overloaded"));
        assert_eq!(error_detail("").1, "(empty body)");
        assert_eq!(error_detail("<html>bad gateway</html>").1, "<html>bad gateway</html>");
    }
}
