//! The set of adapters one process uses: embedded (the default) or AWS.

use std::{path::Path, sync::Arc};

use anyhow::Context;

use crate::{
    ObjectStoreObjects,
    aws::{AwsSettings, DynamoTable, SqsQueue},
    embedded::{Database, SqliteQueue, SqliteTable},
    ports::{Objects, Queue, Table},
};

/// How many deliveries a message gets before it is redriven to the dead-letter queue.
pub const MAX_RECEIVES: u32 = 5;

/// Every port, wired to one adapter set.
#[derive(Clone)]
pub struct Stores {
    /// The key-value table.
    pub table: Arc<dyn Table>,
    /// The work queue (trajectories to ingest) with its dead-letter queue.
    pub queue: Arc<dyn Queue>,
    /// The event queue (`training.dataset.ready`, …) with its dead-letter queue: what other
    /// systems consume, kept apart from the work the ingest worker drains.
    pub events: Arc<dyn Queue>,
    /// The training queue with its dead-letter queue: `training.dataset.ready` for the training
    /// function, which starts the runs a ready dataset calls for (the event queue carries the
    /// same announcement for everyone else).
    pub training: Arc<dyn Queue>,
    /// The dataset queue with its dead-letter queue: `dataset.generation.requested` for the
    /// dataset job, which builds datasets for the agents the learning service names.
    pub datasets: Arc<dyn Queue>,
    /// The evaluation queue with its dead-letter queue: evaluations the rewards service
    /// accepted, for the evaluation worker (judges take seconds; the route answers at once).
    pub evaluations: Arc<dyn Queue>,
    /// The object store (Parquet, datasets, models).
    pub objects: Arc<dyn Objects>,
    embedded: Option<(SqliteTable, Database)>,
}

/// Names of the AWS resources, as `template.yaml` exports them to the functions.
#[derive(Debug, Clone)]
pub struct AwsResources {
    /// DynamoDB table name.
    pub table: String,
    /// SQS queue URL.
    pub queue_url: String,
    /// SQS dead-letter queue URL.
    pub dlq_url: String,
    /// SQS event queue URL.
    pub events_queue_url: String,
    /// SQS dead-letter queue URL of the event queue.
    pub events_dlq_url: String,
    /// SQS training queue URL.
    pub training_queue_url: String,
    /// SQS dead-letter queue URL of the training queue.
    pub training_dlq_url: String,
    /// SQS dataset queue URL.
    pub dataset_queue_url: String,
    /// SQS dead-letter queue URL of the dataset queue.
    pub dataset_dlq_url: String,
    /// SQS evaluation queue URL.
    pub evaluation_queue_url: String,
    /// SQS dead-letter queue URL of the evaluation queue.
    pub evaluation_dlq_url: String,
    /// S3 bucket name.
    pub bucket: String,
}

/// An environment variable, or an error naming it: how every binary reads its configuration.
///
/// # Errors
/// When the variable is unset or not UTF-8.
pub fn required_env(key: &str) -> anyhow::Result<String> {
    std::env::var(key).with_context(|| format!("failed to load environment variable {key}"))
}

impl AwsResources {
    /// The names `template.yaml` hands every function: `AGENTRL_TABLE`, `AGENTRL_QUEUE_URL`,
    /// `AGENTRL_DLQ_URL`, `AGENTRL_EVENTS_QUEUE_URL`, `AGENTRL_EVENTS_DLQ_URL`,
    /// `AGENTRL_TRAINING_QUEUE_URL`, `AGENTRL_TRAINING_DLQ_URL`, `AGENTRL_DATASET_QUEUE_URL`,
    /// `AGENTRL_DATASET_DLQ_URL`, `AGENTRL_EVALUATION_QUEUE_URL`, `AGENTRL_EVALUATION_DLQ_URL`,
    /// `AGENTRL_BUCKET`.
    ///
    /// # Errors
    /// A missing variable, named.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            table: required_env("AGENTRL_TABLE")?,
            queue_url: required_env("AGENTRL_QUEUE_URL")?,
            dlq_url: required_env("AGENTRL_DLQ_URL")?,
            events_queue_url: required_env("AGENTRL_EVENTS_QUEUE_URL")?,
            events_dlq_url: required_env("AGENTRL_EVENTS_DLQ_URL")?,
            training_queue_url: required_env("AGENTRL_TRAINING_QUEUE_URL")?,
            training_dlq_url: required_env("AGENTRL_TRAINING_DLQ_URL")?,
            dataset_queue_url: required_env("AGENTRL_DATASET_QUEUE_URL")?,
            dataset_dlq_url: required_env("AGENTRL_DATASET_DLQ_URL")?,
            evaluation_queue_url: required_env("AGENTRL_EVALUATION_QUEUE_URL")?,
            evaluation_dlq_url: required_env("AGENTRL_EVALUATION_DLQ_URL")?,
            bucket: required_env("AGENTRL_BUCKET")?,
        })
    }
}

