//! The routes: agents (registry, versions, routing, outcomes), training runs (create,
//! read, list, cancel, promote, curves), the datasets they train on, and the tenant's side of
//! federated rounds. Each maps its use
//! case's error to a status here.

pub(crate) mod agents;
pub(crate) mod datasets;
pub(crate) mod federation;
pub(crate) mod kpis;
pub(crate) mod runs;

use agentrl_http::ApiError;

use crate::{
    agents::AgentError,
    runs::{CancelError, CreateError, LogError, ReadError},
    versions::{OutcomeError, PromoteError},
};

const CONCURRENT: &str = "changed concurrently by other requests; retry";

impl From<LogError> for ApiError {
    fn from(e: LogError) -> Self {
        match e {
            LogError::NotFound => ApiError::not_found("training run"),
            LogError::OtherLauncher(_) => {
                ApiError::new(axum::http::StatusCode::CONFLICT, e.to_string())
            }
            LogError::Store(e) => e.into(),
            LogError::Launcher(e) => ApiError::new(
                axum::http::StatusCode::BAD_GATEWAY,
                format!("the run's log: {e}"),
            ),
        }
    }
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::NotFound => ApiError::not_found("agent"),
            AgentError::Exists => {
                ApiError::conflict("an agent with this agent_id exists").with_field("agent_id")
            }
            AgentError::Invalid(e) => e.into(),
            AgentError::Contended => ApiError::conflict(CONCURRENT),
            AgentError::Store(e) => e.into(),
        }
    }
}

impl From<CreateError> for ApiError {
    fn from(e: CreateError) -> Self {
        match e {
            CreateError::NotFound(what) => ApiError::not_found(what),
            CreateError::Invalid(e) => e.into(),
            CreateError::NotTrainable(reason) => {
                ApiError::conflict(reason).with_field("base_version")
            }
            CreateError::Launch(reason) => ApiError::new(
                axum::http::StatusCode::BAD_GATEWAY,
                format!("the training job could not be submitted: {reason}"),
            ),
            CreateError::Contended => ApiError::conflict(CONCURRENT),
            CreateError::Store(e) => e.into(),
        }
    }
}

impl From<ReadError> for ApiError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NotFound => ApiError::not_found("training run"),
            ReadError::Store(e) => e.into(),
        }
    }
}

impl From<CancelError> for ApiError {
    fn from(e: CancelError) -> Self {
        match e {
            CancelError::NotFound => ApiError::not_found("training run"),
            CancelError::Finished(status) => {
                ApiError::conflict(format!("the run is already {status}"))
            }
            CancelError::Contended => ApiError::conflict(CONCURRENT),
            CancelError::Store(e) => e.into(),
        }
    }
}

impl From<PromoteError> for ApiError {
    fn from(e: PromoteError) -> Self {
        match e {
            PromoteError::NotFound(what) => ApiError::not_found(what),
            PromoteError::NotSucceeded(status) => {
                ApiError::conflict(format!("a {status} run has no model version to promote"))
            }
            PromoteError::Refused(decision) => {
                let detail = format!(
                    "the evaluation gate refused the version: {}",
                    decision.reasons.join("; ")
                );
                let decision = serde_json::to_value(&decision).unwrap_or_default();
                ApiError::conflict(detail).with_extension("decision", decision)
            }
            PromoteError::Invalid(e) => e.into(),
            PromoteError::Contended => ApiError::conflict(CONCURRENT),
            PromoteError::NotServed { .. } => ApiError::conflict(e.to_string()),
            PromoteError::Store(e) => e.into(),
        }
    }
}

impl From<OutcomeError> for ApiError {
    fn from(e: OutcomeError) -> Self {
        match e {
            OutcomeError::NotFound(what) => ApiError::not_found(what),
            OutcomeError::Contended => ApiError::conflict(CONCURRENT),
            OutcomeError::Store(e) => e.into(),
        }
    }
}

/// The error of a listing: a store error is a page query's (a bad cursor is the client's 400).
fn listing(e: AgentError) -> ApiError {
    match e {
        AgentError::Store(e) => ApiError::from_page_query(e),
        other => other.into(),
    }
}
