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
    /// The work queue (events, trajectories) with its dead-letter queue.
    pub queue: Arc<dyn Queue>,
    /// The object store (Parquet, datasets, models).
    pub objects: Arc<dyn Objects>,
    embedded: Option<SqliteTable>,
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
    /// S3 bucket name.
    pub bucket: String,
}

impl Stores {
    /// The embedded set under `dir`: `dir/agentrl.db` (table and queue) and `dir/objects/`.
    ///
    /// # Errors
    /// When the directory or the database cannot be opened.
    pub fn embedded(dir: &Path) -> anyhow::Result<Self> {
        let db = Database::open(&dir.join("agentrl.db"))?;
        let table = SqliteTable::new(db.clone());
        Ok(Self {
            table: Arc::new(table.clone()),
            queue: Arc::new(SqliteQueue::new(db, "work", MAX_RECEIVES)),
            objects: Arc::new(ObjectStoreObjects::local(&dir.join("objects"))?),
            embedded: Some(table),
        })
    }

    /// The AWS set.
    ///
    /// # Errors
    /// When the S3 client cannot be configured.
    pub async fn aws(settings: &AwsSettings, resources: &AwsResources) -> anyhow::Result<Self> {
        let sdk = settings.load().await;
        let table = DynamoTable::new(aws_sdk_dynamodb::Client::new(&sdk), &resources.table);
        let queue = SqsQueue::new(
            aws_sdk_sqs::Client::new(&sdk),
            &resources.queue_url,
            &resources.dlq_url,
        );
        let objects =
            ObjectStoreObjects::s3(&resources.bucket, settings).context("configuring S3")?;
        Ok(Self {
            table: Arc::new(table),
            queue: Arc::new(queue),
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
            Some(t) => Ok(t.purge_expired().await?),
            None => Ok(0),
        }
    }
}
