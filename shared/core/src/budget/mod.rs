//! Thinking budgets: complexity assessment, per-tenant configuration, the token ledger and adaptive allocation.

mod adaptive;
mod complexity;
mod config;
mod ledger;
mod replay;

pub use adaptive::UsageHistory;
pub use complexity::{Assessment, Complexity, Feature, TaskDescription, assess};
pub use config::{
    AdaptiveConfig, BudgetConfig, ConfigError, DEFAULT_MAX_LOOPS, TierConfig, Trigger,
    TriggerConfig, loop_limit_reached,
};
pub use ledger::{
    Action, Budget, CompleteError, Completion, Decision, Escalation, Outcome, Report, ReportError,
    Status,
};
pub use replay::{ReplayReport, replay_synthetic_workload};
