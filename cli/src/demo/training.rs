//! The demo's last act: the loop closed on the embedded default, with no trajectory built
//! by hand. An agent answers sums through the gateway, served by the built-in model server
//! (a tiny model on the CPU); the gateway records every call with the sampler's token ids and
//! logprobs; ended sessions become trajectories, then a dataset, which starts a training run
//! by itself; the run registers a model version, the evaluation gate promotes it, and the
//! gateway serves it to the next sessions — whose answers show what it learnt. Then a second
//! version, trained from the first, goes to a canary.

use std::{path::Path, time::Duration};

use agentrl_core::dataset::Rules;
use agentrl_store::{Stores, clock::now_ms_i64};
use anyhow::{Context, ensure};
use serde_json::{Value, json};

use super::Client;

/// The characters of the demo's conversations: the tiny model's whole vocabulary.
const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz0123456789 :+=?\n";

/// Sums the agent is asked, and answers it draws per sum (a session of `n` choices: a group).
const PROMPTS: u64 = 16;
const CANDIDATES: u64 = 4;

/// How long a run may take before the demo gives up.
const RUN_TIMEOUT: Duration = Duration::from_secs(150);

/// The trainer config of the demo's runs: a short SFT warm-up on the dataset's good answers,
/// then a few offline GRPO steps on its groups.
fn train_config(seed: u64) -> Value {
    json!({
        "seed": seed,
        "checkpoint_every": 0,
        "sft": {"epochs": 80, "batch_size": 8, "learning_rate": 0.003},
        "grpo": {"steps": 30, "learning_rate": 0.001}
    })
}

