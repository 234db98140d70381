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
    doc
}

/// Declares the `Idempotency-Key` header on every POST and PUT operation, as the
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
                .max_length(Some(255)),
        ))
        .build();
    for item in doc.paths.paths.values_mut() {
        for op in [item.post.as_mut(), item.put.as_mut()]
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
        .layer(middleware::from_fn_with_state(options.metrics, observe))
}
