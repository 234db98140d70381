//! Authentication: the tenant comes from the caller's identity, never from the request body.
//!
//! Locally the identity is an API key (`Authorization: Bearer KEY`); in Lambda it is the
//! `tenant_id` claim that API Gateway's JWT authorizer verified and put in the request
//! context, which a client cannot set, or, where no authorizer stands in front (the gateway's
//! function URL), a tenant API key an operator created ([`crate::api_keys`]). `agentrl serve
//! --oidc-issuer` also takes the bearer JWTs the authorizer would, verified in process
//! ([`crate::oidc`]).

use std::sync::Arc;

use agentrl_core::TenantId;
use axum::{
    extract::{FromRequestParts, Request, State},
    http::{HeaderValue, StatusCode, header, request::Parts},
    middleware::Next,
    response::{IntoResponse, Response},
};
use lambda_http::{RequestExt, request::RequestContext};
use sha2::{Digest, Sha256};

use crate::ApiError;
use crate::api_keys::ApiKeys;
use crate::oidc::{OidcVerifier, TENANT_CLAIM};
use crate::sessions::{self, Sessions};
use agentrl_store::StoreError;

/// How callers are authenticated: by key or JWT claim, and, where the console is served, by
/// its session cookie and, where an OIDC issuer is set, by the issuer's bearer JWTs.
#[derive(Clone)]
pub struct Auth {
    keys: Keys,
    sessions: Option<Sessions>,
    oidc: Option<OidcVerifier>,
}

/// Where a caller's key or claim is checked.
#[derive(Clone)]
enum Keys {
    /// Static API keys, each mapped to a tenant (the local stack). Keys are held hashed.
    Fixed(Arc<Vec<([u8; 32], TenantId)>>),
    /// The `tenant_id` claim of API Gateway's JWT authorizer (Lambda).
    JwtClaim,
    /// Tenant API keys stored hashed in the table (`agentrl keys`), and the static keys.
    Stored {
        /// The stored keys.
        stored: ApiKeys,
        /// Static keys tried first (none on AWS).
        fixed: Arc<Vec<([u8; 32], TenantId)>>,
    },
}

impl Auth {
    /// API-key authentication from `(tenant, key)` pairs.
    pub fn api_keys(pairs: impl IntoIterator<Item = (TenantId, String)>) -> Self {
        Self::of(Keys::Fixed(Arc::new(
            pairs
                .into_iter()
                .map(|(tenant, key)| (digest(&key), tenant))
                .collect(),
        )))
    }

    /// The `tenant_id` claim of API Gateway's JWT authorizer.
    pub fn jwt_claim() -> Self {
        Self::of(Keys::JwtClaim)
    }

    fn of(keys: Keys) -> Self {
        Self {
            keys,
            sessions: None,
            oidc: None,
        }
    }

    /// The same static keys, and the tenant API keys stored in the table beside them.
    #[must_use]
    pub fn with_stored(self, stored: ApiKeys) -> Self {
        let fixed = match self.keys {
            Keys::Fixed(fixed) | Keys::Stored { fixed, .. } => fixed,
            Keys::JwtClaim => Arc::default(),
        };
        Self {
            keys: Keys::Stored { stored, fixed },
            ..self
        }
    }

    /// The same, and the console's session cookies (signed in with a key) beside them.
    #[must_use]
    pub fn with_sessions(self, sessions: Sessions) -> Self {
        Self {
            sessions: Some(sessions),
            ..self
        }
    }

    /// The same, and bearer JWTs of an OIDC issuer beside them: a bearer value shaped like a
    /// JWT (three dot-separated parts, which no API key is) is judged by `verifier` alone.
    #[must_use]
    pub fn with_oidc(self, verifier: OidcVerifier) -> Self {
        Self {
            oidc: Some(verifier),
            ..self
        }
    }

    /// The console's sessions, where they are on.
    pub(crate) fn sessions(&self) -> Option<&Sessions> {
        self.sessions.as_ref()
    }

    /// The tenant whose API key `key` is; none under JWT claims, where the identity provider
    /// signs people in.
    pub(crate) async fn tenant_of_key(&self, key: &str) -> Result<Option<TenantId>, StoreError> {
        match &self.keys {
            Keys::Fixed(keys) => Ok(fixed_tenant(keys, key)),
            Keys::Stored { stored, fixed } => match fixed_tenant(fixed, key) {
                Some(t) => Ok(Some(t)),
                None => stored.tenant(key).await,
            },
            Keys::JwtClaim => Ok(None),
        }
    }

