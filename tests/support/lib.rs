//! Test support: adapter sets on real SQLite files or on moto over HTTP, with randomised
//! resource names so tests run in parallel without seeing each other.

use std::sync::Arc;

use agentrl_store::{
    AwsResources, ObjectStoreObjects, Stores,
    aws::{AwsSettings, DynamoTable, SqsQueue, create_bucket, create_queue_with_dlq, create_table},
    embedded::{Database, SqliteQueue, SqliteTable},
    ports::{Objects, Queue, Table},
};
use tempfile::TempDir;

pub mod fault_proxy;

/// Deliveries before redrive in the conformance suite (small, to keep the tests short).
pub const TEST_MAX_RECEIVES: u32 = 2;

/// The moto endpoint that `infra/scripts/test.sh` started.
///
/// # Panics
/// When `AGENTRL_MOTO_ENDPOINT` is unset or not on loopback: the AWS tests need the
/// emulator and must never reach anything else.
pub fn moto_endpoint() -> String {
    let endpoint = std::env::var("AGENTRL_MOTO_ENDPOINT").expect(
        "AGENTRL_MOTO_ENDPOINT is unset: run the tests with infra/scripts/test.sh, which starts moto",
    );
    assert!(
        endpoint.starts_with("http://127.0.0.1:") || endpoint.starts_with("http://[::1]:"),
        "the emulator must be on loopback, got {endpoint}"
    );
    endpoint
}

/// A unique, valid resource name.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// One adapter set for one test; keeps its temporary directory alive.
pub struct Ports {
    /// The table.
    pub table: Arc<dyn Table>,
    /// The queue.
    pub queue: Arc<dyn Queue>,
    /// The object store.
    pub objects: Arc<dyn Objects>,
    _dir: Option<TempDir>,
}

/// Embedded adapters on a fresh SQLite file and directory.
pub fn embedded() -> Ports {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open(&dir.path().join("agentrl.db")).expect("open sqlite");
    Ports {
        table: Arc::new(SqliteTable::new(db.clone())),
        queue: Arc::new(SqliteQueue::new(db, "work", TEST_MAX_RECEIVES)),
        objects: Arc::new(ObjectStoreObjects::local(&dir.path().join("objects")).expect("objects")),
        _dir: Some(dir),
    }
}

/// Fresh AWS resources on moto: a table, a queue with its DLQ, a bucket.
pub async fn aws_resources(max_receives: u32) -> (AwsSettings, AwsResources) {
    let settings = AwsSettings::emulator(&moto_endpoint());
    let sdk = settings.load().await;
    let table = unique("agentrl");
    create_table(&aws_sdk_dynamodb::Client::new(&sdk), &table)
        .await
        .expect("create table on moto");
    let (queue_url, dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &unique("work"),
        max_receives,
    )
    .await
    .expect("create queue on moto");
    let (events_queue_url, events_dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &unique("events"),
        max_receives,
    )
    .await
    .expect("create event queue on moto");
    let (training_queue_url, training_dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &unique("training"),
        max_receives,
    )
    .await
    .expect("create training queue on moto");
    let (dataset_queue_url, dataset_dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &unique("datasets"),
        max_receives,
    )
    .await
    .expect("create dataset queue on moto");
    let (evaluation_queue_url, evaluation_dlq_url) = create_queue_with_dlq(
        &aws_sdk_sqs::Client::new(&sdk),
        &unique("evaluations"),
        max_receives,
    )
    .await
    .expect("create evaluation queue on moto");
    let bucket = unique("agentrl");
    create_bucket(&moto_endpoint(), &bucket)
        .await
        .expect("create bucket on moto");
    (
        settings,
        AwsResources {
            table,
            queue_url,
            dlq_url,
            events_queue_url,
            events_dlq_url,
            training_queue_url,
            training_dlq_url,
            dataset_queue_url,
            dataset_dlq_url,
            evaluation_queue_url,
            evaluation_dlq_url,
            bucket,
        },
    )
}

