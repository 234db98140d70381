//! What the training function consumes besides requests: `training.dataset.ready` on the
//! training queue (start the runs it calls for) and AWS Batch's *Job State Change* events (a
//! job started, succeeded or failed).

use agentrl_core::{
    TenantId,
    contracts::{DATASET_READY, DatasetReady},
};
use agentrl_http::{
    consume::{self, Outcome},
    sqs::Consumer,
};
use agentrl_store::ports::{Message, Queue};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

use crate::{
    TrainingState,
    runs::{self, JobState},
};

/// The consumer of the training queue: `training.dataset.ready` starts runs; anything else is
/// dead-lettered with the reason.
#[derive(Clone)]
pub struct TrainingConsumer {
    state: TrainingState,
    queue: Arc<dyn Queue>,
}

impl TrainingConsumer {
    /// A consumer that dead-letters through `queue` (the training queue).
    pub fn new(state: TrainingState, queue: Arc<dyn Queue>) -> Self {
        Self { state, queue }
    }

    /// Handles one Batch *Job State Change* event (`detail.status`, the run's tenant and id
    /// in `detail.parameters` or `detail.tags`). Returns whether it changed a run.
    ///
    /// # Errors
    /// A failing store: the invocation fails and EventBridge retries it.
    pub async fn batch_state_change(&self, event: &Value) -> anyhow::Result<bool> {
        let detail = &event["detail"];
        let field = |name: &str| {
            detail["tags"][name]
                .as_str()
                .or_else(|| detail["parameters"][name].as_str())
                .map(str::to_owned)
        };
        if field("agentrl_kind").as_deref() == Some("dataset") {
            // Dataset builds share the CPU queue; their outcome is the dataset's own event.
            let status = detail["status"].as_str().unwrap_or_default();
            if status == "FAILED" {
                tracing::error!(reason = %detail["statusReason"], "a dataset Batch job failed");
            }
            return Ok(false);
        }
        let (Some(tenant), Some(run)) = (field("agentrl_tenant"), field("agentrl_run")) else {
            tracing::warn!("a Batch job state change without agentrl_tenant and agentrl_run tags");
            return Ok(false);
        };
        let Ok(tenant) = TenantId::parse(&tenant) else {
            tracing::warn!(tenant, "a Batch job state change with an invalid tenant");
            return Ok(false);
        };
        let state = match detail["status"].as_str() {
            Some("RUNNING") => JobState::Running,
            Some("SUCCEEDED") => JobState::Succeeded,
            Some("FAILED") => JobState::Failed(
                detail["statusReason"]
                    .as_str()
                    .unwrap_or("the Batch job failed")
                    .to_owned(),
            ),
            _ => return Ok(false),
        };
        Ok(runs::job_state(&self.state, &tenant, &run, state).await?)
    }
}

/// The part of an event message the consumer reads first.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
}

impl TrainingConsumer {
    /// Starts the runs a `training.dataset.ready` message calls for.
    async fn handle(&self, message: &Message) -> Result<(), Outcome> {
        let envelope: Envelope = consume::decode(&message.body, "an event")?;
        if envelope.kind != DATASET_READY {
            return Err(Outcome::Poison(format!(
                "unexpected event type {:?} on the training queue",
                envelope.kind
            )));
        }
        let ready: DatasetReady = serde_json::from_str(&message.body)
            .map_err(|e| Outcome::Poison(format!("training.dataset.ready: {e}")))?;
        let started = runs::on_dataset_ready(&self.state, &ready)
            .await
            .map_err(|e| Outcome::Retry(format!("dataset ready: {e:#}")))?;
        tracing::info!(dataset = %ready.dataset_id, runs = started.len(), "dataset ready");
        Ok(())
    }
}

impl Consumer for TrainingConsumer {
    /// One message at a time, in order.
    async fn process(&self, messages: &[Message]) -> Vec<String> {
        consume::each(self.queue.as_ref(), messages, 1, |m| self.handle(m)).await
    }
}
