//! Composes function routers into one application: public routes, authenticated routes,
//! problem+json fallbacks, a body limit and telemetry.

use std::sync::{Arc, OnceLock};

use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, State},
    http::{StatusCode, header},
    middleware,
    response::IntoResponse,
    routing::{get, post},
};
use utoipa::openapi::OpenApi;

use agentrl_store::ports::Table;

use crate::{
    ApiError, Auth, Metrics, Problem,
    auth::authenticate,
    document,
    idempotency::{Idempotency, idempotent},
    observe::observe,
    sessions,
};

/// One function's contribution: its routes and their OpenAPI description.
pub struct Service {
    /// Routes, relative to the API root (e.g. `/v1/budgets`).
    pub router: Router,
    /// The OpenAPI document of those routes.
    pub openapi: OpenApi,
}

impl Service {
    /// This service with `other`'s routes and their description added.
    #[must_use]
    pub fn merge(mut self, other: Service) -> Service {
        self.router = self.router.merge(other.router);
        self.openapi.merge(other.openapi);
        self
    }
}

/// Options of the composed application.
#[derive(Clone)]
pub struct AppOptions {
    /// How callers are authenticated.
    pub auth: Auth,
    /// Where per-request metrics go.
    pub metrics: Metrics,
    /// Largest request body in bytes.
    pub body_limit: usize,
    /// Where `Idempotency-Key` records live; `None` turns the header off.
    pub idempotency: Option<Arc<dyn Table>>,
}

/// The health response.
#[derive(serde::Serialize, utoipa::ToSchema)]
struct Health {
    status: &'static str,
}

/// Liveness.
#[utoipa::path(get, path = "/health", tag = "meta", security(()),
    responses((status = 200, description = "The service is up", body = Health)))]
async fn health() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of every route")))]
async fn openapi_json(State(doc): State<Arc<Document>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        doc.json().to_owned(),
    )
}

/// The OpenAPI document, merged and serialised on its first request: a cold function would
/// otherwise spend part of its start-up on a document most of its instances never serve.
struct Document {
    parts: Vec<OpenApi>,
    json: OnceLock<String>,
}

impl Document {
    fn json(&self) -> &str {
        self.json
            .get_or_init(|| document::json(&merged(self.parts.iter().cloned())))
    }
}

#[derive(utoipa::OpenApi)]
#[openapi(paths(health, openapi_json), components(schemas(Problem, Health)))]
struct MetaApi;

/// The console's sign-in routes, where the console is served.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(sessions::sign_in, sessions::read, sessions::sign_out),
    components(schemas(sessions::SignIn, sessions::SessionView)),
    tags((name = "console", description = "The web console's sign-in: an API key for a session cookie"))
)]
struct SessionApi;

/// The merged OpenAPI document of `services`, with the bearer security scheme.
pub fn openapi_document(services: &[Service]) -> OpenApi {
    merged(services.iter().map(|s| s.openapi.clone()))
}

fn merged(parts: impl IntoIterator<Item = OpenApi>) -> OpenApi {
    use utoipa::OpenApi as _;
    document::merged(MetaApi::openapi(), parts)
}

/// The application: `/health` and `/openapi.json` open, every service route authenticated;
/// where the auth has console sessions, their sign-in (open) and session routes too.
pub fn app(services: Vec<Service>, options: AppOptions) -> Router {
    let (routers, parts): (Vec<Router>, Vec<OpenApi>) =
        services.into_iter().map(|s| (s.router, s.openapi)).unzip();
    let mut parts = parts;
    let mut routers = routers;
    let mut public = Router::new();
    if let Some(sessions) = options.auth.sessions() {
        use utoipa::OpenApi as _;
        parts.push(SessionApi::openapi());
        routers.push(
            Router::new()
                .route(
                    "/v1/console/session",
                    get(sessions::read).delete(sessions::sign_out),
                )
                .with_state(sessions.clone()),
        );
        public = public.route(
            "/v1/console/session",
            post(sessions::sign_in).with_state(sessions::SignInState {
                auth: options.auth.clone(),
                sessions: sessions.clone(),
            }),
        );
    }
    let doc = Arc::new(Document {
        parts,
        json: OnceLock::new(),
    });
    let mut protected = routers.into_iter().fold(Router::new(), Router::merge);
    if let Some(table) = options.idempotency {
        let state = Idempotency {
            table,
            body_limit: options.body_limit,
        };
        protected = protected.route_layer(middleware::from_fn_with_state(state, idempotent));
    }
    // Added last, so it runs first: idempotency records are per tenant.
    let protected =
        protected.route_layer(middleware::from_fn_with_state(options.auth, authenticate));
    Router::new()
        .route("/health", get(health))
        .route("/openapi.json", get(openapi_json))
        .with_state(doc)
        .merge(public)
        .merge(protected)
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "no such route").into_response()
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed on this route",
            )
            .into_response()
        })
        .layer(DefaultBodyLimit::max(options.body_limit))
        .layer(middleware::from_fn(plain_rejections_as_problems))
        .layer(middleware::from_fn_with_state(options.metrics, observe))
}

/// Longest plain-text rejection carried over into a problem's detail.
const MAX_REJECTION_BYTES: usize = 2048;

/// The extractors' own rejections (a query string or path that does not deserialise) are
/// plain text; every 4xx of the API is problem+json (but OTLP's, a `Status` in the request's
/// encoding), so they are re-dressed with their text as the detail.
async fn plain_rejections_as_problems(
    request: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    let response = next.run(request).await;
    // A body in a format the route chose (problem+json, OTLP's protobuf `Status`) stays.
    let plain = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| ct.starts_with("text/plain"));
    if !response.status().is_client_error() || !plain {
        return response;
    }
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), MAX_REJECTION_BYTES)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let detail = if body.trim().is_empty() {
        status.canonical_reason().unwrap_or("rejected").to_owned()
    } else {
        body
    };
    ApiError::new(status, detail).into_response()
}
