//! Exports beside the Parquet views, for people who do not train with `agentrl train`:
//! - `openai-chat.jsonl` / `openai-chat-validation.jsonl`: the positive episodes of each split
//!   in the OpenAI chat fine-tuning format (`{"messages": [...]}`, tool calls as
//!   `tool_calls` with their `tool` results answering them by id), the training and
//!   validation files of a fine-tuning job;
//! - `few-shot.json`: for prompt refinement, the best positive episodes per agent (the turn
//!   table has no task type; the agent is the unit a prompt is written for), highest reward
//!   first, at most [`FEW_SHOT_PER_AGENT`] each.

use std::collections::{BTreeMap, BinaryHeap};

use agentrl_turns::{RowToolCall, TurnRow};
use serde_json::{Value, json};

/// Examples kept per agent in `few-shot.json`.
pub const FEW_SHOT_PER_AGENT: usize = 5;

/// One turn of an episode, as the exports need it.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    pub index: i32,
    pub role: String,
    pub content: String,
    pub tool_calls: Vec<RowToolCall>,
    pub tool_call_id: Option<String>,
    pub tool_result: Option<String>,
}

impl From<&TurnRow> for Turn {
    fn from(row: &TurnRow) -> Self {
        Self {
            index: row.turn_index,
            role: row.role.clone(),
            content: row.content.clone(),
            tool_calls: row.tool_calls.clone(),
            tool_call_id: row.tool_call_id.clone(),
            tool_result: row.tool_result.clone(),
        }
    }
}

/// The episode as OpenAI chat messages, ending with its last assistant message (what a
/// fine-tuning example must end with); `None` without an assistant message. A call without an
/// id gets `call_{turn}_{k}`; a tool turn without a `tool_call_id` answers the oldest call not
/// yet answered.
pub(crate) fn openai_messages(turns: &[Turn]) -> Option<Value> {
    let last = turns.iter().rposition(|t| t.role == "assistant")?;
    let mut messages = Vec::with_capacity(last + 1);
    let mut pending: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    for t in &turns[..=last] {
        let message = match t.role.as_str() {
            "assistant" if !t.tool_calls.is_empty() => {
                let calls: Vec<Value> = (t.tool_calls.iter().enumerate())
                    .map(|(k, call)| {
                        let id = call
                            .id
                            .clone()
                            .unwrap_or_else(|| format!("call_{}_{k}", t.index));
                        pending.push_back(id.clone());
                        json!({"id": id, "type": "function",
                               "function": {"name": call.name, "arguments": call.arguments}})
                    })
                    .collect();
                let content = (!t.content.is_empty()).then(|| t.content.clone());
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
            "assistant" => json!({"role": "assistant", "content": t.content}),
            "tool" => {
                let content = t.tool_result.clone().unwrap_or_else(|| t.content.clone());
                let answered = match &t.tool_call_id {
                    Some(id) => pending
                        .iter()
                        .position(|p| p == id)
                        .and_then(|at| pending.remove(at)),
                    None => pending.pop_front(),
                };
                match answered {
                    Some(id) => json!({"role": "tool", "tool_call_id": id, "content": content}),
                    // A tool result no call asked for cannot be a `tool` message.
                    None => json!({"role": "user", "content": content}),
                }
            }
            role => json!({"role": role, "content": t.content}),
        };
        messages.push(message);
    }
    Some(json!({ "messages": messages }))
}

/// An example competing for a place in `few-shot.json`.
#[derive(Debug)]
struct Candidate {
    /// `None`: a success reported without a reward (ranked as 0).
    reward: Option<f64>,
    trajectory_id: String,
    messages: Value,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Lower reward first (a min-heap through `Reverse` keeps the best); ties by id, so the
/// export does not depend on the order episodes were read in.
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.reward
            .unwrap_or(0.0)
            .total_cmp(&other.reward.unwrap_or(0.0))
            .then_with(|| other.trajectory_id.cmp(&self.trajectory_id))
    }
}

/// The best episodes per agent, in bounded memory.
#[derive(Debug, Default)]
pub(crate) struct FewShot {
    best: BTreeMap<String, BinaryHeap<std::cmp::Reverse<Candidate>>>,
}

impl FewShot {
    /// Offers an episode of `agent` with its reward and messages.
    pub fn offer(
        &mut self,
        agent: &str,
        trajectory_id: &str,
        reward: Option<f64>,
        messages: Value,
    ) {
        let heap = self.best.entry(agent.to_owned()).or_default();
        heap.push(std::cmp::Reverse(Candidate {
            reward,
            trajectory_id: trajectory_id.to_owned(),
            messages,
        }));
        if heap.len() > FEW_SHOT_PER_AGENT {
            heap.pop();
        }
    }