/// Closes the loop; fails if any step does not do what the API promises.
pub(super) async fn close_the_loop(
    c: &Client,
    key: &str,
    stores: &Stores,
    dir: &Path,
) -> anyhow::Result<()> {
    println!(
        "\n  (closing the loop: an agent through the gateway → trajectories → dataset → \
         training run → model version → gate → the gateway serves it)"
    );
    agentrl_train::demo::write_base_model(&dir.join("objects/models/demo-tiny"), ALPHABET, 0)
        .context("writing the demo's base model")?;
    let (s, agent) = c
        .call(
            "POST",
            "/v1/agents",
            key,
            Some(json!({
                "agent_id": "solver-1", "name": "Sum solver", "type": "math",
                "model": {"provider": "self-hosted", "name": "demo-tiny"},
                "base_prompt": "Answer with the sum.", "base_model": "demo-tiny",
                "auto_train": train_config(0)
            })),
        )
        .await?;
    ensure!(s == 201, "agent answered {s}: {agent}");
    let before = agent_round(c, key, "r1").await?;
    ensure!(
        before.versions.iter().all(|v| v == "demo-tiny"),
        "before any promotion the gateway served {:?}",
        before.versions
    );
    wait_for_turns(stores, PROMPTS * CANDIDATES * 2).await?;

    println!(
        "\n  (the dataset job builds a dataset; training.dataset.ready starts the agent's run)"
    );
    let rules = Rules {
        min_positive_feedback: 0,
        min_high_quality_interactions: 0,
        validation_fraction: 0.25,
        near_duplicate_jaccard: 1.0,
        ..Rules::default()
    };
    let now = now_ms_i64();
    let manifests = agentrl_dataset::build(
        stores.objects.as_ref(),
        stores.events.as_ref(),
        stores.training.as_ref(),
        &rules,
        now,
    )
    .await?;
    let dataset = manifests.first().context("no dataset was built")?;
    println!(
        "  dataset {}: {} train and {} validation trajectories",
        dataset.dataset_id,
        dataset.counts.train_trajectories,
        dataset.counts.validation_trajectories
    );
    let first = started_run(c, key).await?;
    let run = finished(c, key, &first).await?;
    ensure!(
        run["status"] == "succeeded",
        "the first run did not succeed: {run}"
    );
    ensure!(
        run["model_version"] == "v1",
        "the first run registered {}",
        run["model_version"]
    );
    let (s, versions) = c
        .call("GET", "/v1/agents/solver-1/versions", key, None)
        .await?;
    let v1 = &versions["versions"][0];
    ensure!(
        s == 200 && v1["evaluation"].is_object(),
        "versions: {versions}"
    );
    println!(
        "\n  v1 on the held-out sums: expected reward {:.4} before training, {:.4} after",
        v1["base_evaluation"]["reward"].as_f64().unwrap_or(f64::NAN),
        v1["evaluation"]["reward"].as_f64().unwrap_or(f64::NAN),
    );

    println!("\n  (the gate compares v1 with the base model serving the agent now)");
    let (s, promoted) = c
        .call(
            "POST",
            &format!("/v1/training-runs/{first}/promote"),
            key,
            None,
        )
        .await?;
    show_decision(s, &promoted, "v1", "the base model")?;
    ensure!(s == 200, "the gate refused v1: {promoted}");

    println!("\n  (the agent's next sessions, through the same URL, are served by v1)");
    let after = agent_round(c, key, "r2").await?;
    ensure!(
        after.versions.iter().all(|v| v == "solver-1-v1"),
        "after the promotion the gateway served {:?}",
        after.versions
    );
    println!(
        "\n  answers that are a number: {} of {} from the base model, {} of {} from v1",
        before.rewarded, before.answers, after.rewarded, after.answers
    );
    ensure!(
        after.rewarded > before.rewarded,
        "v1 answered no better than the base model"
    );

    println!("\n  (a second run trains from v1 and goes to a quarter of the traffic if it passes)");
    let (s, created) = c
        .call(
            "POST",
            "/v1/training-runs",
            key,
            Some(
                json!({"agent_id": "solver-1", "dataset_id": dataset.dataset_id,
                        "base_version": "v1", "config": train_config(1)}),
            ),
        )
        .await?;
    ensure!(s == 201, "the second run answered {s}: {created}");
    let second = created["run_id"].as_str().context("no run_id")?.to_owned();
    let run = finished(c, key, &second).await?;
    ensure!(
        run["status"] == "succeeded",
        "the second run did not succeed: {run}"
    );
    let (s, decision) = c
        .call(
            "POST",
            &format!("/v1/training-runs/{second}/promote"),
            key,
            Some(json!({"percent": 25})),
        )
        .await?;
    show_decision(s, &decision, "v2", "the serving model")?;
    let (s, route) = c
        .call("GET", "/v1/agents/solver-1/route?key=user-42", key, None)
        .await?;
    ensure!(
        s == 200 && route["arm"].is_string(),
        "route answered {s}: {route}"
    );
    Ok(())
}

/// Prints the gate's comparison; fails unless the answer is a decision with its numbers.
fn show_decision(
    status: u16,
    answer: &Value,
    candidate: &str,
    serving: &str,
) -> anyhow::Result<()> {
    let check = &answer["decision"]["checks"][0];
    ensure!(
        (status == 200 || status == 409) && check["name"] == "validation_reward",
        "the gate's decision has no numbers ({status}): {answer}"
    );
    println!(
        "\n  gate: validation reward {:.4} ({candidate}) vs {:.4} ({serving}): {}",
        check["candidate"].as_f64().unwrap_or(f64::NAN),
        check["deployed"].as_f64().unwrap_or(f64::NAN),
        if status == 200 { "promoted" } else { "refused" }
    );
    Ok(())
}

/// What one round of the agent saw.
struct Round {
    /// Answers drawn, and those the checker rewarded.
    answers: u64,
    rewarded: u64,
    /// The model that served each session (`x-agentrl-version`).
    versions: Vec<String>,
}

/// The checker: the agent wants a number, so an answer is rewarded when it starts with a
/// digit. (A model this small cannot learn to add from a few dozen answers; it can learn what
/// form the answer takes — as a real agent learns its output format first.)
fn reward(answer: &str) -> f64 {
    if answer.starts_with(|c: char| c.is_ascii_digit()) {
        1.0
    } else {
        0.0
    }
}

