//! Creates the table, queues and bucket the template declares, for emulators and tests.
//!
//! On AWS, `template.yaml` owns these resources; nothing here runs there.

use anyhow::Context;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;

/// Creates a table keyed like the template's (`pk`, `sk`), on demand, with TTL on `expires_at`.
///
/// # Errors
/// When DynamoDB refuses.
pub async fn create_table(client: &aws_sdk_dynamodb::Client, name: &str) -> anyhow::Result<()> {
    let attr = |n: &str| {
        AttributeDefinition::builder()
            .attribute_name(n)
            .attribute_type(ScalarAttributeType::S)
            .build()
    };
    let key = |n: &str, t| {
        KeySchemaElement::builder()
            .attribute_name(n)
            .key_type(t)
            .build()
    };
    client
        .create_table()
        .table_name(name)
        .attribute_definitions(attr("pk")?)
        .attribute_definitions(attr("sk")?)
        .key_schema(key("pk", KeyType::Hash)?)
        .key_schema(key("sk", KeyType::Range)?)
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .with_context(|| format!("creating table {name}"))?;
    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name("expires_at")
                .enabled(true)
                .build()?,
        )
        .send()
        .await
        .context("enabling TTL")?;
    Ok(())
}

/// Creates `name` and `name-dlq`, redriving after `max_receives`; returns both URLs.
///
/// # Errors
/// When SQS refuses.
pub async fn create_queue_with_dlq(
    client: &aws_sdk_sqs::Client,
    name: &str,
    max_receives: u32,
) -> anyhow::Result<(String, String)> {
    let dlq_url = client
        .create_queue()
        .queue_name(format!("{name}-dlq"))
        .send()
        .await
        .context("creating the dead-letter queue")?
        .queue_url
        .context("no dead-letter queue url")?;
    let dlq_arn = client
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await?
        .attributes
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .context("no dead-letter queue arn")?;
    let policy = serde_json::json!({
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": max_receives.to_string(),
    });
    let url = client
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::RedrivePolicy, policy.to_string())
        .send()
        .await
        .with_context(|| format!("creating queue {name}"))?
        .queue_url
        .context("no queue url")?;
    Ok((url, dlq_url))
}

/// Creates an S3 bucket on an emulator with an unsigned `PUT /bucket` (object_store has no
/// bucket API, and emulators do not check signatures).
///
/// # Errors
/// When the request fails or the endpoint answers with an error status.
pub async fn create_bucket(endpoint: &str, bucket: &str) -> anyhow::Result<()> {
    let url = format!("{}/{bucket}", endpoint.trim_end_matches('/'));
    let response = reqwest::Client::new()
        .put(&url)
        .send()
        .await
        .with_context(|| format!("creating bucket {bucket}"))?;
    anyhow::ensure!(
        response.status().is_success(),
        "creating bucket {bucket}: {}",
        response.status()
    );
    Ok(())
}
