//! An OpenAI-compatible chat-completions client: one call with a timeout, retried with
//! jittered exponential backoff after a 429, a 5xx, a timeout or a dropped connection (a
//! `Retry-After` header wins over the backoff), within a deadline, at most `max_concurrency`
//! calls in flight per tenant in this process.
//!
//! The deployment's API key goes only to the deployment's provider (`AGENTRL_JUDGE_BASE_URL`):
//! a tenant that points its judges elsewhere gets no credentials sent there, and redirects are
//! never followed, so a tenant's URL cannot bounce a call somewhere its check did not see.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant, SystemTime},
};

use agentrl_core::{
    TenantId,
    judge::{ChatMessage, Usage},
};
use rand::Rng;
use reqwest::{StatusCode, header::RETRY_AFTER};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Semaphore;

/// First backoff step; each retry doubles it, up to [`MAX_BACKOFF`] (full jitter below it).
const BASE_BACKOFF: Duration = Duration::from_millis(250);
/// Longest backoff between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// Longest `Retry-After` honoured: a provider asking for more is treated as down.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Replies are short JSON objects; this bounds a runaway completion's cost.
const MAX_COMPLETION_TOKENS: u32 = 600;
/// Most bytes read of a reply. A completion of [`MAX_COMPLETION_TOKENS`] is a few KiB; a
/// provider sending more is misbehaving, and reading on would only spend memory.
const MAX_REPLY_BYTES: usize = 1 << 20;

/// The provider every tenant's judges call, with the deployment's credentials.
pub struct Provider {
    /// Built by the first call: building it loads the machine's root certificates,
    /// milliseconds of a function's start-up that only a judge call needs. A TLS set-up that
    /// fails fails every call, with its reason.
    http: OnceLock<Result<reqwest::Client, String>>,
    /// The key, and the base URL it belongs to.
    credentials: Option<(String, String)>,
    default_base_url: Option<String>,
    slots: Mutex<HashMap<TenantId, (u32, Arc<Semaphore>)>>,
}

/// One chat completion to ask for.
pub(crate) struct Call<'a> {
    pub base_url: &'a str,
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    pub timeout: Duration,
    pub max_retries: u32,
    pub max_concurrency: u32,
    /// No attempt starts, and no backoff is slept, past this.
    pub deadline: Instant,
}

/// A completion's text and the tokens it used.
#[derive(Debug)]
pub(crate) struct Answer {
    pub content: String,
    pub usage: Usage,
}

/// Why a call gave no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    #[error("the provider did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the provider answered {status}: {detail}")]
    Status { status: u16, detail: String },
    #[error("the provider could not be reached: {0}")]
    Transport(String),
    #[error("the provider's response is not a chat completion: {0}")]
    Malformed(String),
    #[error("the provider's response is larger than {0} bytes")]
    TooLarge(usize),
    #[error("gave up at the deadline after: {0}")]
    Deadline(Box<CallError>),
    #[error("no time was left before the deadline")]
    NoTime,
}

/// What one call cost, whatever its result: every attempt the provider answered is billed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Spent {
    pub calls: u32,
    pub usage: Usage,
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<UsageBody>,
}

#[derive(Deserialize)]
struct Choice {
    message: MessageBody,
}

#[derive(Deserialize)]
struct MessageBody {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct UsageBody {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

enum Attempt {
    Answer(Answer),
    /// Worth another try, after the provider's `Retry-After` if it gave one.
    Retry(CallError, Option<Duration>),
    Fail(CallError),
}

impl Provider {
    /// A provider at `default_base_url` (for tenants without a `base_url` of their own),
    /// authenticating there with `api_key` (none for a local server). Calls to any other base
    /// URL carry no key.
    pub fn new(api_key: Option<String>, default_base_url: Option<String>) -> Self {
        let default_base_url = default_base_url.filter(|u| !u.is_empty());
        let credentials = api_key
            .filter(|k| !k.is_empty())
            .zip(default_base_url.clone());
        Self {
            http: OnceLock::new(),
            credentials,
            default_base_url,
            slots: Mutex::default(),
        }
    }

    /// The deployment's provider: `AGENTRL_JUDGE_API_KEY` (on AWS resolved from Secrets
    /// Manager by the template) and `AGENTRL_JUDGE_BASE_URL`, both optional.
    pub fn from_env() -> Self {
        Self::new(
            std::env::var("AGENTRL_JUDGE_API_KEY").ok(),
            std::env::var("AGENTRL_JUDGE_BASE_URL").ok(),
        )
    }