/// The agent at work: each sum is one gateway session (`x-agentrl-session`) asking for
/// `CANDIDATES` answers, which the checker scores; the session then ends with each answer's
/// outcome. Nothing but OpenAI-style calls and the session's end: the gateway records the
/// rest. The first exchange is shown whole, with the token ids and logprobs it carried.
async fn agent_round(c: &Client, key: &str, round: &str) -> anyhow::Result<Round> {
    println!(
        "\n  (the agent answers {PROMPTS} sums, {CANDIDATES} answers each, through \
         /gateway/solver-1/v1; one exchange shown)"
    );
    let mut seen = Round {
        answers: 0,
        rewarded: 0,
        versions: Vec::new(),
    };
    for p in 0..PROMPTS {
        let (a, b) = (p % 5 + 1, p / 5 + 2);
        let session = format!("{round}-sum-{p}");
        let request = json!({
            "model": "solver-1",
            "messages": [{"role": "user", "content": format!("what is {a}+{b}?")}],
            "n": CANDIDATES, "max_tokens": 3, "temperature": 1.0, "seed": p,
        });
        let (s, version, answer) = c
            .chat(
                "/gateway/solver-1/v1/chat/completions",
                key,
                &session,
                request,
                p == 0,
            )
            .await?;
        ensure!(s == 200, "the gateway answered {s}: {answer}");
        let choices = answer["choices"].as_array().context("no choices")?;
        ensure!(
            choices.len() == CANDIDATES as usize
                && answer["prompt_token_ids"].is_array()
                && choices.iter().all(|c| c["token_ids"].is_array()),
            "the built-in server's answer lacks its token ids: {answer}"
        );
        let outcomes: Vec<Value> = choices
            .iter()
            .map(|choice| {
                let r = reward(choice["message"]["content"].as_str().unwrap_or_default());
                json!({"success": r > 0.0, "reward": r})
            })
            .collect();
        seen.answers += CANDIDATES;
        seen.rewarded += outcomes.iter().filter(|o| o["success"] == true).count() as u64;
        seen.versions.push(version);
        let path = format!("/gateway/solver-1/sessions/{session}/end");
        let body = json!({"choices": outcomes});
        let (s, ended) = if p == 0 {
            c.call("POST", &path, key, Some(body)).await?
        } else {
            c.quiet("POST", &path, key, Some(body)).await?
        };
        ensure!(s == 202, "ending the session answered {s}: {ended}");
    }
    Ok(seen)
}

/// Waits until the worker has written `rows` turns to the turn table.
async fn wait_for_turns(stores: &Stores, rows: u64) -> anyhow::Result<()> {
    for _ in 0..300 {
        let mut seen = 0;
        for meta in stores.objects.list(agentrl_turns::TABLE_PREFIX).await? {
            if let Some(bytes) = stores.objects.get(&meta.path).await? {
                seen += agentrl_turns::read_turns(bytes)?.count() as u64;
            }
        }
        if seen >= rows {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the worker did not write {rows} turns within 30 s")
}

/// The run a ready dataset started for the agent.
async fn started_run(c: &Client, key: &str) -> anyhow::Result<String> {
    for _ in 0..300 {
        let (s, page) = c
            .quiet("GET", "/v1/training-runs?agent_id=solver-1", key, None)
            .await?;
        ensure!(s == 200, "listing runs answered {s}: {page}");
        if let Some(id) = page["runs"][0]["run_id"].as_str() {
            return Ok(id.to_owned());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the ready dataset started no run within 30 s")
}

/// Polls a run until it finishes, then shows it.
async fn finished(c: &Client, key: &str, id: &str) -> anyhow::Result<Value> {
    let path = format!("/v1/training-runs/{id}");
    let started = std::time::Instant::now();
    while started.elapsed() < RUN_TIMEOUT {
        let (s, run) = c.quiet("GET", &path, key, None).await?;
        ensure!(s == 200, "reading the run answered {s}: {run}");
        if matches!(
            run["status"].as_str(),
            Some("succeeded" | "failed" | "cancelled")
        ) {
            return Ok(c.call("GET", &path, key, None).await?.1);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    anyhow::bail!("run {id} did not finish within {} s", RUN_TIMEOUT.as_secs())
}
