//! Request and response bodies of the reward routes (the stored records are `repo`'s).

use agentrl_core::verify::{ExampleType, Method, Status};
use agentrl_http::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::{
    executions::{NewExecution, RunStatus},
    repo::{Example, Execution, Verification},
};

/// Longest id an agent, version or execution may have.
const MAX_ID: usize = 128;
/// Largest prompt or completion kept with an execution, in bytes of UTF-8: with its
/// verifications' summary the item stays under DynamoDB's 400 KB item limit. The document's
/// `maxLength` (characters) is the same number, exact for ASCII text; JSON Schema has no
/// byte length, and counting characters instead would either cut ASCII prompts to a quarter
/// or let multi-byte text past the item limit.
pub(crate) const MAX_TEXT_BYTES: usize = 160 * 1024;

/// Largest token count or latency (ms) of an execution: far past any real one, and exact in
/// a DynamoDB number and in the `int64` the document's integers are.
pub(crate) const MAX_COUNT: u64 = 1 << 40;

/// `POST /v1/executions`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateExecutionBody {
    /// The agent that ran.
    #[schema(pattern = "^[A-Za-z0-9._:@-]{1,128}$")]
    pub agent_id: String,
    /// Its version (a model, prompt or policy revision).
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9._:@-]{1,128}$")]
    pub agent_version: Option<String>,
    /// What it was asked: the prompt of a training example (at most 163 840 bytes of UTF-8).
    #[schema(max_length = 163_840)]
    pub input: String,
    /// What it answered: the completion of a training example (at most 163 840 bytes of UTF-8).
    #[schema(max_length = 163_840)]
    pub output: String,
    /// Tokens it used (at most 2^40).
    #[serde(default)]
    #[schema(maximum = 1_099_511_627_776_u64)]
    pub tokens_used: Option<u64>,
    /// What it cost, in the tenant's currency.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub cost: Option<f64>,
    /// How it ended.
    #[serde(default)]
    pub status: RunStatus,
    /// How long it ran (at most 2^40 ms).
    #[serde(default)]
    #[schema(maximum = 1_099_511_627_776_u64)]
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

/// Ids, sizes and numbers are checked here; the error names the field.
impl TryFrom<CreateExecutionBody> for NewExecution {
    type Error = ApiError;

    fn try_from(body: CreateExecutionBody) -> Result<Self, ApiError> {
        check_id("agent_id", &body.agent_id)?;
        if let Some(v) = &body.agent_version {
            check_id("agent_version", v)?;
        }
        for (field, count) in [
            ("tokens_used", body.tokens_used),
            ("latency_ms", body.latency_ms),
        ] {
            if count.is_some_and(|n| n > MAX_COUNT) {
                return Err(ApiError::invalid(
                    field,
                    format!("must be at most {MAX_COUNT}"),
                ));
            }
        }
        for (field, text) in [("input", &body.input), ("output", &body.output)] {
            if text.len() > MAX_TEXT_BYTES {
                return Err(ApiError::invalid(
                    field,
                    format!("must be at most {MAX_TEXT_BYTES} bytes"),
                ));
            }
        }
        if let Some(cost) = body.cost
            && !(cost.is_finite() && cost >= 0.0)
        {
            return Err(ApiError::invalid("cost", "must be a finite number ≥ 0"));
        }
        Ok(Self {
            agent_id: body.agent_id,
            agent_version: body.agent_version,
            input: body.input,
            output: body.output,
            tokens_used: body.tokens_used,
            cost: body.cost,
            status: body.status,
            latency_ms: body.latency_ms,
        })
    }
}

/// An execution: the run, and where its verification stands.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ExecutionView {
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

/// A verification.
#[derive(Debug, Clone, Serialize, ToSchema)]
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

impl From<&Verification> for VerificationView {
    fn from(v: &Verification) -> Self {
        let o = v.outcome.clone();
        Self {
            verification_id: v.verification_id.clone(),
            execution_id: v.execution_id.clone(),
            method: v.method,
            value: o.value,
            raw_value: o.raw_value,
            confidence: o.confidence,
            status: o.status,
            reason: o.reason,
            evidence: o.evidence,
            verifier_version: o.verifier_version,
            safety_violation: o.safety_violation,
            created_at_ms: v.created_at_ms,
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

/// A training example, as listed and exported.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ExampleView {
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
    pub examples: Vec<ExampleView>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl From<Execution> for ExecutionView {
    fn from(e: Execution) -> Self {
        Self {
            execution_id: e.execution_id,
            agent_id: e.agent_id,
            agent_version: e.agent_version,
            input: e.input,
            output: e.output,
            tokens_used: e.tokens_used,
            cost: e.cost,
            status: e.status,
            latency_ms: e.latency_ms,
            created_at_ms: e.created_at_ms,
            verifications: e.verifications,
            reward: e.reward,
            example_type: e.example_type,
        }
    }
}

impl From<Example> for ExampleView {
    fn from(e: Example) -> Self {
        Self {
            execution_id: e.execution_id,
            agent_id: e.agent_id,
            agent_version: e.agent_version,
            prompt: e.prompt,
            completion: e.completion,
            reward: e.reward,
            confidence: e.confidence,
            kind: e.kind,
            updated_at_ms: e.updated_at_ms,
        }
    }
}
