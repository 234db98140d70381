//! Lambda entry point of the gateway's idle-session sweep, on an EventBridge schedule: ends
//! every session idle past its tenant's `session_idle_seconds` into trajectories.

use agentrl_gateway::{GatewayState, Upstream};
use agentrl_store::Stores;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    agentrl_http::telemetry::init();
    let stores = Stores::aws_from_env()?;
    let gateway = GatewayState::new(
        stores.table,
        stores.objects,
        stores.queue,
        Upstream::from_env(),
    )
    .records_before_done();
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| {
        let gateway = gateway.clone();
        async move {
            let run = gateway
                .end_idle_sessions(agentrl_store::clock::now_ms())
                .await?;
            tracing::info!(?run, "idle gateway sessions swept");
            Ok::<_, lambda_runtime::Error>(json!({
                "visited": run.visited, "ended": run.ended,
                "closed_empty": run.closed_empty, "failed": run.failed,
            }))
        }
    }))
    .await
}
