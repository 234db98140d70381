//! The learning API's use cases: enqueue events, read what they taught about an agent, set
//! its operator settings, lift a freeze, look up a reply. Applying events and updating the
//! policy are the queue worker's and the policy loop's (`apply.rs`, `policy.rs`).

use std::sync::Arc;

use agentrl_core::{
    TenantId,
    learning::{AgentProjection, AgentSettings, Event, Relationship, ReplyLedger},
};
use agentrl_store::{StoreError, clock::now_ms_i64, ports::Queue};

use crate::{
    EventEnvelope,
    repo::{LearningRepo, ShadowEntry},
};

/// Relationships listed with an agent (the strongest).
const RELATIONSHIPS_SHOWN: usize = 20;

/// Why an agent operation did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    /// No event of this agent (or reply) in this tenant.
    #[error("no such {0}")]
    NotFound(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the events taught about an agent, as of now.
pub(crate) struct AgentLearning {
    pub projection: AgentProjection,
    pub settings: AgentSettings,
    /// The strongest relationships (user id, relationship), strongest first.
    pub relationships: Vec<(String, Relationship)>,
    pub shadow_log: Vec<ShadowEntry>,
    pub pending: bool,
}

/// Enqueues validated events for the worker, each in an envelope naming the tenant and the
/// receipt time; returns their message ids, in order.
///
/// # Errors
/// [`StoreError::Invalid`] when the queue refuses a message (too large).
pub(crate) async fn submit(
    queue: &Arc<dyn Queue>,
    tenant: &TenantId,
    events: &[Event],
    received_at_ms: i64,
) -> Result<Vec<String>, StoreError> {
    let bodies = events
        .iter()
        .map(|event| {
            serde_json::to_string(&EventEnvelope {
                version: agentrl_core::envelope::ENVELOPE_VERSION,
                tenant: tenant.as_str().to_owned(),
                received_at_ms,
                event: event.clone(),
            })
            .map_err(|e| StoreError::Backend(e.into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    queue.send_batch(&bodies).await
}

/// The agent's projections, pruned as of now (expired high-quality interactions and old
/// days go, not only at the next event), with its strongest relationships.
pub(crate) async fn read(
    repo: &LearningRepo,
    tenant: &TenantId,
    agent: &str,
) -> Result<AgentLearning, AgentError> {
    let (doc, version) = repo.agent(tenant, agent).await?;
    // An agent registered (`POST /v1/agents`) before its first event has learnt nothing yet:
    // its empty projection, not a 404.
    if version.is_none() && !repo.registered(tenant, agent).await? {
        return Err(AgentError::NotFound("agent"));
    }
    let config = repo.config(tenant).await?;
    let mut projection = doc.projection;
    projection.prune(now_ms_i64(), &config);
    Ok(AgentLearning {
        projection,
        settings: doc.settings,
        relationships: repo
            .relationships(tenant, agent, RELATIONSHIPS_SHOWN)
            .await?,
        shadow_log: doc.shadow_log,
        pending: doc.pending,
    })
}

/// Sets the agent's operator settings (allowed before its first event); returns them.
pub(crate) async fn put_settings(
    repo: &LearningRepo,
    tenant: &TenantId,
    agent: &str,
    settings: AgentSettings,
) -> Result<AgentSettings, AgentError> {
    let doc = repo
        .modify_agent(tenant, agent, true, |doc| doc.settings = settings.clone())
        .await?;
    Ok(doc.map(|d| d.settings).unwrap_or(settings))
}

/// Lifts a freeze after review: updates apply again from the next run. A registered agent
/// that has no learning state yet was never frozen: there is nothing to lift, and its settings
/// are the defaults.
pub(crate) async fn unfreeze(
    repo: &LearningRepo,
    tenant: &TenantId,
    agent: &str,
) -> Result<AgentSettings, AgentError> {
    match repo
        .modify_agent(tenant, agent, false, |doc| doc.projection.unfreeze())
        .await?
    {
        Some(doc) => Ok(doc.settings),
        None if repo.registered(tenant, agent).await? => Ok(AgentSettings::default()),
        None => Err(AgentError::NotFound("agent")),
    }
}

/// What is known about a reply.
pub(crate) async fn reply(
    repo: &LearningRepo,
    tenant: &TenantId,
    agent: &str,
    message: &str,
) -> Result<ReplyLedger, AgentError> {
    match repo.reply(tenant, agent, message).await? {
        (ledger, Some(_)) => Ok(ledger),
        (_, None) => Err(AgentError::NotFound("reply")),
    }
}