impl Stores {
    /// The AWS set from the environment: `AWS_REGION`, an optional `AGENTRL_AWS_ENDPOINT`
    /// (an emulator) and [`AwsResources::from_env`].
    ///
    /// # Errors
    /// A missing variable, named, or a client that cannot be configured.
    pub fn aws_from_env() -> anyhow::Result<Self> {
        Self::aws(&AwsSettings::from_env()?, &AwsResources::from_env()?)
    }

    /// The embedded set under `dir`: `dir/agentrl.db` (table and queue) and `dir/objects/`.
    ///
    /// # Errors
    /// When the directory or the database cannot be opened.
    pub fn embedded(dir: &Path) -> anyhow::Result<Self> {
        let db = Database::open(&dir.join("agentrl.db"))?;
        let table = SqliteTable::new(db.clone());
        let embedded = Some((table.clone(), db.clone()));
        Ok(Self {
            table: Arc::new(table.clone()),
            queue: Arc::new(SqliteQueue::new(db.clone(), "work", MAX_RECEIVES)),
            events: Arc::new(SqliteQueue::new(db.clone(), "events", MAX_RECEIVES)),
            training: Arc::new(SqliteQueue::new(db.clone(), "training", MAX_RECEIVES)),
            datasets: Arc::new(SqliteQueue::new(db.clone(), "datasets", MAX_RECEIVES)),
            evaluations: Arc::new(SqliteQueue::new(db, "evaluations", MAX_RECEIVES)),
            objects: Arc::new(ObjectStoreObjects::local(&dir.join("objects"))?),
            embedded,
        })
    }

    /// The AWS set. Nothing is loaded or connected here: the SDK configuration, each client
    /// and the S3 client are built on first use ([`crate::aws::Deferred`]), so a function
    /// starts without them.
    ///
    /// # Errors
    /// When the S3 settings are invalid.
    pub fn aws(settings: &AwsSettings, resources: &AwsResources) -> anyhow::Result<Self> {
        let sdk = settings.deferred();
        let table = DynamoTable::deferred(&sdk, &resources.table);
        let queue = |url: &str, dlq_url: &str| SqsQueue::deferred(&sdk, url, dlq_url);
        let work = queue(&resources.queue_url, &resources.dlq_url);
        let events = queue(&resources.events_queue_url, &resources.events_dlq_url);
        let training = queue(&resources.training_queue_url, &resources.training_dlq_url);
        let datasets = queue(&resources.dataset_queue_url, &resources.dataset_dlq_url);
        let evaluations = queue(
            &resources.evaluation_queue_url,
            &resources.evaluation_dlq_url,
        );
        let objects =
            ObjectStoreObjects::s3(&resources.bucket, settings).context("configuring S3")?;
        Ok(Self {
            table: Arc::new(table),
            queue: Arc::new(work),
            events: Arc::new(events),
            training: Arc::new(training),
            datasets: Arc::new(datasets),
            evaluations: Arc::new(evaluations),
            objects: Arc::new(objects),
            embedded: None,
        })
    }

    /// Removes expired items where the backend has no TTL sweeper of its own (embedded).
    ///
    /// # Errors
    /// When the sweep fails.
    pub async fn sweep_expired(&self) -> anyhow::Result<usize> {
        match &self.embedded {
            Some((table, _)) => Ok(table.purge_expired().await?),
            None => Ok(0),
        }
    }

    /// On the embedded set, redelivers at once every message a previous process received and
    /// never acknowledged (see [`crate::embedded::redeliver_in_flight`]); call it only from the
    /// one process that consumes the queues, before it starts. On SQS a crashed consumer's
    /// messages come back when their visibility timeout ends, as the Lambda trigger expects.
    /// Returns how many.
    ///
    /// # Errors
    /// When SQLite fails.
    pub async fn redeliver_in_flight(&self) -> anyhow::Result<usize> {
        match &self.embedded {
            Some((_, db)) => Ok(crate::embedded::redeliver_in_flight(db).await?),
            None => Ok(0),
        }
    }
}
