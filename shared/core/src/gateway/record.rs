//! What one proxied chat-completions call leaves behind: the request's messages and tools as
//! the agent sent them, and each choice's reply with the upstream's token ids and logprobs
//! when it returned them (vLLM: `prompt_token_ids`, `choices[].token_ids`,
//! `choices[].logprobs.content[].logprob`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Time-ordered id (UUIDv7): a session's calls sort by it.
    pub call_id: String,
    /// When the call was answered (epoch ms).
    pub at_ms: u64,
    /// The model name the upstream was asked for.
    pub served_model: String,
    /// The agent's version that served it (`v3`); `None` before any promotion.
    pub version: Option<String>,
    /// The request's `messages`, unchanged.
    pub messages: Vec<Value>,
    /// The request's `tools`, unchanged.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// The prompt as the upstream tokenised it.
    #[serde(default)]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// Every choice (`n > 1`: a group).
    pub choices: Vec<ChoiceRecord>,
    /// The upstream's `usage`.
    #[serde(default)]
    pub usage: Option<Value>,
    /// The client went away before the reply was complete.
    #[serde(default)]
    pub truncated: bool,
}

/// One choice of a reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChoiceRecord {
    /// The choice's `index`.
    pub index: u32,
    /// Its text (`null` content: empty).
    pub content: String,
    /// Its tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<RecordedToolCall>,
    /// The sampled token ids.
    #[serde(default)]
    pub token_ids: Option<Vec<u32>>,
    /// The sampled tokens' log-probabilities.
    #[serde(default)]
    pub logprobs: Option<Vec<f32>>,
    /// `stop`, `length`, `tool_calls`…
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// A tool call as the model produced it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedToolCall {
    /// The call's id (what the tool message answers).
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The arguments, the exact string the model produced.
    pub arguments: String,
}

fn ids(v: &Value) -> Option<Vec<u32>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_u64().and_then(|x| u32::try_from(x).ok()))
        .collect()
}

fn logprobs(v: &Value) -> Option<Vec<f32>> {
    v.get("content")?
        .as_array()?
        .iter()
        .map(|t| t.get("logprob")?.as_f64().map(|x| x as f32))
        .collect()
}

impl CallRecord {
    /// A call about to be sent, with the request's `messages` and `tools`.
    #[must_use]
    pub fn new(
        call_id: String,
        served_model: String,
        version: Option<String>,
        messages: Vec<Value>,
        tools: Vec<Value>,
    ) -> Self {
        Self {
            call_id,
            at_ms: 0,
            served_model,
            version,
            messages,
            tools,
            prompt_token_ids: None,
            choices: Vec::new(),
            usage: None,
            truncated: false,
        }
    }

    /// Fills the reply from a whole (non-streamed) response body.
    pub fn complete(&mut self, response: &Value, at_ms: u64) {
        self.at_ms = at_ms;
        self.prompt_token_ids = response.get("prompt_token_ids").and_then(ids);
        self.usage = response.get("usage").filter(|u| !u.is_null()).cloned();
        let choices = response.get("choices").and_then(Value::as_array);
        self.choices = choices
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| {
                let message = c.get("message").unwrap_or(&Value::Null);
                ChoiceRecord {
                    index: c
                        .get("index")
                        .and_then(Value::as_u64)
                        .map_or(i as u32, |x| x as u32),
                    content: message
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    tool_calls: message
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|t| RecordedToolCall {
                            id: text(t, &["id"]),
                            name: text(t, &["function", "name"]),
                            arguments: text(t, &["function", "arguments"]),
                        })
                        .collect(),
                    token_ids: c.get("token_ids").and_then(ids),
                    logprobs: c.get("logprobs").and_then(logprobs),
                    finish_reason: c
                        .get("finish_reason")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                }
            })
            .collect();
    }
}

