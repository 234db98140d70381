//! Composes function routers into one application: public routes, authenticated routes,
//! problem+json fallbacks, a body limit and telemetry.

use std::sync::{Arc, OnceLock};

use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, State},
    http::{StatusCode, header},
    middleware,
    response::IntoResponse,
    routing::get,
};
use utoipa::openapi::{
    ObjectBuilder, OpenApi, OpenApiBuilder, Required, Type,
    path::{ParameterBuilder, ParameterIn},
    security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme},
};

use agentrl_store::ports::Table;

use crate::{
    ApiError, Auth, Metrics, Problem,
    auth::authenticate,
    idempotency::{Idempotency, idempotent},
    observe::observe,
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
        self.json.get_or_init(|| {
            serde_json::to_string(&merged(self.parts.iter().cloned()))
                .unwrap_or_else(|_| "{}".to_owned())
        })
    }
}

#[derive(utoipa::OpenApi)]
#[openapi(paths(health, openapi_json), components(schemas(Problem, Health)))]
struct MetaApi;

/// The merged OpenAPI document of `services`, with the bearer security scheme.
pub fn openapi_document(services: &[Service]) -> OpenApi {
    merged(services.iter().map(|s| s.openapi.clone()))
}

fn merged(parts: impl IntoIterator<Item = OpenApi>) -> OpenApi {
    use utoipa::OpenApi as _;
    let mut doc = OpenApiBuilder::new()
        .info(
            utoipa::openapi::InfoBuilder::new()
                .title("agentrl")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(
                    "Thinking budgets, diff scoring, reward verification, attribution and \
                     trajectory collection for AI agents. Errors are RFC 9457 problem+json.",
                ))
                .build(),
        )
        .build();
    doc.merge(MetaApi::openapi());
    for part in parts {
        if cfg!(debug_assertions) {
            let clashes = clashing_schemas(&doc, &part);
            assert!(
                clashes.is_empty(),
                "different schemas under one name: {clashes:?}"
            );
        }
        doc.merge(part);
    }
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "An API key (local stack) or a JWT carrying a tenant_id claim (AWS)",
                ))
                .build(),
        ),
    );
    doc.security = Some(vec![SecurityRequirement::new(
        "bearer",
        Vec::<String>::new(),
    )]);
    document_idempotency_key(&mut doc);
    document_common_answers(&mut doc);
    doc
}

/// Declares the answers the shared layers give on every operation they wrap, where the
/// operation does not declare them itself: 401 from authentication; 400 for a path or query
/// parameter the extractors refuse; on operations with a body (POST, PUT, PATCH), 400
/// (malformed JSON), 413 (over the body limit) and 415 (not JSON); on POST, PUT and PATCH,
/// 409 and 422 from the idempotency layer. All are problem+json.
fn document_common_answers(doc: &mut OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, path::Operation};
    let problem = |description: &str| {
        RefOr::T(
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    ContentBuilder::new()
                        .schema(Some(RefOr::Ref(Ref::from_schema_name("Problem"))))
                        .build(),
                )
                .build(),
        )
    };
    let add = |op: &mut Operation, status: &str, description: &str| {
        op.responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| problem(description));
    };
    for item in doc.paths.paths.values_mut() {
        let idempotent = [item.post.as_mut(), item.put.as_mut(), item.patch.as_mut()];
        for op in idempotent.into_iter().flatten() {
            add(op, "409", "The same Idempotency-Key is still in progress");
            add(
                op,
                "422",
                "The Idempotency-Key was used with another request",
            );
        }
        let writes = [item.post.as_mut(), item.put.as_mut(), item.patch.as_mut()];
        for op in writes
            .into_iter()
            .flatten()
            .filter(|op| op.request_body.is_some())
        {
            add(
                op,
                "400",
                "Malformed JSON or an invalid field (the field is named)",
            );
            add(op, "413", "Body over the limit");
            add(op, "415", "Content type is not JSON");
        }
        let public = |op: &Operation| {
            op.security
                .as_ref()
                .is_some_and(|s| s.iter().all(|r| *r == SecurityRequirement::default()))
        };
        let operations = [
            item.get.as_mut(),
            item.post.as_mut(),
            item.put.as_mut(),
            item.delete.as_mut(),
            item.patch.as_mut(),
        ];
        for op in operations.into_iter().flatten() {
            if op.parameters.as_ref().is_some_and(|p| !p.is_empty()) {
                add(
                    op,
                    "400",
                    "A malformed path or query parameter (the parameter is named)",
                );
            }
            if !public(op) {
                add(op, "401", "Missing, malformed or unknown credentials");
            }
        }
    }
}

/// Names `part` gives to schemas that differ from `doc`'s of the same name: merging keeps one
/// schema per name, so such a clash would silently describe one of the types wrongly (checked
/// in debug builds, which every test runs).
fn clashing_schemas(doc: &OpenApi, part: &OpenApi) -> Vec<String> {
    let (Some(ours), Some(theirs)) = (&doc.components, &part.components) else {
        return Vec::new();
    };
    theirs
        .schemas
        .iter()
        .filter(|(name, schema)| {
            ours.schemas.get(*name).is_some_and(|mine| {
                serde_json::to_value(mine).ok() != serde_json::to_value(schema).ok()
            })
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Declares the `Idempotency-Key` header on every POST, PUT and PATCH operation, as the
/// idempotency middleware honours it there.
fn document_idempotency_key(doc: &mut OpenApi) {
    let header = ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "Retries with the same key get the first answer back; reused with another \
             request → 422; while the first is in progress → 409 (1–255 visible ASCII)",
        ))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(255))
                .pattern(Some("^[!-~]{1,255}$")),
        ))
        .build();
    for item in doc.paths.paths.values_mut() {
        for op in [item.post.as_mut(), item.put.as_mut(), item.patch.as_mut()]
            .into_iter()
            .flatten()
        {
            op.parameters
                .get_or_insert_with(Vec::new)
                .push(header.clone());
        }
    }
}

/// The application: `/health` and `/openapi.json` open, every service route authenticated.
pub fn app(services: Vec<Service>, options: AppOptions) -> Router {
    let (routers, parts): (Vec<Router>, Vec<OpenApi>) =
        services.into_iter().map(|s| (s.router, s.openapi)).unzip();
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
/// plain text; every 4xx of the API is problem+json, so they are re-dressed with their text
/// as the detail.
async fn plain_rejections_as_problems(
    request: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    let response = next.run(request).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.starts_with("application/problem+json") || ct.starts_with("application/json")
        });
    if !response.status().is_client_error() || json {
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