    /// `{agent: [{trajectory_id, reward, messages}, …best first]}` and how many examples.
    pub fn finish(self) -> (Value, u64) {
        let mut total = 0;
        let agents = self
            .best
            .into_iter()
            .map(|(agent, heap)| {
                let examples: Vec<Value> = heap
                    .into_sorted_vec()
                    .into_iter()
                    .map(|std::cmp::Reverse(c)| {
                        json!({"trajectory_id": c.trajectory_id, "reward": c.reward, "messages": c.messages["messages"]})
                    })
                    .collect();
                total += examples.len() as u64;
                (agent, Value::Array(examples))
            })
            .collect();
        (Value::Object(agents), total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(index: i32, role: &str, content: &str) -> Turn {
        Turn {
            index,
            role: role.into(),
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_result: None,
        }
    }

    fn call(name: &str, arguments: &str, id: Option<&str>) -> RowToolCall {
        RowToolCall {
            id: id.map(str::to_owned),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn tool_calls_are_answered_by_id_and_the_example_ends_with_the_assistant() {
        let mut call = turn(1, "assistant", "");
        call.tool_calls = vec![self::call("calc", r#"{"expr":"2+3"}"#, None)];
        let mut result = turn(2, "tool", "");
        result.tool_result = Some("5".into());
        let turns = [
            turn(0, "user", "what is 2+3?"),
            call,
            result,
            turn(3, "assistant", "5"),
            turn(4, "user", "thanks"),
        ];
        let m = openai_messages(&turns).unwrap();
        let messages = m["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4, "the trailing user turn is cut");
        assert_eq!(messages[1]["content"], Value::Null);
        assert_eq!(messages[1]["tool_calls"][0]["id"], "call_1_0");
        assert_eq!(
            messages[1]["tool_calls"][0]["function"]["arguments"],
            r#"{"expr":"2+3"}"#
        );
        assert_eq!(
            messages[2],
            json!({"role": "tool", "tool_call_id": "call_1_0", "content": "5"})
        );
        assert_eq!(messages[3], json!({"role": "assistant", "content": "5"}));
        assert!(openai_messages(&[turn(0, "user", "hi")]).is_none());
    }

    #[test]
    fn parallel_calls_keep_their_ids_and_results_answer_them_by_id() {
        let mut calls = turn(1, "assistant", "checking both");
        calls.tool_calls = vec![
            call("read", r#"{"path": "a.rs"}"#, Some("call_a")),
            call("read", r#"{"path": "b.rs"}"#, Some("call_b")),
        ];
        let mut b = turn(2, "tool", "");
        b.tool_call_id = Some("call_b".into());
        b.tool_result = Some("fn b() {}".into());
        let mut a = turn(3, "tool", "");
        a.tool_call_id = Some("call_a".into());
        a.tool_result = Some("fn a() {}".into());
        let turns = [
            turn(0, "user", "read a and b"),
            calls,
            b,
            a,
            turn(4, "assistant", "ok"),
        ];
        let m = openai_messages(&turns).unwrap();
        let messages = m["messages"].as_array().unwrap();
        assert_eq!(messages[1]["content"], "checking both");
        let ids: Vec<&str> = messages[1]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["call_a", "call_b"]);
        assert_eq!(messages[2]["tool_call_id"], "call_b");
        assert_eq!(messages[3]["tool_call_id"], "call_a");
        assert_eq!(messages[3]["content"], "fn a() {}");
    }

    #[test]
    fn few_shot_keeps_the_best_per_agent_best_first() {
        let mut f = FewShot::default();
        for i in 0..12 {
            let m = json!({"messages": [{"role": "assistant", "content": format!("{i}")}]});
            f.offer("a", &format!("t{i:02}"), Some(f64::from(i % 7)), m.clone());
            f.offer("b", &format!("u{i:02}"), Some(1.0), m);
        }
        let (value, total) = f.finish();
        assert_eq!(total, 10);
        let rewards: Vec<f64> = value["a"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["reward"].as_f64().unwrap())
            .collect();
        assert_eq!(rewards, [6.0, 5.0, 4.0, 4.0, 3.0]);
        let ids: Vec<&str> = value["b"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["trajectory_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            ["u00", "u01", "u02", "u03", "u04"],
            "ties go to the smaller id"
        );
    }
}