    /// Who the request says it is: a tenant (or none) known at once, or a key or token to
    /// look up.
    fn identify(&self, req: &Request) -> Identity {
        if let (Some(verifier), Some(token)) = (&self.oidc, bearer(req).filter(|t| is_jwt(t))) {
            return Identity::Jwt(verifier.clone(), token.to_owned());
        }
        match &self.keys {
            Keys::Fixed(keys) => {
                Identity::Known(bearer(req).and_then(|key| fixed_tenant(keys, key)))
            }
            Keys::Stored { stored, fixed } => match bearer(req) {
                Some(key) => match fixed_tenant(fixed, key) {
                    Some(t) => Identity::Known(Some(t)),
                    None => Identity::Stored(stored.clone(), key.to_owned()),
                },
                None => Identity::Known(None),
            },
            Keys::JwtClaim => Identity::Known(jwt_tenant(req)),
        }
    }
}

/// What a request's credentials come to before any store is read.
enum Identity {
    Known(Option<TenantId>),
    /// A bearer key that is not a static one: the stored keys decide.
    Stored(ApiKeys, String),
    /// A bearer JWT: the OIDC issuer's keys decide.
    Jwt(OidcVerifier, String),
}

impl Identity {
    async fn tenant(self) -> Result<Option<TenantId>, StoreError> {
        match self {
            Self::Known(tenant) => Ok(tenant),
            Self::Stored(keys, key) => keys.tenant(&key).await,
            Self::Jwt(verifier, token) => Ok(verifier.tenant(&token).await),
        }
    }
}

/// The key of `Authorization: Bearer KEY`.
fn bearer(req: &Request) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, key) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
}

/// A compact JWS: three base64url parts (an API key has no dot).
fn is_jwt(value: &str) -> bool {
    value.split('.').count() == 3
}

fn fixed_tenant(keys: &[([u8; 32], TenantId)], key: &str) -> Option<TenantId> {
    let presented = digest(key);
    // Every stored digest is compared in full, in constant time: how long this takes says
    // nothing about which key matched or how much of one did.
    keys.iter()
        .fold(None, |found, (stored, tenant)| {
            if same_digest(stored, &presented) {
                Some(tenant)
            } else {
                found
            }
        })
        .cloned()
}

fn jwt_tenant(req: &Request) -> Option<TenantId> {
    // Other request-context variants exist when other lambda_http features are on.
    #[allow(irrefutable_let_patterns)]
    let RequestContext::ApiGatewayV2(ctx) = req.request_context_ref()? else {
        return None;
    };
    let claims = &ctx.authorizer.as_ref()?.jwt.as_ref()?.claims;
    TenantId::parse(claims.get(TENANT_CLAIM)?).ok()
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Equality of two digests that reads every byte whatever the first difference.
fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // The optimiser may not turn the fold into an early exit on a value it cannot see.
    std::hint::black_box(difference) == 0
}

/// The authenticated tenant of the request (an extractor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub TenantId);

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Tenant>()
            .cloned()
            .ok_or_else(unauthorized)
    }
}

