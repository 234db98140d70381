//! A chat completions request as the built-in model server takes it: every field OpenAI (and
//! vLLM, for `top_k` and `return_token_ids`) defines is either honoured or refused by name —
//! a field that would change the answer is never ignored.

use agentrl_gateway::OpenAiError;
use agentrl_train::generate::Generation;
use agentrl_train::sampler::Draw;
use serde_json::{Map, Number, Value};

/// Completions one request may ask for (each is a row of the batch).
const MAX_N: u64 = 16;
/// Stop strings one request may name.
const MAX_STOP: usize = 16;

/// What a request asks the server to do.
#[derive(Debug)]
pub struct Ask {
    /// The model's name.
    pub model: String,
    /// The conversation, as chat templates take it.
    pub messages: Vec<Value>,
    /// OpenAI's function specs, for the template; `None` when absent or `tool_choice` is
    /// `none`.
    pub tools: Option<Value>,
    /// Tool calls are read out of the answers (`<tool_call>` blocks).
    pub parse_tool_calls: bool,
    /// At most one tool call per answer (`parallel_tool_calls: false`).
    pub single_tool_call: bool,
    /// `n`, the limit (none asked: what the model's context leaves), the draw, the stop
    /// strings.
    pub generation: Generation,
    /// The draw's seed.
    pub seed: Option<u64>,
    /// Server-sent events.
    pub stream: bool,
    /// A last chunk with the usage.
    pub include_usage: bool,
    /// The sampled tokens' logprobs in the answer.
    pub logprobs: bool,
    /// The prompt's and each answer's token ids in the answer (vLLM's `return_token_ids`).
    pub token_ids: bool,
}

/// Fields read elsewhere or that change nothing in the answer.
const INERT: [&str; 3] = ["user", "metadata", "service_tier"];

/// Reads a request body.
///
/// # Errors
/// A 400 naming the first field that is malformed or asks for what this server does not do.
pub fn parse(body: &[u8]) -> Result<Ask, OpenAiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| OpenAiError::invalid("body", format!("not JSON: {e}")))?;
    let Value::Object(mut fields) = value else {
        return Err(OpenAiError::invalid("body", "not a JSON object"));
    };
    let model = match fields.remove("model") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => return Err(OpenAiError::invalid("model", "required: a model name")),
    };
    let messages = messages(fields.remove("messages"))?;
    let stream = flag(&mut fields, "stream")?;
    let logprobs = flag(&mut fields, "logprobs")?;
    let token_ids = flag(&mut fields, "return_token_ids")?;
    let include_usage = match fields.remove("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(mut o)) => {
            let usage = flag(&mut o, "include_usage")?;
            // vLLM's per-chunk usage changes the chunks; nothing else is defined.
            if let Some(k) = o.keys().next() {
                return Err(unsupported(&format!("stream_options.{k}")));
            }
            usage
        }
        Some(_) => return Err(OpenAiError::invalid("stream_options", "must be an object")),
    };
    let n = bounded(
        &mut fields,
        "n",
        1..=MAX_N,
        Number::as_u64,
        &format!("an integer from 1 to {MAX_N}"),
    )?
    .unwrap_or(1);
    let temperature = bounded(
        &mut fields,
        "temperature",
        0.0..=2.0,
        Number::as_f64,
        "a number from 0 to 2",
    )?
    .unwrap_or(1.0);
    let top_p = bounded(
        &mut fields,
        "top_p",
        f64::MIN_POSITIVE..=1.0,
        Number::as_f64,
        "a number above 0, at most 1",
    )?
    .unwrap_or(1.0);
    let top_k = match fields.remove("top_k") {
        None | Some(Value::Null) => 0,
        // vLLM's "off".
        Some(Value::Number(k)) if k.as_i64() == Some(-1) => 0,
        Some(Value::Number(k)) if k.as_u64().is_some() => k.as_u64().unwrap_or(0),
        Some(_) => return Err(OpenAiError::invalid("top_k", "an integer ≥ 0, or -1 (off)")),
    };
    let limit = |fields: &mut Map<String, Value>, field| {
        bounded(
            fields,
            field,
            1..=u64::MAX,
            Number::as_u64,
            "an integer ≥ 1",
        )
    };
    let max_completion = limit(&mut fields, "max_completion_tokens")?;
    let max_tokens = limit(&mut fields, "max_tokens")?;
    let limit = max_completion.or(max_tokens);
    let seed = match fields.remove("seed") {
        None | Some(Value::Null) => None,
        Some(Value::Number(s)) => Some(
            s.as_u64()
                .or_else(|| s.as_i64().map(i64::cast_unsigned))
                .ok_or_else(|| OpenAiError::invalid("seed", "an integer"))?,
        ),
        Some(_) => return Err(OpenAiError::invalid("seed", "an integer")),
    };
    let stop = stops(fields.remove("stop"))?;
    let (tools, parse_tool_calls) = tools(&mut fields)?;
    let single_tool_call = match fields.remove("parallel_tool_calls") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(parallel)) => !parallel,
        Some(_) => return Err(OpenAiError::invalid("parallel_tool_calls", "a boolean")),
    };
    at_default(&mut fields)?;
    if let Some(field) = fields.keys().find(|k| !INERT.contains(&k.as_str())) {
        return Err(unsupported(field));
    }
    Ok(Ask {
        model,
        messages,
        tools,
        parse_tool_calls,
        single_tool_call,
        generation: Generation {
            n: usize::try_from(n).unwrap_or(1),
            max_tokens: limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX)),
            draw: Draw {
                temperature,
                top_p,
                top_k: usize::try_from(top_k).unwrap_or(usize::MAX),
            },
            stop,
        },
        seed,
        stream,
        include_usage,
        logprobs,
        token_ids,
    })
}

