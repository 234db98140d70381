//! A model's Jinja `chat_template` renders as `transformers.apply_chat_template` renders it:
//! the oracle is Python's jinja2 set up as transformers sets it up (sandboxed, `trim_blocks`,
//! `lstrip_blocks`, `raise_exception`), on templates in the shape of Qwen2.5's and Llama 3's.

use std::path::Path;
use std::process::Command;

use agentrl_train::tokenizer::{Message, Tok};
use serde_json::{Value, json};

const QWEN: &str = r#"{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- else %}
    {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant") %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

const LLAMA: &str = r#"{{- bos_token }}
{%- for message in messages %}
    {%- if message['role'] not in ['system', 'user', 'assistant', 'tool'] %}
        {{- raise_exception('Unknown role: ' + message['role']) }}
    {%- endif %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'].strip() + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"#;

/// Qwen2.5's template as its tokenizer_config.json ships it: tools in the system turn,
/// calls as `<tool_call>` blocks with `tojson` arguments.
const QWEN_TOOLS: &str = r#"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

/// No whitespace control in the template itself: `trim_blocks` and `lstrip_blocks` decide.
const PLAIN: &str = "  {% for m in messages %}
  [{{ m.role | upper }}] {{ m.content }}
  {% endfor %}
  {% if add_generation_prompt %}  [ASSISTANT] {% endif %}";

fn model_dir(dir: &Path, config: &Value) {
    let tok = Tok::char_level("abcdefghijklmnopqrstuvwxyz0123456789 +=?", &["<eos>"]).unwrap();
    std::fs::write(dir.join("tokenizer.json"), tok.json()).unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        serde_json::to_vec(config).unwrap(),
    )
    .unwrap();
}

fn messages(v: &Value) -> Vec<Message> {
    v.as_array().unwrap().clone()
}

const ORACLE: &str = r#"
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment

def raise_exception(message):
    raise Exception(message)

# transformers' own `tojson` (chat_template_utils): json.dumps, not jinja2's HTML-safe one.
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

out = []
for case in json.load(open(sys.argv[1])):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    env.filters["tojson"] = tojson
    template = env.from_string(case["template"])
    tokens = dict(bos_token=case["bos"], eos_token=case["eos"], tools=case.get("tools"))
    head = template.render(messages=case["prompt"], add_generation_prompt=True, **tokens)
    whole = template.render(messages=case["prompt"] + case["completion"], add_generation_prompt=False, **tokens)
    assert whole.startswith(head)
    out.append([head, whole[len(head):]])
print(json.dumps(out))
"#;

#[test]
fn chat_templates_render_as_transformers_renders_them() {
    let conversation = json!([
        {"role": "system", "content": "You add numbers."},
        {"role": "user", "content": "  what is 2+3?  "},
        {"role": "assistant", "content": "calc 2+3"},
        {"role": "tool", "content": "5"},
    ]);
    let answer = json!([{"role": "assistant", "content": "It is 5. "}]);
    let cases: Vec<Value> = [
        (
            QWEN,
            "",
            "<|im_end|>",
            json!([{"role": "user", "content": "hi"}]),
        ),
        (QWEN, "", "<|im_end|>", conversation.clone()),
        (
            LLAMA,
            "<|begin_of_text|>",
            "<|eot_id|>",
            conversation.clone(),
        ),
        (PLAIN, "", "", conversation),
    ]
    .into_iter()
    .map(|(template, bos, eos, prompt)| {
        json!({"template": template, "bos": bos, "eos": eos, "prompt": prompt,
               "completion": answer})
    })
    .chain(std::iter::once(tool_case()))
    .collect();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cases.json");
    std::fs::write(&input, serde_json::to_vec(&cases).unwrap()).unwrap();
    let out = Command::new(agentrl_testkit::venv_python())
        .args(["-c", ORACLE])
        .arg(&input)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: Vec<(String, String)> = serde_json::from_slice(&out.stdout).unwrap();
    for (case, expected) in cases.iter().zip(&expected) {
        let model = tempfile::tempdir().unwrap();
        model_dir(
            model.path(),
            &json!({"chat_template": case["template"], "bos_token": case["bos"],
                    "eos_token": {"content": case["eos"]}}),
        );
        let tok = Tok::load(model.path(), &[]).unwrap();
        let tools = case.get("tools");
        let ours = tok
            .chat(
                &messages(&case["prompt"]),
                &messages(&case["completion"]),
                tools,
            )
            .unwrap();
        assert_eq!(&ours, expected, "template:\n{}", case["template"]);
    }
    assert!(
        expected[1]
            .0
            .contains("<tool_response>\n5\n</tool_response>")
            && expected[1].1 == "It is 5. <|im_end|>\n",
        "the oracle rendered the real thing: {expected:?}"
    );
    // transformers' `tojson`: `, ` and `: `, no HTML escaping, non-ASCII as it is.
    let (head, calls) = &expected[4];
    assert!(
        head.contains("\"description\": \"Read a file's lines (<= 200).\", \"name\": \"read\"")
            && head.contains("'ü' works")
            && calls.contains(
                "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"lines\": [1, 20], \"path\": \"src/<lib>.rs\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"grep\""
            ),
        "the tools and both parallel calls in Qwen's format: {head}{calls}"
    );
}

/// A tool-using turn as the trainer renders it from the turn table: tools in the template's
/// context, an assistant turn with two parallel calls (arguments as objects, as vLLM passes
/// them), their results answering them by id.
fn tool_case() -> Value {
    let tools = json!([
        {"type": "function", "function": {"name": "read", "description": "Read a file's lines (<= 200).",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                "lines": {"type": "array", "items": {"type": "integer"}}}, "required": ["path"]}}},
        {"type": "function", "function": {"name": "grep", "description": "Search the tree; 'ü' works.",
            "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}}}}
    ]);
    let prompt = json!([
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Why does parse fail on leap years?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": {"pattern": "leap"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "src/<lib>.rs:12: fn is_leap"},
    ]);
    let completion = json!([{"role": "assistant", "content": "Reading both.", "tool_calls": [
        {"id": "call_2", "type": "function", "function": {"name": "read",
            "arguments": {"path": "src/<lib>.rs", "lines": [1, 20]}}},
        {"id": "call_3", "type": "function", "function": {"name": "grep",
            "arguments": {"pattern": "days_in_month"}}}]}]);
    json!({"template": QWEN_TOOLS, "bos": "", "eos": "<|im_end|>", "prompt": prompt,
           "completion": completion, "tools": tools})
}

#[test]
fn a_template_that_fails_is_an_error_naming_the_file() {
    let model = tempfile::tempdir().unwrap();
    model_dir(
        model.path(),
        &json!({"chat_template": [{"name": "default", "template": LLAMA},
                                  {"name": "tool_use", "template": QWEN}]}),
    );
    let tok = Tok::load(model.path(), &[]).unwrap();
    let robot = [json!({"role": "robot", "content": "beep"})];
    let err = tok.chat(&robot, &[], None).unwrap_err();
    assert!(err.contains("Unknown role: robot"), "{err}");

    for (template, reason) in [
        (
            "{{ raise_exception('this model takes no chat') }}",
            "this model takes no chat",
        ),
        ("{% for m in messages %}{{ m.content }}", "syntax error"),
    ] {
        model_dir(model.path(), &json!({ "chat_template": template }));
        let err = Tok::load(model.path(), &[]).unwrap_err().to_string();
        assert!(
            err.contains("tokenizer_config.json") && err.contains(reason),
            "{err}"
        );
    }
}
