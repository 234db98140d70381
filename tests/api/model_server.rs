//! The built-in model server of `agentrl serve`, the gateway's upstream when the deployment
//! names none: a real model the trainer's loader reads (a tiny Qwen2 with a chat template)
//! answers the official OpenAI SDK through the gateway, and the turn table holds the exact
//! token ids and logprobs the SDK received, which are the model's own; a promoted LoRA
//! version is served on its base with its adapter applied; another tenant's versions are
//! invisible.

use std::path::Path;

use agentrl_train::model::{LoraConfig, Model};
use agentrl_train::step::{TrainSeq, response_logprobs};
use candle_core::{DType, Device, Tensor};
use serde_json::{Value, json};

use crate::gateway::{python, turns};
use crate::helpers::{Stack, spawn_stack};

/// What the tiny model's conversations are written in: its whole vocabulary.
const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz0123456789 :+=?\n{}\"<>/_,.[]";

/// A template that shows the tools' names, then `role: content` lines.
const TEMPLATE: &str = "{% if tools %}tools:{% for t in tools %} {{ t.function.name }}{% endfor %}\n{% endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}";

/// Writes the tiny model under `dir` and returns it as loaded.
fn tiny_model(dir: &Path) -> Model {
    agentrl_train::demo::write_base_model(dir, ALPHABET, 5).unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        json!({"eos_token": "<|endoftext|>", "chat_template": TEMPLATE}).to_string(),
    )
    .unwrap();
    Model::load(dir, DType::F32, &Device::Cpu).unwrap()
}

/// The log-probabilities `model` gives `response` after `prompt`.
fn own_logprobs(model: &Model, prompt: &[i32], response: &[i32]) -> Vec<f32> {
    let ids = |v: &[i32]| v.iter().map(|&t| t as u32).collect::<Vec<_>>();
    let seq = TrainSeq::completion(&ids(prompt), &ids(response));
    response_logprobs(model, &[seq], 4096).unwrap().remove(0)
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-4, "{got:?} vs {want:?}");
    }
}

fn as_f32(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn as_i32(v: &Value) -> Vec<i32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() as i32)
        .collect()
}

