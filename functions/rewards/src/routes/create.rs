//! `POST /v1/executions`: record what an agent did, so it can be verified.

use agentrl_http::{ApiError, Problem, Tenant, ValidJson, query::encode_component};
use axum::{
    Json,
    extract::State,
    http::{StatusCode, header},
};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{RewardState, executions, wire::CreateExecutionBody};

/// The id of a recorded execution.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Created {
    /// Pass it to the verification and reward routes.
    execution_id: String,
    /// When it was recorded (epoch ms).
    created_at_ms: u64,
}

/// 201 with a `Location` header and the new id.
type Recorded = (StatusCode, [(header::HeaderName, String); 1], Json<Created>);

/// Record an execution: the agent, its input and output, tokens, cost, status and latency.
#[utoipa::path(post, path = "/v1/executions", tag = "rewards",
    request_body = CreateExecutionBody,
    responses(
        (status = 201, description = "Recorded", body = Created),
        (status = 400, description = "Invalid body (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(agent_id = %body.agent_id))]
pub(crate) async fn create(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<CreateExecutionBody>,
) -> Result<Recorded, ApiError> {
    let execution = executions::record(&state.repo, &tenant, body.try_into()?).await?;
    let location = format!(
        "/v1/executions/{}",
        encode_component(&execution.execution_id)
    );
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(Created {
            execution_id: execution.execution_id,
            created_at_ms: execution.created_at_ms,
        }),
    ))
}
