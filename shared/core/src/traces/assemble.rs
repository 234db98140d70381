//! The spans of one conversation into trajectories: one per agent that called a model in it,
//! its turns in time order. A span's agent is its own `gen_ai.agent.id` (or `.name`), else
//! its nearest ancestor's (the `invoke_agent` span above a `chat`), else its service's name.
//! Each model call repeats the conversation so far: its messages past those already turned
//! into turns are added, then its reply; a tool run is a tool turn, and the tool message
//! that repeats its result in the next call is not added twice.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::genai::{self, GenAi};
use super::span::Span;
use crate::gateway::message_turn;
use crate::trajectory::{FinalOutcome, Role, Trajectory, Turn, check_id};

/// The outcome an explicit end gave the conversation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ended {
    /// Whether its task succeeded.
    pub success: bool,
    /// Its reward, in [-1, 1].
    pub reward: Option<f64>,
}

/// The trajectories of conversation `conversation` from its spans (in any order; a span
/// received twice counts once). Agents whose spans hold no turn have none.
#[must_use]
pub fn trajectories(conversation: &str, spans: &[Span], ended: Option<Ended>) -> Vec<Trajectory> {
    let by_id: BTreeMap<(&str, &str), &Span> = spans
        .iter()
        .map(|s| ((s.trace_id.as_str(), s.span_id.as_str()), s))
        .collect();
    let mut by_agent: BTreeMap<String, Vec<(&Span, GenAi)>> = BTreeMap::new();
    for span in by_id.values() {
        match genai::read(span) {
            Ok(GenAi::Other) | Err(_) => {}
            Ok(item) => by_agent
                .entry(agent_of(span, &by_id))
                .or_default()
                .push((span, item)),
        }
    }
    let conversation_id = usable(conversation, "conversation");
    by_agent
        .into_iter()
        .filter_map(|(agent, mut items)| {
            items.sort_by(|(a, _), (b, _)| {
                (a.start_ns, a.end_ns, &a.span_id).cmp(&(b.start_ns, b.end_ns, &b.span_id))
            });
            let turns = turns(&items);
            if turns.is_empty() {
                return None;
            }
            let first = items.first().map_or("", |(s, _)| s.span_id.as_str());
            Some(Trajectory {
                schema_version: None,
                trajectory_id: format!(
                    "otel-{}",
                    &hex(&Sha256::digest(format!("{conversation}\0{agent}\0{first}")))[..32]
                ),
                policy_version: policy_version(&agent, &items),
                agent_id: agent,
                conversation_id: conversation_id.clone(),
                user_id: None,
                group_id: None,
                tools: Vec::new(),
                turns,
                final_outcome: ended.map(|e| FinalOutcome {
                    success: e.success,
                    reward: e.reward,
                    termination_reason: None,
                    truncated: false,
                }),
            })
        })
        .collect()
}

/// The agent of a span: its own, its nearest ancestor's, else its service's.
fn agent_of(span: &Span, by_id: &BTreeMap<(&str, &str), &Span>) -> String {
    let mut at = Some(span);
    // Bounded: a parent cycle in a malformed trace must not loop.
    for _ in 0..by_id.len() {
        let Some(s) = at else { break };
        if let Some(agent) = s.agent() {
            return usable(agent, "agent");
        }
        at = s
            .parent_span_id
            .as_deref()
            .and_then(|p| by_id.get(&(s.trace_id.as_str(), p)).copied());
    }
    usable(span.str("service.name").unwrap_or("unknown_agent"), "agent")
}

