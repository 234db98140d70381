//! Bearer JWTs under `Auth::with_oidc`, end to end: a provider on 127.0.0.1 serves its
//! discovery document and JWKS, tokens are signed with its RSA key (or another), and the
//! composed application answers 200 with the token's tenant or 401 with the API's problem.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{SystemTime, UNIX_EPOCH},
};

use agentrl_core::TenantId;
use agentrl_http::{AppOptions, Auth, Metrics, Service, Tenant, app, oidc::OidcVerifier};
use aws_lc_rs::{
    rand::SystemRandom,
    rsa::{KeyPair, KeySize},
    signature::{KeyPair as _, RSA_PKCS1_SHA256},
};
use axum::{Json, Router, body::Body, routing::get};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const AUDIENCE: &str = "agentrl-console";
const KID: &str = "key-1";
const API_KEY: &str = "key-a-0123456789";

/// A provider on 127.0.0.1 serving `key`'s public half as its only JWKS key.
struct Provider {
    issuer: String,
    /// Requests for the discovery document so far.
    hits: Arc<AtomicUsize>,
    /// While set, the discovery document is a 503.
    down: Arc<AtomicBool>,
}

async fn provider(key: &KeyPair) -> Provider {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let public = key.public_key();
    let jwks = json!({"keys": [{
        "kty": "RSA", "use": "sig", "alg": "RS256", "kid": KID,
        "n": B64.encode(public.modulus().big_endian_without_leading_zero()),
        "e": B64.encode(public.exponent().big_endian_without_leading_zero()),
    }]});
    let discovery = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")});
    let (hits, down) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let (counted, failing) = (hits.clone(), down.clone());
    let router = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move {
                counted.fetch_add(1, Ordering::SeqCst);
                if failing.load(Ordering::SeqCst) {
                    Err(axum::http::StatusCode::SERVICE_UNAVAILABLE)
                } else {
                    Ok(Json(discovery))
                }
            }),
        )
        .route("/jwks", get(move || async move { Json(jwks) }));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    Provider { issuer, hits, down }
}

/// A compact JWS of `claims` with `header`, signed RS256 by `key`.
fn sign(key: &KeyPair, header: &Value, claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public_modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut signature,
    )
    .unwrap();
    format!("{input}.{}", B64.encode(signature))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The application with one route answering the caller's tenant.
fn application(issuer: &str) -> Router {
    let router = Router::new().route(
        "/v1/whoami",
        get(|Tenant(t): Tenant| async move { t.as_str().to_owned() }),
    );
    let auth = Auth::api_keys([(TenantId::parse("tenant-a").unwrap(), API_KEY.to_owned())])
        .with_oidc(OidcVerifier::new(issuer, AUDIENCE).unwrap());
    app(
        vec![Service {
            router,
            openapi: utoipa::openapi::OpenApiBuilder::new().build(),
        }],
        AppOptions {
            auth,
            metrics: Metrics::Off,
            body_limit: agentrl_http::DEFAULT_BODY_LIMIT,
            idempotency: None,
        },
    )
}

