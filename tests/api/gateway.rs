//! The gateway end to end with the official OpenAI Python SDK: a scripted OpenAI-compatible
//! upstream on 127.0.0.1 (token ids and logprobs as vLLM returns them, parallel tool calls,
//! `n > 1`, streaming, and every failure), the calls recorded, the sessions ended into the
//! turn table with the upstream's exact token ids, and another tenant's agent and session a
//! 404.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_stack};

type Seen = Arc<Mutex<Vec<Value>>>;

fn choice(i: usize, message: Value, ids: &[u32]) -> Value {
    let logprobs: Vec<Value> = ids
        .iter()
        .map(|&t| json!({"token": format!("t{t}"), "logprob": -0.25 * f64::from(t % 4 + 1)}))
        .collect();
    json!({"index": i, "message": message, "finish_reason": "stop", "token_ids": ids,
           "logprobs": {"content": logprobs}})
}

/// The scripted upstream: what the last message says decides the answer.
async fn upstream(State(seen): State<Seen>, Json(body): Json<Value>) -> Response {
    seen.lock().unwrap().push(body.clone());
    let model = body["model"].clone();
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    match last.as_str() {
        "fail-429" => {
            let mut h = HeaderMap::new();
            h.insert("retry-after", "7".parse().unwrap());
            return (
                StatusCode::TOO_MANY_REQUESTS,
                h,
                Json(json!({"error": {"message": "slow down"}})),
            )
                .into_response();
        }
        "fail-500" => return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        "hang" => tokio::time::sleep(Duration::from_secs(5)).await,
        "malformed" => return (StatusCode::OK, "not json").into_response(),
        _ => {}
    }
    if body["stream"] == json!(true) {
        let chunk = |c: Value| format!("data: {c}\n\n");
        let sse = [
            chunk(
                json!({"model": model, "prompt_token_ids": [1, 2, 3], "choices": [{"index": 0,
                "delta": {"role": "assistant", "content": "Hel"}, "token_ids": [11],
                "logprobs": {"content": [{"token": "Hel", "logprob": -0.5}]}}]}),
            ),
            chunk(
                json!({"model": model, "choices": [{"index": 0, "delta": {"content": "lo"},
                "token_ids": [12], "logprobs": {"content": [{"token": "lo", "logprob": -0.25}]},
                "finish_reason": "stop"}]}),
            ),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        return ([("content-type", "text/event-stream")], sse).into_response();
    }
    let n = body["n"].as_u64().unwrap_or(1) as usize;
    let choices: Vec<Value> = if body.get("tools").is_some() && last == "use tools" {
        let call = |id: &str, q: &str| {
            json!({"id": id, "type": "function",
                   "function": {"name": "lookup", "arguments": format!("{{\"q\": \"{q}\"}}")}})
        };
        vec![choice(
            0,
            json!({"role": "assistant", "content": null,
                   "tool_calls": [call("call_a", "x"), call("call_b", "y")]}),
            &[21, 22, 23],
        )]
    } else if n > 1 {
        (0..n)
            .map(|i| {
                choice(
                    i,
                    json!({"role": "assistant", "content": format!("choice {i}")}),
                    &[30 + i as u32],
                )
            })
            .collect()
    } else {
        let text = if last.starts_with("result") {
            "done"
        } else {
            "Hello"
        };
        vec![choice(
            0,
            json!({"role": "assistant", "content": text}),
            &[11, 12],
        )]
    };
    Json(
        json!({"id": "c", "object": "chat.completion", "created": 0, "model": model,
                "prompt_token_ids": [1, 2, 3], "choices": choices,
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
    )
    .into_response()
}

async fn start_upstream() -> (String, Seen) {
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(upstream))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

/// The turn rows of `trajectory`, once the ingest worker has written them.
async fn turns(s: &Stack, trajectory: &str) -> Vec<agentrl_turns::TurnRow> {
    for _ in 0..100 {
        let mut rows = Vec::new();
        for meta in s.stores.objects.list("trajectories/").await.unwrap() {
            let bytes = s.stores.objects.get(&meta.path).await.unwrap().unwrap();
            for row in agentrl_turns::read_turns(bytes).unwrap() {
                let row = row.unwrap();
                if row.trajectory_id == trajectory {
                    rows.push(row);
                }
            }
        }
        if !rows.is_empty() {
            rows.sort_by_key(|r| r.turn_index);
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("trajectory {trajectory} never reached the turn table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_openai_sdk_through_the_gateway_records_sessions_with_token_ids() {
    let s = spawn_stack().await;
    let (base_url, seen) = start_upstream().await;
    let agent = json!({"agent_id": "coder-7", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_prompt": "You fix bugs."});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);
    let config = json!({"base_url": base_url, "request_timeout_ms": 1000});
    let (status, body) = s.a("PUT", "/v1/config/gateway", Some(&config)).await;
    assert_eq!(status, 200, "{body}");
    let bad = json!({"base_url": "http://169.254.169.254/latest"});
    let (status, body) = s.a("PUT", "/v1/config/gateway", Some(&bad)).await;
    assert_eq!((status, body["field"].as_str()), (400, Some("base_url")));

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/api/python/gateway_client.py");
    let gateway = format!("{}/gateway/coder-7/v1", s.base);
    let key = s.key_a.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(agentrl_testkit::venv_python())
            .args([script, &gateway, &key])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sdk: Value = serde_json::from_slice(&out.stdout).unwrap();

    // Before any promotion the agent is served as its own model; the upstream got that name
    // and the request for token ids.
    assert_eq!(sdk["plain"]["content"], "Hello");
    assert_eq!(sdk["plain"]["model"], "qwen-tiny");
    assert_eq!(sdk["plain"]["session"], "s-plain");
    assert_eq!(sdk["plain"]["version"], "qwen-tiny");
    assert_eq!(sdk["tools"], json!(["lookup", "lookup"]));
    assert_eq!(sdk["third"], "done");
    assert_eq!(sdk["stream"], "Hello");
    assert_eq!(sdk["group"], json!(["choice 0", "choice 1"]));
    assert_eq!(sdk["models"], json!(["qwen-tiny"]));
    assert!(uuid::Uuid::parse_str(sdk["generated_session"].as_str().unwrap()).is_ok());
    let e = &sdk["errors"];
    assert_eq!(
        (
            e["fail-429"]["status"].as_u64(),
            e["fail-429"]["retry_after"].as_str()
        ),
        (Some(429), Some("7"))
    );
    assert!(
        e["fail-429"]["message"]
            .as_str()
            .unwrap()
            .contains("slow down"),
        "{e}"
    );
    assert_eq!(e["fail-500"]["status"], 500);
    assert_eq!(e["hang"]["status"], 504);
    assert_eq!(e["malformed"]["status"], 502);
    for request in seen.lock().unwrap().iter() {
        assert_eq!(request["model"], "qwen-tiny");
        assert_eq!(request["return_token_ids"], true);
    }

    // Another tenant sees neither the agent nor the session.
    let (status, ..) = s
        .send(
            "POST",
            "/gateway/coder-7/v1/chat/completions",
            Some(&s.key_b),
            Some(&json!({"messages": [{"role": "user", "content": "hi"}]})),
        )
        .await;
    assert_eq!(status, 404);
    let (status, ..) = s
        .send(
            "POST",
            "/gateway/coder-7/sessions/s-plain/end",
            Some(&s.key_b),
            None,
        )
        .await;
    assert_eq!(status, 404);

    let end = json!({"success": true, "reward": 1.0});
    let (status, ended) = s
        .a("POST", "/gateway/coder-7/sessions/s-plain/end", Some(&end))
        .await;
    assert_eq!(
        (status, &ended["trajectory_ids"]),
        (202, &json!(["s-plain"])),
        "{ended}"
    );
    let (status, again) = s
        .a("POST", "/gateway/coder-7/sessions/s-plain/end", None)
        .await;
    assert_eq!((status, again), (202, ended));
    let (status, body) = s
        .a(
            "POST",
            "/gateway/coder-7/v1/chat/completions",
            Some(&json!({"messages": []})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (200, None),
        "a fresh session: {body}"
    );
    for (bad, field) in [
        (json!({"model": "x"}), "messages"),
        (json!({"messages": [["not", "an object"]]}), "messages[0]"),
    ] {
        let (status, body) = s
            .a("POST", "/gateway/coder-7/v1/chat/completions", Some(&bad))
            .await;
        assert_eq!(
            (status, body["field"].as_str()),
            (400, Some(field)),
            "{body}"
        );
    }
    let (status, body, _) = s
        .send(
            "POST",
            "/gateway/coder-7/sessions/s-plain/v1/chat/completions",
            Some(&s.key_a),
            Some(&json!({"messages": [{"role": "user", "content": "more"}]})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("session_ended"))
    );

    // The conversation as the agent carried it, each reply with the upstream's token ids.
    let rows = turns(&s, "s-plain").await;
    let roles: Vec<&str> = rows.iter().map(|r| r.role.as_str()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "assistant",
            "tool",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(rows[1].response_token_ids, Some(vec![11, 12]));
    assert_eq!(rows[1].prompt_token_ids, Some(vec![1, 2, 3]));
    assert_eq!(rows[1].behavior_logprobs, Some(vec![-1.0, -0.25]));
    assert_eq!(rows[3].response_token_ids, Some(vec![21, 22, 23]));
    assert_eq!(rows[3].tool_name.as_deref(), Some("lookup"));
    assert_eq!(rows[4].tool_name.as_deref(), Some("lookup"));
    assert_eq!(rows[5].tool_result.as_deref(), Some("result 0"));
    assert_eq!(rows[7].content, "done");
    assert!(rows.iter().all(|r| r.episode_success == Some(true)));

    let (status, ended) = s
        .a("POST", "/gateway/coder-7/sessions/s-stream/end", None)
        .await;
    assert_eq!(status, 202, "{ended}");
    let rows = turns(&s, "s-stream").await;
    assert_eq!(rows[1].content, "Hello");
    assert_eq!(rows[1].response_token_ids, Some(vec![11, 12]));
    assert_eq!(rows[1].behavior_logprobs, Some(vec![-0.5, -0.25]));

    let (status, ended) = s
        .a("POST", "/gateway/coder-7/sessions/s-group/end", None)
        .await;
    assert_eq!(
        (status, &ended["trajectory_ids"]),
        (202, &json!(["s-group.0", "s-group.1"]))
    );
    let rows = turns(&s, "s-group.1").await;
    assert_eq!(rows[1].content, "choice 1");
    assert_eq!(rows[1].response_token_ids, Some(vec![31]));
    assert_eq!(rows[1].group_id.as_deref(), Some("s-group"));
}
