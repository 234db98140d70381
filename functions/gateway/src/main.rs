//! Lambda entry point of the gateway: a function URL in `RESPONSE_STREAM` mode (streamed
//! chat completions reach the agent as they are produced; API Gateway's HTTP API cannot
//! stream, and its JWT authorizer does not front a function URL), tenants authenticated by
//! their API keys (`agentrl keys`, stored hashed). Each answer completes only once its call
//! record is written and its usage charged: Lambda may freeze the process right after.

use agentrl_gateway::{GatewayState, MAX_BODY_BYTES, Upstream, service};
use agentrl_http::{AppOptions, Auth, api_keys::ApiKeys, app, lambda::options, telemetry};
use agentrl_store::Stores;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let stores = Stores::aws_from_env()?;
    let options = AppOptions {
        auth: Auth::api_keys([]).with_stored(ApiKeys::new(stores.table.clone())),
        body_limit: MAX_BODY_BYTES,
        ..options("gateway")
    };
    let state = GatewayState::new(
        stores.table,
        stores.objects,
        stores.queue,
        Upstream::from_env(),
    )
    .records_before_done();
    lambda_http::run_with_streaming_response(app(vec![service(state)], options)).await
}
