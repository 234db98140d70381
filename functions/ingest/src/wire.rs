//! Response views of the trajectory index and of a trajectory's turn rows. The stored
//! summary (`repo::Summary`) and the turn table's rows keep their own layout; these are what
//! the API shows of them.

use agentrl_core::envelope::Source;
use agentrl_turns::{RowToolCall, TurnRow};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::repo::Summary;

/// A trajectory as the index keeps it. Ids are as stored: one that held personal data is a
/// keyed hash, and stays one.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TrajectorySummary {
    pub trajectory_id: String,
    pub agent_id: String,
    /// The conversation (the gateway's session id, a trace's conversation).
    pub conversation_id: String,
    /// A keyed hash of the end user, never the raw id.
    pub user_id: Option<String>,
    /// The GRPO group (same prompt or task).
    pub group_id: Option<String>,
    /// The model version that served it, when known.
    pub policy_version: Option<String>,
    /// How it came in; null for trajectories queued before sources were recorded.
    pub source: Option<Source>,
    /// When it was accepted (epoch ms): what the listing is ordered and windowed by.
    pub received_at_ms: i64,
    /// The final outcome's, when one was posted.
    pub success: Option<bool>,
    /// The episode reward as released: noisy under differential privacy, null when none was
    /// posted or the privacy budget suppressed it.
    pub reward: Option<f64>,
    /// ε of the noise on `reward`, when there was any.
    pub dp_epsilon: Option<f64>,
    pub termination_reason: Option<String>,
    pub truncated: bool,
    pub turn_count: u32,
    /// Tool calls over all turns.
    pub tool_call_count: u32,
    /// Prompt tokens the model calls reported, summed; null when none reported any.
    pub input_tokens: Option<u64>,
    /// Completion tokens, likewise.
    pub output_tokens: Option<u64>,
    /// Turns a safety rule scored −1.
    pub safety_violations: u32,
    /// Personal data replaced by placeholders before anything was written.
    pub pii_replacements: u32,
    /// The queue message that carried it (its rows' `message_id`).
    pub message_id: String,
    /// The turn-table objects holding its rows.
    pub objects: Vec<String>,
}

impl From<Summary> for TrajectorySummary {
    fn from(s: Summary) -> Self {
        Self {
            trajectory_id: s.trajectory_id,
            agent_id: s.agent_id,
            conversation_id: s.conversation_id,
            user_id: s.user_id,
            group_id: s.group_id,
            policy_version: s.policy_version,
            source: s.source,
            received_at_ms: s.received_at_ms,
            success: s.success,
            reward: s.reward,
            dp_epsilon: s.dp_epsilon,
            termination_reason: s.termination_reason,
            truncated: s.truncated,
            turn_count: s.turn_count,
            tool_call_count: s.tool_call_count,
            input_tokens: s.input_tokens,
            output_tokens: s.output_tokens,
            safety_violations: s.safety_violations,
            pii_replacements: s.pii_replacements,
            message_id: s.message_id,
            objects: s.objects,
        }
    }
}

/// One page of trajectories, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TrajectoryPage {
    pub trajectories: Vec<TrajectorySummary>,
    /// Present while more may follow: pass it as `cursor`.
    pub next_cursor: Option<String>,
}

/// A trajectory with its turns, as the turn table holds them (anonymised).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TrajectoryDetail {
    #[serde(flatten)]
    pub summary: TrajectorySummary,
    /// The tools it offered, as OpenAI's `tools`; null when none.
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Value>,
    /// Its turns in order.
    pub turns: Vec<StoredTurn>,
}

/// One turn as the turn table holds it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StoredTurn {
    /// 0-based position in the trajectory.
    pub turn_index: i32,
    /// system, user, assistant or tool.
    pub role: String,
    /// The text, after personal data was replaced.
    pub content: String,
    /// The content as OpenAI's parts, when it came so.
    #[schema(value_type = Option<Vec<Object>>)]
    pub content_parts: Option<Value>,
    /// An assistant turn's tool calls.
    pub tool_calls: Vec<StoredToolCall>,
    /// The call a tool turn answers.
    pub tool_call_id: Option<String>,
    pub tool_result: Option<String>,
    pub error: Option<String>,
    pub reward: StoredTurnReward,
    /// A safety rule matched: the reward's total is −1.
    pub safety_violation: bool,
    /// Prompt tokens the model call of an assistant turn reported.
    pub input_tokens: Option<i64>,
    /// Completion tokens it reported.
    pub output_tokens: Option<i64>,
    /// How many prompt token ids the sampler logged (dropped when text was scrubbed).
    pub prompt_token_count: Option<usize>,
    /// How many response token ids it logged.
    pub response_token_count: Option<usize>,
    pub tokenizer: Option<String>,
}

/// A tool call as the turn table holds it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StoredToolCall {
    pub id: Option<String>,
    pub name: String,
    /// As the model produced them: JSON text for arguments posted as an object.
    pub arguments: String,
}

/// A turn's reward components (docs/trajectories.md, "Turn rewards").
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StoredTurnReward {
    /// The weighted total (−1 on a safety violation).
    pub total: Option<f64>,
    pub information_gain: Option<f64>,
    /// `heuristic`, or the rubric version the critic model scored it on (assistant turns).
    pub information_gain_source: Option<String>,
    pub format: Option<f64>,
    pub progress: Option<f64>,
    /// Like `information_gain_source`.
    pub progress_source: Option<String>,
    /// Tool-call components, on turns with calls.
    pub tool_call_valid: Option<f64>,
    pub tool_choice: Option<f64>,
    pub tool_error_handling: Option<f64>,
    pub tool_efficiency: Option<f64>,
}

/// JSON text the worker wrote, as JSON; text that does not parse (none should) as a string.
fn json(text: Option<String>) -> Option<Value> {
    text.map(|t| serde_json::from_str(&t).unwrap_or(Value::String(t)))
}

impl From<RowToolCall> for StoredToolCall {
    fn from(c: RowToolCall) -> Self {
        Self {
            id: c.id,
            name: c.name,
            arguments: c.arguments,
        }
    }
}

impl From<TurnRow> for StoredTurn {
    fn from(r: TurnRow) -> Self {
        Self {
            turn_index: r.turn_index,
            role: r.role,
            content: r.content,
            content_parts: json(r.content_parts),
            tool_calls: r.tool_calls.into_iter().map(Into::into).collect(),
            tool_call_id: r.tool_call_id,
            tool_result: r.tool_result,
            error: r.error,
            reward: StoredTurnReward {
                total: r.turn_reward,
                information_gain: r.reward_information_gain,
                information_gain_source: r.information_gain_source,
                format: r.reward_format,
                progress: r.reward_progress,
                progress_source: r.progress_source,
                tool_call_valid: r.tool_call_valid,
                tool_choice: r.tool_choice,
                tool_error_handling: r.tool_error_handling,
                tool_efficiency: r.tool_efficiency,
            },
            safety_violation: r.safety_violation,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            prompt_token_count: r.prompt_token_ids.map(|t| t.len()),
            response_token_count: r.response_token_ids.map(|t| t.len()),
            tokenizer: r.tokenizer,
        }
    }
}

impl TrajectoryDetail {
    /// The view of `summary` with its `rows` (in turn order).
    pub(crate) fn new(summary: Summary, rows: Vec<TurnRow>) -> Self {
        Self {
            tools: rows.first().and_then(|r| json(r.tools.clone())),
            summary: summary.into(),
            turns: rows.into_iter().map(Into::into).collect(),
        }
    }
}
