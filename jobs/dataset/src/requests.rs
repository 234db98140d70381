//! The dataset queue's consumer: `dataset.generation.requested` from the learning service
//! names an agent whose feedback qualifies it (its projection's counts in `detail`). One batch
//! becomes one build per tenant, for the agents its requests name.
//!
//! Delivery is at least once: a redelivered request builds the same dataset id (the id hashes
//! the date, tenant, rules, agents and source objects), whose files are rewritten identically,
//! and the training function creates one run per (agent, dataset, config).

use std::sync::Arc;

use agentrl_core::{
    TenantId,
    dataset::{Request, Selection},
    privacy::{Pseudonymizer, TENANT},
};
use agentrl_http::{
    consume::{self, Outcome},
    sqs::Consumer,
};
use agentrl_store::ports::{Message, Queue};
use serde::Deserialize;

use crate::dispatch::Datasets;

/// The event type this queue carries.
pub const REQUESTED: &str = "dataset.generation.requested";

/// An event's type, read first.
#[derive(Debug, Deserialize)]
struct Kind {
    #[serde(rename = "type")]
    kind: String,
}

/// The fields of a request the job reads.
#[derive(Debug, Deserialize)]
struct Requested {
    tenant: String,
    agent_id: String,
    detail: Figures,
}

/// The learning projection's counts, as the learning service sends them.
#[derive(Debug, Deserialize)]
struct Figures {
    positive_count: u32,
    high_quality: u32,
}

/// Consumes the dataset queue.
#[derive(Clone)]
pub struct DatasetRequests {
    datasets: Datasets,
    queue: Arc<dyn Queue>,
    pseudonyms: Arc<Pseudonymizer>,
}

impl DatasetRequests {
    /// Builds with `datasets`, dead-letters through `queue` (the dataset queue) and names
    /// tenant partitions with `pseudonyms` (the ingest worker's key).
    pub fn new(datasets: Datasets, queue: Arc<dyn Queue>, pseudonyms: Arc<Pseudonymizer>) -> Self {
        Self {
            datasets,
            queue,
            pseudonyms,
        }
    }

    fn parse(body: &str) -> Result<(TenantId, Request), Outcome> {
        let kind: Kind = consume::decode(body, "an event")?;
        if kind.kind != REQUESTED {
            return Err(Outcome::Poison(format!(
                "unexpected event type {:?} on the dataset queue",
                kind.kind
            )));
        }
        let r: Requested =
            serde_json::from_str(body).map_err(|e| Outcome::Poison(format!("{REQUESTED}: {e}")))?;
        let tenant =
            TenantId::parse(&r.tenant).map_err(|e| Outcome::Poison(format!("tenant: {e}")))?;
        if r.agent_id.is_empty() {
            return Err(Outcome::Poison("agent_id: must not be empty".into()));
        }
        Ok((
            tenant,
            Request {
                agent_id: r.agent_id,
                positive_count: r.detail.positive_count,
                high_quality: r.detail.high_quality,
            },
        ))
    }
}

impl Consumer for DatasetRequests {
    /// One build per tenant (its pseudonymous partition), for the agents its requests name.
    async fn process(&self, messages: &[Message]) -> Vec<String> {
        let now = agentrl_store::clock::now_ms_i64();
        consume::grouped(
            self.queue.as_ref(),
            messages,
            1,
            |message| {
                std::future::ready(Self::parse(&message.body).map(|(tenant, request)| {
                    (self.pseudonyms.pseudonym(TENANT, tenant.as_str()), request)
                }))
            },
            |tenant, requests| async move {
                let count = requests.len();
                let selection = Selection::Requested(requests);
                let outcome = match self.datasets.tenant(&tenant, &selection, now).await {
                    Ok(outcome) => {
                        tracing::info!(%tenant, ?outcome, "requested dataset");
                        Outcome::Done
                    }
                    Err(e) => Outcome::Retry(format!("requested dataset of {tenant}: {e:#}")),
                };
                vec![outcome; count]
            },
        )
        .await
    }
}
