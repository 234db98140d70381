//! Request and response bodies of the reward routes, and the records they are stored as.

use agentrl_core::verify::{ExampleType, Method, Outcome, Status};
use agentrl_http::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Longest id an agent, version or execution may have.
const MAX_ID: usize = 128;
/// Largest prompt or completion kept with an execution: with its verifications' summary the
/// item stays under DynamoDB's 400 KB item limit.
pub(crate) const MAX_TEXT_BYTES: usize = 160 * 1024;

/// How an execution ended, as the agent platform reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunStatus {
    /// It finished.
    #[default]
    Success,
    /// It finished with a wrong or refused result.
    Failure,
    /// It crashed.
    Error,
    /// It ran out of time.
    Timeout,
}

/// `POST /v1/executions`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateExecutionBody {
    /// The agent that ran.
    pub agent_id: String,
    /// Its version (a model, prompt or policy revision).
    #[serde(default)]
    pub agent_version: Option<String>,
    /// What it was asked: the prompt of a training example.
    pub input: String,
    /// What it answered: the completion of a training example.
    pub output: String,
    /// Tokens it used.
    #[serde(default)]
    pub tokens_used: Option<u64>,
    /// What it cost, in the tenant's currency.
    #[serde(default)]
    pub cost: Option<f64>,
    /// How it ended.
    #[serde(default)]
    pub status: RunStatus,
    /// How long it ran.
    #[serde(default)]
    pub latency_ms: Option<u64>,
}

fn check_id(field: &str, id: &str) -> Result<(), ApiError> {
    let ok = (1..=MAX_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'@'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(
            field,
            format!("must be 1 to {MAX_ID} characters of A-Z a-z 0-9 - _ . : @"),
        ))
    }
}

impl CreateExecutionBody {
    /// Checks ids, sizes and numbers; the error names the field.
    pub(crate) fn validate(&self) -> Result<(), ApiError> {
        check_id("agent_id", &self.agent_id)?;
        if let Some(v) = &self.agent_version {
            check_id("agent_version", v)?;
        }
        for (field, text) in [("input", &self.input), ("output", &self.output)] {
            if text.len() > MAX_TEXT_BYTES {
                return Err(ApiError::invalid(
                    field,
                    format!("must be at most {MAX_TEXT_BYTES} bytes"),
                ));
            }
        }
        if let Some(cost) = self.cost
            && !(cost.is_finite() && cost >= 0.0)
        {
            return Err(ApiError::invalid("cost", "must be a finite number ≥ 0"));
        }
        Ok(())
    }
}

/// An execution as stored: the run, and where its verification stands.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub(crate) struct Execution {
    /// Its id (a UUIDv7: ordered by creation).
    pub execution_id: String,
    /// The agent that ran.
    pub agent_id: String,
    /// Its version.
    pub agent_version: Option<String>,
    /// The prompt.
    pub input: String,
    /// The completion.
    pub output: String,
    /// Tokens used.
    pub tokens_used: Option<u64>,
    /// Cost.
    pub cost: Option<f64>,
    /// How it ended.
    pub status: RunStatus,
    /// How long it ran.
    pub latency_ms: Option<u64>,
    /// When it was recorded (epoch ms).
    pub created_at_ms: u64,
    /// How many verifications it has.
    pub verifications: u32,
    /// The composite reward after the last verification (`null` until one is `ok`).
    pub reward: Option<f64>,
    /// The training example it is, if rewarded.
    #[schema(value_type = Option<String>)]
    pub example_type: Option<ExampleType>,
}

/// A verification as stored and returned.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub(crate) struct VerificationView {
    /// Its id.
    pub verification_id: String,
    /// The execution it verifies.
    pub execution_id: String,
    /// The verifier.
    #[schema(value_type = String)]
    pub method: Method,
    /// In [0, 1]; `null` unless `status` is `ok` (an abstention or error is never a 0).
    pub value: Option<f64>,
    /// The verifier's own figure (a rating, a judge's score…), when there is one.
    pub raw_value: Option<f64>,
    /// How much the verdict is worth, in [0, 1]: its weight in the composite reward.
    pub confidence: f64,
    /// `ok`, `abstain` or `error`.
    #[schema(value_type = String)]
    pub status: Status,
    /// Why it abstained or failed.
    pub reason: Option<String>,
    /// What the verdict rests on (method-specific; see docs/rewards.md).
    #[schema(value_type = Object)]
    pub evidence: Value,
    /// The verifier and its version.
    pub verifier_version: String,
    /// Whether it found a safety violation (the composite reward is then the minimum).
    pub safety_violation: bool,
    /// When it was recorded (epoch ms).
    pub created_at_ms: u64,
}

impl VerificationView {
    pub(crate) fn new(
        verification_id: String,
        execution_id: String,
        method: Method,
        outcome: Outcome,
        created_at_ms: u64,
    ) -> Self {
        Self {
            verification_id,
            execution_id,
            method,
            value: outcome.value,
            raw_value: outcome.raw_value,
            confidence: outcome.confidence,
            status: outcome.status,
            reason: outcome.reason,
            evidence: outcome.evidence,
            verifier_version: outcome.verifier_version,
            safety_violation: outcome.safety_violation,
            created_at_ms,
        }
    }

    pub(crate) fn outcome(&self) -> Outcome {
        Outcome {
            value: self.value,
            raw_value: self.raw_value,
            confidence: self.confidence,
            status: self.status,
            reason: self.reason.clone(),
            evidence: Value::Null,
            verifier_version: self.verifier_version.clone(),
            safety_violation: self.safety_violation,
        }
    }
}

/// `GET /v1/executions/{id}/reward`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct RewardView {
    /// The execution.
    pub execution_id: String,
    /// Its agent.
    pub agent_id: String,
    /// The confidence-weighted average of the `ok` verifications, in [0, 1]; 0 when any
    /// verification found a safety violation; `null` when none is `ok`.
    pub reward: Option<f64>,
    /// How sure the composite is, in [0, 1].
    pub confidence: f64,
    /// Whether a safety violation set the reward to the minimum.
    pub safety_override: bool,
    /// Verifications by status.
    pub ok: usize,
    /// Abstentions (not scored).
    pub abstained: usize,
    /// Errors (not scored).
    pub errored: usize,
    /// The training example the execution is, when it has a reward.
    #[schema(value_type = Option<String>)]
    pub example_type: Option<ExampleType>,
    /// Every recorded verification, oldest first.
    pub verifications: Vec<VerificationView>,
}

/// A training example as stored, listed and exported.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub(crate) struct Example {
    /// The execution it comes from.
    pub execution_id: String,
    /// The agent.
    pub agent_id: String,
    /// Its version.
    pub agent_version: Option<String>,
    /// The execution's input.
    pub prompt: String,
    /// The execution's output.
    pub completion: String,
    /// The composite reward.
    pub reward: f64,
    /// Its confidence.
    pub confidence: f64,
    /// `positive`, `negative` or `neutral` by the tenant's thresholds.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: ExampleType,
    /// When it was last (re)classified (epoch ms).
    pub updated_at_ms: u64,
}

/// One page of `GET /v1/training-examples`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ExamplePage {
    /// The examples, by type, then agent, then execution (creation order).
    pub examples: Vec<Example>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