fn unsupported(field: &str) -> OpenAiError {
    OpenAiError::invalid(field, "not supported by the built-in model server")
}

/// Whether a field's value is the one that changes nothing.
type Accepts = fn(&Value) -> bool;

/// Fields accepted only at the value that changes nothing: anything else is refused.
fn at_default(fields: &mut Map<String, Value>) -> Result<(), OpenAiError> {
    let zero = |v: &Value| v.as_f64() == Some(0.0);
    let checks: [(&str, Accepts, &str); 7] = [
        ("presence_penalty", zero, "0"),
        ("frequency_penalty", zero, "0"),
        (
            "top_logprobs",
            zero,
            "0 (the sampled token's logprob is returned)",
        ),
        (
            "logit_bias",
            |v| v.as_object().is_some_and(Map::is_empty),
            "{}",
        ),
        (
            "response_format",
            |v| v.get("type").and_then(Value::as_str) == Some("text"),
            r#"{"type": "text"}"#,
        ),
        ("store", |v| v == &Value::Bool(false), "false"),
        (
            "reasoning_effort",
            |_| false,
            "absent (the served models take no reasoning setting)",
        ),
    ];
    for (field, ok, default) in checks {
        match fields.remove(field) {
            None | Some(Value::Null) => {}
            Some(v) if ok(&v) => {}
            Some(_) => {
                return Err(OpenAiError::invalid(
                    field,
                    format!("the built-in model server takes only {default}"),
                ));
            }
        }
    }
    Ok(())
}

fn flag(fields: &mut Map<String, Value>, field: &str) -> Result<bool, OpenAiError> {
    match fields.remove(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(_) => Err(OpenAiError::invalid(field, "a boolean")),
    }
}

/// A number field within `range`, read by `read` (`as_u64`, `as_f64`); `expected` says what
/// it must be.
fn bounded<T: PartialOrd>(
    fields: &mut Map<String, Value>,
    field: &str,
    range: std::ops::RangeInclusive<T>,
    read: fn(&serde_json::Number) -> Option<T>,
    expected: &str,
) -> Result<Option<T>, OpenAiError> {
    match fields.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(x)) => match read(&x) {
            Some(x) if range.contains(&x) => Ok(Some(x)),
            _ => Err(OpenAiError::invalid(field, expected)),
        },
        Some(_) => Err(OpenAiError::invalid(field, expected)),
    }
}

fn stops(stop: Option<Value>) -> Result<Vec<String>, OpenAiError> {
    let list = match stop {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|s| match s {
                Value::String(s) => Ok(s),
                _ => Err(OpenAiError::invalid(
                    "stop",
                    "a string or a list of strings",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(OpenAiError::invalid(
                "stop",
                "a string or a list of strings",
            ));
        }
    };
    if list.len() > MAX_STOP || list.iter().any(String::is_empty) {
        return Err(OpenAiError::invalid(
            "stop",
            format!("at most {MAX_STOP} strings, none empty"),
        ));
    }
    Ok(list)
}

/// `tools` and `tool_choice`: the specs for the template, and whether answers are read for
/// tool calls. Forcing a call (`required`, a named function) needs constrained decoding,
/// which this server does not do.
fn tools(fields: &mut Map<String, Value>) -> Result<(Option<Value>, bool), OpenAiError> {
    let tools = match fields.remove("tools") {
        None | Some(Value::Null) => None,
        Some(Value::Array(list)) => {
            for (i, tool) in list.iter().enumerate() {
                let named = tool.get("type").and_then(Value::as_str) == Some("function")
                    && tool
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| !n.is_empty());
                if !named {
                    return Err(OpenAiError::invalid(
                        format!("tools[{i}]"),
                        "a function tool: {\"type\": \"function\", \"function\": {\"name\": …}}",
                    ));
                }
            }
            (!list.is_empty()).then_some(Value::Array(list))
        }
        Some(_) => return Err(OpenAiError::invalid("tools", "a list of tools")),
    };
    match fields.remove("tool_choice") {
        None | Some(Value::Null) => Ok((tools.clone(), tools.is_some())),
        Some(Value::String(c)) if c == "auto" => Ok((tools.clone(), tools.is_some())),
        Some(Value::String(c)) if c == "none" => Ok((None, false)),
        Some(_) => Err(OpenAiError::invalid(
            "tool_choice",
            "the built-in model server takes \"auto\" or \"none\" (forcing a call needs \
             constrained decoding)",
        )),
    }
}

/// The messages as chat templates take them: text content (a list of text parts joined), and
/// an assistant's tool call arguments that parse as a JSON object given as that object (what
/// vLLM and the trainer render).
fn messages(messages: Option<Value>) -> Result<Vec<Value>, OpenAiError> {
    let Some(Value::Array(list)) = messages else {
        return Err(OpenAiError::invalid(
            "messages",
            "required: a list of messages",
        ));
    };
    if list.is_empty() {
        return Err(OpenAiError::invalid("messages", "at least one message"));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, m)| message(i, m))
        .collect()
}

