//! `kill -9` of `agentrl serve` while agents call through the gateway, at several points; the
//! server restarts on the same data directory each time. Then every call record on disk is
//! whole (each parses), each call is recorded at most once, no record names a call that was
//! never sent, and the calls answered but not recorded are only each writer's last few
//! before the kill: what the recorder had queued and not yet committed.

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::Json;
use serde_json::{Value, json};
use support::{KEY, start_command};

const ROUNDS: u64 = 4;
const WRITERS: u64 = 6;
/// Answered calls a round waits for before the kill.
const ANSWERED_BEFORE_KILL: usize = 60;
/// The most answered calls of one writer a crash may leave unrecorded: the recorder commits
/// within milliseconds, while a writer makes one call at a time.
const LAST_FEW: usize = 3;

/// The scripted upstream: answers each call with its last message's text.
async fn upstream(Json(body): Json<Value>) -> Json<Value> {
    let said = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    Json(
        json!({"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop", "token_ids": [1, 2],
                     "message": {"role": "assistant", "content": format!("ok {said}")}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
    )
}

fn serve(data: &Path, upstream: &str) -> support::Server {
    let mut command = support::serve(data);
    command.env("AGENTRL_GATEWAY_BASE_URL", upstream);
    start_command(command)
}

/// Per writer, the calls it sent and, in order, those it got a whole answer to.
#[derive(Default)]
struct Calls {
    sent: BTreeSet<String>,
    answered: BTreeMap<(u64, u64), Vec<String>>,
}

async fn call_until_killed(base: String, round: u64, writer: u64, calls: Arc<Mutex<Calls>>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = format!("{base}/gateway/coder-7/v1/chat/completions");
    for i in 0.. {
        let id = format!("call-{round}-{writer}-{i}");
        calls.lock().unwrap().sent.insert(id.clone());
        let sent = http
            .post(&url)
            .bearer_auth(KEY)
            .header("x-agentrl-session", format!("s-{round}-{writer}"))
            .json(&json!({"messages": [{"role": "user", "content": id}]}))
            .send()
            .await;
        let Ok(response) = sent else { return };
        assert_eq!(response.status(), 200);
        let Ok(body) = response.json::<Value>().await else {
            return;
        };
        assert_eq!(body["choices"][0]["message"]["content"], format!("ok {id}"));
        calls
            .lock()
            .unwrap()
            .answered
            .entry((round, writer))
            .or_default()
            .push(id);
    }
}

/// The call each record on disk answers (its last user message); panics on a partial file.
fn recorded(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            recorded(&path, out);
        } else if path.extension().is_some_and(|x| x == "json") {
            let bytes = std::fs::read(&path).unwrap();
            let record: Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{} is not a whole record: {e}", path.display()));
            let said = record["messages"][0]["content"].as_str().unwrap();
            out.push(said.to_owned());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_loses_only_the_last_answered_calls_and_never_half_a_record() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(upstream));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let upstream_url = format!("http://{addr}/v1");
    let data = tempfile::tempdir().unwrap();
    let calls = Arc::new(Mutex::new(Calls::default()));

    for round in 0..ROUNDS {
        let server = serve(data.path(), &upstream_url);
        if round == 0 {
            let agent = json!({"agent_id": "coder-7", "name": "Coder", "type": "coding",
                "model": {"provider": "self-hosted", "name": "qwen-tiny"}});
            let created = reqwest::Client::new()
                .post(format!("{}/v1/agents", server.base))
                .bearer_auth(KEY)
                .json(&agent)
                .send()
                .await
                .unwrap();
            assert_eq!(created.status(), 201);
        }
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                tokio::spawn(call_until_killed(
                    server.base.clone(),
                    round,
                    w,
                    calls.clone(),
                ))
            })
            .collect();
        // Each round is cut at a different moment.
        let target = ANSWERED_BEFORE_KILL + 17 * round as usize;
        for _ in 0..3000 {
            let answered: usize = calls
                .lock()
                .unwrap()
                .answered
                .iter()
                .filter(|((r, _), _)| *r == round)
                .map(|(_, a)| a.len())
                .sum();
            if answered >= target {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut child = server.child;
        child.kill().unwrap();
        child.wait().unwrap();
        for w in writers {
            w.await.unwrap();
        }
    }

    let mut on_disk = Vec::new();
    recorded(&data.path().join("objects/gateway"), &mut on_disk);
    let unique: BTreeSet<&String> = on_disk.iter().collect();
    assert_eq!(unique.len(), on_disk.len(), "a call recorded twice");
    let calls = calls.lock().unwrap();
    assert!(
        unique.iter().all(|id| calls.sent.contains(*id)),
        "a record of a call never sent"
    );
    let mut lost = 0;
    let mut answered = 0;
    for ((round, writer), ids) in &calls.answered {
        answered += ids.len();
        let missing: Vec<usize> = ids
            .iter()
            .enumerate()
            .filter(|(_, id)| !unique.contains(id))
            .map(|(at, _)| at)
            .collect();
        lost += missing.len();
        assert!(
            missing.iter().all(|&at| at + LAST_FEW >= ids.len()),
            "round {round}, writer {writer}: answered calls {missing:?} of {} are unrecorded, \
             not only the last {LAST_FEW}",
            ids.len()
        );
    }
    assert!(answered >= (ROUNDS as usize) * ANSWERED_BEFORE_KILL);
    eprintln!(
        "{ROUNDS} kills: {answered} answered calls, {} records, {lost} answered calls unrecorded",
        on_disk.len()
    );
}
