//! Turn rewards judged by the critic model, end to end on the local stack with a scripted
//! OpenAI-compatible server on 127.0.0.1 as the provider: a trajectory posted to the API is
//! judged by the ingest worker (information gain answered, task progress abstaining), its
//! rows carry the judged values and their sources, the cost is reported under its purpose, a
//! second delivery of the same turns is served from the cache (on SQLite and on DynamoDB/SQS/S3
//! over moto); off by default, nothing is asked.

use agentrl_testkit::chat::{ChatServer, Scripted};
use serde_json::{Value, json};

use crate::{
    gateway::rows_where,
    helpers::{Stack, spawn_aws_stack, spawn_stack},
};

/// A provider that scores every turn's information gain 10 and never gives a valid task
/// progress reply (so that judge abstains, after one repair).
async fn provider() -> ChatServer {
    ChatServer::start(|_, body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("turn_information_gain") {
            Scripted::judgment(10.0, 0.9, "new facts the task needs")
        } else {
            Scripted::text("progress looks fine to me")
        }
    })
    .await
}

fn system_prompts(provider: &ChatServer, rubric: &str) -> usize {
    provider
        .received()
        .iter()
        .filter(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .is_some_and(|c| c.contains(rubric))
        })
        .count()
}

fn trajectory(id: &str) -> Value {
    json!({
        "trajectory_id": id,
        "conversation_id": format!("c-{id}"),
        "agent_id": "researcher",
        "turns": [
            {"role": "user", "content": "Which city is the capital of France?"},
            {"role": "assistant", "content": "The capital of France is Paris."},
            {"role": "user", "content": "And of Italy?"},
            {"role": "assistant", "content": "Rome is the capital of Italy."}
        ],
        "final_outcome": {"success": true}
    })
}

async fn put(s: &Stack, path: &str, body: &Value) {
    let (status, answer) = s.a("PUT", path, Some(body)).await;
    assert_eq!(status, 200, "{answer}");
}

async fn post(s: &Stack, trajectory: &Value) {
    let (status, answer) = s.a("POST", "/v1/trajectories", Some(trajectory)).await;
    assert_eq!(status, 202, "{answer}");
}

async fn rows_of(s: &Stack, id: &str) -> Vec<agentrl_turns::TurnRow> {
    rows_where(s, 300, &format!("trajectory {id}"), |r| {
        r.trajectory_id == id
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn judged_turn_rewards_on_sqlite() {
    judged_turn_rewards_replace_the_heuristic_and_are_counted_under_their_purpose(
        spawn_stack().await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn judged_turn_rewards_on_dynamodb() {
    judged_turn_rewards_replace_the_heuristic_and_are_counted_under_their_purpose(
        spawn_aws_stack().await,
    )
    .await;
}

async fn judged_turn_rewards_replace_the_heuristic_and_are_counted_under_their_purpose(s: Stack) {
    let provider = provider().await;
    put(
        &s,
        "/v1/config/judges",
        &json!({"base_url": provider.base_url, "critic_model": "critic", "judge_model": "judge",
                "timeout_ms": 2_000, "max_retries": 0}),
    )
    .await;
    put(
        &s,
        "/v1/config/trajectories",
        &json!({"judge_turn_rewards": true}),
    )
    .await;
    let (_, config) = s.a("GET", "/v1/config/trajectories", None).await;
    assert_eq!(config["judge_turn_rewards"], true, "{config}");

    post(&s, &trajectory("judged-1")).await;
    let rows = rows_of(&s, "judged-1").await;
    assert_eq!(rows.len(), 4);
    for user in [&rows[0], &rows[2]] {
        assert_eq!(
            (&user.information_gain_source, &user.progress_source),
            (&None, &None),
            "a user turn is no action of the policy"
        );
    }
    // Information gain is the model's 10 on 1–10; task progress keeps the heuristic's
    // outcome credit (k / m of a success), marked as such.
    for (row, progress) in [(&rows[1], 0.5), (&rows[3], 1.0)] {
        assert_eq!(row.reward_information_gain, Some(1.0), "{row:?}");
        assert_eq!(
            row.information_gain_source.as_deref(),
            Some("turn_information_gain@1")
        );
        assert_eq!(row.reward_progress, Some(progress), "{row:?}");
        assert_eq!(row.progress_source.as_deref(), Some("heuristic"));
        let format = row.reward_format.unwrap();
        let total = 0.4 * 1.0 + 0.3 * format + 0.3 * progress;
        assert!(
            (row.turn_reward.unwrap() - total).abs() < 1e-9,
            "the total follows the judged component: {row:?}"
        );
    }
    // Two turns, two rubrics, on the critic model; task progress was asked twice (a repair).
    assert_eq!(system_prompts(&provider, "turn_information_gain"), 2);
    assert_eq!(system_prompts(&provider, "turn_task_progress"), 4);
    assert!(
        provider
            .received()
            .iter()
            .all(|r| r.body["model"] == "critic")
    );
    let (status, usage) = s.a("GET", "/v1/judges/usage", None).await;
    assert_eq!(status, 200, "{usage}");
    let purposes: Vec<&String> = usage["purposes"].as_object().unwrap().keys().collect();
    assert_eq!(purposes, ["turn_rewards"], "{usage}");
    let turn_rewards = &usage["purposes"]["turn_rewards"];
    assert_eq!(
        (
            turn_rewards["judgments"].as_u64(),
            turn_rewards["calls"].as_u64(),
            turn_rewards["prompt_tokens"].as_u64()
        ),
        (Some(4), Some(6), Some(600)),
        "{usage}"
    );

    // The same turns again (a redelivery asks about the same text): information gain comes
    // from the cache, neither asked nor counted again; the abstaining judge is asked again.
    post(&s, &trajectory("judged-2")).await;
    let again = rows_of(&s, "judged-2").await;
    assert_eq!(again[3].reward_information_gain, Some(1.0));
    assert_eq!(
        again[3].information_gain_source.as_deref(),
        Some("turn_information_gain@1")
    );
    assert_eq!(system_prompts(&provider, "turn_information_gain"), 2);
    let (_, usage) = s.a("GET", "/v1/judges/usage", None).await;
    assert_eq!(
        usage["purposes"]["turn_rewards"]["judgments"].as_u64(),
        Some(6),
        "two new abstentions, no new information-gain judgment: {usage}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn turn_rewards_are_not_judged_unless_the_tenant_asks() {
    let s = spawn_stack().await;
    let provider = provider().await;
    put(
        &s,
        "/v1/config/judges",
        &json!({"base_url": provider.base_url, "critic_model": "critic"}),
    )
    .await;
    let (_, config) = s.a("GET", "/v1/config/trajectories", None).await;
    assert_eq!(config["judge_turn_rewards"], false, "{config}");

    post(&s, &trajectory("plain-1")).await;
    let rows = rows_of(&s, "plain-1").await;
    for row in [&rows[1], &rows[3]] {
        assert_eq!(
            (
                row.information_gain_source.as_deref(),
                row.progress_source.as_deref()
            ),
            (Some("heuristic"), Some("heuristic"))
        );
    }
    assert!(provider.received().is_empty(), "no judge was asked");
    let (_, usage) = s.a("GET", "/v1/judges/usage", None).await;
    assert_eq!(usage["purposes"], json!({}), "{usage}");
    s.stop().await;
}
