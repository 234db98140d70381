//! Bearer JWTs of an OIDC provider, verified in process: what API Gateway's JWT authorizer
//! does on AWS, for `agentrl serve --oidc-issuer` (so the console's OIDC sign-in can be run
//! and tested locally against the same kind of token).
//!
//! A token is accepted when it is RS256, signed by a key of the issuer's JWKS (found through
//! `{issuer}/.well-known/openid-configuration`), its `iss` is the issuer, its `aud` holds the
//! audience (or, with no `aud`, its `client_id` is the audience, as API Gateway accepts
//! access tokens), it has not expired and is not early; then its `tenant_id` claim, the claim
//! the Lambda functions read, names the tenant.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agentrl_core::TenantId;
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation, decode, decode_header,
    jwk::{Jwk, JwkSet},
};
use serde::Deserialize;
use tokio::sync::Mutex;

/// The claim that names the tenant, here and behind API Gateway.
pub const TENANT_CLAIM: &str = "tenant_id";

/// Longest token considered (bytes): anything longer is refused unread.
const MAX_TOKEN_LEN: usize = 16 * 1024;

/// How soon an unknown key id may fetch the JWKS again, after a fetch that worked or not: a
/// stream of forged key ids, or of tokens while the provider is down, cannot make every
/// request a fetch from the provider.
const REFETCH_AFTER: Duration = Duration::from_secs(30);

/// Clock skew allowed on `exp` and `nbf` (seconds).
const LEEWAY_S: u64 = 60;

/// The issuer and audience tokens must have, and the issuer's keys once fetched.
#[derive(Clone)]
pub struct OidcVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    audience: String,
    client: reqwest::Client,
    keys: Mutex<Held>,
}

/// The issuer's keys as last fetched, and when a fetch was last tried.
#[derive(Default)]
struct Held {
    set: Option<JwkSet>,
    tried: Option<Instant>,
}

/// Why a configuration is refused.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The issuer is not an https URL (or an http one on a loopback address).
    #[error(
        "the OIDC issuer {0:?} must be an https URL (http only on 127.0.0.1, ::1 or localhost)"
    )]
    Issuer(String),
    /// An empty audience.
    #[error("the OIDC audience must not be empty")]
    Audience,
    /// The HTTP client could not be built.
    #[error("building the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

/// The claims read; the rest of the token is ignored.
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    tenant_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl OidcVerifier {
    /// A verifier of tokens from `issuer` for `audience`; the keys are fetched on first use.
    ///
    /// # Errors
    /// When the issuer is not https (http only on a loopback host) or the audience is empty.
    pub fn new(issuer: &str, audience: &str) -> Result<Self, OidcError> {
        if !is_secure_url(issuer) {
            return Err(OidcError::Issuer(issuer.to_owned()));
        }
        if audience.trim().is_empty() {
            return Err(OidcError::Audience);
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            inner: Arc::new(Inner {
                issuer: issuer.to_owned(),
                audience: audience.to_owned(),
                client,
                keys: Mutex::new(Held::default()),
            }),
        })
    }

    /// The tenant of a valid token; none for anything else (the reason is logged at debug).
    pub async fn tenant(&self, token: &str) -> Option<TenantId> {
        match self.verify(token).await {
            Ok(tenant) => Some(tenant),
            Err(reason) => {
                tracing::debug!(%reason, "bearer JWT refused");
                None
            }
        }
    }

    async fn verify(&self, token: &str) -> Result<TenantId, String> {
        if token.len() > MAX_TOKEN_LEN {
            return Err("token too long".into());
        }
        let header = decode_header(token).map_err(|e| format!("header: {e}"))?;
        if header.alg != Algorithm::RS256 {
            return Err(format!("algorithm {:?} (only RS256)", header.alg));
        }
        let jwk = self.key(header.kid.as_deref()).await?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("key: {e}"))?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.inner.issuer]);
        validation.set_required_spec_claims(&["exp", "iss"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_S;
        // `aud` or `client_id`, as API Gateway's authorizer accepts: checked below.
        validation.validate_aud = false;
        let claims = decode::<Claims>(token, &key, &validation)
            .map_err(|e| format!("token: {e}"))?
            .claims;
        let audience = &self.inner.audience;
        let for_us = match &claims.aud {
            Some(Audience::One(aud)) => aud == audience,
            Some(Audience::Many(auds)) => auds.iter().any(|a| a == audience),
            None => claims.client_id.as_deref() == Some(audience),
        };
        if !for_us {
            return Err("audience".into());
        }
        let claim = claims.tenant_id.ok_or("no tenant_id claim")?;
        TenantId::parse(&claim).map_err(|_| "tenant_id is not a tenant id".into())
    }

    /// The issuer's key `kid` (the only key when the token names none), fetching the JWKS
    /// when the key is not held and the last try is old enough. One fetch at a time: the
    /// lock is held across it, so requests arriving meanwhile wait for its keys.
    async fn key(&self, kid: Option<&str>) -> Result<Jwk, String> {
        let mut held = self.inner.keys.lock().await;
        if let Some(jwk) = held.set.as_ref().and_then(|set| pick(set, kid)) {
            return Ok(jwk);
        }
        if held.tried.is_some_and(|at| at.elapsed() < REFETCH_AFTER) {
            return Err("unknown key id (keys fetched less than 30 s ago)".into());
        }
        held.tried = Some(Instant::now());
        let set = self.fetch_keys().await?;
        let found = pick(&set, kid);
        held.set = Some(set);
        found.ok_or_else(|| "unknown key id".into())
    }

    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let issuer = self.inner.issuer.trim_end_matches('/');
        let discovery: Discovery = self
            .get_json(&format!("{issuer}/.well-known/openid-configuration"))
            .await?;
        // OpenID Connect Discovery §4.3: the document must name the issuer it was asked for.
        if discovery.issuer != self.inner.issuer {
            return Err(format!("discovery names issuer {:?}", discovery.issuer));
        }
        if !is_secure_url(&discovery.jwks_uri) {
            return Err(format!("jwks_uri {:?} is not https", discovery.jwks_uri));
        }
        self.get_json(&discovery.jwks_uri).await
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let response = self
            .inner
            .client
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| format!("fetching {url}: {e}"))?;
        response
            .json()
            .await
            .map_err(|e| format!("reading {url}: {e}"))
    }
}

