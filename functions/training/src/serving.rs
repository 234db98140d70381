//! Serving what training produced: a promotion (or a canary start) has the tenant's model
//! server serve the version before the agent's record routes any call to it, and the versions
//! it no longer routes are retired after. The server is a port: the gateway provides it (vLLM's
//! runtime LoRA loading), `agentrl serve` its built-in model server, and a stack without one
//! routes versions served by other means. [`weights`] says where the files of a served name
//! are, for a server that loads them itself.

use std::sync::Arc;

use agentrl_core::TenantId;
use agentrl_core::gateway::served_name;
use agentrl_store::StoreError;
use async_trait::async_trait;

use agentrl_store::ports::Objects;

use crate::repo::{AgentRecord, BaseRef, TrainingRepo, VersionRecord};

/// The files of a PEFT adapter, as the trainer writes them.
const ADAPTER_FILES: [&str; 2] = ["adapter_config.json", "adapter_model.safetensors"];

/// A version as a model server is asked to serve it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedVersion {
    /// The name calls ask for: `{agent_id}-{version}`.
    pub name: String,
    /// The object paths of its PEFT adapter (`adapter_config.json`,
    /// `adapter_model.safetensors`); `None` for full weights, which need a deployment.
    pub adapter: Option<Vec<String>>,
}

/// The server a tenant's agents are served from.
#[async_trait]
pub trait ModelServer: Send + Sync {
    /// Makes the server serve `version`; the server's reason when it does not.
    async fn serve(&self, t: &TenantId, version: &ServedVersion) -> Result<(), String>;
    /// Stops serving the version named `name` (best effort: a failure is logged).
    async fn retire(&self, t: &TenantId, name: &str);
}

/// A shared model server.
pub type SharedModelServer = Arc<dyn ModelServer>;

impl VersionRecord {
    /// The version as a server serves it.
    pub(crate) fn served(&self) -> ServedVersion {
        let run_output = self
            .artifacts
            .iter()
            .find_map(|p| p.strip_suffix(ADAPTER_FILES[1]))
            .map(str::to_owned);
        let adapter = run_output.and_then(|dir| {
            ADAPTER_FILES
                .iter()
                .map(|f| {
                    let path = format!("{dir}{f}");
                    self.artifacts.contains(&path).then_some(path)
                })
                .collect()
        });
        ServedVersion {
            name: served_name(&self.agent_id, Some(&self.version), ""),
            adapter,
        }
    }
}

/// The versions `agent` routes calls to.
pub(crate) fn routed(agent: &AgentRecord) -> Vec<String> {
    agent
        .deployed_version
        .iter()
        .chain(agent.canary.as_ref().map(|c| &c.version))
        .cloned()
        .collect()
}

/// Retires the versions of `before` that `after` no longer routes.
pub(crate) async fn retire_unrouted(
    server: &dyn ModelServer,
    t: &TenantId,
    before: &[String],
    after: &AgentRecord,
) {
    let now = routed(after);
    for version in before {
        if !now.contains(version) {
            server
                .retire(t, &served_name(&after.agent_id, Some(version), ""))
                .await;
        }
    }
}

/// Where the files of a served model are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weights {
    /// The object prefix of a model directory: `config.json`, the tokenizer's files, weights.
    pub model: String,
    /// The object paths of a PEFT adapter to put on it (a version trained with LoRA and not
    /// merged).
    pub adapter: Option<Vec<String>>,
}

/// The weights the tenant's calls name `name`: a version of one of its agents,
/// `{agent_id}-v{N}`, or a shared base model under `models/` (what an agent is served before
/// any promotion). `None`: no such model.
///
/// # Errors
/// The stores failed.
pub async fn weights(
    repo: &TrainingRepo,
    objects: &dyn Objects,
    t: &TenantId,
    name: &str,
) -> Result<Option<Weights>, StoreError> {
    if let Some((agent, version)) = name.rsplit_once('-')
        && agentrl_core::trajectory::check_id("model", agent).is_ok()
        && let Some(record) = repo.version(t, agent, version).await?
    {
        return version_weights(repo, t, &record).await;
    }
    if crate::wire::check_base_model("model", name).is_err() {
        return Ok(None);
    }
    let model = format!("{}{name}/", crate::MODELS_PREFIX);
    Ok(objects
        .get(&format!("{model}config.json"))
        .await?
        .map(|_| Weights {
            model,
            adapter: None,
        }))
}

/// A version's weights: its own model directory, or its adapter on the base it was trained
/// from.
async fn version_weights(
    repo: &TrainingRepo,
    t: &TenantId,
    record: &VersionRecord,
) -> Result<Option<Weights>, StoreError> {
    if let Some(model) = &record.model_prefix {
        return Ok(Some(Weights {
            model: model.clone(),
            adapter: None,
        }));
    }
    let Some(adapter) = record.served().adapter else {
        return Ok(None);
    };
    let model = match &record.base {
        BaseRef::Model(name) => format!("{}{name}/", crate::MODELS_PREFIX),
        // A run starts from a version only when it has a model directory (`base_of`).
        BaseRef::Version(v) => match repo.version(t, &record.agent_id, v).await? {
            Some(base) => match base.model_prefix {
                Some(model) => model,
                None => return Ok(None),
            },
            None => return Ok(None),
        },
    };
    Ok(Some(Weights {
        model,
        adapter: Some(adapter),
    }))
}

/// Every version of the tenant's agents.
async fn all_versions(repo: &TrainingRepo, t: &TenantId) -> Result<Vec<VersionRecord>, StoreError> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let (agents, next) = repo.agents(t, 100, cursor).await?;
        for agent in agents {
            let mut page = None;
            loop {
                let (versions, more) = repo.versions(t, &agent.agent_id, 100, page).await?;
                out.extend(versions);
                match more {
                    Some(m) => page = Some(m),
                    None => break,
                }
            }
        }
        match next {
            Some(n) => cursor = Some(n),
            None => return Ok(out),
        }
    }
}

/// Every version of the tenant's agents that has an adapter, as a server serves it (for
/// `agentrl models sync`).
///
/// # Errors
/// The table failed.
pub async fn adapters(repo: &TrainingRepo, t: &TenantId) -> Result<Vec<ServedVersion>, StoreError> {
    Ok(all_versions(repo, t)
        .await?
        .iter()
        .map(VersionRecord::served)
        .filter(|v| v.adapter.is_some())
        .collect())
}

/// The names of every version of the tenant's agents, as calls name them.
///
/// # Errors
/// The table failed.
pub async fn version_names(repo: &TrainingRepo, t: &TenantId) -> Result<Vec<String>, StoreError> {
    Ok(all_versions(repo, t)
        .await?
        .iter()
        .map(|v| v.served().name)
        .collect())
}
