//! A federated round end to end, as an operator and three tenants run it: the tenants opt in
//! through the API, the operator creates a federation and runs a round with `agentrl
//! federation`; each member trains locally from the global adapter on its own dataset, and
//! afterwards the round's stored objects hold the next global adapter and nothing of any
//! tenant's data, each tenant sees only its own part, its ledger is charged once, and a tenant
//! whose budget cannot pay for the round is left out, visibly.

mod support;

use std::path::{Path, PathBuf};

use agentrl_train::tokenizer::Tok;
use agentrl_turns::{TurnRow, TurnWriter, WriterOptions};
use serde_json::{Value, json};
use support::{Server, agentrl, serve, start_command, stop};

/// The tokenizer's characters (the tiny base model's vocabulary).
const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz0123456789 :+=?\n";

const TENANTS: [(&str, &str); 3] = [
    ("acme", support::KEY),
    ("globex", "globex-key-0123456789"),
    ("initech", "initech-key-0123456789"),
];

async fn call(
    server: &Server,
    key: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let http = reqwest::Client::new();
    let mut request = http
        .request(method.parse().unwrap(), format!("{}{path}", server.base))
        .bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// What tenant `n` asks its agent: its own kind of question, text no other tenant has.
fn secret(tenant: &str) -> String {
    format!("what does {tenant} keep in vault {}", tenant.len())
}

/// A dataset of `tenant`'s where the dataset job writes it: turn rows with the tiny model's
/// token ids, SFT examples, a manifest that selected its agent.
fn dataset(objects: &Path, partition: &str, tenant: &str, tok: &Tok) {
    let dir = objects.join(format!("datasets/tenant={partition}/2026-11-28-{tenant}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut writer = TurnWriter::new(Vec::new(), &WriterOptions::default()).unwrap();
    let mut sft = String::new();
    for i in 0..4 {
        let prompt = format!("{} {i}?", secret(tenant));
        let answer = format!("{i}");
        let id = format!("{tenant}-{i}");
        let mut response = tok.encode(&answer).unwrap();
        response.push(0);
        let base = TurnRow {
            trajectory_id: id.clone(),
            conversation_id: format!("c-{id}"),
            turn_count: 2,
            agent_id: "helper".into(),
            group_id: Some("g".into()),
            policy_version: Some("v1".into()),
            tokenizer: Some(tok.sha256.clone()),
            episode_reward: Some(if i % 2 == 0 { 1.0 } else { 0.0 }),
            message_id: format!("m-{id}"),
            ..TurnRow::default()
        };
        writer
            .write(&TurnRow {
                turn_index: 0,
                role: "user".into(),
                content: prompt.clone(),
                ..base.clone()
            })
            .unwrap();
        writer
            .write(&TurnRow {
                turn_index: 1,
                role: "assistant".into(),
                content: answer.clone(),
                prompt_token_ids: Some(
                    tok.encode(&prompt)
                        .unwrap()
                        .iter()
                        .map(|&t| t as i32)
                        .collect(),
                ),
                loss_mask: Some(vec![1; response.len()]),
                behavior_logprobs: Some(vec![-1.0; response.len()]),
                response_token_ids: Some(response.iter().map(|&t| t as i32).collect()),
                turn_reward: Some(0.0),
                ..base
            })
            .unwrap();
        sft.push_str(&format!(
            "{}\n",
            json!({"prompt": prompt, "completion": answer})
        ));
    }
    std::fs::write(dir.join("train.parquet"), writer.finish().unwrap()).unwrap();
    std::fs::write(dir.join("sft.jsonl"), sft).unwrap();
    let manifest = json!({"schema_version": 1, "dataset_id": format!("2026-11-28-{tenant}"),
        "content_hash": format!("hash-{tenant}"), "counts": {"sft_examples": 4},
        "agents": [{"agent_id": "helper", "episodes": 4, "positive_feedback": 2,
                    "high_quality_interactions": 2, "counts_from": "episodes", "selected": true}]});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_trains_members_apart_and_keeps_nothing_of_their_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let mut command = serve(data);
    for (tenant, key) in &TENANTS[1..] {
        command.args(["--api-key", &format!("{tenant}={key}")]);
    }
    let server = start_command(command);
    let objects = data.join("objects");
    let tok =
        agentrl_train::demo::write_base_model(&objects.join("models/tiny"), ALPHABET, 3).unwrap();
    let pseudonyms = agentrl::secret::local_pseudonyms(data).unwrap();

    // A bad opt-in names its field; each tenant opts in, the third with a budget too small
    // for one round at z = 1.
    let (status, problem) = call(
        &server,
        support::KEY,
        "PUT",
        "/v1/config/federation",
        Some(json!({"enabled": true, "models": [], "epsilon": -8.0, "delta": 1e-5})),
    )
    .await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("epsilon")),
        "{problem}"
    );
    for (tenant, key) in TENANTS {
        let agent = json!({"agent_id": "helper", "name": "Helper", "type": "support",
            "model": {"provider": "local", "name": "tiny"}, "base_prompt": "help", "base_model": "tiny"});
        let (status, body) = call(&server, key, "POST", "/v1/agents", Some(agent)).await;
        assert_eq!(status, 201, "{body}");
        let epsilon = if tenant == "initech" { 0.5 } else { 50.0 };
        let opt_in = json!({"enabled": true, "models": [{"base_model": "tiny", "task_type": "support"}],
            "epsilon": epsilon, "delta": 1e-5});
        let (status, body) = call(
            &server,
            key,
            "PUT",
            "/v1/config/federation",
            Some(opt_in.clone()),
        )
        .await;
        assert_eq!((status, &body), (200, &opt_in));
        let partition = pseudonyms.pseudonym(agentrl_core::privacy::TENANT, tenant);
        dataset(&objects, &partition, tenant, &tok);
    }

    let config = data.join("federation.json");
    std::fs::write(
        &config,
        json!({"seed": 4, "lora": {"rank": 4, "alpha": 8.0, "freeze_a": true},
        "sft": {"epochs": 1, "learning_rate": 0.01, "batch_size": 2},
        "grpo": {"steps": 1, "learning_rate": 0.001, "group_size": 2, "batch_prompts": 1}})
        .to_string(),
    )
    .unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let d = s(data);
    let create = |id: &str, lora_config: &str| {
        agentrl(&[
            "federation",
            "create",
            "--id",
            id,
            "--base-model",
            "tiny",
            "--task-type",
            "support",
            "--config",
            lora_config,
            "--clip",
            "1.0",
            "--noise-multiplier",
            "1.0",
            "--min-participants",
            "2",
            "--data-dir",
            &d,
        ])
    };
    // Plain LoRA would average A and B apart: refused, naming the field.
    let plain = data.join("plain.json");
    std::fs::write(
        &plain,
        json!({"lora": {"rank": 4, "alpha": 8.0}}).to_string(),
    )
    .unwrap();
    let (ok, _, stderr) = create("plain", &s(&plain));
    assert!(!ok && stderr.contains("config.lora.freeze_a"), "{stderr}");
    let (ok, _, stderr) = create("support-tiny", &s(&config));
    assert!(ok, "{stderr}");

    let (ok, stdout, stderr) = agentrl(&[
        "federation",
        "round",
        "--id",
        "support-tiny",
        "--data-dir",
        &d,
    ]);
    assert!(ok, "{stderr}");
    let record: Value = serde_json::from_str(&stdout).unwrap();
    let took_part: Vec<&str> = record["participants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tenant"].as_str().unwrap())
        .collect();
    assert_eq!(took_part, ["acme", "globex"], "{record}");
    assert_eq!(record["excluded"][0]["tenant"], "initech");
    assert!(
        record["excluded"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("out of budget")
    );
    // Uniform weights, two participants: σ = z·C/n.
    assert!((record["noise_std"].as_f64().unwrap() - 0.5).abs() < 1e-12);

    // Each tenant sees its own part and nobody else's; its ledger is charged once.
    for (tenant, key) in TENANTS {
        let (status, page) = call(&server, key, "GET", "/v1/federation/rounds", None).await;
        assert_eq!(status, 200);
        let rounds = page["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 1, "{page}");
        let text = page.to_string();
        for (other, _) in TENANTS.iter().filter(|(o, _)| *o != tenant) {
            assert!(!text.contains(other), "{tenant} sees {other}: {text}");
        }
        let (_, budget) = call(&server, key, "GET", "/v1/privacy/budget", None).await;
        let federation = &budget["federation"];
        if tenant == "initech" {
            assert_eq!(rounds[0]["took_part"], false);
            assert_eq!(federation["rounds"], 0);
        } else {
            assert_eq!(rounds[0]["took_part"], true);
            assert_eq!(rounds[0]["weight"], 0.5);
            assert_eq!(federation["rounds"], 1);
            let spent = federation["epsilon_spent"].as_f64().unwrap();
            let expected = agentrl_core::privacy::rdp::gaussian_epsilon(1.0, 1, 1e-5);
            assert!((spent - expected).abs() < 1e-9, "{budget}");
            assert_eq!(rounds[0]["epsilon_total"].as_f64().unwrap(), spent);
        }
        // The reward-noise ledger beside it is untouched.
        assert_eq!(budget["spent"], 0.0);
    }

    // The round's objects: the two global adapters, nothing else, none of any tenant's text.
    let round_files = files(&objects.join("federations"));
    let mut names: Vec<String> = round_files
        .iter()
        .map(|p| {
            p.strip_prefix(&objects)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "federations/support-tiny/round-000000/global/adapter_config.json",
            "federations/support-tiny/round-000000/global/adapter_model.safetensors",
            "federations/support-tiny/round-000001/global/adapter_config.json",
            "federations/support-tiny/round-000001/global/adapter_model.safetensors",
        ]
    );
    for path in &round_files {
        let bytes = std::fs::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for (tenant, _) in TENANTS {
            assert!(
                !text.contains(&secret(tenant)) && !text.contains(tenant),
                "{} holds {tenant}'s data",
                path.display()
            );
        }
    }
    // Nothing of a member's run is stored outside the tenants' own dataset partitions: no
    // object but theirs, and nothing in the table, holds any tenant's text.
    for path in files(data) {
        let relative = path
            .strip_prefix(data)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative.starts_with("objects/datasets/") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        for (tenant, _) in TENANTS {
            assert!(
                !text.contains(&secret(tenant)),
                "{relative} holds {tenant}'s text"
            );
        }
    }
    // The global adapter moved (B was zero), and A did not (FFA-LoRA).
    let load = |round: &str| {
        candle_core::safetensors::load(
            objects.join(format!(
                "federations/support-tiny/{round}/global/adapter_model.safetensors"
            )),
            &candle_core::Device::Cpu,
        )
        .unwrap()
    };
    let (before, after) = (load("round-000000"), load("round-000001"));
    let values = |t: &candle_core::Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    for (name, t) in &before {
        let moved = values(t) != values(&after[name]);
        assert_eq!(moved, name.contains("lora_B"), "{name}");
    }

    // Show lists the round.
    let (ok, shown, _) = agentrl(&[
        "federation",
        "show",
        "--id",
        "support-tiny",
        "--data-dir",
        &d,
    ]);
    assert!(ok);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["federation"]["rounds_done"], 1);
    assert_eq!(shown["rounds"][0]["round_id"], "support-tiny/r000000");
    stop(server, "TERM");
}
