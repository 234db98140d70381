//! Authentication: the tenant comes from the caller's identity, never from the request body.
//!
//! Locally the identity is an API key (`Authorization: Bearer KEY`); in Lambda it is the
//! `tenant_id` claim that API Gateway's JWT authorizer verified and put in the request
//! context, which a client cannot set.

use std::{collections::HashMap, sync::Arc};

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

/// How callers are authenticated.
#[derive(Clone)]
pub enum Auth {
    /// Static API keys, each mapped to a tenant (the local stack). Keys are held hashed.
    ApiKeys(Arc<HashMap<[u8; 32], TenantId>>),
    /// The `tenant_id` claim of API Gateway's JWT authorizer (Lambda).
    JwtClaim,
}

impl Auth {
    /// API-key authentication from `(tenant, key)` pairs.
    pub fn api_keys(pairs: impl IntoIterator<Item = (TenantId, String)>) -> Self {
        Self::ApiKeys(Arc::new(
            pairs
                .into_iter()
                .map(|(tenant, key)| (digest(&key), tenant))
                .collect(),
        ))
    }

    fn tenant_of(&self, req: &Request) -> Option<TenantId> {
        match self {
            Self::ApiKeys(keys) => {
                let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
                let (scheme, key) = value.split_once(' ')?;
                if !scheme.eq_ignore_ascii_case("bearer") {
                    return None;
                }
                // Looking up a hash keeps the comparison independent of how much of a key matched.
                keys.get(&digest(key.trim())).cloned()
            }
            Self::JwtClaim => {
                // Other request-context variants exist when other lambda_http features are on.
                #[allow(irrefutable_let_patterns)]
                let RequestContext::ApiGatewayV2(ctx) = req.request_context_ref()? else {
                    return None;
                };
                let claims = &ctx.authorizer.as_ref()?.jwt.as_ref()?.claims;
                TenantId::parse(claims.get("tenant_id")?).ok()
            }
        }
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
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

/// Middleware: resolves the tenant or answers 401.
pub(crate) async fn authenticate(
    State(auth): State<Auth>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(tenant) = auth.tenant_of(&req) else {
        return unauthorized();
    };
    tracing::Span::current().record("tenant", tenant.as_str());
    req.extensions_mut().insert(Tenant(tenant));
    next.run(req).await
}
