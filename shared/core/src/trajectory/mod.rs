//! Agent trajectories: the posted shape, its validation, a JSON Schema subset for tool
//! arguments, and the turn-level rewards and tool signals stored with every turn (scored by
//! rules, or in part by the critic model: `judged`).

mod json;
mod judged;
mod model;
mod rewards;
pub mod schema;
mod validate;

pub use judged::{
    CONTEXT_HEAD_CHARS, ComponentSource, MAX_CONTEXT_CHARS, MAX_JUDGED_TURNS, SourcedReward,
    TurnSubject, turn_subjects,
};
pub use model::{FinalOutcome, Role, ToolCall, ToolSpec, Trajectory, Turn};
pub use rewards::{ToolSignals, TurnReward, TurnRewardWeights, WeightsError, turn_rewards};
pub use schema::SchemaViolation;
pub use validate::{Limits, TrajectoryError, check_id};
