//! A session's calls become trajectories: the conversation as the agent carried it from call
//! to call, each reply with the upstream's token ids. A session whose calls asked for `n > 1`
//! choices becomes a group of `n` trajectories, the `i`-th following choice `i` of every
//! such call (a call with fewer choices contributes its last). A reply's parallel tool calls
//! are one assistant turn's `tool_calls`, each with its id and the arguments string the model
//! produced; a tool message's turn names the call it answers (`tool_call_id`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::record::{CallRecord, ChoiceRecord, RecordedToolCall};
use crate::FieldError;
use crate::trajectory::{FinalOutcome, Role, ToolCall, ToolSpec, Trajectory, Turn, check_id};

/// The optional body of `POST /gateway/{agent_id}/sessions/{session_id}/end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SessionEnd {
    /// Whether the session's task succeeded.
    pub success: Option<bool>,
    /// Its reward, in [-1, 1] (needs `success`).
    pub reward: Option<f64>,
    /// A session of `n` choices (a group): the outcome of each, in choice order, so the group's
    /// members are told apart (GRPO learns from their differences); in place of `success` and
    /// `reward`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<ChoiceOutcome>>,
}

/// The outcome of one choice of a group session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ChoiceOutcome {
    /// Whether this choice's attempt succeeded.
    pub success: bool,
    /// Its reward, in [-1, 1].
    pub reward: Option<f64>,
}

fn check_reward(field: String, reward: Option<f64>) -> Result<(), FieldError> {
    match reward {
        Some(r) if !(r.is_finite() && (-1.0..=1.0).contains(&r)) => {
            Err(FieldError::new(field, "must be between -1 and 1"))
        }
        _ => Ok(()),
    }
}

impl SessionEnd {
    /// Checks the rewards' range, that a reward comes with `success`, and that per-choice
    /// outcomes come alone.
    ///
    /// # Errors
    /// The field at fault.
    pub fn validate(&self) -> Result<(), FieldError> {
        check_reward("reward".into(), self.reward)?;
        if self.reward.is_some() && self.success.is_none() {
            return Err(FieldError::new("success", "required with a reward"));
        }
        if let Some(choices) = &self.choices {
            if self.success.is_some() || self.reward.is_some() {
                return Err(FieldError::new(
                    "choices",
                    "give success and reward, or choices, not both",
                ));
            }
            if choices.is_empty() {
                return Err(FieldError::new("choices", "at least one outcome"));
            }
            for (i, c) in choices.iter().enumerate() {
                check_reward(format!("choices[{i}].reward"), c.reward)?;
            }
        }
        Ok(())
    }

    /// The outcome of choice `i`.
    fn outcome(&self, i: usize) -> Option<(bool, Option<f64>)> {
        match &self.choices {
            Some(choices) => choices.get(i).map(|c| (c.success, c.reward)),
            None => self.success.map(|s| (s, self.reward)),
        }
    }
}

/// The model name a session's calls are served under: `{agent_id}-{version}` once a version
/// is routed, else the agent's own model.
#[must_use]
pub fn served_name(agent_id: &str, version: Option<&str>, model: &str) -> String {
    version.map_or_else(|| model.to_owned(), |v| format!("{agent_id}-{v}"))
}

/// What a truncated reply's turn says.
const TRUNCATED: &str = "truncated: the client disconnected before the reply was complete";

/// The trajectories of session `session_id` of `agent_id`, from its calls in order.
///
/// # Errors
/// Per-choice outcomes (`choices`) that are not one per choice.
pub fn trajectories(
    agent_id: &str,
    session_id: &str,
    calls: &[CallRecord],
    end: &SessionEnd,
) -> Result<Vec<Trajectory>, FieldError> {
    let width = calls
        .iter()
        .map(|c| c.choices.len())
        .max()
        .unwrap_or(1)
        .max(1);
    if let Some(choices) = &end.choices
        && choices.len() != width
    {
        return Err(FieldError::new(
            "choices",
            format!(
                "the session's calls had {width} choices; {} outcomes were given",
                choices.len()
            ),
        ));
    }
    let truncated = calls.iter().any(|c| c.truncated);
    Ok((0..width)
        .map(|i| Trajectory {
            schema_version: None,
            trajectory_id: if width == 1 {
                session_id.to_owned()
            } else {
                format!("{session_id}.{i}")
            },
            agent_id: agent_id.to_owned(),
            conversation_id: session_id.to_owned(),
            user_id: None,
            group_id: (width > 1).then(|| session_id.to_owned()),
            policy_version: calls.iter().find_map(|c| c.version.clone()),
            tools: tools(calls),
            turns: turns(calls, i),
            final_outcome: end.outcome(i).map(|(success, reward)| FinalOutcome {
                success,
                reward,
                termination_reason: None,
                truncated,
            }),
        })
        .collect())
}

