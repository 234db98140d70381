//! `GET /v1/privacy/budget`: the ε the tenant has spent on differentially private rewards,
//! and beside it (never added to it) what its federated rounds spent.

use agentrl_http::{ApiError, Tenant};
use axum::{Json, extract::State};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{
    TrajectoryState,
    trajectories::{self, PrivacySpend},
};

/// The tenant's privacy accounting.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Budget {
    /// ε spent so far (sequential composition over released rewards).
    spent: f64,
    /// The configured total, when differential privacy is on.
    budget: Option<f64>,
    /// What is left of it.
    remaining: Option<f64>,
    /// Federated rounds, accounted apart (Rényi DP of the Gaussian mechanism at tenant
    /// level, converted to (ε, δ) at the opt-in's δ).
    federation: FederationBudget,
}

/// The tenant's privacy spent on federated rounds.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FederationBudget {
    /// Whether its agents take part (`/v1/config/federation`).
    enabled: bool,
    /// The total ε its participation may spend.
    epsilon_budget: f64,
    /// δ of the guarantee.
    delta: f64,
    /// Rounds it took part in.
    rounds: u64,
    /// ε its rounds spent at `delta` (absent when δ is 0 after rounds: no finite ε).
    #[serde(skip_serializing_if = "Option::is_none")]
    epsilon_spent: Option<f64>,
}

/// Read the tenant's ε spent and remaining on rewards, and its federated rounds' (ε, δ).
#[utoipa::path(get, path = "/v1/privacy/budget", tag = "trajectories",
    responses((status = 200, description = "The accounting", body = Budget)))]
pub(crate) async fn budget(
    State(state): State<TrajectoryState>,
    Tenant(tenant): Tenant,
) -> Result<Json<Budget>, ApiError> {
    let PrivacySpend {
        spent,
        budget,
        federation,
    } = trajectories::privacy_spend(
        state.table.as_ref(),
        &state.configs,
        &state.federation,
        &tenant,
    )
    .await?;
    Ok(Json(Budget {
        spent,
        budget,
        remaining: budget.map(|b| (b - spent).max(0.0)),
        federation: FederationBudget {
            enabled: federation.opt_in.enabled,
            epsilon_budget: federation.opt_in.epsilon,
            delta: federation.opt_in.delta,
            rounds: federation.rounds,
            epsilon_spent: federation.epsilon_spent,
        },
    }))
}
