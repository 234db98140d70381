//! Dataset generation rules: which agents' episodes become training data, near-duplicate
//! removal, the train/validation split by conversation, GRPO groups and preference pairs.
//!
//! The job reads the turn table and hands this module one [`Episode`] per trajectory; all
//! decisions here are pure and deterministic given the rules (and their seed).

mod dedup;
mod groups;
mod rules;
mod split;

pub use dedup::{MinHash, near_duplicates};
pub use groups::{Group, PreferencePair, groups, preference_pairs};
pub use rules::{AgentStats, CountsSource, Request, Rules, RulesError, Selection, select_agents};
pub use split::{Split, split_of};

/// What the rules need to know about one trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// The trajectory (episode) id.
    pub trajectory_id: String,
    /// The conversation it belongs to: the unit of the train/validation split.
    pub conversation_id: String,
    /// The agent that acted.
    pub agent_id: String,
    /// Same prompt/task: the GRPO group key.
    pub group_id: Option<String>,
    /// The episode's reward, if any.
    pub reward: Option<f64>,
    /// Whether the episode succeeded, if known.
    pub success: Option<bool>,
    /// When the trajectory was ingested (epoch ms).
    pub ingested_at_ms: i64,
    /// A MinHash signature of its text, for near-duplicate removal.
    pub signature: MinHash,
}
