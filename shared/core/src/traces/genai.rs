//! What a span is to the trajectory builder: a model call with its messages, a tool run, or
//! nothing (an agent invocation, an embedding, any span that is not GenAI). Messages of every
//! supported form come out as OpenAI chat messages (`role`, `content`, `tool_calls` with
//! string `arguments`, `tool_call_id`), the form the gateway records and turns read.

use serde_json::{Map, Value, json};

use super::indexed::{entries, nested, text};
use super::span::Span;

/// What a span holds.
#[derive(Debug, Clone, PartialEq)]
pub enum GenAi {
    /// A model call: `chat` (or `text_completion`, `generate_content`), an OpenLLMetry or
    /// OpenInference LLM span.
    Chat(Chat),
    /// A tool run: `execute_tool`, an OpenInference or OpenLLMetry tool span.
    Tool(ToolRun),
    /// No turn: an agent invocation, an embedding, a span that is not GenAI.
    Other,
}

/// A model call.
#[derive(Debug, Clone, PartialEq)]
pub struct Chat {
    /// The messages sent, as OpenAI chat messages (system instructions first).
    pub input: Vec<Value>,
    /// The reply (the first choice), when recorded.
    pub output: Option<Value>,
    /// Prompt tokens.
    pub input_tokens: Option<u64>,
    /// Completion tokens.
    pub output_tokens: Option<u64>,
    /// The model that answered (`gen_ai.response.model`, else the one asked for).
    pub model: Option<String>,
}

/// A tool run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRun {
    /// The tool.
    pub name: String,
    /// The call it answers.
    pub call_id: Option<String>,
    /// What it returned, as text.
    pub result: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// Reads `span`.
///
/// # Errors
/// A GenAI model call whose messages do not parse, or that carries none (its
/// instrumentation does not capture content): the reason, for the export's
/// `partial_success`.
pub fn read(span: &Span) -> Result<GenAi, String> {
    let kind = span.str("gen_ai.operation.name").or_else(|| {
        span.str("openinference.span.kind")
            .or_else(|| span.str("traceloop.span.kind"))
            .or_else(|| span.str("llm.request.type"))
    });
    match kind.map(str::to_ascii_lowercase).as_deref() {
        Some("chat" | "text_completion" | "generate_content" | "llm" | "completion") => {
            chat(span).map(GenAi::Chat)
        }
        Some("execute_tool" | "tool") => Ok(GenAi::Tool(tool(span))),
        _ => Ok(GenAi::Other),
    }
}

fn chat(span: &Span) -> Result<Chat, String> {
    let (mut input, output) = if span.attributes.contains_key("gen_ai.input.messages")
        || span.attributes.contains_key("gen_ai.output.messages")
    {
        let input = match span.attributes.get("gen_ai.input.messages") {
            Some(v) => semconv_messages("gen_ai.input.messages", v)?,
            None => Vec::new(),
        };
        let output = match span.attributes.get("gen_ai.output.messages") {
            Some(v) => semconv_messages("gen_ai.output.messages", v)?
                .into_iter()
                .next(),
            None => None,
        };
        (input, output)
    } else if span
        .attributes
        .keys()
        .any(|k| k.starts_with("gen_ai.prompt."))
    {
        (
            indexed_messages(span, "gen_ai.prompt", &OPENLLMETRY),
            indexed_messages(span, "gen_ai.completion", &OPENLLMETRY)
                .into_iter()
                .next(),
        )
    } else if span
        .attributes
        .keys()
        .any(|k| k.starts_with("llm.input_messages."))
    {
        (
            indexed_messages(span, "llm.input_messages", &OPENINFERENCE),
            indexed_messages(span, "llm.output_messages", &OPENINFERENCE)
                .into_iter()
                .next(),
        )
    } else {
        return Err(
            "a model call without its messages (gen_ai.input.messages and \
                    gen_ai.output.messages; is the instrumentation capturing content?)"
                .to_owned(),
        );
    };
    if let Some(system) = span.attributes.get("gen_ai.system_instructions")
        && !input.iter().any(|m| m["role"] == "system")
    {
        let parts = parsed("gen_ai.system_instructions", system)?;
        let parts = parts.as_array().map_or(&[][..], Vec::as_slice);
        input.insert(0, json!({"role": "system", "content": parts_text(parts)}));
    }
    let tokens = |keys: &[&str]| keys.iter().find_map(|k| span.int(k));
    Ok(Chat {
        input,
        output,
        input_tokens: tokens(&[
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
        ]),
        output_tokens: tokens(&[
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        ]),
        model: [
            "gen_ai.response.model",
            "gen_ai.request.model",
            "llm.model_name",
        ]
        .iter()
        .find_map(|k| span.str(k))
        .map(str::to_owned),
    })
}

