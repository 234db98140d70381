//! Lambda entry point of the scheduled dataset job (an EventBridge schedule invokes it):
//! wiring only. Rules come from `AGENTRL_DATASET_RULES` (JSON, overriding the defaults).

use agentrl_core::dataset::Rules;
use agentrl_store::{Stores, retry::now_ms};
use anyhow::Context;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    agentrl_http::telemetry::init();
    let stores = Stores::aws_from_env().await?;
    let rules: Rules = match std::env::var("AGENTRL_DATASET_RULES") {
        Ok(json) if !json.trim().is_empty() => {
            serde_json::from_str(&json).context("AGENTRL_DATASET_RULES")?
        }
        _ => Rules::default(),
    };
    let (stores, rules) = (&stores, &rules);
    lambda_runtime::run(service_fn(move |_: LambdaEvent<Value>| async move {
        let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
        let manifests = agentrl_dataset::build(
            stores.objects.as_ref(),
            stores.events.as_ref(),
            stores.training.as_ref(),
            rules,
            now,
        )
        .await?;
        let ids: Vec<&str> = manifests.iter().map(|m| m.dataset_id.as_str()).collect();
        Ok::<_, lambda_runtime::Error>(json!({ "datasets": ids }))
    }))
    .await
}