/// AWS adapters on fresh moto resources.
pub async fn aws() -> Ports {
    let (settings, r) = aws_resources(TEST_MAX_RECEIVES).await;
    let sdk = settings.load().await;
    Ports {
        // How the functions connect: the client built on first use.
        table: Arc::new(DynamoTable::connect(&settings, &r.table)),
        queue: Arc::new(SqsQueue::new(
            aws_sdk_sqs::Client::new(&sdk),
            &r.queue_url,
            &r.dlq_url,
        )),
        objects: Arc::new(ObjectStoreObjects::s3(&r.bucket, &settings).expect("s3 client")),
        _dir: None,
    }
}

/// A full AWS store set on fresh moto resources (for the API over DynamoDB).
pub async fn aws_stores() -> Stores {
    aws_stores_on().await.0
}

/// [`aws_stores`] with the settings and names of its resources.
pub async fn aws_stores_on() -> (Stores, AwsSettings, AwsResources) {
    let (settings, r) = aws_resources(agentrl_store::MAX_RECEIVES).await;
    let stores = Stores::aws(&settings, &r).expect("aws stores");
    (stores, settings, r)
}

/// A full AWS store set on fresh moto resources whose clients talk to `endpoint` (a
/// [`fault_proxy::FaultProxy`] in front of moto), and one on the same resources talking to moto
/// directly, for checks that must not meet the faults.
pub async fn aws_stores_through(endpoint: &str) -> (Stores, Stores) {
    let (direct, _, r) = aws_stores_on().await;
    let through = Stores::aws(&AwsSettings::emulator(endpoint), &r).expect("aws stores");
    (through, direct)
}

/// A compute environment, a job queue per name of `queues` and a job definition in moto
/// (jobs "run" without Docker and end SUCCEEDED at once; the service learns of it from events,
/// not by polling).
///
/// # Panics
/// When moto refuses a resource.
pub async fn batch_resources(
    settings: &AwsSettings,
    queues: &[&str],
) -> (aws_sdk_batch::Client, Vec<String>, String) {
    let endpoint = moto_endpoint();
    let http = reqwest::Client::new();
    let config = http
        .post(format!("{endpoint}/moto-api/config"))
        .json(&serde_json::json!({"batch": {"use_docker": false}}))
        .send()
        .await
        .unwrap();
    assert!(config.status().is_success());
    let role = unique("batch-service");
    let created = http
        .post(format!("{endpoint}/"))
        .header(
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0",
        )
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(format!(
            "Action=CreateRole&Version=2010-05-08&RoleName={role}&AssumeRolePolicyDocument=%7B%7D"
        ))
        .send()
        .await
        .unwrap();
    assert!(
        created.status().is_success(),
        "{}",
        created.text().await.unwrap()
    );
    let batch = aws_sdk_batch::Client::new(&settings.load().await);
    let ce = batch
        .create_compute_environment()
        .compute_environment_name(unique("gpu"))
        .r#type(aws_sdk_batch::types::CeType::Unmanaged)
        .state(aws_sdk_batch::types::CeState::Enabled)
        .service_role(format!("arn:aws:iam::123456789012:role/{role}"))
        .send()
        .await
        .unwrap();
    let ce = ce.compute_environment_arn.unwrap();
    let mut names = Vec::new();
    for name in queues {
        let queue = unique(name);
        batch
            .create_job_queue()
            .job_queue_name(&queue)
            .state(aws_sdk_batch::types::JqState::Enabled)
            .priority(1)
            .compute_environment_order(
                aws_sdk_batch::types::ComputeEnvironmentOrder::builder()
                    .order(1)
                    .compute_environment(&ce)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        names.push(queue);
    }
    let definition = unique("train-gpu");
    batch
        .register_job_definition()
        .job_definition_name(&definition)
        .r#type(aws_sdk_batch::types::JobDefinitionType::Container)
        .container_properties(
            aws_sdk_batch::types::ContainerProperties::builder()
                .image("agentrl-train:latest")
                .command("--help")
                .resource_requirements(
                    aws_sdk_batch::types::ResourceRequirement::builder()
                        .r#type(aws_sdk_batch::types::ResourceType::Vcpu)
                        .value("4")
                        .build(),
                )
                .resource_requirements(
                    aws_sdk_batch::types::ResourceRequirement::builder()
                        .r#type(aws_sdk_batch::types::ResourceType::Memory)
                        .value("16384")
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    (batch, names, definition)
}