/// Every tool the calls declared, by name (the last declaration wins).
fn tools(calls: &[CallRecord]) -> Vec<ToolSpec> {
    let mut by_name = BTreeMap::new();
    for t in calls.iter().flat_map(|c| &c.tools) {
        let f = t.get("function").unwrap_or(t);
        if let Some(name) = f.get("name").and_then(Value::as_str) {
            by_name.insert(
                name.to_owned(),
                ToolSpec {
                    name: name.to_owned(),
                    description: f
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    parameters: f.get("parameters").cloned(),
                },
            );
        }
    }
    by_name.into_values().collect()
}

/// The turns of the conversation following choice `i`.
fn turns(calls: &[CallRecord], i: usize) -> Vec<Turn> {
    let mut turns = Vec::new();
    // Messages of the conversation already in `turns`: the next call repeats them, then
    // adds the reply it got and what followed.
    let mut recorded = 0;
    for call in calls {
        let start = if call.messages.len() >= recorded {
            recorded
        } else {
            0
        };
        turns.extend(call.messages[start..].iter().map(message_turn));
        if let Some(choice) = call.choices.get(i).or(call.choices.last()) {
            turns.push(reply_turn(call, choice));
        }
        recorded = call.messages.len() + 1;
    }
    turns
}

/// A message's text: a string, or its text parts joined (other parts are named in brackets:
/// the turn table holds text).
fn text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("text").and_then(Value::as_str) {
                Some(t) => t.to_owned(),
                None => format!(
                    "[{}]",
                    p.get("type").and_then(Value::as_str).unwrap_or("part")
                ),
            })
            .collect(),
        _ => String::new(),
    }
}

/// An id the trajectory can hold (`[A-Za-z0-9_.:@/-]`, 1 to 128); another is left out.
fn usable_id(id: &str) -> Option<String> {
    check_id("id", id).is_ok().then(|| id.to_owned())
}

/// A string of a content part longer than this (an image or audio as a data URL, a file's
/// bytes) is kept as a note of its size and digest: the turn table holds text.
const PART_VALUE_CHARS: usize = 4096;

