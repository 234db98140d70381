//! The gateway's domain: the tenant's upstream settings, what one proxied chat-completions
//! call leaves behind ([`CallRecord`], built from a whole reply or from its stream of
//! chunks), and the trajectories a session's calls become when it ends.

mod config;
mod record;
mod session;

pub use config::GatewayConfig;
pub use record::{CallRecord, ChoiceRecord, RecordedToolCall, StreamRecorder};
pub use session::{SessionEnd, served_name, trajectories};
