//! The dataset job's binary: wiring only.
//!
//! - Under the Lambda runtime (`AWS_LAMBDA_RUNTIME_API` set): an EventBridge schedule invokes
//!   it for every tenant, the dataset queue (SQS) with `dataset.generation.requested`. Tables
//!   past `AGENTRL_DATASET_LAMBDA_MAX_BYTES` go to AWS Batch when `AGENTRL_DATASET_JOB_QUEUE`
//!   is set.
//! - Otherwise (the Batch job the Lambda submits): `dataset --tenant P [--requests JSON]
//!   [--now-ms MS]` builds that tenant partition here, whatever its size.
//!
//! Rules come from `AGENTRL_DATASET_RULES` (JSON, overriding the defaults).

use agentrl_core::dataset::Rules;
use agentrl_dataset::{BatchDatasets, BatchJob, DatasetRequests, Datasets};
use agentrl_http::sqs::{self, Consumer};
use agentrl_store::{Stores, clock::now_ms_i64};
use anyhow::Context;
use aws_lambda_events::event::sqs::SqsEvent;
use clap::Parser;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    agentrl_http::telemetry::init();
    let stores = Stores::aws_from_env()?;
    let rules: Rules = match std::env::var("AGENTRL_DATASET_RULES") {
        Ok(json) if !json.trim().is_empty() => {
            serde_json::from_str(&json).context("AGENTRL_DATASET_RULES")?
        }
        _ => Rules::default(),
    };
    let datasets = Datasets::new(
        stores.objects.clone(),
        stores.events.clone(),
        stores.training.clone(),
        rules,
    );
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_none() {
        let outcome = BatchJob::parse().run(&datasets).await?;
        println!("{}", serde_json::to_string(&outcome)?);
        return Ok(());
    }
    let datasets = datasets.with_batch(BatchDatasets::from_env().await?);
    let requests = &DatasetRequests::new(
        datasets.clone(),
        stores.datasets.clone(),
        agentrl_http::lambda::pseudonyms_from_env()?,
    );
    let datasets = &datasets;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        if event.payload.get("Records").is_some() {
            let records: SqsEvent = serde_json::from_value(event.payload)?;
            let retry = requests.process(&sqs::messages(records)).await;
            return Ok::<_, lambda_runtime::Error>(serde_json::to_value(sqs::response(retry))?);
        }
        let outcomes = datasets.scheduled(now_ms_i64()).await?;
        Ok(json!({ "outcomes": outcomes }))
    }))
    .await
}