/// An attribute that holds JSON: a string of it, or the structure itself (an array or
/// key-value list attribute).
fn parsed(key: &str, v: &Value) -> Result<Value, String> {
    match v {
        Value::String(s) => serde_json::from_str(s).map_err(|e| format!("{key} is not JSON: {e}")),
        other => Ok(other.clone()),
    }
}

/// Messages of the semantic conventions (`[{role, parts: [...]}]`) as chat messages; a
/// message with several tool results is one tool message per result.
fn semconv_messages(key: &str, v: &Value) -> Result<Vec<Value>, String> {
    let parsed = parsed(key, v)?;
    let Some(list) = parsed.as_array() else {
        return Err(format!("{key} is not a JSON array of messages"));
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let Some(role) = m.get("role").and_then(Value::as_str) else {
            return Err(format!("{key}[{i}] has no role"));
        };
        let parts = match m.get("parts") {
            Some(Value::Array(parts)) => parts.as_slice(),
            None => &[],
            Some(_) => return Err(format!("{key}[{i}].parts is not an array")),
        };
        let responses: Vec<&Value> = parts
            .iter()
            .filter(|p| p["type"] == "tool_call_response")
            .collect();
        if !responses.is_empty() {
            out.extend(responses.into_iter().map(|p| {
                json!({
                    "role": "tool",
                    "tool_call_id": p.get("id").cloned().unwrap_or(Value::Null),
                    "content": as_text(p.get("response")),
                })
            }));
            continue;
        }
        let calls: Vec<Value> = parts
            .iter()
            .filter(|p| p["type"] == "tool_call")
            .map(|p| {
                tool_call(
                    p.get("id").and_then(Value::as_str),
                    p.get("name").and_then(Value::as_str).unwrap_or_default(),
                    &as_text(p.get("arguments")),
                )
            })
            .collect();
        let mut message = Map::new();
        message.insert("role".into(), Value::String(role.to_owned()));
        message.insert("content".into(), Value::String(parts_text(parts)));
        if !calls.is_empty() {
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        out.push(Value::Object(message));
    }
    Ok(out)
}

/// The text of message parts: text parts joined, other content parts named in brackets
/// (tool calls travel as `tool_calls`).
fn parts_text(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|p| match p.get("type").and_then(Value::as_str) {
            Some("text") => Some(as_text(p.get("content"))),
            Some("tool_call" | "tool_call_response") => None,
            Some(other) => Some(format!("[{other}]")),
            None => None,
        })
        .collect()
}

/// A value as text: a string as itself, anything else as its compact JSON.
fn as_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn tool_call(id: Option<&str>, name: &str, arguments: &str) -> Value {
    json!({
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    })
}

/// The field names of an indexed message form.
struct Indexed {
    role: &'static str,
    content: &'static str,
    tool_call_id: &'static str,
    tool_calls: &'static str,
    call_id: &'static str,
    call_name: &'static str,
    call_arguments: &'static str,
}

/// OpenLLMetry: `gen_ai.prompt.N.role`, `….tool_calls.M.name`.
const OPENLLMETRY: Indexed = Indexed {
    role: "role",
    content: "content",
    tool_call_id: "tool_call_id",
    tool_calls: "tool_calls",
    call_id: "id",
    call_name: "name",
    call_arguments: "arguments",
};

/// OpenInference: `llm.input_messages.N.message.role`,
/// `….message.tool_calls.M.tool_call.function.name`.
const OPENINFERENCE: Indexed = Indexed {
    role: "message.role",
    content: "message.content",
    tool_call_id: "message.tool_call_id",
    tool_calls: "message.tool_calls",
    call_id: "tool_call.id",
    call_name: "tool_call.function.name",
    call_arguments: "tool_call.function.arguments",
};

