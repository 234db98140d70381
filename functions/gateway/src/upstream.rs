//! The OpenAI-compatible server a tenant's calls go to, and how its failures reach the
//! caller: as the OpenAI error object an SDK understands, with the problem+json fields
//! beside it.

use std::time::Duration;

use agentrl_core::gateway::GatewayConfig;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The largest JSON answer the gateway reads from an upstream (a whole completion with its
/// token ids and logprobs, `n` choices).
pub(crate) const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;
/// What is read of an upstream's error body (its message is at the start).
pub(crate) const MAX_ERROR_BYTES: usize = 64 * 1024;

/// What to do with a body past its cap.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// A 502 `upstream_too_large` (an answer cut short would be a wrong answer).
    Refuse,
    /// Keep its start (an error's message).
    Cut,
}

/// The body of `response`, read chunk by chunk up to `cap` bytes, so an upstream cannot make
/// the gateway hold an unbounded answer.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
    overflow: Overflow,
) -> Result<bytes::Bytes, OpenAiError> {
    let too_large = || {
        OpenAiError::new(
            StatusCode::BAD_GATEWAY,
            format!("the upstream's answer is larger than {cap} bytes"),
            "upstream_too_large",
        )
    };
    if overflow == Overflow::Refuse && response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| OpenAiError::transport(&e))?
    {
        if body.len() + chunk.len() > cap {
            if overflow == Overflow::Refuse {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk[..cap - body.len()]);
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.into())
}

/// Where calls go when a tenant names no upstream, and the key that goes only there.
#[derive(Clone)]
pub struct Upstream {
    client: reqwest::Client,
    deployment: Option<(String, Key)>,
}

/// What authenticates the gateway to the deployment's upstream.
#[derive(Clone)]
enum Key {
    None,
    /// The deployment's own key.
    Fixed(String),
    /// The caller's own `Authorization`: the upstream is this deployment's model server,
    /// which knows the tenants' keys and serves each tenant its own versions.
    Caller,
}

impl Upstream {
    /// The deployment's upstream `base_url` (its key with it), if it has one.
    ///
    /// # Panics
    /// When the TLS backend cannot start (no usable crypto provider).
    #[must_use]
    pub fn new(base_url: Option<String>, api_key: Option<String>) -> Self {
        let key = api_key.map_or(Key::None, Key::Fixed);
        Self::with(base_url.map(|u| (u, key)))
    }

    /// The deployment's own model server at `base_url` (`agentrl serve`'s, at
    /// `/models/v1`): each call goes with its caller's `Authorization`, so the server knows
    /// whose versions to serve.
    #[must_use]
    pub fn own_models(base_url: String) -> Self {
        Self::with(Some((base_url, Key::Caller)))
    }

    fn with(deployment: Option<(String, Key)>) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            // A redirect could take the call, and the deployment's key, somewhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("the HTTP client starts");
        Self {
            client,
            deployment: deployment.map(|(u, k)| (u.trim_end_matches('/').to_owned(), k)),
        }
    }

    /// [`Upstream::new`] from `AGENTRL_GATEWAY_BASE_URL` and `AGENTRL_GATEWAY_API_KEY`.
    #[must_use]
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self::new(
            var("AGENTRL_GATEWAY_BASE_URL"),
            var("AGENTRL_GATEWAY_API_KEY"),
        )
    }

    /// A `POST` to `path` (`/chat/completions`) of the tenant's upstream, as
    /// [`Upstream::request`] sends it.
    pub(crate) fn post(
        &self,
        config: &GatewayConfig,
        path: &str,
        caller: Option<&HeaderValue>,
    ) -> Result<reqwest::RequestBuilder, OpenAiError> {
        self.request(reqwest::Method::POST, config, path, caller)
    }

    /// A request to `path` of the tenant's upstream: its own URL with no key, or the
    /// deployment's with the deployment's key (or, to the deployment's own model server, the
    /// `caller`'s `Authorization`).
    pub(crate) fn request(
        &self,
        method: reqwest::Method,
        config: &GatewayConfig,
        path: &str,
        caller: Option<&HeaderValue>,
    ) -> Result<reqwest::RequestBuilder, OpenAiError> {
        let (base, key) = match (config.base_url(), &self.deployment) {
            (Some(url), _) => (url, &Key::None),
            (None, Some((url, key))) => (url.as_str(), key),
            (None, None) => {
                return Err(OpenAiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "no upstream: set base_url with PUT /v1/config/gateway",
                    "upstream_unavailable",
                ));
            }
        };
        let request = self
            .client
            .request(method, format!("{base}{path}"))
            .timeout(Duration::from_millis(config.request_timeout_ms));
        Ok(match (key, caller) {
            (Key::Fixed(key), _) => request.bearer_auth(key),
            (Key::Caller, Some(caller)) => request.header(header::AUTHORIZATION, caller.clone()),
            _ => request,
        })
    }
}

