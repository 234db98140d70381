//! The store side of a round, around the training and aggregation the operator's command
//! does: who takes part (members whose opt-in names the federation's base model and task
//! type, with an agent of both, a dataset that selected it, and budget left for one more
//! round at its own δ), then the round's bookkeeping once the next global adapter is written
//! (each participant's ledger charged once, each member's own part recorded, the round record
//! and the federation moved on).

use std::sync::Arc;

use agentrl_core::TenantId;
use agentrl_core::contracts::Manifest;
use agentrl_core::federation::FederationOptIn;
use agentrl_core::privacy::Pseudonymizer;
use agentrl_core::privacy::rdp::{gaussian_rho, rho_epsilon};
use agentrl_store::federation::{FederationSpend, charge, spent};
use agentrl_store::ports::{Objects, Table};
use agentrl_store::{StoreError, clock::now_ms};

use super::{Excluded, Federation, FederationRepo, Participant, RoundRecord, TenantRound};
use crate::repo::TrainingRepo;

/// A member that takes part in a round, with what its local run reads.
#[derive(Debug, Clone)]
pub struct Member {
    /// The tenant.
    pub tenant: TenantId,
    /// Its agent of the federation's base model and task type.
    pub agent_id: String,
    /// Its newest dataset that selected the agent (`datasets/tenant=…/ID/`).
    pub dataset_prefix: String,
    /// The dataset's SFT examples (what `Weighting::Examples` counts).
    pub examples: u64,
    /// Its opt-in.
    pub opt_in: FederationOptIn,
    /// What it spent before this round.
    pub spend: FederationSpend,
}

/// Who takes part in a round and who is left out.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The participants, by tenant id.
    pub members: Vec<Member>,
    /// Members left out, with the reason (shown to them in their rounds).
    pub excluded: Vec<(TenantId, FederationOptIn, String)>,
}

/// What a round reads and writes in the stores.
#[derive(Clone)]
pub struct Rounds {
    repo: FederationRepo,
    training: TrainingRepo,
    table: Arc<dyn Table>,
    objects: Arc<dyn Objects>,
    pseudonyms: Arc<Pseudonymizer>,
}

impl Rounds {
    /// Rounds over the stores; `pseudonyms` names tenant partitions as the dataset job does.
    pub fn new(
        table: Arc<dyn Table>,
        objects: Arc<dyn Objects>,
        pseudonyms: Arc<Pseudonymizer>,
    ) -> Self {
        Self {
            repo: FederationRepo::new(table.clone()),
            training: TrainingRepo::new(table.clone()),
            table,
            objects,
            pseudonyms,
        }
    }

    /// The federation tables.
    #[must_use]
    pub fn repo(&self) -> &FederationRepo {
        &self.repo
    }

    /// Who takes part in `f`'s next round.
    ///
    /// # Errors
    /// A failing store.
    pub async fn plan(&self, f: &Federation) -> Result<Plan, StoreError> {
        let mut plan = Plan::default();
        let rho = gaussian_rho(f.noise_multiplier);
        for tenant in self.repo.members().await? {
            let opt_in = self.repo.opt_in(&tenant).await?;
            if !opt_in.includes(&f.base_model, &f.task_type) {
                continue;
            }
            let spend = spent(self.table.as_ref(), &tenant).await?;
            let after = rho_epsilon(spend.rho + rho, opt_in.delta);
            if after > opt_in.epsilon {
                let reason = format!(
                    "out of budget: this round would bring ε to {after:.3} (δ = {}), over the \
                     budget of {}",
                    opt_in.delta, opt_in.epsilon
                );
                plan.excluded.push((tenant, opt_in, reason));
                continue;
            }
            let Some(agent_id) = self.agent(&tenant, f).await? else {
                let reason = format!(
                    "no active agent of base model {} and type {}",
                    f.base_model, f.task_type
                );
                plan.excluded.push((tenant, opt_in, reason));
                continue;
            };
            match self.dataset(&tenant, &agent_id).await? {
                Some((dataset_prefix, examples)) => plan.members.push(Member {
                    tenant,
                    agent_id,
                    dataset_prefix,
                    examples,
                    opt_in,
                    spend,
                }),
                None => {
                    let reason = format!("no dataset has selected agent {agent_id} yet");
                    plan.excluded.push((tenant, opt_in, reason));
                }
            }
        }
        Ok(plan)
    }

    /// The tenant's agent in the federation: its first active one (by id) of the base model
    /// and task type. One per tenant, so that a tenant is one participant (the noise protects
    /// tenants, not agents).
    async fn agent(&self, t: &TenantId, f: &Federation) -> Result<Option<String>, StoreError> {
        let mut cursor = None;
        loop {
            let (agents, next) = self.training.agents(t, 100, cursor).await?;
            if let Some(a) = agents.into_iter().find(|a| {
                a.active
                    && a.agent_type == f.task_type
                    && a.base_model.as_deref() == Some(f.base_model.as_str())
            }) {
                return Ok(Some(a.agent_id));
            }
            match next {
                Some(n) => cursor = Some(n),
                None => return Ok(None),
            }
        }
    }

