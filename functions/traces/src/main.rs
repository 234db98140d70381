//! Lambda entry point of OTLP trace ingest: a function URL, since OTLP exporters authenticate
//! with a header they are given (a tenant API key from `agentrl keys`, stored hashed), which
//! API Gateway's JWT authorizer would refuse. Each export is answered only once its spans are
//! stored.

use agentrl_http::{AppOptions, Auth, api_keys::ApiKeys, app, lambda::options, telemetry};
use agentrl_store::Stores;
use agentrl_traces::{MAX_BODY_BYTES, TracesState, service};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let stores = Stores::aws_from_env()?;
    let options = AppOptions {
        auth: Auth::api_keys([]).with_stored(ApiKeys::new(stores.table.clone())),
        body_limit: MAX_BODY_BYTES,
        ..options("traces")
    };
    let state = TracesState::new(stores.table, stores.objects, stores.queue);
    lambda_http::run(app(vec![service(state)], options)).await
}
