//! The `GET` / `PUT /v1/config/{name}` pair of every function: a tenant's settings document,
//! read (the defaults until one is put) and replaced whole, validated, with a real schema in
//! the OpenAPI document. One generic pair instead of a copy per function.

use std::sync::Arc;

use agentrl_core::FieldError;
use agentrl_store::tenant_config::TenantConfig;
use axum::{Json, Router, extract::State, routing::get};
use serde::{Serialize, de::DeserializeOwned};
use utoipa::{
    PartialSchema, ToSchema,
    openapi::{
        ComponentsBuilder, ContentBuilder, OpenApi, OpenApiBuilder, PathItem, PathsBuilder, Ref,
        RefOr, ResponseBuilder, Schema,
        path::{HttpMethod, OperationBuilder},
        request_body::RequestBodyBuilder,
    },
};

use crate::{ApiError, Problem, Service, Tenant, ValidJson};

/// One kind of tenant configuration as the API exposes it.
///
/// `Body` is what goes over the wire; `Doc` is what is stored. They are the same type when
/// the stored document is the wire shape; `parse` checks a body as a whole (the error names
/// the field) and `show` answers with the document in force.
pub struct ConfigApi<Body, Doc> {
    /// Route, e.g. `/v1/config/budgets`.
    pub path: &'static str,
    /// OpenAPI tag of the function.
    pub tag: &'static str,
    /// What the settings are, for the operations' descriptions.
    pub what: &'static str,
    /// A body into the document to store.
    pub parse: fn(Body) -> Result<Doc, FieldError>,
    /// The stored document as a body.
    pub show: fn(&Doc) -> Body,
}

struct Routes<Body, Doc> {
    api: ConfigApi<Body, Doc>,
    configs: TenantConfig<Doc>,
}

type Shared<Body, Doc> = State<Arc<Routes<Body, Doc>>>;

async fn get_config<Body, Doc>(
    State(routes): Shared<Body, Doc>,
    Tenant(tenant): Tenant,
) -> Result<Json<Body>, ApiError>
where
    Doc: Clone + Default + Serialize + DeserializeOwned,
{
    let doc = routes.configs.get(&tenant).await?;
    Ok(Json((routes.api.show)(&doc)))
}

async fn put_config<Body, Doc>(
    State(routes): Shared<Body, Doc>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<Body>,
) -> Result<Json<Body>, ApiError>
where
    Body: DeserializeOwned,
    Doc: Clone + Default + Serialize + DeserializeOwned,
{
    let doc = (routes.api.parse)(body)?;
    routes.configs.put(&tenant, &doc).await?;
    Ok(Json((routes.api.show)(&doc)))
}

