//! A tenant's opt-in to federated rounds (`GET`/`PUT /v1/config/federation`): whether it
//! takes part, with which of its agents, and the privacy it may spend on them in total.

use serde::{Deserialize, Serialize};

use crate::FieldError;

/// Longest base model name or task type.
const MAX_NAME: usize = 200;
/// The largest δ accepted.
const MAX_DELTA: f64 = 0.1;
/// Most (base model, task type) pairs one tenant names.
const MAX_MODELS: usize = 32;

/// The agents that take part: those whose `base_model` and `type` are these.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederatedModel {
    /// A shared base model's name (under `models/`), as agents' `base_model` names it.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 200,
            pattern = r"^([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)(/([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+))*$"
        )
    )]
    pub base_model: String,
    /// The agents' `type` (their task type).
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub task_type: String,
}

/// The tenant's federation settings. Every field is required: the budget decides whether the
/// tenant's agents take part, so none is filled in for it. Settings that cannot pay for any
/// round (ε = 0, δ = 0, no models) are valid and take part in nothing: each round the tenant
/// is a member of says why in its part ("out of budget").
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FederationOptIn {
    /// Whether the tenant's agents take part in federated rounds at all.
    pub enabled: bool,
    /// Which agents, by base model and task type (at most 32 pairs).
    #[cfg_attr(feature = "openapi", schema(max_items = 32))]
    pub models: Vec<FederatedModel>,
    /// The total ε the tenant's participation may spend (over every round of every
    /// federation it is in); once a round would pass it, the tenant stops taking part.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub epsilon: f64,
    /// δ of the guarantee, in [0, 0.1]: the chance the ε bound fails, so a δ above 0.1
    /// guarantees nothing worth having (use one well below 1 / the tenant's users). 0 buys no
    /// round: the Gaussian mechanism has no pure-ε guarantee.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 0.1))]
    pub delta: f64,
}

impl FederationOptIn {
    /// Checks the settings as a whole.
    ///
    /// # Errors
    /// The offending field.
    pub fn validate(&self) -> Result<(), FieldError> {
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            return Err(FieldError::new("epsilon", "must be finite and ≥ 0"));
        }
        if !(0.0..=MAX_DELTA).contains(&self.delta) {
            return Err(FieldError::new("delta", "must be in [0, 0.1]"));
        }
        if self.models.len() > MAX_MODELS {
            return Err(FieldError::new(
                "models",
                format!("at most {MAX_MODELS} pairs"),
            ));
        }
        for (i, m) in self.models.iter().enumerate() {
            crate::training::check_base_model(&format!("models[{i}].base_model"), &m.base_model)?;
            let n = m.task_type.chars().count();
            if n == 0 || n > MAX_NAME || m.task_type.chars().any(char::is_control) {
                return Err(FieldError::new(
                    format!("models[{i}].task_type"),
                    format!("must be 1 to {MAX_NAME} characters without control characters"),
                ));
            }
        }
        Ok(())
    }

    /// Whether an agent of `base_model` and `task_type` takes part.
    #[must_use]
    pub fn includes(&self, base_model: &str, task_type: &str) -> bool {
        self.enabled
            && self
                .models
                .iter()
                .any(|m| m.base_model == base_model && m.task_type == task_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt_in() -> FederationOptIn {
        FederationOptIn {
            enabled: true,
            models: vec![FederatedModel {
                base_model: "qwen2.5-0.5b".into(),
                task_type: "support".into(),
            }],
            epsilon: 8.0,
            delta: 1e-5,
        }
    }

    #[test]
    fn settings_out_of_range_are_named() {
        assert!(opt_in().validate().is_ok());
        let field = |o: FederationOptIn| o.validate().unwrap_err().field;
        assert_eq!(
            field(FederationOptIn {
                epsilon: -1.0,
                ..opt_in()
            }),
            "epsilon"
        );
        assert_eq!(
            field(FederationOptIn {
                delta: -0.1,
                ..opt_in()
            }),
            "delta"
        );
        assert_eq!(
            field(FederationOptIn {
                delta: 1.0,
                ..opt_in()
            }),
            "delta"
        );
        let mut bad = opt_in();
        bad.models[0].base_model = "../x".into();
        assert_eq!(field(bad), "models[0].base_model");
        assert!(FederationOptIn::default().validate().is_ok());
    }

    #[test]
    fn only_named_agents_of_an_enabled_tenant_take_part() {
        let o = opt_in();
        assert!(o.includes("qwen2.5-0.5b", "support"));
        assert!(!o.includes("qwen2.5-0.5b", "coding"));
        assert!(
            !FederationOptIn {
                enabled: false,
                ..o
            }
            .includes("qwen2.5-0.5b", "support")
        );
    }
}
