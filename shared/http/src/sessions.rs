//! Console sessions: the web console's sign-in exchanges a tenant's API key for a session
//! cookie, so the key never sits in the browser's storage where a script could read it.
//!
//! The cookie (`agentrl_session`) is `HttpOnly`, `SameSite=Strict`, scoped to `/`, and
//! `Secure` when the request came over TLS (`X-Forwarded-Proto: https` from the proxy in
//! front). The API accepts it like a bearer key, and on every state-changing call (any method
//! but GET, HEAD and OPTIONS) also asks for the session's CSRF token in `X-CSRF-Token`: a
//! cross-site form can carry the cookie (were `SameSite` ever relaxed) but not a header, and
//! cannot read the token.
//!
//! Layout: `#system#console-session` / `{sha256 hex of the cookie}` → the tenant, the CSRF
//! token and the expiry, with the table's TTL set to the expiry (a key starting with `#`
//! cannot be a tenant's). Only the digest of the cookie is stored: a copy of the table signs
//! no one in.

use std::time::Duration;

use agentrl_core::TenantId;
use agentrl_store::{
    StoreError,
    clock::now_ms,
    ports::{Condition, Key, Put, Table, Write, encode},
};
use axum::{
    Json,
    extract::State,
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;

use crate::{ApiError, Auth, Tenant, ValidJson};

/// The cookie's name.
pub const COOKIE: &str = "agentrl_session";
/// The header carrying the session's CSRF token.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// How long a session lasts from sign-in.
pub const SESSION_FOR: Duration = Duration::from_secs(12 * 3600);

const SESSION_PK: &str = "#system#console-session";

/// The sessions in the table.
#[derive(Clone)]
pub struct Sessions {
    table: Arc<dyn Table>,
}

/// A session as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    tenant: String,
    csrf_token: String,
    expires_at_ms: u64,
}

/// A signed-in session, as the console reads it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = ConsoleSession)]
pub struct SessionView {
    /// The tenant the session acts as.
    pub tenant: String,
    /// Send it as `X-CSRF-Token` on every state-changing call.
    pub csrf_token: String,
    /// When the session ends (epoch ms).
    pub expires_at_ms: u64,
}

/// The sign-in body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ConsoleSignIn)]
pub struct SignIn {
    /// The tenant's API key.
    #[schema(min_length = 1, max_length = 512)]
    pub api_key: String,
}

/// Why a session does not authenticate a request.
pub(crate) enum Refusal {
    /// No such session, or it expired: sign in again.
    Unknown,
    /// A state-changing call without the session's CSRF token.
    Csrf,
}

fn random_hex() -> String {
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    hex(&secret)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn key(cookie: &str) -> Key {
    Key::new(SESSION_PK, hex(&Sha256::digest(cookie.as_bytes())))
}

/// Equality that reads every byte of equal-length strings whatever the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && std::hint::black_box(
            a.bytes()
                .zip(b.bytes())
                .fold(0u8, |acc, (x, y)| acc | (x ^ y)),
        ) == 0
}

impl Sessions {
    /// The sessions in `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self { table }
    }

    /// Opens a session of `tenant`: the cookie's value and what the console reads.
    async fn open(&self, tenant: &TenantId) -> Result<(String, SessionView), StoreError> {
        let cookie = random_hex();
        let expires_at_ms = now_ms().saturating_add(
            u64::try_from(SESSION_FOR.as_millis()).expect("twelve hours fit in u64 ms"),
        );
        let record = Record {
            tenant: tenant.to_string(),
            csrf_token: random_hex(),
            expires_at_ms,
        };
        self.table
            .transact(vec![Write::Put(Put {
                key: key(&cookie),
                doc: encode(&record)?,
                expires_at: Some(expires_at_ms / 1000 + 1),
                condition: Condition::Absent,
            })])
            .await?;
        Ok((cookie, view(record)))
    }

    async fn live(&self, cookie: &str) -> Result<Option<Record>, StoreError> {
        let Some(item) = self.table.get(&key(cookie)).await? else {
            return Ok(None);
        };
        let (record, _) = item.decode::<Record>()?;
        Ok((record.expires_at_ms > now_ms()).then_some(record))
    }

    /// The tenant of the session `cookie` names, for a request of `method` whose headers
    /// are `headers` (the CSRF token is checked on state-changing methods).
    pub(crate) async fn tenant(
        &self,
        cookie: &str,
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<Result<TenantId, Refusal>, StoreError> {
        let Some(record) = self.live(cookie).await? else {
            return Ok(Err(Refusal::Unknown));
        };
        let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        let presented = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        if !safe && !presented.is_some_and(|p| same(p, &record.csrf_token)) {
            return Ok(Err(Refusal::Csrf));
        }
        Ok(TenantId::parse(&record.tenant).map_err(|_| Refusal::Unknown))
    }

    async fn close(&self, cookie: &str) -> Result<(), StoreError> {
        self.table
            .transact(vec![Write::Delete {
                key: key(cookie),
                condition: Condition::None,
            }])
            .await
    }
}