/// A message's content parts (when it has parts), each inline payload over
/// [`PART_VALUE_CHARS`] replaced by `[omitted: N bytes, sha256 …]`.
fn parts(content: Option<&Value>) -> Vec<Value> {
    fn shrink(v: &mut Value) {
        match v {
            Value::String(s) if s.len() > PART_VALUE_CHARS => {
                let digest: String = Sha256::digest(s.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                *s = format!("[omitted: {} bytes, sha256 {digest}]", s.len());
            }
            Value::Array(items) => items.iter_mut().for_each(shrink),
            Value::Object(map) => map.values_mut().for_each(shrink),
            _ => {}
        }
    }
    let Some(Value::Array(parts)) = content else {
        return Vec::new();
    };
    parts
        .iter()
        .filter(|p| p.is_object())
        .cloned()
        .map(|mut p| {
            shrink(&mut p);
            p
        })
        .collect()
}

/// The turn of one chat message (OpenAI's form).
pub(crate) fn message_turn(m: &Value) -> Turn {
    let turn = message_turn_text(m);
    Turn {
        content_parts: parts(m.get("content")),
        ..turn
    }
}

/// [`message_turn`] but for its parts.
fn message_turn_text(m: &Value) -> Turn {
    let content = text(m.get("content"));
    match m.get("role").and_then(Value::as_str).unwrap_or_default() {
        "system" | "developer" => Turn::text(Role::System, &content),
        "assistant" => {
            let calls: Vec<RecordedToolCall> = m
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|t| {
                    let s = |path: &[&str]| {
                        path.iter()
                            .try_fold(t, |v, k| v.get(k))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    RecordedToolCall {
                        id: s(&["id"]),
                        name: s(&["function", "name"]),
                        arguments: s(&["function", "arguments"]),
                    }
                })
                .collect();
            assistant_turn(content, &calls)
        }
        "tool" | "function" => Turn {
            tool_result: Some(content),
            tool_call_id: m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .and_then(usable_id),
            ..Turn::text(Role::Tool, "")
        },
        _ => Turn::text(Role::User, &content),
    }
}

/// An assistant message's turn: its text and its calls, the arguments as the model produced
/// them (a string that is not a JSON object is kept, and scores as an invalid call).
fn assistant_turn(content: String, calls: &[RecordedToolCall]) -> Turn {
    Turn {
        tool_calls: calls
            .iter()
            .map(|call| ToolCall {
                id: usable_id(&call.id),
                name: call.name.clone(),
                arguments: Value::String(call.arguments.clone()),
            })
            .collect(),
        ..Turn::text(Role::Assistant, content)
    }
}

/// A reply's turn, with the call's token ids.
fn reply_turn(call: &CallRecord, choice: &ChoiceRecord) -> Turn {
    let mut turn = assistant_turn(choice.content.clone(), &choice.tool_calls);
    if let Some(ids) = &choice.token_ids {
        turn.prompt_token_ids.clone_from(&call.prompt_token_ids);
        turn.response_token_ids = Some(ids.clone());
        turn.loss_mask = Some(vec![1; ids.len()]);
        turn.behavior_logprobs = choice.logprobs.clone().filter(|l| l.len() == ids.len());
    }
    if call.truncated {
        turn.error = Some(TRUNCATED.to_owned());
    }
    // The upstream's usage counts every choice's completion: a group's members share none.
    if call.choices.len() == 1
        && let Some(usage) = &call.usage
    {
        let tokens = |k: &str| usage.get(k)?.as_u64().and_then(|n| u32::try_from(n).ok());
        turn.input_tokens = tokens("prompt_tokens");
        turn.output_tokens = tokens("completion_tokens");
    }
    turn
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(messages: Value, replies: &[(&str, &[u32])]) -> CallRecord {
        let mut c = CallRecord::new(
            "c".into(),
            "a-v1".into(),
            Some("v1".into()),
            messages.as_array().unwrap().clone(),
            vec![
                json!({"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}),
            ],
        );
        c.prompt_token_ids = Some(vec![1, 2]);
        c.choices = replies
            .iter()
            .enumerate()
            .map(|(i, (text, ids))| ChoiceRecord {
                index: i as u32,
                content: (*text).to_owned(),
                token_ids: Some(ids.to_vec()),
                logprobs: Some(vec![-0.5; ids.len()]),
                ..ChoiceRecord::default()
            })
            .collect();
        c
    }

    #[test]
    fn calls_continue_one_conversation_with_each_reply_s_token_ids() {
        let mut first = call(
            json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "find x"}]),
            &[("", &[9, 9])],
        );
        first.choices[0].tool_calls = vec![
            RecordedToolCall {
                id: "call_1".into(),
                name: "lookup".into(),
                arguments: "{\"q\": \"x\"}".into(),
            },
            RecordedToolCall {
                id: "call_2".into(),
                name: "lookup".into(),
                arguments: "not json".into(),
            },
        ];
        let second = call(
            json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "find x"},
                   {"role": "assistant", "content": null, "tool_calls": []},
                   {"role": "tool", "tool_call_id": "call_1", "content": "x=1"},
                   {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "bad"}]}]),
            &[("x is 1", &[4, 5, 6])],
        );
        let end = SessionEnd {
            success: Some(true),
            reward: Some(1.0),
            choices: None,
        };
        let t = trajectories("a", "s1", &[first, second], &end).unwrap();
        assert_eq!(t.len(), 1);
        let t = &t[0];
        assert_eq!(
            (t.trajectory_id.as_str(), t.group_id.as_deref()),
            ("s1", None)
        );
        assert_eq!(t.policy_version.as_deref(), Some("v1"));
        let roles: Vec<Role> = t.turns.iter().map(|t| t.role).collect();
        use Role::{Assistant as A, System as S, Tool as T, User as U};
        assert_eq!(roles, [S, U, A, T, T, A]);
        let reply = &t.turns[2];
        assert_eq!(reply.response_token_ids, Some(vec![9, 9]));
        let calls: Vec<(Option<&str>, &Value)> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_deref(), &c.arguments))
            .collect();
        assert_eq!(
            calls,
            [
                (Some("call_1"), &json!("{\"q\": \"x\"}")),
                (Some("call_2"), &json!("not json"))
            ],
            "both calls, the arguments as the model produced them"
        );
        assert_eq!(t.turns[3].tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(t.turns[4].tool_call_id.as_deref(), Some("call_2"));
        assert_eq!(t.turns[4].tool_result.as_deref(), Some("bad"));
        assert_eq!(
            t.turns[4].content_parts,
            [json!({"type": "text", "text": "bad"})],
            "parts are kept beside their joined text"
        );
        assert_eq!(t.turns[5].response_token_ids, Some(vec![4, 5, 6]));
        assert_eq!(t.turns[5].behavior_logprobs, Some(vec![-0.5; 3]));
        assert_eq!(t.turns[5].prompt_token_ids, Some(vec![1, 2]));
        assert_eq!(t.tools.len(), 1);
        assert_eq!(t.final_outcome.as_ref().unwrap().reward, Some(1.0));
        assert!(t.validate().is_ok());
    }

    #[test]
    fn n_choices_make_a_group_and_a_cut_reply_is_marked() {
        let mut c = call(
            json!([{"role": "user", "content": "pick"}]),
            &[("a", &[1]), ("b", &[2])],
        );
        c.truncated = true;
        let t = trajectories("a", "s2", &[c.clone()], &SessionEnd::default()).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].trajectory_id, "s2.1");
        assert_eq!(t[1].group_id.as_deref(), Some("s2"));
        assert_eq!(t[1].turns[1].content, "b");
        assert!(
            t[0].turns[1]
                .error
                .as_ref()
                .unwrap()
                .starts_with("truncated")
        );
        assert!(t[0].final_outcome.is_none());
        // Each member of the group gets its own outcome, one per choice.
        let outcomes = |rewards: &[f64]| SessionEnd {
            choices: Some(
                rewards
                    .iter()
                    .map(|&r| ChoiceOutcome {
                        success: r > 0.0,
                        reward: Some(r),
                    })
                    .collect(),
            ),
            ..SessionEnd::default()
        };
        let t = trajectories("a", "s2", &[c.clone()], &outcomes(&[1.0, 0.0])).unwrap();
        let got: Vec<_> = t
            .iter()
            .map(|t| {
                let o = t.final_outcome.as_ref().unwrap();
                (o.success, o.reward)
            })
            .collect();
        assert_eq!(got, [(true, Some(1.0)), (false, Some(0.0))]);
        let wrong = trajectories("a", "s2", &[c], &outcomes(&[1.0])).unwrap_err();
        assert_eq!(wrong.field, "choices");
    }

    #[test]
    fn a_large_inline_payload_of_a_part_is_kept_as_its_size_and_digest() {
        let image = format!("data:image/png;base64,{}", "A".repeat(10_000));
        let c = call(
            json!([{"role": "user", "content": [
                {"type": "text", "text": "what is in this picture?"},
                {"type": "image_url", "image_url": {"url": image, "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]),
            &[("a cat", &[1])],
        );
        let t = &trajectories("a", "s3", &[c], &SessionEnd::default()).unwrap()[0];
        let user = &t.turns[0];
        assert_eq!(
            user.content,
            "what is in this picture?[image_url][image_url]"
        );
        let parts = &user.content_parts;
        assert_eq!(parts.len(), 3);
        let omitted = parts[1]["image_url"]["url"].as_str().unwrap();
        assert!(
            omitted.starts_with("[omitted: 10022 bytes, sha256 ") && omitted.len() < 120,
            "{omitted}"
        );
        assert_eq!(parts[1]["image_url"]["detail"], "low");
        assert_eq!(parts[2]["image_url"]["url"], "https://example.com/cat.png");
        assert!(t.validate().is_ok());
    }

    #[test]
    fn a_reward_needs_success_and_a_range() {
        let bad = SessionEnd {
            success: None,
            reward: Some(0.5),
            choices: None,
        };
        assert_eq!(bad.validate().unwrap_err().field, "success");
        let bad = SessionEnd {
            success: Some(true),
            reward: Some(2.0),
            choices: None,
        };
        assert_eq!(bad.validate().unwrap_err().field, "reward");
        let one = |reward| ChoiceOutcome {
            success: true,
            reward: Some(reward),
        };
        let bad = SessionEnd {
            choices: Some(vec![one(1.0), one(-3.0)]),
            ..SessionEnd::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "choices[1].reward");
        let bad = SessionEnd {
            success: Some(true),
            choices: Some(vec![one(1.0)]),
            ..SessionEnd::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "choices");
        assert_eq!(served_name("a", Some("v3"), "qwen"), "a-v3");
        assert_eq!(served_name("a", None, "qwen"), "qwen");
    }
}
