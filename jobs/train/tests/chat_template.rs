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

fn pairs(v: &Value) -> Vec<Message> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

const ORACLE: &str = r#"
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment

def raise_exception(message):
    raise Exception(message)

out = []
for case in json.load(open(sys.argv[1])):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(case["template"])
    tokens = dict(bos_token=case["bos"], eos_token=case["eos"])
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
        let ours = tok
            .chat(&pairs(&case["prompt"]), &pairs(&case["completion"]))
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
    let robot = [("robot".to_owned(), "beep".to_owned())];
    let err = tok.chat(&robot, &[]).unwrap_err();
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