fn view(record: Record) -> SessionView {
    SessionView {
        tenant: record.tenant,
        csrf_token: record.csrf_token,
        expires_at_ms: record.expires_at_ms,
    }
}

/// The value of the session cookie among the request's cookies.
pub(crate) fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE && !value.is_empty()).then_some(value)
        })
}

/// Whether the client reached us over TLS (the proxy in front says so).
fn over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
}

fn set_cookie(value: &str, max_age_s: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/; Max-Age={max_age_s}; HttpOnly; SameSite=Strict{secure}"
    ))
    .expect("hex, digits and attribute names are valid header bytes")
}

/// What the sign-in route needs: how keys are checked, and where sessions go.
#[derive(Clone)]
pub(crate) struct SignInState {
    pub auth: Auth,
    pub sessions: Sessions,
}

/// Sign in to the console: a tenant's API key for a session cookie.
#[utoipa::path(post, path = "/v1/console/session", tag = "console", security(()),
    request_body = SignIn,
    responses(
        (status = 201, description = "Signed in: the cookie is set (HttpOnly, SameSite=Strict, Secure over TLS)", body = SessionView,
         headers(("set-cookie" = String, description = "agentrl_session=…"))),
        (status = 400, description = "Invalid body (the field is named)", body = crate::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not a tenant's API key", body = crate::Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn sign_in(
    State(state): State<SignInState>,
    headers: HeaderMap,
    ValidJson(body): ValidJson<SignIn>,
) -> Result<Response, ApiError> {
    let Some(tenant) = state.auth.tenant_of_key(&body.api_key).await? else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "api_key: not a tenant's API key",
        ));
    };
    let (cookie, view) = state.sessions.open(&tenant).await?;
    let max_age = SESSION_FOR.as_secs();
    let mut response = (StatusCode::CREATED, Json(view)).into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(&cookie, max_age, over_tls(&headers)),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

fn no_session() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "no console session: sign in with POST /v1/console/session",
    )
}

/// The console session of this request's cookie (the CSRF token again, after a reload).
#[utoipa::path(get, path = "/v1/console/session", tag = "console",
    responses(
        (status = 200, description = "The session", body = SessionView),
        (status = 401, description = "No live session cookie", body = crate::Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(sessions): State<Sessions>,
    _signed_in: Tenant,
    headers: HeaderMap,
) -> Result<Json<SessionView>, ApiError> {
    let cookie = cookie(&headers).ok_or_else(no_session)?;
    let record = sessions.live(cookie).await?.ok_or_else(no_session)?;
    Ok(Json(view(record)))
}

/// Sign out: the session ends and the cookie is cleared.
#[utoipa::path(delete, path = "/v1/console/session", tag = "console",
    responses(
        (status = 204, description = "Signed out"),
        (status = 401, description = "No live session cookie", body = crate::Problem, content_type = "application/problem+json"),
        (status = 403, description = "The session's X-CSRF-Token is missing", body = crate::Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn sign_out(
    State(sessions): State<Sessions>,
    _signed_in: Tenant,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let cookie = cookie(&headers).ok_or_else(no_session)?;
    sessions.close(cookie).await?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, set_cookie("", 0, over_tls(&headers)));
    Ok(response)
}

/// The problem a refused session gets.
pub(crate) fn refused(refusal: &Refusal) -> Response {
    match refusal {
        Refusal::Unknown => no_session().into_response(),
        Refusal::Csrf => ApiError::new(
            StatusCode::FORBIDDEN,
            "X-CSRF-Token: a call signed in by the console's session cookie that changes \
             state must carry the session's CSRF token",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        h
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; agentrl_session=abc; b=2")]);
        assert_eq!(cookie(&h), Some("abc"));
        let h = headers(&[("cookie", "a=1"), ("cookie", "agentrl_session=xyz")]);
        assert_eq!(cookie(&h), Some("xyz"));
        for none in [
            "agentrl_session=",
            "agentrl_sessionx=abc",
            "xagentrl_session=abc",
        ] {
            assert_eq!(cookie(&headers(&[("cookie", none)])), None, "{none}");
        }
        assert_eq!(cookie(&HeaderMap::new()), None);
    }

    #[test]
    fn the_cookie_carries_its_flags_and_secure_only_over_tls() {
        let plain = set_cookie("abc", 60, false);
        assert_eq!(
            plain.to_str().unwrap(),
            "agentrl_session=abc; Path=/; Max-Age=60; HttpOnly; SameSite=Strict"
        );
        assert!(
            set_cookie("abc", 60, true)
                .to_str()
                .unwrap()
                .ends_with("; Secure")
        );
        assert!(over_tls(&headers(&[("x-forwarded-proto", "HTTPS")])));
        assert!(!over_tls(&headers(&[("x-forwarded-proto", "http")])));
        assert!(!over_tls(&HeaderMap::new()));
    }

    #[test]
    fn tokens_compare_equal_only_in_full() {
        assert!(same("abcd", "abcd"));
        assert!(!same("abcd", "abce"));
        assert!(!same("abcd", "abc"));
        assert!(!same("", "a"));
    }
}