/// A failed call, answered as OpenAI answers errors (`{"error": {message, type, code}}`) with
/// RFC 9457's fields beside it: the gateway's errors, and the built-in model server's.
#[derive(Debug)]
pub struct OpenAiError {
    status: StatusCode,
    message: String,
    code: &'static str,
    field: Option<String>,
    retry_after: Option<HeaderValue>,
    /// Asking again cannot help (a spent budget): OpenAI's SDKs read `x-should-retry: false`
    /// and do not retry a 429 that carries it.
    final_answer: bool,
}

impl OpenAiError {
    /// An error of `status` saying `message`, with OpenAI's `code`.
    #[must_use]
    pub fn new(status: StatusCode, message: impl Into<String>, code: &'static str) -> Self {
        Self {
            status,
            message: message.into(),
            code,
            field: None,
            retry_after: None,
            final_answer: false,
        }
    }

    /// The same error, naming the request field (or header) at fault.
    #[must_use]
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The same error, marked as one a retry cannot change.
    pub(crate) fn final_answer(mut self) -> Self {
        self.final_answer = true;
        self
    }

    /// A 400 naming the request field at fault.
    #[must_use]
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message, "invalid_request").with_field(field)
    }

    /// A transport failure: a timeout is a 504, anything else a 502.
    pub(crate) fn transport(e: &reqwest::Error) -> Self {
        if e.is_timeout() {
            Self::new(
                StatusCode::GATEWAY_TIMEOUT,
                "the upstream did not answer within request_timeout_ms",
                "upstream_timeout",
            )
        } else {
            Self::new(
                StatusCode::BAD_GATEWAY,
                format!("the upstream could not be reached: {e}"),
                "upstream_unreachable",
            )
        }
    }

    /// The upstream's own error: its status (429 with its `Retry-After`, 4xx, 5xx) and its
    /// message when it sent one.
    pub(crate) fn upstream(
        status: StatusCode,
        retry_after: Option<HeaderValue>,
        body: &[u8],
    ) -> Self {
        let said = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .or_else(|| v.get("message"))
                    .or_else(|| v.get("detail"))
                    .and_then(|m| m.as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned());
        Self {
            retry_after,
            ..Self::new(
                status,
                format!("the upstream answered {}: {said}", status.as_u16()),
                "upstream_error",
            )
        }
    }

    /// What went wrong, in words.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    fn kind(&self) -> &'static str {
        match self.status.as_u16() {
            400 | 404 | 409 | 422 => "invalid_request_error",
            401 | 403 => "authentication_error",
            429 => "rate_limit_error",
            _ => "api_error",
        }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let title = self.status.canonical_reason().unwrap_or("Error");
        let mut body = json!({
            "error": {"message": self.message, "type": self.kind(), "code": self.code,
                      "param": self.field},
            "type": "about:blank",
            "title": title,
            "status": self.status.as_u16(),
            "detail": self.message,
        });
        if let Some(field) = &self.field {
            body["field"] = json!(field);
        }
        let mut response = (self.status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(after) = self.retry_after {
            headers.insert(header::RETRY_AFTER, after);
        }
        if self.final_answer {
            headers.insert("x-should-retry", HeaderValue::from_static("false"));
        }
        response
    }
}

impl From<agentrl_store::StoreError> for OpenAiError {
    fn from(e: agentrl_store::StoreError) -> Self {
        tracing::error!(error = %e, "gateway store failure");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the gateway's store failed; the call was not sent",
            "store_error",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(body: &'static str, declared: bool) -> reqwest::Response {
        let mut r = axum::http::Response::builder();
        if declared {
            r = r.header(header::CONTENT_LENGTH, body.len());
        }
        reqwest::Response::from(r.body(body).unwrap())
    }

    #[tokio::test]
    async fn bodies_past_their_cap_are_refused_or_cut() {
        for declared in [true, false] {
            let ok = read_capped(response("0123456789", declared), 10, Overflow::Refuse).await;
            assert_eq!(ok.unwrap(), "0123456789");
            let refused =
                read_capped(response("0123456789!", declared), 10, Overflow::Refuse).await;
            assert_eq!(refused.unwrap_err().code, "upstream_too_large");
            let cut = read_capped(response("0123456789!", declared), 4, Overflow::Cut).await;
            assert_eq!(cut.unwrap(), "0123");
        }
    }
}