/// Ends a session with an outcome per choice; the trajectory ids it became.
async fn end(s: &Stack, session: &str, choices: usize) -> Value {
    let outcomes: Vec<Value> = (0..choices)
        .map(|i| json!({"success": i == 0, "reward": if i == 0 { 1.0 } else { 0.0 }}))
        .collect();
    let (status, ended) = s
        .a(
            "POST",
            &format!("/gateway/coder-7/sessions/{session}/end"),
            Some(&json!({"choices": outcomes})),
        )
        .await;
    assert_eq!(status, 202, "{ended}");
    ended["trajectory_ids"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_builtin_server_answers_the_sdk_with_the_models_own_token_ids_and_logprobs() {
    let s = spawn_stack().await;
    let base = tiny_model(&s.data_dir().join("objects/models/pico"));
    let agent = json!({"agent_id": "coder-7", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "pico"}, "base_model": "pico"});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);

    let sdk = python(
        "model_server_client.py",
        vec![
            format!("{}/gateway/coder-7/v1", s.base),
            format!("{}/models/v1", s.base),
            s.key_a.clone(),
            "pico".into(),
        ],
    )
    .await;
    let plain = &sdk["plain"];
    assert_eq!(
        (&plain["version"], &plain["model"]),
        (&json!("pico"), &json!("pico"))
    );
    let prompt = as_i32(&plain["prompt_token_ids"]);
    let mut drawn = 0;
    for c in plain["choices"].as_array().unwrap() {
        let ids = as_i32(&c["token_ids"]);
        assert!(!ids.is_empty() && ids.len() <= 5, "{c}");
        drawn += ids.len();
        // The sampled tokens' logprobs are the model's own, at temperature 1.
        close(&as_f32(&c["logprobs"]), &own_logprobs(&base, &prompt, &ids));
    }
    assert_eq!(plain["usage"], drawn);
    let stream = &sdk["stream"];
    assert_eq!(
        as_i32(&stream["token_ids"]).len(),
        as_f32(&stream["logprobs"]).len()
    );
    assert_eq!(
        stream["usage"],
        stream["token_ids"].as_array().unwrap().len()
    );
    assert!(stream["finish_reason"].is_string(), "{stream}");
    assert!(sdk["tools"].is_string(), "{sdk}");
    assert!(sdk["models"].as_array().unwrap().contains(&json!("pico")));
    assert!(sdk["direct"].is_string());
    assert_eq!(
        sdk["errors"]["unknown_model"],
        json!([404, "model_not_found"])
    );
    assert_eq!(sdk["errors"]["top_logprobs"], json!([400, "top_logprobs"]));

    // What the gateway recorded is what the SDK received: the trainer never re-tokenises.
    let ids = end(&s, "ms-plain", 2).await;
    assert_eq!(ids, json!(["ms-plain.0", "ms-plain.1"]));
    for (i, c) in plain["choices"].as_array().unwrap().iter().enumerate() {
        let rows = turns(&s, &format!("ms-plain.{i}")).await;
        let reply = rows.iter().find(|r| r.role == "assistant").unwrap();
        assert_eq!(reply.prompt_token_ids.as_deref(), Some(prompt.as_slice()));
        assert_eq!(reply.response_token_ids, Some(as_i32(&c["token_ids"])));
        assert_eq!(reply.behavior_logprobs, Some(as_f32(&c["logprobs"])));
        assert_eq!(rows[0].episode_reward, Some(if i == 0 { 1.0 } else { 0.0 }));
    }
    end(&s, "ms-stream", 1).await;
    let rows = turns(&s, "ms-stream").await;
    let reply = rows.iter().find(|r| r.role == "assistant").unwrap();
    assert_eq!(reply.response_token_ids, Some(as_i32(&stream["token_ids"])));
    assert_eq!(reply.content, stream["content"].as_str().unwrap());

    // A LoRA version, promoted: the gateway's next session is served by its base plus its
    // adapter.
    crate::training::fixtures(&s, "tenant-a", "2026-11-24-abc").await;
    let (run, version) = crate::serving::finished_run(&s, 1, true).await;
    let (_, shown) = s.a("GET", &format!("/v1/training-runs/{run}"), None).await;
    let out_dir = s
        .data_dir()
        .join("objects")
        .join(shown["artifacts"]["output"].as_str().unwrap());
    let mut tuned = Model::load(
        &s.data_dir().join("objects/models/pico"),
        DType::F32,
        &Device::Cpu,
    )
    .unwrap();
    tuned
        .make_trainable(
            Some(&LoraConfig {
                rank: 4,
                alpha: 8.0,
                dropout: 0.0,
                target_modules: vec!["q_proj".into(), "v_proj".into()],
                freeze_a: false,
            }),
            2,
        )
        .unwrap();
    for (name, var) in tuned.vars() {
        if name.contains("lora_B") {
            let noise = Tensor::randn(0f32, 0.5, var.shape(), &Device::Cpu).unwrap();
            var.set(&noise).unwrap();
        }
    }
    assert!(tuned.save_adapter(&out_dir, "pico").unwrap());
    let (status, promoted) = s
        .a("POST", &format!("/v1/training-runs/{run}/promote"), None)
        .await;
    assert_eq!(status, 200, "{promoted}");
    let body = json!({"messages": [{"role": "user", "content": "what is 1+2?"}],
        "max_tokens": 4, "seed": 9});
    let (status, answer, headers) = s
        .send(
            "POST",
            "/gateway/coder-7/v1/chat/completions",
            Some(&s.key_a),
            Some(&body),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let served = format!("coder-7-{version}");
    assert_eq!(headers.get("x-agentrl-version").unwrap(), served.as_str());
    let choice = &answer["choices"][0];
    let ids = as_i32(&choice["token_ids"]);
    let logprobs: Vec<f32> = choice["logprobs"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["logprob"].as_f64().unwrap() as f32)
        .collect();
    let prompt = as_i32(&answer["prompt_token_ids"]);
    close(&logprobs, &own_logprobs(&tuned, &prompt, &ids));
    // The adapter moved the model: its logprobs are not the base's.
    let untuned = own_logprobs(&base, &prompt, &ids);
    assert!(
        logprobs
            .iter()
            .zip(&untuned)
            .any(|(a, b)| (a - b).abs() > 1e-3),
        "{logprobs:?} vs {untuned:?}"
    );

    // Another tenant can name neither the version nor list it.
    let (status, listed, _) = s
        .send("GET", "/models/v1/models", Some(&s.key_b), None)
        .await;
    assert_eq!(status, 200);
    assert!(!listed.to_string().contains(&served), "{listed}");
    let (status, ..) = s
        .send(
            "POST",
            "/models/v1/chat/completions",
            Some(&s.key_b),
            Some(&json!({"model": served, "messages": [{"role": "user", "content": "hi"}]})),
        )
        .await;
    assert_eq!(status, 404);
    s.stop().await;
}
