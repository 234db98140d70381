//! The dataset queue's consumer: `dataset.generation.requested` from the learning service
//! names an agent whose feedback qualifies it (its projection's counts in `detail`). One batch
//! becomes one build per tenant, for the agents its requests name.
//!
//! Delivery is at least once: a redelivered request builds the same dataset id (the id hashes
//! the date, tenant, rules, agents and source objects), whose files are rewritten identically,
//! and the training function creates one run per (agent, dataset, config).

use std::{collections::BTreeMap, sync::Arc};

use agentrl_core::{
    TenantId,
    dataset::{Request, Selection},
    privacy::{Pseudonymizer, TENANT},
};
use agentrl_http::sqs::Consumer;
use agentrl_store::{
    StoreError,
    ports::{Message, Queue},
};
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

    fn parse(body: &str) -> Result<(TenantId, Request), String> {
        agentrl_core::envelope::check_version(body)?;
        let kind: Kind = serde_json::from_str(body).map_err(|e| format!("not an event: {e}"))?;
        if kind.kind != REQUESTED {
            return Err(format!(
                "unexpected event type {:?} on the dataset queue",
                kind.kind
            ));
        }
        let r: Requested = serde_json::from_str(body).map_err(|e| format!("{REQUESTED}: {e}"))?;
        let tenant = TenantId::parse(&r.tenant).map_err(|e| format!("tenant: {e}"))?;
        if r.agent_id.is_empty() {
            return Err("agent_id: must not be empty".into());
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

    async fn dead_letter(&self, message: &Message, reason: &str) -> Result<(), StoreError> {
        tracing::warn!(id = %message.id, reason, "dataset request dead-lettered");
        self.queue.dead_letter(message, reason).await
    }
}

impl Consumer for DatasetRequests {
    async fn process(&self, messages: &[Message]) -> Vec<String> {
        let mut retry = Vec::new();
        let mut by_tenant: BTreeMap<String, (Vec<Request>, Vec<&Message>)> = BTreeMap::new();
        for message in messages {
            match Self::parse(&message.body) {
                Ok((tenant, request)) => {
                    let partition = self.pseudonyms.pseudonym(TENANT, tenant.as_str());
                    let entry = by_tenant.entry(partition).or_default();
                    entry.0.push(request);
                    entry.1.push(message);
                }
                Err(reason) => {
                    if let Err(e) = self.dead_letter(message, &reason).await {
                        tracing::error!(error = %e, "could not dead-letter a request; retried");
                        retry.push(message.id.clone());
                    }
                }
            }
        }
        let now = agentrl_store::clock::now_ms_i64();
        for (tenant, (requests, sources)) in by_tenant {
            let selection = Selection::Requested(requests);
            match self.datasets.tenant(&tenant, &selection, now).await {
                Ok(outcome) => tracing::info!(%tenant, ?outcome, "requested dataset"),
                Err(e) => {
                    tracing::warn!(%tenant, error = %format!("{e:#}"), "requested dataset failed: retried");
                    retry.extend(sources.iter().map(|m| m.id.clone()));
                }
            }
        }
        retry
    }
}
