//! Lambda entry point of the trace sweep, on an EventBridge schedule: ingests every traced
//! conversation quiet past its tenant's `quiet_seconds` (or `orphan_seconds`).

use agentrl_store::Stores;
use agentrl_traces::TracesState;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    agentrl_http::telemetry::init();
    let stores = Stores::aws_from_env()?;
    let traces = TracesState::new(stores.table, stores.objects, stores.queue);
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| {
        let traces = traces.clone();
        async move {
            let run = traces.sweep(agentrl_store::clock::now_ms()).await?;
            tracing::info!(?run, "traced conversations swept");
            Ok::<_, lambda_runtime::Error>(json!({
                "visited": run.visited, "ingested": run.ingested,
                "trajectories": run.trajectories, "joined": run.joined, "failed": run.failed,
            }))
        }
    }))
    .await
}
