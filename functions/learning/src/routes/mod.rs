//! One module per route, and the path check they share.

pub(crate) mod agent;
pub(crate) mod events;
pub(crate) mod reply;
pub(crate) mod settings;
pub(crate) mod update;

use agentrl_http::ApiError;

use crate::agents::AgentError;

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::NotFound(what) => ApiError::not_found(what),
            AgentError::Store(e) => e.into(),
        }
    }
}