fn text(v: &Value, path: &[&str]) -> String {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A streamed reply put together chunk by chunk (`data:` payloads of the SSE stream).
#[derive(Debug, Clone)]
pub struct StreamRecorder {
    record: CallRecord,
    /// Whether the stream ended (`finish_reason` seen on every choice, or `[DONE]`).
    done: bool,
}

impl StreamRecorder {
    /// Starts recording `record`'s reply.
    #[must_use]
    pub fn new(record: CallRecord) -> Self {
        Self {
            record,
            done: false,
        }
    }

    /// Takes one chunk (a `data:` payload).
    pub fn feed(&mut self, chunk: &Value) {
        if let Some(p) = chunk.get("prompt_token_ids").and_then(ids) {
            self.record.prompt_token_ids = Some(p);
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.record.usage = Some(u.clone());
        }
        for c in chunk
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(0) as u32;
            let choice = self.choice(index);
            let delta = c.get("delta").unwrap_or(&Value::Null);
            if let Some(s) = delta.get("content").and_then(Value::as_str) {
                choice.content.push_str(s);
            }
            for t in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let at = t.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                if choice.tool_calls.len() <= at {
                    choice
                        .tool_calls
                        .resize(at + 1, RecordedToolCall::default());
                }
                let call = &mut choice.tool_calls[at];
                call.id.push_str(&text(t, &["id"]));
                call.name.push_str(&text(t, &["function", "name"]));
                call.arguments
                    .push_str(&text(t, &["function", "arguments"]));
            }
            if let Some(more) = c.get("token_ids").and_then(ids) {
                choice.token_ids.get_or_insert_with(Vec::new).extend(more);
            }
            if let Some(more) = c.get("logprobs").and_then(logprobs) {
                choice.logprobs.get_or_insert_with(Vec::new).extend(more);
            }
            if let Some(reason) = c.get("finish_reason").and_then(Value::as_str) {
                choice.finish_reason = Some(reason.to_owned());
            }
        }
    }

    fn choice(&mut self, index: u32) -> &mut ChoiceRecord {
        let choices = &mut self.record.choices;
        let at = match choices.iter().position(|c| c.index == index) {
            Some(at) => at,
            None => {
                choices.push(ChoiceRecord {
                    index,
                    ..ChoiceRecord::default()
                });
                choices.sort_by_key(|c| c.index);
                choices
                    .iter()
                    .position(|c| c.index == index)
                    .unwrap_or_default()
            }
        };
        &mut choices[at]
    }

    /// The stream's `data: [DONE]`.
    pub fn done(&mut self) {
        self.done = true;
    }

    /// The record: `truncated` unless the stream ended.
    #[must_use]
    pub fn finish(mut self, at_ms: u64) -> CallRecord {
        self.record.at_ms = at_ms;
        self.record.truncated = !self.done;
        self.record
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call() -> CallRecord {
        CallRecord::new(
            "c1".into(),
            "agent-v2".into(),
            Some("v2".into()),
            vec![json!({"role": "user", "content": "hi"})],
            vec![json!({"type": "function", "function": {"name": "f"}})],
        )
    }

    #[test]
    fn a_whole_reply_keeps_token_ids_logprobs_and_every_tool_call() {
        let mut r = call();
        r.complete(
            &json!({
                "prompt_token_ids": [1, 2, 3],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2},
                "choices": [{"index": 0, "finish_reason": "tool_calls", "token_ids": [7, 8],
                    "logprobs": {"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -0.25}]},
                    "message": {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
                        {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}}]
            }),
            5,
        );
        assert_eq!(r.prompt_token_ids, Some(vec![1, 2, 3]));
        let c = &r.choices[0];
        assert_eq!(c.token_ids, Some(vec![7, 8]));
        assert_eq!(c.logprobs, Some(vec![-0.5, -0.25]));
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(c.tool_calls[0].arguments, "{\"x\": 1}");
        assert_eq!(c.tool_calls[1].id, "call_b");
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.tools.len(), 1);
    }

    #[test]
    fn a_stream_assembles_the_same_reply_and_a_cut_stream_is_truncated() {
        let chunks = [
            json!({"prompt_token_ids": [1, 2], "choices": [{"index": 0, "delta": {"role": "assistant", "content": "He"}, "token_ids": [5], "logprobs": {"content": [{"logprob": -0.1}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "llo", "tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "f", "arguments": "{\"a\""}}]}, "token_ids": [6], "logprobs": {"content": [{"logprob": -0.2}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}, "finish_reason": "tool_calls"}]}),
        ];
        let mut s = StreamRecorder::new(call());
        for c in &chunks {
            s.feed(c);
        }
        let cut = s.clone().finish(9);
        assert!(cut.truncated);
        s.done();
        let r = s.finish(9);
        assert!(!r.truncated);
        let c = &r.choices[0];
        assert_eq!(c.content, "Hello");
        assert_eq!(c.token_ids, Some(vec![5, 6]));
        assert_eq!(c.logprobs, Some(vec![-0.1, -0.2]));
        assert_eq!(c.tool_calls[0].arguments, "{\"a\": 1}");
        assert_eq!(c.tool_calls[0].name, "f");
        assert_eq!(c.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.prompt_token_ids, Some(vec![1, 2]));
    }
}
