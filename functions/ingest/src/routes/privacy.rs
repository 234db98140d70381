//! `GET /v1/privacy/budget`: the ε the tenant has spent on differentially private rewards.

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
}

/// Read the tenant's ε spent and remaining.
#[utoipa::path(get, path = "/v1/privacy/budget", tag = "trajectories",
    responses((status = 200, description = "The accounting", body = Budget)))]
pub(crate) async fn budget(
    State(state): State<TrajectoryState>,
    Tenant(tenant): Tenant,
) -> Result<Json<Budget>, ApiError> {
    let PrivacySpend { spent, budget } =
        trajectories::privacy_spend(state.table.as_ref(), &state.configs, &tenant).await?;
    Ok(Json(Budget {
        spent,
        budget,
        remaining: budget.map(|b| (b - spent).max(0.0)),
    }))
}
