//! `agentrl serve` as a process: it starts, answers, stops cleanly on SIGTERM and SIGINT,
//! and every acknowledged write is there after a restart.

mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::{KEY, start, start_command, stop};

async fn post(http: &reqwest::Client, url: String, body: Value) -> Value {
    let resp = http
        .post(url)
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    resp.json().await.unwrap()
}

#[tokio::test]
async fn acknowledged_writes_survive_sigterm_and_sigint_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();

    let server = start(dir.path());
    let budget = post(
        &http,
        format!("{}/v1/budgets", server.base),
        json!({"task_id": "t", "task": {"description": "Fix the off-by-one error in the pager"}}),
    )
    .await;
    let id = budget["budget_id"].as_str().unwrap().to_owned();
    let consumption = |base: &str| format!("{base}/v1/budgets/{id}/consumption");
    post(
        &http,
        consumption(&server.base),
        json!({"report_id": "a", "tokens": 300}),
    )
    .await;
    stop(server, "TERM");

    let server = start(dir.path());
    let d = post(
        &http,
        consumption(&server.base),
        json!({"report_id": "b", "tokens": 200}),
    )
    .await;
    assert_eq!(
        d["consumed_tokens"], 500,
        "the report acknowledged before SIGTERM is kept"
    );
    stop(server, "INT");

    let server = start(dir.path());
    let resp = http
        .get(format!("{}/v1/budgets/{id}", server.base))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["consumed_tokens"], 500);
    stop(server, "TERM");
}

/// `serve --aws` runs the same routes over DynamoDB, SQS and S3: here on moto (127.0.0.1),
/// configured only through the environment, as on a real deployment.
#[tokio::test]
async fn serve_with_aws_uses_dynamodb() {
    use agentrl_store::aws::{AwsSettings, create_bucket, create_queue_with_dlq, create_table};

    let endpoint = std::env::var("AGENTRL_MOTO_ENDPOINT").expect(
        "AGENTRL_MOTO_ENDPOINT is unset: run the tests with infra/scripts/test.sh, which starts moto",
    );
    assert!(endpoint.starts_with("http://127.0.0.1:"), "{endpoint}");
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let sdk = AwsSettings::emulator(&endpoint).load().await;
    let table = format!("serve-{suffix}");
    create_table(&aws_sdk_dynamodb::Client::new(&sdk), &table)
        .await
        .unwrap();
    let (queue_url, dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &format!("serve-{suffix}"),
        5,
    )
    .await
    .unwrap();
    let (events_url, events_dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &format!("serve-events-{suffix}"),
        5,
    )
    .await
    .unwrap();
    let (training_url, training_dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &format!("serve-training-{suffix}"),
        5,
    )
    .await
    .unwrap();
    let (datasets_url, datasets_dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &format!("serve-datasets-{suffix}"),
        5,
    )
    .await
    .unwrap();
    let (evaluations_url, evaluations_dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &format!("serve-evaluations-{suffix}"),
        5,
    )
    .await
    .unwrap();
    let bucket = format!("serve-{suffix}");
    create_bucket(&endpoint, &bucket).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentrl"));
    command
        .args([
            "serve",
            "--aws",
            "--addr",
            "127.0.0.1:0",
            "--api-key",
            &format!("acme={KEY}"),
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .envs([
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AGENTRL_AWS_ENDPOINT", endpoint.as_str()),
            ("AGENTRL_TABLE", table.as_str()),
            ("AGENTRL_QUEUE_URL", queue_url.as_str()),
            ("AGENTRL_DLQ_URL", dlq_url.as_str()),
            ("AGENTRL_EVENTS_QUEUE_URL", events_url.as_str()),
            ("AGENTRL_EVENTS_DLQ_URL", events_dlq_url.as_str()),
            ("AGENTRL_TRAINING_QUEUE_URL", training_url.as_str()),
            ("AGENTRL_TRAINING_DLQ_URL", training_dlq_url.as_str()),
            ("AGENTRL_DATASET_QUEUE_URL", datasets_url.as_str()),
            ("AGENTRL_DATASET_DLQ_URL", datasets_dlq_url.as_str()),
            ("AGENTRL_EVALUATION_QUEUE_URL", evaluations_url.as_str()),
            ("AGENTRL_EVALUATION_DLQ_URL", evaluations_dlq_url.as_str()),
            ("AGENTRL_BUCKET", bucket.as_str()),
            ("AGENTRL_PSEUDONYM_SECRET", "a test secret of enough bytes"),
        ]);
    let server = start_command(command);
    let http = reqwest::Client::new();
    let budget = post(
        &http,
        format!("{}/v1/budgets", server.base),
        json!({"task_id": "t", "task": {"description": "Fix the off-by-one error in the pager"}}),
    )
    .await;
    stop(server, "TERM");

    let id = budget["budget_id"].as_str().unwrap();
    let item = aws_sdk_dynamodb::Client::new(&sdk)
        .get_item()
        .table_name(&table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("acme#budget#{id}")),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("budget".into()),
        )
        .send()
        .await
        .unwrap();
    assert!(
        item.item.is_some(),
        "the budget is in DynamoDB, under the tenant's key"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing was written to the embedded store"
    );
}