/// `id` when it is a valid trajectory id; else its characters outside `[A-Za-z0-9_.:@/-]`
/// become `-` (an agent named `Math Tutor` is `Math-Tutor`), and an id still unusable (empty,
/// too long) becomes `{kind}-` and a digest of it.
fn usable(id: &str, kind: &str) -> String {
    if check_id(kind, id).is_ok() {
        return id.to_owned();
    }
    let replaced: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.:@/-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if check_id(kind, &replaced).is_ok() {
        replaced
    } else {
        format!("{kind}-{}", &hex(&Sha256::digest(id.as_bytes()))[..32])
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The version a model name names: `{agent_id}-v{N}`, the name the gateway and the built-in
/// model server serve version `vN` under.
fn policy_version(agent: &str, items: &[(&Span, GenAi)]) -> Option<String> {
    items.iter().find_map(|(_, item)| {
        let GenAi::Chat(c) = item else { return None };
        let version = c.model.as_deref()?.strip_prefix(agent)?.strip_prefix('-')?;
        let digits = version.strip_prefix('v')?;
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| version.to_owned())
    })
}

fn turns(items: &[(&Span, GenAi)]) -> Vec<Turn> {
    let mut turns = Vec::new();
    // Messages of the conversation already in `turns`; the next call repeats them.
    let mut recorded = 0;
    // Calls whose result a tool run's turn holds.
    let mut answered: HashSet<&str> = HashSet::new();
    for (_, item) in items {
        match item {
            GenAi::Chat(c) => {
                let start = if c.input.len() >= recorded {
                    recorded
                } else {
                    0
                };
                for m in &c.input[start..] {
                    let repeats = m["role"] == "tool"
                        && m.get("tool_call_id")
                            .and_then(Value::as_str)
                            .is_some_and(|id| answered.contains(id));
                    if !repeats {
                        turns.push(message_turn(m));
                    }
                }
                recorded = c.input.len();
                if let Some(reply) = &c.output {
                    // A reply is the model's whatever role its instrumentation wrote.
                    let mut reply = reply.clone();
                    reply["role"] = Value::from("assistant");
                    let tokens = |n: Option<u64>| n.and_then(|n| u32::try_from(n).ok());
                    turns.push(Turn {
                        input_tokens: tokens(c.input_tokens),
                        output_tokens: tokens(c.output_tokens),
                        ..message_turn(&reply)
                    });
                    recorded += 1;
                }
            }
            GenAi::Tool(t) => {
                if let Some(id) = t.call_id.as_deref()
                    && !answered.insert(id)
                {
                    continue;
                }
                turns.push(Turn {
                    tool_call_id: t.call_id.clone().filter(|id| check_id("id", id).is_ok()),
                    tool_result: t.result.clone(),
                    error: t.error.clone(),
                    ..Turn::text(Role::Tool, "")
                });
            }
            GenAi::Other => {}
        }
    }
    turns
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn span(id: &str, parent: Option<&str>, start: u64, attributes: Value) -> Span {
        Span {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: id.into(),
            parent_span_id: parent.map(str::to_owned),
            name: "s".into(),
            start_ns: start,
            end_ns: start + 1,
            attributes: serde_json::from_value(attributes).unwrap(),
            error: None,
        }
    }

    fn chat(input: &Value, output: &Value) -> Value {
        json!({
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": input.to_string(),
            "gen_ai.output.messages": output.to_string(),
            "gen_ai.response.model": "tutor-v3",
        })
    }

    /// A tool-using conversation of two agents, spans out of order and one twice.
    #[test]
    fn a_conversation_becomes_one_trajectory_per_agent_in_time_order() {
        let user = json!({"role": "user", "parts": [{"type": "text", "content": "Paris?"}]});
        let call = json!({"role": "assistant", "parts": [{"type": "tool_call", "id": "c1",
            "name": "weather", "arguments": {"city": "Paris"}}]});
        let result = json!({"role": "tool", "parts": [{"type": "tool_call_response",
            "id": "c1", "response": "rain"}]});
        let answer = json!({"role": "assistant", "parts": [{"type": "text", "content": "Rain."}]});
        let spans = vec![
            span(
                "a000000000000002",
                Some("a000000000000001"),
                30,
                chat(&json!([user, call, result]), &json!([answer])),
            ),
            span(
                "a000000000000001",
                None,
                0,
                json!({
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "tutor",
                }),
            ),
            span(
                "a000000000000003",
                Some("a000000000000001"),
                10,
                chat(&json!([user]), &json!([call])),
            ),
            span(
                "a000000000000004",
                Some("a000000000000001"),
                20,
                json!({
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
                    "gen_ai.tool.call.id": "c1", "gen_ai.tool.call.result": "rain",
                }),
            ),
            span(
                "b000000000000001",
                None,
                40,
                json!({
                    "gen_ai.operation.name": "chat", "gen_ai.agent.id": "Critic Bot",
                    "gen_ai.input.messages": json!([user]).to_string(),
                    "gen_ai.output.messages": json!([answer]).to_string(),
                }),
            ),
        ];
        let mut twice = spans.clone();
        twice.push(spans[3].clone());
        let made = trajectories(
            "conv-1",
            &twice,
            Some(Ended {
                success: true,
                reward: Some(0.5),
            }),
        );
        assert_eq!(made.len(), 2);
        let (critic, tutor) = (&made[0], &made[1]);
        assert_eq!(critic.agent_id, "Critic-Bot");
        assert_eq!(tutor.agent_id, "tutor");
        assert_eq!(tutor.conversation_id, "conv-1");
        assert_eq!(tutor.policy_version.as_deref(), Some("v3"));
        assert_eq!(critic.policy_version, None);
        let roles: Vec<Role> = tutor.turns.iter().map(|t| t.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert_eq!(tutor.turns[1].tool_calls[0].id.as_deref(), Some("c1"));
        assert_eq!(tutor.turns[2].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(tutor.turns[2].tool_result.as_deref(), Some("rain"));
        assert_eq!(tutor.turns[3].content, "Rain.");
        assert_eq!(tutor.final_outcome.as_ref().unwrap().reward, Some(0.5));
        for t in &made {
            t.validate().unwrap();
        }
        // The same spans in another order are the same trajectories.
        let mut reversed = spans;
        reversed.reverse();
        assert_eq!(
            trajectories(
                "conv-1",
                &reversed,
                Some(Ended {
                    success: true,
                    reward: Some(0.5)
                })
            ),
            made
        );
    }

    #[test]
    fn ids_that_cannot_be_trajectory_ids_are_made_usable() {
        assert_eq!(usable("Math Tutor", "agent"), "Math-Tutor");
        let long = "x".repeat(200);
        let id = usable(&long, "conversation");
        assert!(
            id.starts_with("conversation-") && check_id("c", &id).is_ok(),
            "{id}"
        );
    }
}
