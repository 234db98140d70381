//! The AWS adapter set: DynamoDB for the table, SQS for the queue (S3 objects live in
//! [`crate::ObjectStoreObjects`]), and the provisioning helpers used by tests and `--aws` dev runs.

mod dynamodb;
mod provision;
mod settings;
mod sqs;

pub use dynamodb::DynamoTable;
pub use provision::{create_bucket, create_queue_with_dlq, create_table};
pub use settings::{AwsSettings, Deferred};
pub use sqs::SqsQueue;