    /// The tenant's newest dataset whose manifest selected `agent_id`, and its SFT examples.
    async fn dataset(
        &self,
        t: &TenantId,
        agent_id: &str,
    ) -> Result<Option<(String, u64)>, StoreError> {
        let partition = self
            .pseudonyms
            .pseudonym(agentrl_core::privacy::TENANT, t.as_str());
        let prefix = format!("datasets/tenant={partition}/");
        let mut manifests: Vec<String> = self
            .objects
            .list(&prefix)
            .await?
            .into_iter()
            .filter(|o| o.path.ends_with("/manifest.json"))
            .map(|o| o.path)
            .collect();
        // Dataset ids start with their date: newest first.
        manifests.sort_unstable_by(|a, b| b.cmp(a));
        for path in manifests {
            let Some(bytes) = self.objects.get(&path).await? else {
                continue;
            };
            // A manifest this build cannot read is not the member's to train on yet.
            let Ok(manifest) = serde_json::from_slice::<Manifest>(&bytes) else {
                continue;
            };
            if manifest.check_version().is_err() {
                continue;
            }
            if manifest
                .agents
                .iter()
                .any(|a| a.agent_id == agent_id && a.selected)
            {
                let dir = path.trim_end_matches("manifest.json").to_owned();
                return Ok(Some((dir, manifest.counts.sft_examples)));
            }
        }
        Ok(None)
    }

    /// The bookkeeping of a round whose next global adapter is written: each participant's
    /// ledger charged (once per round, however often this runs), every member's own part
    /// recorded, the round record written and the federation moved to the next round (only
    /// over the version `at` it was read at).
    ///
    /// # Errors
    /// A failing store; a condition failure when the federation changed meanwhile.
    pub async fn finish(
        &self,
        f: &Federation,
        at: u64,
        started_ms: u64,
        plan: &Plan,
        weights: &[f64],
        noise_std: f64,
    ) -> Result<RoundRecord, StoreError> {
        let round = f.rounds_done;
        let round_id = f.round_id(round);
        let finished_ms = now_ms();
        let rho = gaussian_rho(f.noise_multiplier);
        let total: f64 = weights.iter().sum();
        let part = |took_part: bool, reason: Option<String>| TenantRound {
            round_id: round_id.clone(),
            federation_id: f.federation_id.clone(),
            round,
            finished_ms,
            took_part,
            reason,
            agent_id: None,
            weight: 0.0,
            participants: plan.members.len(),
            noise_std,
            epsilon_round: 0.0,
            epsilon_total: 0.0,
            delta: 0.0,
        };
        let mut participants = Vec::with_capacity(plan.members.len());
        for (m, w) in plan.members.iter().zip(weights) {
            let after = charge(self.table.as_ref(), &m.tenant, &round_id, rho).await?;
            let before = rho_epsilon(m.spend.rho, m.opt_in.delta);
            let epsilon_total = rho_epsilon(after.rho, m.opt_in.delta);
            self.repo
                .record_part(
                    &m.tenant,
                    &TenantRound {
                        agent_id: Some(m.agent_id.clone()),
                        weight: w / total,
                        epsilon_round: epsilon_total - before,
                        epsilon_total,
                        delta: m.opt_in.delta,
                        ..part(true, None)
                    },
                )
                .await?;
            participants.push(Participant {
                tenant: m.tenant.as_str().to_owned(),
                agent_id: m.agent_id.clone(),
                weight: w / total,
                epsilon_total,
            });
        }
        for (tenant, opt_in, reason) in &plan.excluded {
            let spend = spent(self.table.as_ref(), tenant).await?;
            let epsilon_total = rho_epsilon(spend.rho, opt_in.delta);
            self.repo
                .record_part(
                    tenant,
                    &TenantRound {
                        epsilon_total,
                        delta: opt_in.delta,
                        ..part(false, Some(reason.clone()))
                    },
                )
                .await?;
        }
        let record = RoundRecord {
            round_id: round_id.clone(),
            federation_id: f.federation_id.clone(),
            round,
            started_ms,
            finished_ms,
            participants,
            excluded: plan
                .excluded
                .iter()
                .map(|(t, _, reason)| Excluded {
                    tenant: t.as_str().to_owned(),
                    reason: reason.clone(),
                })
                .collect(),
            noise_std,
            global: f.global_prefix(round + 1),
        };
        let next = Federation {
            rounds_done: round + 1,
            ..f.clone()
        };
        self.repo.finish_round(&next, at, &record).await?;
        Ok(record)
    }
}