    fn http(&self) -> Result<&reqwest::Client, CallError> {
        self.http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(5))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("setting up TLS: {e}"))
            })
            .as_ref()
            .map_err(|why| CallError::Transport(why.clone()))
    }

    /// The base URL a tenant's judges call: its own, else the deployment's.
    pub(crate) fn base_url<'a>(&'a self, tenant_url: Option<&'a str>) -> Option<&'a str> {
        tenant_url.or(self.default_base_url.as_deref())
    }

    fn slots(&self, tenant: &TenantId, size: u32) -> Arc<Semaphore> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let entry = slots
            .entry(tenant.clone())
            .or_insert_with(|| (size, Arc::new(Semaphore::new(size as usize))));
        // A changed cap takes effect for the calls that start after the change.
        if entry.0 != size {
            *entry = (size, Arc::new(Semaphore::new(size as usize)));
        }
        entry.1.clone()
    }

    /// Asks for one completion, retrying as the module docs say.
    pub(crate) async fn complete(
        &self,
        tenant: &TenantId,
        call: &Call<'_>,
    ) -> (Result<Answer, CallError>, Spent) {
        let mut spent = Spent::default();
        let slots = self.slots(tenant, call.max_concurrency);
        let mut attempt = 0;
        loop {
            if Instant::now() + call.timeout.min(Duration::from_millis(100)) > call.deadline {
                return (Err(CallError::NoTime), spent);
            }
            let result = {
                // The semaphore is never closed, so the permit is always granted.
                let _permit = slots.acquire().await.ok();
                spent.calls += 1;
                self.attempt(call).await
            };
            let (error, retry_after) = match result {
                Attempt::Answer(answer) => {
                    spent.usage = spent.usage.plus(answer.usage);
                    return (Ok(answer), spent);
                }
                Attempt::Fail(e) => return (Err(e), spent),
                Attempt::Retry(e, after) => (e, after),
            };
            if attempt == call.max_retries {
                return (Err(error), spent);
            }
            let wait = match retry_after {
                Some(after) if after > MAX_RETRY_AFTER => return (Err(error), spent),
                Some(after) => after,
                None => backoff(attempt),
            };
            if Instant::now() + wait >= call.deadline {
                return (Err(CallError::Deadline(Box::new(error))), spent);
            }
            tracing::debug!(attempt, wait_ms = wait.as_millis() as u64, error = %error, "retrying a judge call");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn attempt(&self, call: &Call<'_>) -> Attempt {
        let url = format!("{}/chat/completions", call.base_url.trim_end_matches('/'));
        let timeout = call
            .timeout
            .min(call.deadline.saturating_duration_since(Instant::now()));
        let http = match self.http() {
            Ok(http) => http,
            Err(e) => return Attempt::Fail(e),
        };
        let mut request = http.post(url).timeout(timeout).json(&json!({
            "model": call.model,
            "messages": call.messages,
            "temperature": 0,
            "max_tokens": MAX_COMPLETION_TOKENS,
            "response_format": {"type": "json_object"},
        }));
        if let Some((key, _)) = self
            .credentials
            .as_ref()
            .filter(|(_, url)| url.trim_end_matches('/') == call.base_url.trim_end_matches('/'))
        {
            request = request.bearer_auth(key);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) if e.is_timeout() => return Attempt::Retry(CallError::Timeout(timeout), None),
            Err(e) => return Attempt::Retry(CallError::Transport(transport(&e)), None),
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let (body, cut) = match read_capped(response, MAX_REPLY_BYTES).await {
            Ok(read) => read,
            Err(e) if e.is_timeout() => return Attempt::Retry(CallError::Timeout(timeout), None),
            Err(e) => return Attempt::Retry(CallError::Transport(transport(&e)), None),
        };
        if !status.is_success() {
            let error = CallError::Status {
                status: status.as_u16(),
                detail: String::from_utf8_lossy(&body).chars().take(300).collect(),
            };
            return if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
                Attempt::Retry(error, retry_after)
            } else {
                Attempt::Fail(error)
            };
        }
        if cut {
            return Attempt::Fail(CallError::TooLarge(MAX_REPLY_BYTES));
        }
        match serde_json::from_slice::<Completion>(&body) {
            Ok(c) => {
                let usage = c.usage.map_or_else(Usage::default, |u| Usage {
                    prompt_tokens: u.prompt_tokens,
                    completion_tokens: u.completion_tokens,
                });
                let content = c
                    .choices
                    .into_iter()
                    .next()
                    .and_then(|c| c.message.content)
                    .unwrap_or_default();
                Attempt::Answer(Answer { content, usage })
            }
            Err(e) => Attempt::Fail(CallError::Malformed(e.to_string())),
        }
    }
}

/// The body of `response`, at most `cap` bytes of it, and whether it was longer: the rest is
/// never read, whatever `Content-Length` says.
async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The error chain of a transport failure in one line (reqwest's top level says little).
fn transport(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// Full-jitter exponential backoff before retry `attempt + 1`.
fn backoff(attempt: u32) -> Duration {
    let cap = BASE_BACKOFF
        .saturating_mul(1 << attempt.min(16))
        .min(MAX_BACKOFF);
    let ms = rand::rng().random_range(0..=cap.as_millis() as u64);
    Duration::from_millis(ms)
}

/// `Retry-After` as delta-seconds or an HTTP date (RFC 9110 §10.2.3).
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0 "), Some(Duration::ZERO));
        let later = SystemTime::now() + Duration::from_secs(30);
        let parsed = parse_retry_after(&httpdate::fmt_http_date(later)).expect("a date");
        assert!(parsed > Duration::from_secs(28) && parsed <= Duration::from_secs(30));
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&past), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn backoff_is_jittered_below_a_doubling_cap() {
        for attempt in 0..10 {
            let cap = BASE_BACKOFF.saturating_mul(1 << attempt).min(MAX_BACKOFF);
            for _ in 0..50 {
                assert!(backoff(attempt) <= cap);
            }
        }
        let draws: std::collections::BTreeSet<_> = (0..50).map(|_| backoff(4)).collect();
        assert!(draws.len() > 10, "jittered, not fixed: {draws:?}");
    }
}
