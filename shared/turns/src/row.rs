//! [`TurnRow`]: one row of the turn table as plain owned data.

/// One turn of a trajectory: one row of the table, one field per column of [`crate::schema`]
/// (see the crate documentation for what each holds). `None` is a null.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnRow {
    /// The episode this turn belongs to.
    pub trajectory_id: String,
    /// The conversation the episode ran in.
    pub conversation_id: String,
    /// 0-based position of the turn in the trajectory.
    pub turn_index: i32,
    /// Number of turns in the trajectory.
    pub turn_count: i32,
    /// The agent that ran the episode.
    pub agent_id: String,
    /// Keyed hash of the end user, never a raw identifier.
    pub user_id: Option<String>,
    /// Same prompt/task: the GRPO group key.
    pub group_id: Option<String>,
    /// Version of the policy that produced the turn.
    pub policy_version: Option<String>,
    /// Speaker of the turn: system, user, assistant, tool, ….
    pub role: String,
    /// Text of the turn (after PII replacement).
    pub content: String,
    /// Name of the turn's first tool call (every call is in `tool_calls`).
    pub tool_name: Option<String>,
    /// Arguments of the turn's first tool call, as the model produced them.
    pub tool_arguments: Option<String>,
    /// What the tool returned.
    pub tool_result: Option<String>,
    /// Error reported in this turn.
    pub error: Option<String>,
    /// Prompt tokens as the sampler saw them.
    pub prompt_token_ids: Option<Vec<i32>>,
    /// Response tokens as the sampler produced them.
    pub response_token_ids: Option<Vec<i32>>,
    /// 1 = model-generated token, 0 = tool/environment token.
    pub loss_mask: Option<Vec<i8>>,
    /// The sampler's logprob of every generated token.
    pub behavior_logprobs: Option<Vec<f32>>,
    /// Tokenizer / chat template id the token ids belong to.
    pub tokenizer: Option<String>,
    /// Weighted total of the turn-level reward signals.
    pub turn_reward: Option<f64>,
    /// Information-gain signal.
    pub reward_information_gain: Option<f64>,
    /// Format-correctness signal.
    pub reward_format: Option<f64>,
    /// Task-progress signal.
    pub reward_progress: Option<f64>,
    /// Whether the turn violated a safety rule.
    pub safety_violation: bool,
    /// Tool-call validity score.
    pub tool_call_valid: Option<f64>,
    /// Tool-choice score.
    pub tool_choice: Option<f64>,
    /// Tool error-handling score.
    pub tool_error_handling: Option<f64>,
    /// Tool efficiency score.
    pub tool_efficiency: Option<f64>,
    /// Reward of the whole episode; may carry differential-privacy noise.
    pub episode_reward: Option<f64>,
    /// Whether the episode succeeded.
    pub episode_success: Option<bool>,
    /// Why the episode ended.
    pub termination_reason: Option<String>,
    /// Whether the episode was cut short.
    pub truncated: bool,
    /// ε of the differential-privacy noise on `episode_reward`, `None` when there is none.
    pub dp_epsilon: Option<f64>,
    /// How many PII spans were replaced in this turn.
    pub pii_replacements: i32,
    /// The queue message the row came from (lineage).
    pub message_id: String,
    /// When the row was ingested, in milliseconds since the Unix epoch (UTC).
    pub ingested_at_ms: i64,
    /// Every tool call of the turn, in order (version 1 files: the one of `tool_name`).
    pub tool_calls: Vec<RowToolCall>,
    /// The call a tool turn answers.
    pub tool_call_id: Option<String>,
    /// The tools the trajectory offered, as the JSON text of OpenAI's `tools` (function
    /// specs), repeated on each of its rows (dictionary-encoded): what a chat template
    /// renders.
    pub tools: Option<String>,
    /// The message's content parts as JSON text, when it came as parts (`content` holds
    /// their text).
    pub content_parts: Option<String>,
    /// Version 3: prompt tokens the model call reported (assistant turns).
    pub input_tokens: Option<i64>,
    /// Version 3: completion tokens it reported.
    pub output_tokens: Option<i64>,
    /// Version 4: where `reward_information_gain` came from on an assistant turn: `heuristic`,
    /// or the version of the rubric the critic model scored it on.
    pub information_gain_source: Option<String>,
    /// Version 4: the same for `reward_progress`.
    pub progress_source: Option<String>,
}

/// One tool call of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowToolCall {
    /// The call's id, when the sampler gave one.
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the model produced them.
    pub arguments: String,
}
