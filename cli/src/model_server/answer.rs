//! The built-in model server's answers in OpenAI's shapes, with vLLM's additions the gateway
//! records (`prompt_token_ids`, each choice's `token_ids`): a whole `chat.completion`, or the
//! `chat.completion.chunk`s of a stream.
//!
//! Tool calls are read out of an answer in the Hermes format that Qwen2.5, Qwen3 and Hermes
//! models are trained on (`<tool_call>{"name": …, "arguments": {…}}</tool_call>`, vLLM's
//! `--tool-call-parser hermes`); an answer whose blocks do not parse stays text. A stream holds
//! back text that may be the start of a block, so a client never receives half a tool call as
//! content.

use agentrl_train::generate::{Completion, Finish, Token};
use agentrl_train::tokenizer::Tok;
use serde_json::{Value, json};

use super::request::Ask;

/// What opens a tool call block.
const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// What every answer to one request says about itself.
pub struct Meta {
    /// `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model's name, as asked.
    pub model: String,
}

impl Meta {
    /// A new answer's identity.
    pub fn new(model: String) -> Self {
        Self {
            id: format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
            created: agentrl_store::clock::now_ms() / 1000,
            model,
        }
    }
}

/// An answer's text split into content and tool calls: `None` when it has no block that
/// parses (every block must).
fn tool_calls(text: &str, single: bool) -> Option<(Option<String>, Vec<Value>)> {
    let start = text.find(OPEN)?;
    let mut calls = Vec::new();
    let mut rest = &text[start..];
    while let Some(after) = rest.strip_prefix(OPEN) {
        let (inner, next) = match after.find(CLOSE) {
            Some(end) => (&after[..end], &after[end + CLOSE.len()..]),
            // An answer cut short (a limit) may leave its last block open.
            None => (after, ""),
        };
        let call: Value = serde_json::from_str(inner.trim()).ok()?;
        let name = call.get("name")?.as_str()?;
        let arguments = match call.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(v @ Value::Object(_)) => v.to_string(),
            None => "{}".to_owned(),
            Some(_) => return None,
        };
        calls.push(json!({
            "id": format!("call_{}", uuid::Uuid::new_v4().simple()),
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }));
        rest = next.trim_start();
    }
    if single {
        calls.truncate(1);
    }
    let content = Some(text[..start].to_owned()).filter(|c| !c.trim().is_empty());
    Some((content, calls))
}

fn finish_reason(finish: Finish, called: bool) -> &'static str {
    match finish {
        _ if called => "tool_calls",
        Finish::Stop => "stop",
        Finish::Length | Finish::Abandoned => "length",
    }
}

/// OpenAI's logprob entry of one sampled token.
fn logprob(tok: &Tok, id: u32, logprob: f32) -> Value {
    let token = tok.decode_raw(&[id]).unwrap_or_default();
    json!({"token": token, "logprob": logprob, "bytes": token.as_bytes(), "top_logprobs": []})
}

fn usage(prompt: usize, completions: usize) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completions,
           "total_tokens": prompt + completions})
}

/// The whole answer to `ask`.
pub fn completion(meta: &Meta, ask: &Ask, tok: &Tok, prompt: &[u32], outs: &[Completion]) -> Value {
    let choices: Vec<Value> = outs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let parsed = ask
                .parse_tool_calls
                .then(|| tool_calls(&c.text, ask.single_tool_call))
                .flatten();
            let mut message = json!({"role": "assistant", "content": c.text});
            if let Some((content, calls)) = &parsed {
                message = json!({"role": "assistant", "content": content, "tool_calls": calls});
            }
            let mut choice = json!({
                "index": i,
                "message": message,
                "logprobs": null,
                "finish_reason": finish_reason(c.finish, parsed.is_some()),
            });
            if ask.logprobs {
                let content: Vec<Value> = c
                    .token_ids
                    .iter()
                    .zip(&c.logprobs)
                    .map(|(&id, &lp)| logprob(tok, id, lp))
                    .collect();
                choice["logprobs"] = json!({"content": content});
            }
            if ask.token_ids {
                choice["token_ids"] = json!(c.token_ids);
            }
            choice
        })
        .collect();
    let generated = outs.iter().map(|c| c.token_ids.len()).sum();
    let mut answer = json!({
        "id": meta.id, "object": "chat.completion", "created": meta.created,
        "model": meta.model, "choices": choices, "usage": usage(prompt.len(), generated),
    });
    if ask.token_ids {
        answer["prompt_token_ids"] = json!(prompt);
    }
    answer
}

/// The chunks of a streamed answer, built token by token.
pub struct Stream {
    meta: Meta,
    ask: Ask,
    prompt: Vec<u32>,
    /// Per choice: the text released so far, and how much of it went out as content.
    text: Vec<(String, usize)>,
    generated: usize,
}

impl Stream {
    /// The stream of an answer to `ask` for `prompt`.
    pub fn new(meta: Meta, ask: Ask, prompt: Vec<u32>) -> Self {
        Self {
            text: vec![(String::new(), 0); ask.generation.n],
            meta,
            ask,
            prompt,
            generated: 0,
        }
    }

    fn chunk(&self, choices: Vec<Value>) -> Value {
        json!({
            "id": self.meta.id, "object": "chat.completion.chunk",
            "created": self.meta.created, "model": self.meta.model, "choices": choices,
        })
    }

