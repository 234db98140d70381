//! One turn row per turn of an anonymised trajectory.

use agentrl_core::trajectory::{ComponentSource, SourcedReward, ToolSpec, Trajectory};
use agentrl_turns::{RowToolCall, TurnRow};
use serde_json::json;

/// Where a trajectory's rows came from and what was done to it on the way.
pub(crate) struct Provenance<'a> {
    pub message_id: &'a str,
    pub received_at_ms: i64,
    /// PII replacements made in the whole trajectory.
    pub pii_replacements: u32,
    /// The released episode reward (noisy under differential privacy, `None` if suppressed).
    pub episode_reward: Option<f64>,
    /// The ε of that noise, when there was any.
    pub dp_epsilon: Option<f64>,
}

/// Token ids are validated below 2^31, so the int32 columns hold them exactly.
fn ids(tokens: &Option<Vec<u32>>) -> Option<Vec<i32>> {
    tokens.as_ref().map(|v| {
        v.iter()
            .map(|&t| i32::try_from(t).unwrap_or(i32::MAX))
            .collect()
    })
}

/// The trajectory's tools as OpenAI's `tools` (what chat templates render), `None` without.
fn tools(specs: &[ToolSpec]) -> Option<String> {
    (!specs.is_empty()).then(|| {
        let functions: Vec<_> = specs
            .iter()
            .map(|s| {
                let mut function = json!({"name": s.name});
                if let Some(d) = &s.description {
                    function["description"] = json!(d);
                }
                if let Some(p) = &s.parameters {
                    function["parameters"] = p.clone();
                }
                json!({"type": "function", "function": function})
            })
            .collect();
        serde_json::Value::Array(functions).to_string()
    })
}

fn source(s: Option<ComponentSource>) -> Option<String> {
    s.map(|s| s.as_str().to_owned())
}

/// The rows of `t` (already anonymised), with `rewards` index-aligned to its turns.
pub(crate) fn rows(t: &Trajectory, rewards: &[SourcedReward], p: &Provenance<'_>) -> Vec<TurnRow> {
    let outcome = t.final_outcome.as_ref();
    let tools = tools(&t.tools);
    let count = i32::try_from(t.turns.len()).unwrap_or(i32::MAX);
    t.turns
        .iter()
        .zip(rewards)
        .enumerate()
        .map(|(i, (turn, sourced))| {
            let reward = &sourced.reward;
            let tool = reward.tool;
            let calls: Vec<RowToolCall> = turn
                .calls()
                .map(|c| RowToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments_text(),
                })
                .collect();
            TurnRow {
                trajectory_id: t.trajectory_id.clone(),
                conversation_id: t.conversation_id.clone(),
                turn_index: i32::try_from(i).unwrap_or(i32::MAX),
                turn_count: count,
                agent_id: t.agent_id.clone(),
                user_id: t.user_id.clone(),
                group_id: t.group_id.clone(),
                policy_version: t.policy_version.clone(),
                role: turn.role.as_str().to_owned(),
                content: turn.content.clone(),
                tool_name: calls.first().map(|c| c.name.clone()),
                tool_arguments: calls.first().map(|c| c.arguments.clone()),
                tool_result: turn.tool_result.clone(),
                error: turn.error.clone(),
                prompt_token_ids: ids(&turn.prompt_token_ids),
                response_token_ids: ids(&turn.response_token_ids),
                loss_mask: turn
                    .loss_mask
                    .as_ref()
                    .map(|m| m.iter().map(|&b| i8::from(b != 0)).collect()),
                behavior_logprobs: turn.behavior_logprobs.clone(),
                tokenizer: turn.tokenizer.clone(),
                turn_reward: Some(reward.total),
                reward_information_gain: Some(reward.information_gain),
                reward_format: Some(reward.format_correctness),
                reward_progress: Some(reward.task_progress),
                safety_violation: reward.safety,
                tool_call_valid: tool.map(|s| s.call_valid),
                tool_choice: tool.map(|s| s.tool_choice),
                tool_error_handling: tool.map(|s| s.error_handling),
                tool_efficiency: tool.map(|s| s.efficiency),
                episode_reward: p.episode_reward,
                episode_success: outcome.map(|o| o.success),
                termination_reason: outcome.and_then(|o| o.termination_reason.clone()),
                truncated: outcome.is_some_and(|o| o.truncated),
                dp_epsilon: p.dp_epsilon,
                pii_replacements: i32::try_from(p.pii_replacements).unwrap_or(i32::MAX),
                message_id: p.message_id.to_owned(),
                ingested_at_ms: p.received_at_ms,
                tool_calls: calls,
                tool_call_id: turn.tool_call_id.clone(),
                tools: tools.clone(),
                content_parts: (!turn.content_parts.is_empty())
                    .then(|| serde_json::Value::from(turn.content_parts.clone()).to_string()),
                input_tokens: turn.input_tokens.map(i64::from),
                output_tokens: turn.output_tokens.map(i64::from),
                information_gain_source: source(sourced.information_gain),
                progress_source: source(sourced.task_progress),
            }
        })
        .collect()
}
