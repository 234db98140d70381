//! The gateway's domain: the tenant's upstream settings, what one proxied chat-completions
//! call leaves behind ([`CallRecord`], built from a whole reply or from its stream of
//! chunks), the completion limit a thinking budget gives a call ([`limit`]), and the
//! trajectories a session's calls become when it ends.

mod config;
pub mod limit;
mod record;
mod session;

pub use config::GatewayConfig;
pub use record::{CallRecord, ChoiceRecord, RecordedToolCall, StreamRecorder};
pub(crate) use session::message_turn;
pub use session::{ChoiceOutcome, SessionEnd, served_name, trajectories};