impl<Body, Doc> ConfigApi<Body, Doc>
where
    Body: Serialize + DeserializeOwned + ToSchema + Send + Sync + 'static,
    Doc: Clone + Default + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// The route pair over `configs`, and its OpenAPI description.
    pub fn service(self, configs: TenantConfig<Doc>) -> Service {
        let openapi = self.openapi();
        let path = self.path;
        let router = Router::new()
            .route(
                path,
                get(get_config::<Body, Doc>).put(put_config::<Body, Doc>),
            )
            .with_state(Arc::new(Routes { api: self, configs }))
            // A settings document is small: the default limit, whatever the function allows.
            .layer(axum::extract::DefaultBodyLimit::max(
                crate::DEFAULT_BODY_LIMIT,
            ));
        Service { router, openapi }
    }

    fn openapi(&self) -> OpenApi {
        let json = |schema: RefOr<Schema>| ContentBuilder::new().schema(Some(schema)).build();
        let body_ref = || RefOr::Ref(Ref::from_schema_name(Body::name()));
        let problem = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    json(RefOr::Ref(Ref::from_schema_name(Problem::name()))),
                )
                .build()
        };
        let read = OperationBuilder::new()
            .tag(self.tag)
            .operation_id(Some(format!("get_{}", self.name())))
            .summary(Some(format!("Read the tenant's {}", self.what)))
            .description(Some("The defaults until the tenant puts its own."))
            .response(
                "200",
                ResponseBuilder::new()
                    .description("The settings in force")
                    .content("application/json", json(body_ref()))
                    .build(),
            );
        let replace = OperationBuilder::new()
            .tag(self.tag)
            .operation_id(Some(format!("put_{}", self.name())))
            .summary(Some(format!("Replace the tenant's {}", self.what)))
            .description(Some(
                "Validated as a whole; omitted fields take the defaults. The answer is the \
                 document now in force.",
            ))
            .request_body(Some(
                RequestBodyBuilder::new()
                    .content("application/json", json(body_ref()))
                    .required(Some(utoipa::openapi::Required::True))
                    .build(),
            ))
            .response(
                "200",
                ResponseBuilder::new()
                    .description("The settings now in force")
                    .content("application/json", json(body_ref()))
                    .build(),
            )
            .response("400", problem("A value out of range (the field is named)"));
        let item = PathItem::new(HttpMethod::Get, read);
        let mut item_put = PathItem::new(HttpMethod::Put, replace);
        item_put.get = item.get;
        let mut schemas = vec![(Body::name().into_owned(), Body::schema())];
        Body::schemas(&mut schemas);
        OpenApiBuilder::new()
            .paths(PathsBuilder::new().path(self.path, item_put))
            .components(Some(
                ComponentsBuilder::new()
                    .schemas_from_iter(schemas)
                    .schema(Problem::name(), Problem::schema())
                    .build(),
            ))
            .build()
    }

    /// The last segment of the path, for operation ids (`budgets`, `learning`…).
    fn name(&self) -> &'static str {
        self.path.rsplit('/').next().unwrap_or(self.path)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agentrl_store::{
        embedded::{Database, SqliteTable},
        ports::Table,
    };
    use axum::{body::Body as HttpBody, http::Request};
    use serde::Deserialize;
    use tower::ServiceExt;

    use super::*;
    use crate::{AppOptions, Auth, app};
    use agentrl_core::TenantId;

    /// A settings document with one bounded field.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
    #[serde(default, deny_unknown_fields)]
    struct Knobs {
        /// In [0, 1].
        rate: f64,
    }

    impl Default for Knobs {
        fn default() -> Self {
            Self { rate: 0.5 }
        }
    }

    fn parse(k: Knobs) -> Result<Knobs, FieldError> {
        if (0.0..=1.0).contains(&k.rate) {
            Ok(k)
        } else {
            Err(FieldError::new("rate", "must be in [0, 1]"))
        }
    }

    async fn call(
        router: &axum::Router,
        method: &str,
        key: &str,
        body: &str,
    ) -> (u16, serde_json::Value) {
        let response = router
            .clone()
            .oneshot(
                Request::builder()
                    .method(method)
                    .uri("/v1/config/knobs")
                    .header("authorization", format!("Bearer {key}"))
                    .header("content-type", "application/json")
                    .body(HttpBody::from(body.to_owned()))
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    #[tokio::test]
    async fn settings_are_validated_stored_per_tenant_and_documented() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("agentrl.db")).unwrap();
        let table: Arc<dyn Table> = Arc::new(SqliteTable::new(db));
        let service = ConfigApi {
            path: "/v1/config/knobs",
            tag: "knobs",
            what: "knobs",
            parse,
            show: Knobs::clone,
        }
        .service(TenantConfig::new(table, "knobs"));
        let doc = serde_json::to_value(&service.openapi).unwrap();
        let put = &doc["paths"]["/v1/config/knobs"]["put"];
        assert_eq!(
            put["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Knobs"
        );
        assert!(put["responses"]["400"].is_object());
        assert_eq!(
            doc["components"]["schemas"]["Knobs"]["properties"]["rate"]["type"],
            "number"
        );
        let keys = [("key-a", "tenant-a"), ("key-b", "tenant-b")];
        let options = AppOptions {
            auth: Auth::api_keys(
                keys.iter()
                    .map(|(k, t)| (TenantId::parse(t).unwrap(), (*k).to_owned())),
            ),
            ..crate::lambda::options("test")
        };
        let router = app(vec![service], options);

        assert_eq!(
            call(&router, "GET", "key-a", "").await,
            (200, serde_json::json!({"rate": 0.5}))
        );
        let (status, problem) = call(&router, "PUT", "key-a", r#"{"rate": 2}"#).await;
        assert_eq!((status, problem["field"].as_str()), (400, Some("rate")));
        assert_eq!(
            call(&router, "PUT", "key-a", r#"{"rate": 0.25}"#).await,
            (200, serde_json::json!({"rate": 0.25}))
        );
        assert_eq!(call(&router, "GET", "key-a", "").await.1["rate"], 0.25);
        assert_eq!(call(&router, "GET", "key-b", "").await.1["rate"], 0.5);
    }
}
