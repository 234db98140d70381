//! Reward verification for RLVR: each method turns one piece of evidence about an execution
//! into an [`Outcome`]; [`composite`] combines a task's outcomes into its reward and
//! [`classify`] turns that reward into an example type.
//!
//! Errors and abstentions are never a score of 0: a verifier that cannot judge says so
//! ([`Status::Abstain`], [`Status::Error`], with a reason) and is left out of the reward.
//! Malformed requests are not outcomes either but an [`InvalidInput`] naming the field.
//! Every `value` and `confidence` is finite and in [0, 1]; NaN and infinite inputs are
//! rejected.
//!
//! | method | value | raw_value | confidence | abstains when |
//! |---|---|---|---|---|
//! | `user_feedback` | thumbs up 1 / down 0; rating r ↦ (r − 1)/4; both: their mean | the rating | thumbs 0.6, rating 0.7, both 0.8 when they agree within 0.5, else 0.4 | neither thumbs nor rating |
//! | `test_execution` (counts) | passed / total | – | n/(n + 1), n = total | total = 0 |
//! | `test_execution` (`junit_xml`) | passed / (total − skipped), recounted from testcases ([`junit`]) | – | m/(m + 1), m = executed − errored; halved when the suite itself reports `<error>`s | no test executed, or every executed test errored (infrastructure) |
//! | `code_analysis` (scores) | weighted mean of lint (1), complexity (1), security (2) | – | 0.8 (pre-digested by the caller) | – |
//! | `code_analysis` (`sarif`) | 1 / (1 + p), p = errors + 0.25·warnings + 0.05·notes | p | 0.9 | no runs; [`Status::Error`] when a run's invocation failed |
//! | `business_metrics` | config-weighted mean of clamp((x − min)/(max − min)) | – | 0.7 (business metrics are noisy and confounded) | – |
//! | `automated_check` | passed / total | – | n/(n + 1), n = checks | no checks |
//! | `answer_match` | 1 on a match, else 0 | – | 1 | – |
//! | `judge` | (score − min)/(max − min) | the score | the judge's own | confidence below `judge_min_confidence` |
//!
//! Every request may set `safety_violation: true`, and an `automated_check` failing one of the
//! tenant's `safety_checks` sets it too; [`composite`] then overrides the reward to 0.
//! Each method's evidence is documented on its request type.

mod answer;
mod business;
mod checks;
mod code;
mod composite;
mod config;
mod feedback;
mod judge;
pub mod junit;
mod outcome;
mod request;
mod tests_run;

pub use answer::{AnswerMatch, MatchMode};
pub use business::BusinessMetrics;
pub use checks::AutomatedCheck;
pub use code::CodeAnalysis;
pub use composite::{Composite, ExampleType, classify, composite};
pub use config::{ExampleThresholds, MetricRange, VerifyConfig};
pub use feedback::UserFeedback;
pub use judge::{Judge, VERSION as JUDGE_VERIFIER};
pub use outcome::{InvalidInput, Outcome, Status};
pub use request::{Context, Method, Request, run};
pub use tests_run::TestExecution;

use outcome::{finite, unit};