    /// The first chunk: each choice's role (and the prompt's token ids when asked).
    pub fn opening(&self) -> Value {
        let choices = (0..self.ask.generation.n)
            .map(|i| {
                json!({"index": i, "delta": {"role": "assistant", "content": ""},
                       "logprobs": null, "finish_reason": null})
            })
            .collect();
        let mut chunk = self.chunk(choices);
        if self.ask.token_ids {
            chunk["prompt_token_ids"] = json!(self.prompt);
        }
        chunk
    }

    /// The chunk of one drawn token: the content it released (less what may open a tool
    /// call), its id and logprob, and on a choice's last token the rest of its content, its
    /// tool calls and why it ended.
    pub fn token(&mut self, tok: &Tok, t: &Token) -> Value {
        self.generated += 1;
        let (text, sent) = &mut self.text[t.choice];
        text.push_str(&t.text);
        let mut delta = serde_json::Map::new();
        let mut finish = Value::Null;
        match t.finish {
            None => {
                let ready = if self.ask.parse_tool_calls {
                    text.find(OPEN)
                        .unwrap_or_else(|| text.len() - held_back(text))
                } else {
                    text.len()
                };
                if ready > *sent {
                    delta.insert("content".into(), json!(text[*sent..ready]));
                    *sent = ready;
                }
            }
            Some(end) => {
                let parsed = self
                    .ask
                    .parse_tool_calls
                    .then(|| tool_calls(text, self.ask.single_tool_call))
                    .flatten();
                let content_end = match &parsed {
                    Some(_) => text.find(OPEN).unwrap_or(text.len()),
                    None => text.len(),
                };
                if content_end > *sent {
                    delta.insert("content".into(), json!(text[*sent..content_end]));
                    *sent = content_end;
                }
                if let Some((_, calls)) = &parsed {
                    let indexed: Vec<Value> = calls
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let mut c = c.clone();
                            c["index"] = json!(i);
                            c
                        })
                        .collect();
                    delta.insert("tool_calls".into(), json!(indexed));
                }
                finish = json!(finish_reason(end, parsed.is_some()));
            }
        }
        let mut choice = json!({"index": t.choice, "delta": delta, "logprobs": null,
                                "finish_reason": finish});
        if self.ask.logprobs {
            choice["logprobs"] = json!({"content": [logprob(tok, t.id, t.logprob)]});
        }
        if self.ask.token_ids {
            choice["token_ids"] = json!([t.id]);
        }
        self.chunk(vec![choice])
    }

    /// The last chunk, when usage was asked for.
    pub fn usage(&self) -> Option<Value> {
        self.ask.include_usage.then(|| {
            let mut chunk = self.chunk(Vec::new());
            chunk["usage"] = usage(self.prompt.len(), self.generated);
            chunk
        })
    }
}

/// Bytes at the end of `text` that may be the start of a tool call block.
fn held_back(text: &str) -> usize {
    (1..OPEN.len())
        .rev()
        .find(|&k| text.ends_with(&OPEN[..k]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hermes_blocks_become_tool_calls_and_broken_ones_stay_text() {
        let text = "Let me look.\n<tool_call>\n{\"name\": \"get\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>";
        let (content, calls) = tool_calls(text, false).unwrap();
        assert_eq!(content.as_deref(), Some("Let me look.\n"));
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0]["function"]["name"], "get");
        assert_eq!(calls[0]["function"]["arguments"], "{\"city\":\"Oslo\"}");
        assert_eq!(calls[1]["function"]["arguments"], "{}");
        assert_eq!(tool_calls(text, true).unwrap().1.len(), 1);
        // An open last block (cut by a limit) still parses; a broken one leaves the text.
        let (content, calls) = tool_calls("<tool_call>{\"name\": \"f\"}", false).unwrap();
        assert_eq!((content, calls.len()), (None, 1));
        assert!(tool_calls("<tool_call>{\"name\": ", false).is_none());
        assert!(tool_calls("no calls", false).is_none());
    }

    #[test]
    fn a_stream_never_sends_part_of_a_block_as_content() {
        let ask = super::super::request::parse(
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
                   "tools": [{"type": "function", "function": {"name": "f"}}],
                   "logprobs": true, "return_token_ids": true,
                   "stream_options": {"include_usage": true}})
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        let tok = Tok::char_level("abc", &["<eos>"]).unwrap();
        let mut stream = Stream::new(Meta::new("m".into()), ask, vec![1, 2]);
        assert_eq!(stream.opening()["prompt_token_ids"], json!([1, 2]));
        let pieces = [
            "Hi <",
            "tool",
            "_call>{\"name\": \"f\", ",
            "\"arguments\": {\"a\": 1}}</tool_call>",
        ];
        let mut content = String::new();
        let mut calls = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            let last = i == pieces.len() - 1;
            let chunk = stream.token(
                &tok,
                &Token {
                    choice: 0,
                    id: 3,
                    logprob: -0.5,
                    text: (*piece).to_owned(),
                    finish: last.then_some(Finish::Stop),
                },
            );
            let choice = &chunk["choices"][0];
            assert_eq!(choice["token_ids"], json!([3]));
            assert_eq!(choice["logprobs"]["content"][0]["logprob"], -0.5);
            content.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
            if let Some(c) = choice["delta"]["tool_calls"].as_array() {
                calls.extend(c.clone());
            }
            if last {
                assert_eq!(choice["finish_reason"], "tool_calls");
            } else {
                assert!(choice["finish_reason"].is_null());
            }
        }
        assert_eq!(content, "Hi ");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0]["index"], 0);
        assert_eq!(calls[0]["function"]["arguments"], "{\"a\":1}");
        assert_eq!(stream.usage().unwrap()["usage"]["completion_tokens"], 4);
    }
}
