//! One module per route, and what they share: query-string windows and encoding.

pub(crate) mod contribute;
pub(crate) mod create;
pub(crate) mod export;
pub(crate) mod ranking;
pub(crate) mod read;
pub(crate) mod session;
pub(crate) mod session_values;
pub(crate) mod stats;

pub(crate) use agentrl_http::query::{DEFAULT_LIMIT, MAX_LIMIT, encode_component, limit, window};
pub(crate) use agentrl_store::retry::now_ms;
