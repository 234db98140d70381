//! Federated learning across tenants without sharing data: each tenant's opt-in
//! (`/v1/config/federation`), the operator's federations and their rounds, and each tenant's
//! audit trail of its own part (`GET /v1/federation/rounds`). A round itself runs where the
//! trainer is (`agentrl federation round`): each member trains on its own dataset from the
//! round's global adapter, and only the noised mean of the clipped updates leaves the round
//! (`docs/federated.md`).

mod repo;
mod round;

pub use repo::FederationRepo;
pub use round::{Member, Plan, Rounds};

use agentrl_core::FieldError;
use agentrl_core::training::check_base_model;
use agentrl_core::training::config::TrainConfig;
use serde::{Deserialize, Serialize};

/// How much each participant's clipped update counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Weighting {
    /// Every participant the same.
    Uniform,
    /// By its training examples, capped, so that one large tenant cannot dominate (and the
    /// noise, which follows the largest weight, stays small).
    Examples {
        /// The most examples one participant counts for.
        cap: u64,
    },
}

impl Weighting {
    /// The weight of a participant with `examples` training examples.
    #[must_use]
    pub fn weight(self, examples: u64) -> f64 {
        match self {
            Self::Uniform => 1.0,
            Self::Examples { cap } => examples.min(cap).max(1) as f64,
        }
    }
}

/// A federation: one base model and task type, one adapter shape, its round settings.
/// An operator resource (no tenant's key reaches it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Federation {
    /// Its id (letters, digits, `._-`).
    pub federation_id: String,
    /// The shared base model every participant trains on.
    pub base_model: String,
    /// The agents' task type (`type`) it is for.
    pub task_type: String,
    /// The training config of the local runs; its `lora` (with `freeze_a`) is the adapter's
    /// shape, its `seed` draws the shared A.
    pub config: TrainConfig,
    /// C: the L2 norm each update is clipped to.
    pub clip: f64,
    /// z: the noise multiplier.
    pub noise_multiplier: f64,
    /// Fewest participants a round runs with.
    pub min_participants: usize,
    /// How updates are weighted.
    pub weighting: Weighting,
    /// Rounds finished; round `rounds_done` is the next, starting from its global adapter.
    pub rounds_done: u64,
    /// When it was created.
    pub created_ms: u64,
}

/// The default of [`Federation::min_participants`].
pub const DEFAULT_MIN_PARTICIPANTS: usize = 3;

impl Federation {
    /// Checks the settings.
    ///
    /// # Errors
    /// The offending field.
    pub fn validate(&self) -> Result<(), FieldError> {
        let id_ok = (1..=64).contains(&self.federation_id.len())
            && !self.federation_id.starts_with('.')
            && self
                .federation_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !id_ok {
            return Err(FieldError::new(
                "federation_id",
                "must be 1 to 64 characters of A-Z a-z 0-9 . _ - (not starting with .)",
            ));
        }
        check_base_model("base_model", &self.base_model)?;
        if self.task_type.is_empty() || self.task_type.chars().any(char::is_control) {
            return Err(FieldError::new("task_type", "must be non-empty text"));
        }
        match &self.config.lora {
            Some(lora) if lora.freeze_a => {}
            _ => {
                return Err(FieldError::new(
                    "config.lora.freeze_a",
                    "federated rounds train LoRA with A frozen (FFA-LoRA), so that averaging \
                     the B factors averages the updates exactly",
                ));
            }
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return Err(FieldError::new("clip", "must be finite and positive"));
        }
        if !(self.noise_multiplier.is_finite() && self.noise_multiplier >= 0.0) {
            return Err(FieldError::new(
                "noise_multiplier",
                "must be finite and ≥ 0",
            ));
        }
        if self.min_participants == 0 {
            return Err(FieldError::new("min_participants", "must be at least 1"));
        }
        if let Weighting::Examples { cap: 0 } = self.weighting {
            return Err(FieldError::new("weighting.cap", "must be at least 1"));
        }
        Ok(())
    }

    /// The id of round `round`.
    #[must_use]
    pub fn round_id(&self, round: u64) -> String {
        format!("{}/r{round:06}", self.federation_id)
    }

    /// The object prefix of round `round`'s global adapter (round 0's is the shared
    /// initialisation).
    #[must_use]
    pub fn global_prefix(&self, round: u64) -> String {
        format!(
            "federations/{}/round-{round:06}/global/",
            self.federation_id
        )
    }
}

/// A finished round, as the operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// `FEDERATION/rNNNNNN`.
    pub round_id: String,
    /// The federation.
    pub federation_id: String,
    /// Its number (0-based); its result is round `round + 1`'s global adapter.
    pub round: u64,
    /// When it started and finished.
    pub started_ms: u64,
    /// When it finished.
    pub finished_ms: u64,
    /// Who took part.
    pub participants: Vec<Participant>,
    /// Who was left out, and why.
    pub excluded: Vec<Excluded>,
    /// σ of the noise added to each element.
    pub noise_std: f64,
    /// The global adapter it wrote.
    pub global: String,
}

/// One participant of a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Participant {
    /// The tenant.
    pub tenant: String,
    /// Its agent that took part.
    pub agent_id: String,
    /// Its weight, normalised over the round.
    pub weight: f64,
    /// Its ε after the round (at its own δ).
    pub epsilon_total: f64,
}

/// A member left out of a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excluded {
    /// The tenant.
    pub tenant: String,
    /// Why.
    pub reason: String,
}

/// A tenant's own part of a round: what `GET /v1/federation/rounds` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TenantRound {
    /// `FEDERATION/rNNNNNN`.
    pub round_id: String,
    /// The federation.
    pub federation_id: String,
    /// The round's number.
    pub round: u64,
    /// When it finished (epoch ms).
    pub finished_ms: u64,
    /// Whether the tenant took part (false: `reason` says why not).
    pub took_part: bool,
    /// Why it did not take part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its agent that took part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Its weight, normalised over the round.
    pub weight: f64,
    /// How many tenants took part.
    pub participants: usize,
    /// σ of the noise added to each element of the average.
    pub noise_std: f64,
    /// ε this round cost it (at its δ; 0 when it did not take part).
    pub epsilon_round: f64,
    /// Its ε over every round so far, at its δ.
    pub epsilon_total: f64,
    /// Its δ.
    pub delta: f64,
}