fn unauthorized() -> Response {
    let mut response = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "missing or invalid credentials (Authorization: Bearer ...)",
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Middleware: resolves the tenant or answers 401 (403 for a session call without its CSRF
/// token). A request with an `Authorization` header is judged by it alone; one without may
/// carry a console session cookie.
pub(crate) async fn authenticate(
    State(auth): State<Auth>,
    mut req: Request,
    next: Next,
) -> Response {
    let session = match &auth.sessions {
        Some(sessions) if !req.headers().contains_key(header::AUTHORIZATION) => {
            sessions::cookie(req.headers()).map(|cookie| (sessions, cookie))
        }
        _ => None,
    };
    let tenant = if let Some((sessions, cookie)) = session {
        match sessions.tenant(cookie, req.method(), req.headers()).await {
            Ok(Ok(tenant)) => tenant,
            Ok(Err(refusal)) => return sessions::refused(&refusal),
            Err(e) => return ApiError::from(e).into_response(),
        }
    } else {
        match auth.identify(&req).tenant().await {
            Ok(Some(tenant)) => tenant,
            Ok(None) => return unauthorized(),
            Err(e) => return ApiError::from(e).into_response(),
        }
    };
    tracing::Span::current().record("tenant", tenant.as_str());
    req.extensions_mut().insert(Tenant(tenant));
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn tenant(name: &str) -> TenantId {
        TenantId::parse(name).unwrap()
    }

    /// The tenant of `req`, for the variants that read no store.
    fn resolve(auth: &Auth, req: &Request) -> Option<TenantId> {
        match auth.identify(req) {
            Identity::Known(tenant) => tenant,
            Identity::Stored(..) | Identity::Jwt(..) => {
                panic!("static keys and JWT claims need no store or issuer")
            }
        }
    }

    fn keys() -> Auth {
        Auth::api_keys([
            (tenant("tenant-a"), "key-a-0123456789".to_owned()),
            (tenant("tenant-b"), "key-b-0123456789".to_owned()),
        ])
    }

    fn with_authorization(value: &[u8]) -> Request {
        axum::http::Request::builder()
            .uri("/v1/budgets")
            .header(
                header::AUTHORIZATION,
                HeaderValue::from_bytes(value).unwrap(),
            )
            .body(Body::empty())
            .unwrap()
    }

    #[test]
    fn api_keys_resolve_their_tenant_and_nothing_else_does() {
        let auth = keys();
        let of = |value: &[u8]| resolve(&auth, &with_authorization(value));
        assert_eq!(of(b"Bearer key-a-0123456789"), Some(tenant("tenant-a")));
        assert_eq!(of(b"bearer key-b-0123456789"), Some(tenant("tenant-b")));
        assert_eq!(of(b"Bearer  key-b-0123456789 "), Some(tenant("tenant-b")));
        for refused in [
            &b"Bearer key-c-0123456789"[..], // unknown
            b"Bearer key-a-012345678",       // a prefix of a key
            b"Bearer key-a-01234567890",     // a key and more
            b"Bearer KEY-A-0123456789",      // keys are case-sensitive
            b"Basic key-a-0123456789",       // another scheme
            b"Bearer",                       // no key
            b"Bearer ",                      // an empty key
            b"key-a-0123456789",             // no scheme
        ] {
            assert_eq!(of(refused), None, "{}", String::from_utf8_lossy(refused));
        }
        let no_header = axum::http::Request::new(Body::empty());
        assert_eq!(resolve(&auth, &no_header), None);
        // Revoking a key is removing it from AGENTRL_API_KEYS: the next start refuses it.
        let revoked = Auth::api_keys([(tenant("tenant-b"), "key-b-0123456789".to_owned())]);
        assert_eq!(
            resolve(&revoked, &with_authorization(b"Bearer key-a-0123456789")),
            None
        );
    }

    #[test]
    fn invalid_utf8_in_the_header_is_refused() {
        let mut value = b"Bearer key-a-".to_vec();
        value.push(0xff);
        assert_eq!(resolve(&keys(), &with_authorization(&value)), None);
    }

    #[test]
    fn digests_compare_equal_only_when_every_byte_is() {
        let a = digest("key-a-0123456789");
        assert!(same_digest(&a, &a));
        for i in [0, 15, 31] {
            let mut b = a;
            b[i] ^= 1;
            assert!(!same_digest(&a, &b), "byte {i}");
        }
    }

    /// An API Gateway HTTP API event decoded by `lambda_http` as the runtime does, with these
    /// JWT claims (`None`: no authorizer at all).
    fn gateway_request(claims: Option<serde_json::Value>) -> Request {
        let mut event = serde_json::json!({
            "version": "2.0",
            "routeKey": "GET /v1/budgets/{id}",
            "rawPath": "/v1/budgets/b-1",
            "rawQueryString": "",
            "headers": {"authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln"},
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "api",
                "http": {"method": "GET", "path": "/v1/budgets/b-1", "protocol": "HTTP/1.1",
                         "sourceIp": "203.0.113.10", "userAgent": "test"},
                "requestId": "r-1",
                "routeKey": "GET /v1/budgets/{id}",
                "stage": "$default",
                "time": "01/Jan/2026:00:00:01 +0000",
                "timeEpoch": 1767225601000u64
            },
            "isBase64Encoded": false
        });
        if let Some(claims) = claims {
            event["requestContext"]["authorizer"] = serde_json::json!({"jwt": {"claims": claims}});
        }
        lambda_http::request::from_str(&event.to_string())
            .unwrap()
            .map(|body| Body::from(body.to_vec()))
    }

    #[test]
    fn the_jwt_tenant_claim_is_required_and_must_be_a_tenant_id() {
        let of = |claims| resolve(&Auth::jwt_claim(), &gateway_request(claims));
        assert_eq!(
            of(Some(
                serde_json::json!({"sub": "u-1", "tenant_id": "tenant-a"})
            )),
            Some(tenant("tenant-a"))
        );
        assert_eq!(of(None), None, "no authorizer");
        assert_eq!(
            of(Some(serde_json::json!({"sub": "u-1"}))),
            None,
            "no claim"
        );
        for malformed in [
            "",
            " ",
            ".",
            "..",
            "../tenant-a",
            "tenant a",
            "tenant-a\n",
            &"t".repeat(200),
        ] {
            assert_eq!(
                of(Some(serde_json::json!({"tenant_id": malformed}))),
                None,
                "{malformed:?}"
            );
        }
        // A bearer key is no identity behind API Gateway, and a request from outside Lambda
        // (no request context) has none either.
        let plain = with_authorization(b"Bearer key-a-0123456789");
        assert_eq!(resolve(&Auth::jwt_claim(), &plain), None);
    }
}
