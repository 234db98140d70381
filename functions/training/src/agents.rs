//! The agents registry: create, read, list and change agents; which version serves a request.

use agentrl_core::{FieldError, TenantId};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    retry::{Contended, optimistic},
};
use serde_json::Value;

use crate::{
    TrainingState,
    repo::{AgentRecord, ModelRef, lost_race},
};

/// An agent to register, as parsed from the request.
pub(crate) struct NewAgent {
    /// `None`: a UUIDv7 is assigned.
    pub agent_id: Option<String>,
    pub name: String,
    pub agent_type: String,
    pub model: ModelRef,
    pub base_prompt: String,
    pub base_model: Option<String>,
    pub auto_train: Option<Value>,
    pub active: bool,
}

/// A change to an agent: absent fields stay as they are; `Some(None)` clears an optional one.
#[derive(Default)]
pub(crate) struct AgentPatch {
    pub name: Option<String>,
    pub agent_type: Option<String>,
    pub model: Option<ModelRef>,
    pub base_prompt: Option<String>,
    pub base_model: Option<Option<String>>,
    pub auto_train: Option<Option<Value>>,
    pub active: Option<bool>,
}

/// Why an agent operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    #[error("no such agent")]
    NotFound,
    #[error("an agent with this id exists")]
    Exists,
    #[error(transparent)]
    Invalid(#[from] FieldError),
    #[error("the agent is being changed concurrently")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Contended for AgentError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

/// Registers an agent, and the tenant's dataset partition so ready datasets find it.
pub(crate) async fn create(
    state: &TrainingState,
    t: &TenantId,
    new: NewAgent,
) -> Result<AgentRecord, AgentError> {
    let now = now_ms();
    let agent = AgentRecord {
        agent_id: new
            .agent_id
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string()),
        name: new.name,
        agent_type: new.agent_type,
        model: new.model,
        base_prompt: new.base_prompt,
        base_model: new.base_model,
        auto_train: new.auto_train,
        version: 1,
        active: new.active,
        deployed_version: None,
        canary: None,
        history: Vec::new(),
        next_version: 1,
        created_at_ms: now,
        updated_at_ms: now,
    };
    state
        .repo
        .remember_partition(t, &state.partition(t))
        .await?;
    match state.repo.put_agent(t, &agent, None).await {
        Ok(()) => Ok(agent),
        Err(StoreError::ConditionFailed { .. }) => Err(AgentError::Exists),
        Err(e) => Err(e.into()),
    }
}

/// Reads an agent.
pub(crate) async fn read(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
) -> Result<AgentRecord, AgentError> {
    Ok(state
        .repo
        .agent(t, id)
        .await?
        .ok_or(AgentError::NotFound)?
        .0)
}

/// Applies `patch`; the revision counts every change.
pub(crate) async fn update(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
    patch: AgentPatch,
) -> Result<AgentRecord, AgentError> {
    let patch = &patch;
    optimistic(|| async move {
        let (mut agent, at) = state.repo.agent(t, id).await?.ok_or(AgentError::NotFound)?;
        if let Some(v) = &patch.name {
            agent.name.clone_from(v);
        }
        if let Some(v) = &patch.agent_type {
            agent.agent_type.clone_from(v);
        }
        if let Some(v) = &patch.model {
            agent.model = v.clone();
        }
        if let Some(v) = &patch.base_prompt {
            agent.base_prompt.clone_from(v);
        }
        if let Some(v) = &patch.base_model {
            agent.base_model.clone_from(v);
        }
        if let Some(v) = &patch.auto_train {
            agent.auto_train.clone_from(v);
        }
        if let Some(v) = patch.active {
            agent.active = v;
        }
        agent.version += 1;
        agent.updated_at_ms = now_ms();
        state
            .repo
            .put_agent(t, &agent, Some(at))
            .await
            .map_err(|e| lost_race(e, AgentError::Contended))?;
        Ok(agent)
    })
    .await
}

/// A page of the tenant's agents, in id order.
pub(crate) async fn list(
    state: &TrainingState,
    t: &TenantId,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<AgentRecord>, Option<String>), AgentError> {
    Ok(state.repo.agents(t, limit, cursor).await?)
}
