//! Per-tenant ingest settings: turn-reward weights, judged turn rewards and differential
//! privacy.

use agentrl_core::{FieldError, privacy::DpConfig, trajectory::TurnRewardWeights};
use serde::{Deserialize, Serialize};

/// The name of the configuration document (`tenant#config#trajectories`).
pub(crate) const CONFIG_NAME: &str = "trajectories";

/// A tenant's ingest settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct IngestConfig {
    /// Weights of the turn-level reward (information gain, format, progress).
    pub rewards: TurnRewardWeights,
    /// Have the critic model of the tenant's judges (`PUT /v1/config/judges`) score each
    /// assistant turn's information gain and task progress, in place of the heuristic's; a
    /// judge that abstains leaves the heuristic's value, marked. Off by default.
    pub judge_turn_rewards: bool,
    /// Laplace noise on episode rewards, with the tenant's ε budget; off when absent or null.
    pub differential_privacy: Option<DpConfig>,
}

impl IngestConfig {
    /// Checks both parts; the error names the field.
    pub(crate) fn validate(&self) -> Result<(), FieldError> {
        self.rewards.validate().map_err(|e| e.within("rewards"))?;
        if let Some(dp) = &self.differential_privacy {
            dp.validate()
                .map_err(|e| e.within("differential_privacy"))?;
        }
        Ok(())
    }
}