/// The status and body of `GET /v1/whoami` with `Authorization: Bearer credential`.
async fn whoami(app: &Router, credential: &str) -> (u16, String) {
    let request = axum::http::Request::builder()
        .uri("/v1/whoami")
        .header("authorization", format!("Bearer {credential}"))
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn only_a_token_of_the_issuer_for_the_audience_in_date_and_well_signed_names_a_tenant() {
    let key = KeyPair::generate(KeySize::Rsa2048).unwrap();
    let other = KeyPair::generate(KeySize::Rsa2048).unwrap();
    let provider = provider(&key).await;
    let issuer = provider.issuer.clone();
    let app = application(&issuer);
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": KID});
    let good = json!({
        "iss": issuer, "aud": AUDIENCE, "sub": "u-1", "tenant_id": "tenant-b",
        "iat": now(), "exp": now() + 600,
    });
    let with = |field: &str, value: Value| {
        let mut claims = good.clone();
        claims[field] = value;
        claims
    };

    assert_eq!(
        whoami(&app, &sign(&key, &header, &good)).await,
        (200, "tenant-b".into())
    );
    // An access token without `aud` is for the audience by its `client_id`, as API Gateway
    // accepts it; an audience among several is enough.
    let mut access = good.clone();
    access.as_object_mut().unwrap().remove("aud");
    access["client_id"] = AUDIENCE.into();
    assert_eq!(whoami(&app, &sign(&key, &header, &access)).await.0, 200);
    let many = with("aud", json!(["other", AUDIENCE]));
    assert_eq!(whoami(&app, &sign(&key, &header, &many)).await.0, 200);
    // The API keys still work beside the tokens.
    assert_eq!(whoami(&app, API_KEY).await, (200, "tenant-a".into()));

    let mut no_tenant = good.clone();
    no_tenant.as_object_mut().unwrap().remove("tenant_id");
    let mut no_expiry = good.clone();
    no_expiry.as_object_mut().unwrap().remove("exp");
    let refused = [
        (
            "wrong issuer",
            sign(
                &key,
                &header,
                &with("iss", "https://idp.example.com".into()),
            ),
        ),
        (
            "issuer with a trailing slash",
            sign(&key, &header, &with("iss", format!("{issuer}/").into())),
        ),
        (
            "wrong audience",
            sign(&key, &header, &with("aud", "someone-else".into())),
        ),
        (
            "client_id beside another aud",
            sign(
                &key,
                &header,
                &with("aud", "someone-else".into())
                    .as_object()
                    .cloned()
                    .map(|mut c| {
                        c.insert("client_id".into(), AUDIENCE.into());
                        Value::Object(c)
                    })
                    .unwrap(),
            ),
        ),
        ("another key's signature", sign(&other, &header, &good)),
        (
            "expired",
            sign(&key, &header, &with("exp", (now() - 3600).into())),
        ),
        ("no expiry", sign(&key, &header, &no_expiry)),
        (
            "not yet valid",
            sign(&key, &header, &with("nbf", (now() + 3600).into())),
        ),
        ("no tenant claim", sign(&key, &header, &no_tenant)),
        (
            "a tenant claim that is no tenant id",
            sign(&key, &header, &with("tenant_id", "../tenant-a".into())),
        ),
        (
            "unknown key id",
            sign(&key, &json!({"alg": "RS256", "kid": "key-2"}), &good),
        ),
        (
            "unsigned",
            format!(
                "{}.{}.",
                B64.encode(json!({"alg": "none", "kid": KID}).to_string()),
                B64.encode(good.to_string())
            ),
        ),
        ("not a token", "a.b.c".to_owned()),
    ];
    for (why, token) in refused {
        let (status, body) = whoami(&app, &token).await;
        assert_eq!(status, 401, "{why}: {body}");
        let problem: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(problem["status"], 401, "{why}");
    }
    // A token whose payload was changed after signing.
    let token = sign(&key, &header, &good);
    let mut parts: Vec<&str> = token.split('.').collect();
    let forged = B64.encode(with("tenant_id", "tenant-a".into()).to_string());
    parts[1] = &forged;
    assert_eq!(whoami(&app, &parts.join(".")).await.0, 401);
    // The keys were fetched once: the unknown key id did not fetch them again.
    assert_eq!(provider.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_provider_that_is_down_is_not_asked_again_on_every_request() {
    let key = KeyPair::generate(KeySize::Rsa2048).unwrap();
    let provider = provider(&key).await;
    provider.down.store(true, Ordering::SeqCst);
    let app = application(&provider.issuer);
    let claims = json!({
        "iss": provider.issuer, "aud": AUDIENCE, "tenant_id": "tenant-b", "exp": now() + 600,
    });
    let token = sign(&key, &json!({"alg": "RS256", "kid": KID}), &claims);
    for _ in 0..3 {
        assert_eq!(whoami(&app, &token).await.0, 401);
    }
    assert_eq!(provider.hits.load(Ordering::SeqCst), 1, "one try in 30 s");
    // The API keys do not depend on the provider.
    assert_eq!(whoami(&app, API_KEY).await.0, 200);
}