fn indexed_messages(span: &Span, prefix: &str, form: &Indexed) -> Vec<Value> {
    entries(&span.attributes, prefix)
        .into_iter()
        .map(|entry| {
            let calls: Vec<Value> = nested(&entry, form.tool_calls)
                .iter()
                .map(|c| {
                    tool_call(
                        text(c, form.call_id),
                        text(c, form.call_name).unwrap_or_default(),
                        &as_text(c.get(form.call_arguments).copied()),
                    )
                })
                .collect();
            let mut message = Map::new();
            let role = text(&entry, form.role).unwrap_or("user");
            message.insert("role".into(), Value::String(role.to_owned()));
            message.insert(
                "content".into(),
                Value::String(as_text(entry.get(form.content).copied())),
            );
            if let Some(id) = text(&entry, form.tool_call_id) {
                message.insert("tool_call_id".into(), Value::String(id.to_owned()));
            }
            if !calls.is_empty() {
                message.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(message)
        })
        .collect()
}

fn tool(span: &Span) -> ToolRun {
    let name = span
        .str("gen_ai.tool.name")
        .or_else(|| span.str("tool.name"))
        .or_else(|| span.str("traceloop.entity.name"))
        .or_else(|| span.name.strip_prefix("execute_tool "))
        .unwrap_or(&span.name);
    let result = [
        "gen_ai.tool.call.result",
        "output.value",
        "traceloop.entity.output",
    ]
    .iter()
    .find_map(|k| span.attributes.get(*k))
    .map(|v| as_text(Some(v)));
    ToolRun {
        name: name.to_owned(),
        call_id: span
            .str("gen_ai.tool.call.id")
            .or_else(|| span.str("tool_call.id"))
            .map(str::to_owned),
        result,
        error: span
            .error
            .clone()
            .or_else(|| span.str("error.type").map(str::to_owned)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn span(attributes: Value) -> Span {
        let attributes: BTreeMap<String, Value> =
            serde_json::from_value(attributes).expect("an object");
        Span {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: "b7ad6b7169203331".into(),
            parent_span_id: None,
            name: "chat m".into(),
            start_ns: 1,
            end_ns: 2,
            attributes,
            error: None,
        }
    }

    #[test]
    fn semantic_convention_messages_become_chat_messages() {
        let input = json!([
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1",
                "name": "get_weather", "arguments": {"city": "Paris"}}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                "response": "rainy, 57°F"}]},
        ]);
        let output = json!([{"role": "assistant", "finish_reason": "stop",
            "parts": [{"type": "text", "content": "It is rainy."}]}]);
        let s = span(json!({
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": input.to_string(),
            "gen_ai.output.messages": output.to_string(),
            "gen_ai.system_instructions": r#"[{"type": "text", "content": "Be brief."}]"#,
            "gen_ai.usage.input_tokens": 97,
            "gen_ai.usage.output_tokens": 52,
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
        }));
        let GenAi::Chat(c) = read(&s).unwrap() else {
            panic!("a chat span")
        };
        assert_eq!(
            c.input,
            vec![
                json!({"role": "system", "content": "Be brief."}),
                json!({"role": "user", "content": "Weather in Paris?"}),
                json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_1",
                    "type": "function", "function": {"name": "get_weather",
                    "arguments": "{\"city\":\"Paris\"}"}}]}),
                json!({"role": "tool", "tool_call_id": "call_1", "content": "rainy, 57°F"}),
            ]
        );
        assert_eq!(
            c.output,
            Some(json!({"role": "assistant", "content": "It is rainy."}))
        );
        assert_eq!((c.input_tokens, c.output_tokens), (Some(97), Some(52)));
        assert_eq!(c.model.as_deref(), Some("gpt-4o-2024-08-06"));
    }

    #[test]
    fn openllmetry_and_openinference_forms_are_read() {
        let s = span(json!({
            "llm.request.type": "chat",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "2+2?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "",
            "gen_ai.completion.0.tool_calls.0.id": "c1",
            "gen_ai.completion.0.tool_calls.0.name": "calc",
            "gen_ai.completion.0.tool_calls.0.arguments": "{\"e\": \"2+2\"}",
            "gen_ai.usage.prompt_tokens": 5,
        }));
        let GenAi::Chat(c) = read(&s).unwrap() else {
            panic!("a chat span")
        };
        assert_eq!(c.input, vec![json!({"role": "user", "content": "2+2?"})]);
        assert_eq!(
            c.output.unwrap()["tool_calls"][0]["function"],
            json!({"name": "calc", "arguments": "{\"e\": \"2+2\"}"})
        );
        assert_eq!(c.input_tokens, Some(5));

        let s = span(json!({
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "sys",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "hi",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "hello",
            "llm.token_count.completion": 3,
            "llm.model_name": "m",
        }));
        let GenAi::Chat(c) = read(&s).unwrap() else {
            panic!("a chat span")
        };
        assert_eq!(c.input.len(), 2);
        assert_eq!(c.input[1], json!({"role": "user", "content": "hi"}));
        assert_eq!(c.output.unwrap()["content"], "hello");
        assert_eq!((c.output_tokens, c.model.as_deref()), (Some(3), Some("m")));
    }

    #[test]
    fn tools_other_spans_and_unusable_messages() {
        let mut s = span(json!({
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.result": {"temp": 12},
        }));
        s.error = Some("timeout".into());
        assert_eq!(
            read(&s).unwrap(),
            GenAi::Tool(ToolRun {
                name: "get_weather".into(),
                call_id: Some("call_1".into()),
                result: Some("{\"temp\":12}".into()),
                error: Some("timeout".into()),
            })
        );
        let agent = span(json!({"gen_ai.operation.name": "invoke_agent"}));
        assert_eq!(read(&agent).unwrap(), GenAi::Other);
        assert_eq!(
            read(&span(json!({"http.method": "GET"}))).unwrap(),
            GenAi::Other
        );
        let bad = span(json!({
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": "[{\"role\": \"user\", ",
        }));
        assert!(
            read(&bad)
                .unwrap_err()
                .contains("gen_ai.input.messages is not JSON")
        );
        let bare = span(json!({"gen_ai.operation.name": "chat"}));
        assert!(read(&bare).unwrap_err().contains("capturing content"));
    }
}
