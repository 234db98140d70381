//! The gateway's operations.

pub(crate) mod chat;
pub(crate) mod end;
pub(crate) mod models;

use agentrl_core::trajectory::check_id;

use crate::upstream::OpenAiError;

/// The session of a call, in and out.
pub(crate) const SESSION_HEADER: &str = "x-agentrl-session";
/// The model (agent version) that served a call.
pub(crate) const VERSION_HEADER: &str = "x-agentrl-version";

/// The longest session id: a group's trajectories append `.N` and stay within 128.
const MAX_SESSION_CHARS: usize = 120;

/// The session named, or a new one (UUIDv7) when none is.
pub(crate) fn session_id(named: Option<String>) -> Result<String, OpenAiError> {
    let Some(id) = named else {
        return Ok(uuid::Uuid::now_v7().to_string());
    };
    // No `/`: the id names a folder of the object store.
    if id.len() > MAX_SESSION_CHARS || id.contains('/') || check_id("session", &id).is_err() {
        return Err(OpenAiError::invalid(
            "session",
            format!("a session id is 1 to {MAX_SESSION_CHARS} of A-Z a-z 0-9 _ . : @ -"),
        ));
    }
    Ok(id)
}
