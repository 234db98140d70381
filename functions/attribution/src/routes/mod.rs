//! One module per route, and what they share: query-string windows and encoding.

pub(crate) mod contribute;
pub(crate) mod create;
pub(crate) mod export;
pub(crate) mod ranking;
pub(crate) mod read;
pub(crate) mod session;
pub(crate) mod session_values;
pub(crate) mod stats;

use agentrl_http::ApiError;
pub(crate) use agentrl_http::query::{DEFAULT_LIMIT, MAX_LIMIT, encode_component, limit, window};
pub(crate) use agentrl_store::clock::now_ms;

use crate::attributions::AttributionError;

impl From<AttributionError> for ApiError {
    fn from(e: AttributionError) -> Self {
        match e {
            AttributionError::NotFound => ApiError::not_found("attribution"),
            AttributionError::Invalid(e) => e.into(),
            AttributionError::Internal(e) => ApiError::internal(e.as_ref()),
            AttributionError::Store(e) => e.into(),
        }
    }
}