/// The key named `kid`, or the set's only key when the token names none.
fn pick(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

/// An https URL, or an http one on a loopback host (a provider run beside `agentrl serve`).
pub fn is_secure_url(url: &str) -> bool {
    secure_origin(url).is_some()
}

/// The origin (`scheme://host[:port]`, ASCII: a host in punycode) of an https URL, or of an
/// http one on a loopback host; none for anything else. Safe in a header: the URL is parsed
/// and the origin written anew, never copied.
pub fn secure_origin(url: &str) -> Option<String> {
    let u = reqwest::Url::parse(url).ok()?;
    let allowed = match u.scheme() {
        "https" => u.host().is_some(),
        "http" => matches!(u.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")),
        _ => false,
    };
    allowed.then(|| u.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers_are_https_or_loopback_http() {
        for ok in [
            "https://idp.example.com",
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
            "http://127.0.0.1:9000",
            "http://localhost:9000/realms/x",
            "http://[::1]:9000",
        ] {
            assert!(OidcVerifier::new(ok, "aud").is_ok(), "{ok}");
        }
        for refused in [
            "http://idp.example.com",
            "http://10.0.0.1",
            "ftp://idp.example.com",
            "idp.example.com",
            "",
        ] {
            assert!(OidcVerifier::new(refused, "aud").is_err(), "{refused}");
        }
        assert!(OidcVerifier::new("https://idp.example.com", " ").is_err());
    }

    #[test]
    fn an_origin_is_written_anew() {
        assert_eq!(
            secure_origin("https://Auth.Example.com:443/oauth2/token?x=1#f").as_deref(),
            Some("https://auth.example.com")
        );
        assert_eq!(
            secure_origin("http://127.0.0.1:9000/token").as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(
            secure_origin("https://bücher.example/token").as_deref(),
            Some("https://xn--bcher-kva.example")
        );
        for refused in [
            "https://a.example\r\nSet-Cookie: x=1",
            "https://a.example; script-src *",
            "javascript:alert(1)",
            "data:text/plain,x",
            "http://idp.example.com/token",
        ] {
            let origin = secure_origin(refused);
            assert!(
                origin
                    .as_deref()
                    .is_none_or(|o| !o.contains([';', ' ', '\r', '\n'])),
                "{refused}: {origin:?}"
            );
        }
        assert_eq!(secure_origin("javascript:alert(1)"), None);
        assert_eq!(secure_origin("http://idp.example.com/token"), None);
    }
}
