//! Agent trajectories: the posted shape, its validation, a JSON Schema subset for tool
//! arguments, and the turn-level rewards and tool signals stored with every turn.

mod json;
mod model;
mod rewards;
pub mod schema;
mod validate;

pub use model::{FinalOutcome, Role, ToolCall, ToolSpec, Trajectory, Turn};
pub use rewards::{ToolSignals, TurnReward, TurnRewardWeights, WeightsError, turn_rewards};
pub use schema::SchemaViolation;
pub use validate::{Limits, TrajectoryError, check_id};
