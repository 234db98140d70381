//! Agent learning from human feedback: events and their rewards, order-independent per-agent
//! projections, the retroactive reply ledger, policy updates with a freeze rule, and the
//! dataset trigger.
//!
//! Delivery is at-least-once and out of order, so every projection here is a function of the
//! *set* of events applied (floats equal up to rounding): counters and sums commute, decayed
//! sums are kept relative to an anchor time, retention windows are measured back from the
//! newest time seen, and capped collections keep a fixed ranking of their members.
//! Deduplication by event id happens outside core.

mod absorb;
mod behaviour;
mod bounded;
mod config;
mod event;
mod feedback;
mod policy;
mod projection;
mod relationship;
mod reply;
mod reward;
mod signals;
mod stats;
mod trigger;

#[cfg(test)]
mod testkit;

pub use absorb::absorb;
pub use behaviour::{ActionRecord, ActionStats, Behaviour, MAX_ACTIONS};
pub use config::{DatasetTrigger, EpsilonConfig, LearningConfig, PolicyConfig, TraitBounds};
pub use event::{
    Action, Event, EventBody, EventError, Feedback, MAX_ID_CHARS, MAX_NAME_CHARS, MAX_TEXT_CHARS,
    MAX_TIME_MS, MAX_TRAITS_PER_EVENT, Reply, SessionEnded,
};
pub use feedback::{Day, DecayedStats, FeedbackStats, HighQuality, RatingStats};
pub use policy::{AUTONOMY, AgentSettings, Plan, SkipReason, TraitDelta, plan};
pub use projection::{AgentProjection, Summary};
pub use relationship::Relationship;
pub use reply::{MAX_FEEDBACK_PER_REPLY, ReplyLedger};
pub use reward::{RewardWeights, reward};
pub use signals::{Credit, DEFAULT_TRAIT_VALUE, MAX_TRAITS, TraitSignal, TraitSignals};
pub use stats::{
    RATING_PRIOR_MEAN, RATING_PRIOR_WEIGHT, WILSON_Z, bayesian_average, wilson_lower_bound,
};
pub use trigger::dataset_due;