fn message(i: usize, m: Value) -> Result<Value, OpenAiError> {
    let Value::Object(mut m) = m else {
        return Err(OpenAiError::invalid(format!("messages[{i}]"), "an object"));
    };
    if !m.get("role").is_some_and(Value::is_string) {
        return Err(OpenAiError::invalid(
            format!("messages[{i}].role"),
            "required: a string",
        ));
    }
    if let Some(Value::Array(parts)) = m.get("content") {
        let mut text = String::new();
        for (j, part) in parts.iter().enumerate() {
            match (part.get("type").and_then(Value::as_str), part.get("text")) {
                (Some("text"), Some(Value::String(t))) => text.push_str(t),
                _ => {
                    return Err(OpenAiError::invalid(
                        format!("messages[{i}].content[{j}]"),
                        "the built-in model server takes text parts only",
                    ));
                }
            }
        }
        m.insert("content".into(), Value::String(text));
    }
    if let Some(Value::Array(calls)) = m.get_mut("tool_calls") {
        for call in calls {
            if let Some(arguments) = call.pointer_mut("/function/arguments")
                && let Some(object) = arguments
                    .as_str()
                    .and_then(|a| serde_json::from_str::<Value>(a).ok())
                    .filter(Value::is_object)
            {
                *arguments = object;
            }
        }
    }
    Ok(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(body: Value) -> String {
        let e = parse(body.to_string().as_bytes()).unwrap_err();
        let answer = axum::response::IntoResponse::into_response(e);
        assert_eq!(answer.status(), 400);
        let body = futures::executor::block_on(axum::body::to_bytes(answer.into_body(), 1 << 16));
        let v: Value = serde_json::from_slice(&body.unwrap()).unwrap();
        v["field"].as_str().unwrap().to_owned()
    }

    #[test]
    fn every_field_is_honoured_or_refused_by_name() {
        let base = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let with = |k: &str, v: Value| {
            let mut b = base.clone();
            b[k] = v;
            b
        };
        for (k, v) in [
            ("top_logprobs", json!(2)),
            ("presence_penalty", json!(0.5)),
            ("logit_bias", json!({"1": 5})),
            ("response_format", json!({"type": "json_object"})),
            ("reasoning_effort", json!("low")),
            ("tool_choice", json!("required")),
            ("n", json!(0)),
            ("temperature", json!(3)),
            ("echo", json!(true)),
            ("stop", json!([""])),
        ] {
            assert_eq!(field_of(with(k, v)), k);
        }
        assert_eq!(field_of(json!({"messages": []})), "model");
        assert_eq!(
            field_of(
                json!({"model": "m", "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "x"}}]}]})
            ),
            "messages[0].content[0]"
        );
        let ask = parse(with("user", json!("u-1")).to_string().as_bytes()).unwrap();
        assert!(ask.generation.max_tokens == usize::MAX && ask.generation.n == 1 && !ask.stream);
    }

    #[test]
    fn openai_messages_become_template_messages() {
        let ask = parse(
            json!({"model": "m", "n": 3, "max_completion_tokens": 7, "stop": "\n",
                   "tools": [{"type": "function", "function": {"name": "f"}}],
                   "parallel_tool_calls": false, "top_k": -1,
                   "messages": [
                       {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                       {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                        "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
                       {"role": "tool", "tool_call_id": "c", "content": "2"}]})
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(ask.messages[0]["content"], "ab");
        assert_eq!(
            ask.messages[1]["tool_calls"][0]["function"]["arguments"],
            json!({"x": 1})
        );
        assert!(ask.parse_tool_calls && ask.single_tool_call);
        assert_eq!(
            (
                ask.generation.n,
                ask.generation.max_tokens,
                ask.generation.draw.top_k
            ),
            (3, 7, 0)
        );
        assert_eq!(ask.generation.stop, ["\n"]);
    }
}
