//! RFC 9457 problem details: every error response of the API.

use agentrl_core::FieldError;
use agentrl_store::StoreError;
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response (`application/problem+json`).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Problem {
    /// A URI naming the problem type; `about:blank` when the status says it all.
    #[serde(rename = "type")]
    pub kind: String,
    /// The HTTP status code.
    pub status: u16,
    /// A short summary of the problem type.
    pub title: String,
    /// What went wrong with this request.
    pub detail: String,
    /// The request field at fault (a dotted JSON path), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Extension members of this problem type (RFC 9457 §3.2), e.g. the numbers behind a
    /// refused promotion.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub extensions: serde_json::Map<String, serde_json::Value>,
}

/// An error a handler returns; rendered as [`Problem`].
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    status: StatusCode,
    detail: String,
    field: Option<String>,
    extensions: serde_json::Map<String, serde_json::Value>,
}

impl ApiError {
    /// An error with `status` and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            field: None,
            extensions: serde_json::Map::new(),
        }
    }

    /// 400 about `field`.
    pub fn invalid(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail).with_field(field)
    }

    /// 404: missing, or another tenant's (the two are indistinguishable by design).
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("{what} not found"))
    }

    /// 409.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    /// 500: the detail stays in the logs, the client gets a generic message.
    pub fn internal(err: &(dyn std::error::Error + 'static)) -> Self {
        tracing::error!(error = %DisplayChain(err), "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server failed to handle the request; it was logged",
        )
    }

    /// Names the field at fault.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Adds the extension member `name` (it must not be one of the standard members).
    pub fn with_extension(mut self, name: &str, value: serde_json::Value) -> Self {
        self.extensions.insert(name.to_owned(), value);
        self
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The problem body.
    pub fn problem(&self) -> Problem {
        Problem {
            kind: "about:blank".to_owned(),
            status: self.status.as_u16(),
            title: self.status.canonical_reason().unwrap_or("Error").to_owned(),
            detail: self.detail.clone(),
            field: self.field.clone(),
            extensions: self.extensions.clone(),
        }
    }
}

struct DisplayChain<'a>(&'a (dyn std::error::Error + 'static));

impl std::fmt::Display for DisplayChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.problem())).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        response
    }
}

impl ApiError {
    /// The answer to a failed enqueue of a request: a message the queue refuses (over its
    /// size limit) is the client's 413; anything else as [`From<StoreError>`].
    pub fn from_enqueue(err: StoreError) -> Self {
        match err {
            StoreError::Invalid(reason) => Self::new(StatusCode::PAYLOAD_TOO_LARGE, reason),
            other => other.into(),
        }
    }

    /// The answer to a failed page query: the store refuses a page request only for its
    /// cursor (one it did not issue, or one of another query), so that is the client's 400
    /// on `cursor`; anything else as [`From<StoreError>`].
    pub fn from_page_query(err: StoreError) -> Self {
        match err {
            StoreError::Invalid(reason) => Self::invalid("cursor", reason),
            other => other.into(),
        }
    }
}

/// 400 naming the field: input that breaks a rule of the domain.
impl From<FieldError> for ApiError {
    fn from(err: FieldError) -> Self {
        Self::invalid(err.field, err.reason)
    }
}

/// A store refusal (a transaction past the store's write limit, an item past its size, a key
/// it cannot hold) is the server's failure, logged with its reason: the request was validated
/// before it reached the store. The two refusals a client causes are mapped where they
/// happen: [`ApiError::from_enqueue`] and [`ApiError::from_page_query`].
impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::ConditionFailed { .. } | StoreError::Conflict => {
                Self::conflict("a concurrent request changed the resource; retry")
            }
            StoreError::Invalid(_) => Self::internal(&err),
            StoreError::Backend(e) => Self::internal(e.as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_rfc9457_with_the_field() {
        let p = ApiError::invalid("task.description", "must not be empty").problem();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["status"], 400);
        assert_eq!(v["title"], "Bad Request");
        assert_eq!(v["type"], "about:blank");
        assert_eq!(v["field"], "task.description");
        let r = ApiError::not_found("budget").into_response();
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
    }

    #[test]
    fn a_store_refusal_is_the_servers_unless_the_client_caused_it() {
        let refusal = || StoreError::Invalid("transaction of 101 writes (at most 100)".into());
        let stored = ApiError::from(refusal());
        assert_eq!(stored.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            !stored.problem().detail.contains("101"),
            "the reason is logged, not told"
        );
        assert_eq!(
            ApiError::from_enqueue(refusal()).status,
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let page = ApiError::from_page_query(refusal());
        assert_eq!(
            (page.status, page.field.as_deref()),
            (StatusCode::BAD_REQUEST, Some("cursor"))
        );
    }
}
