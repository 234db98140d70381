//! Multi-agent attribution: cooperative games, exact and sampled Shapley values, interactive
//! sampling, reward shaping and contribution tracking (see docs in each module).

mod coalition;
mod contribution;
mod exact;
mod game;
mod interactive;
mod method;
mod moments;
mod sampling;
mod shaping;
mod table;

pub use coalition::{Coalition, CoalitionError, MAX_AGENTS};
pub use contribution::{
    AgentAggregate, Contribution, ContributionTracker, DEFAULT_HISTORY_CAPACITY, EFFORT_FLOOR,
    RankBy, RecordError, ScoredContribution, TrackerError, Window, WindowError,
};
pub use exact::{
    ADDITIVE_TOLERANCE, ExactError, ExactShapley, ExactSource, exact_for_game, exact_shapley,
};
pub use game::{Additive, ClosedForm, ClosureGame, Game, GameError, Pairwise};
pub use interactive::{
    InteractiveConfig, InteractiveProgress, InteractiveShapley, RETAIN_LEVEL_LIMIT, SessionError,
    SessionStatus, SubmitError,
};
pub use method::{AttributeError, Attribution, AttributionConfig, Method, attribute};
pub use sampling::{
    SampledShapley, SamplingConfig, SamplingError, hoeffding_half_width, sample_shapley,
};
pub use shaping::{
    DistributionStats, ShapeError, Shaping, StatsError, distribution_stats, shape_rewards,
};
pub use table::{CoalitionTable, MAX_TABLE_AGENTS, MISSING_LISTED, TableError};
