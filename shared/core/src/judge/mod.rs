//! Model judges, critic gates and evaluations, the pure part: rubrics and prompts, reply
//! validation, tenant settings, the gate rule, cost, and how an evaluation's parts combine.
//! The provider calls, the cache and usage accounting live in `shared/judges`; the evaluation
//! queue in `functions/rewards`.

mod config;
mod cost;
mod evaluation;
mod gate;
pub mod reply;
mod rubric;

pub use config::{
    BASE_URL_PATTERN, Fallback, GateThresholds, JudgeConfig, MAX_BASE_URL_CHARS, MAX_MODEL_CHARS,
    MAX_PRICED_MODELS, Price, check_base_url,
};
pub use cost::Usage;
pub use evaluation::{
    DiffFacts, Judgment, Source, TaskType, UNSAFE_SCORE, artifact_checks, combine, rule_score,
};
pub use gate::{GateDecision, decide};
pub use reply::Reply;
pub use rubric::{
    ChatMessage, JudgeKind, MAX_PART_CHARS, Purpose, Role, Rubric, Stage, Subject, TurnAspect,
    messages, repair,
};
