//! Critic gates: the critic model scores a pipeline stage's artifact on the stage's rubric
//! and the gate rule (shared with the budget's loop limit) says pass, refine or escalate.

use std::time::{Duration, Instant};

use agentrl_core::{
    TenantId,
    judge::{GateDecision, Judgment, Source, Stage, Subject, decide},
};
use agentrl_store::StoreError;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use agentrl_judges::{Ask, Judges};

/// A gate answers within API Gateway's 30 s limit, retries included.
const GATE_DEADLINE: Duration = Duration::from_secs(25);

/// `POST /v1/gates/{stage}/check`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GateCheckBody {
    /// What the stage produced (a triage, research notes, a response): at most 100 000
    /// characters, not blank (white space and the byte-order mark alone are blank).
    #[schema(
        max_length = 100_000,
        pattern = r"^[\u0009-\u000D \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF]*[^\u0009-\u000D \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF][\s\S]*$"
    )]
    pub artifact: String,
    /// The request the pipeline is working on, as context for the critic (at most 100 000
    /// characters).
    #[serde(default)]
    #[schema(max_length = 100_000)]
    pub task: Option<String>,
    /// Refinement rounds this artifact has been through already (0 on the first check).
    #[serde(default)]
    #[schema(format = Int64, maximum = 4_294_967_295_u64)]
    pub refinements: u32,
}

/// The gate's answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct GateCheck {
    pub stage: Stage,
    /// `pass`, `refine` or `escalate_to_human`.
    pub decision: GateDecision,
    /// The critic's score (1–10); null when it could not judge or was not confident enough
    /// (the judgment still shows what it said).
    pub score: Option<f64>,
    /// The stage's pass mark.
    pub threshold: f64,
    /// As sent.
    pub refinements: u32,
    /// Rounds allowed before a human takes over.
    pub max_refinements: u32,
    /// What to fix (the critic's reasoning) when the decision is not `pass`, or why the critic
    /// could not judge.
    pub reasons: Option<String>,
    /// The critic's judgment with its model, tokens and latency.
    pub judgment: Judgment,
}

/// Longest artifact or task a gate takes, in characters (the prompt keeps the first 24 000).
pub(crate) const MAX_ARTIFACT_CHARS: usize = 100_000;

/// Whether an artifact is blank: Unicode white space (`char::is_whitespace`) and the BOM
/// alone, the characters `artifact`'s pattern lists.
pub(crate) fn is_blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || c == '\u{feff}')
}

/// Checks `body` at `stage`'s gate; a critic less confident than `min_confidence` (the
/// tenant's `judge_min_confidence`) cannot pass work.
pub(crate) async fn check(
    judges: &Judges,
    t: &TenantId,
    stage: Stage,
    body: &GateCheckBody,
    min_confidence: f64,
) -> Result<GateCheck, StoreError> {
    let config = judges.config(t).await?;
    let ask = Ask {
        rubric: stage.rubric(),
        subject: Subject {
            task: body.task.as_deref().unwrap_or(""),
            output: Some(&body.artifact),
            change: None,
        },
        diff: None,
        deadline: Instant::now() + GATE_DEADLINE,
    };
    let judgment = judges.judge(t, &config, &ask).await?;
    // Only a confident model's score counts; stage rubrics have no rule-based stand-in.
    let confident = judgment.source == Source::Model
        && judgment.confidence.is_some_and(|c| c >= min_confidence);
    let score = judgment.score.filter(|_| confident);
    let threshold = config.gates.of(stage);
    let decision = decide(score, threshold, body.refinements, config.max_refinements);
    let reasons = match decision {
        GateDecision::Pass => None,
        _ => judgment
            .reasoning
            .clone()
            .or_else(|| judgment.reason.clone()),
    };
    Ok(GateCheck {
        stage,
        decision,
        score,
        threshold,
        refinements: body.refinements,
        max_refinements: config.max_refinements,
        reasons,
        judgment,
    })
}
