//! The gateway end to end with the official OpenAI Python SDK: a scripted OpenAI-compatible
//! upstream on 127.0.0.1 (token ids and logprobs as vLLM returns them, parallel tool calls,
//! `n > 1`, streaming, and every failure), the calls recorded, the sessions ended into the
//! turn table with the upstream's exact token ids, and another tenant's agent and session a
//! 404; thinking budgets clamping calls, charged their usage, and a 429 at the ceiling.

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
    // "spend N": the reply's usage says N completion tokens.
    let spent = last
        .strip_prefix("spend ")
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(2);
    let usage = json!({"prompt_tokens": 3, "completion_tokens": spent, "total_tokens": 3 + spent});
    if body["stream"] == json!(true) {
        let usage_chunk = if body["stream_options"]["include_usage"] == json!(true) {
            format!(
                "data: {}\n\n",
                json!({"model": model, "choices": [], "usage": usage})
            )
        } else {
            String::new()
        };
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
            usage_chunk,
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
                "prompt_token_ids": [1, 2, 3], "choices": choices, "usage": usage}),
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

/// What `script` (of `api/python/`, run by the test venv's Python with `args`) printed as JSON.
pub(crate) async fn python(script: &str, args: Vec<String>) -> Value {
    let script = format!("{}/api/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(agentrl_testkit::venv_python())
            .arg(script)
            .args(args)
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
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The turn rows of `trajectory`, once the ingest worker has written them.
pub(crate) async fn turns(s: &Stack, trajectory: &str) -> Vec<agentrl_turns::TurnRow> {
    rows_where(s, 100, &format!("trajectory {trajectory}"), |r| {
        r.trajectory_id == trajectory
    })
    .await
}

/// The turn rows that `keep` takes, in turn order, once there are some; tries `attempts`
/// times 100 ms apart before it panics naming `what`.
pub(crate) async fn rows_where(
    s: &Stack,
    attempts: usize,
    what: &str,
    keep: impl Fn(&agentrl_turns::TurnRow) -> bool,
) -> Vec<agentrl_turns::TurnRow> {
    for _ in 0..attempts {
        let mut rows = Vec::new();
        for meta in s.stores.objects.list("trajectories/").await.unwrap() {
            let bytes = s.stores.objects.get(&meta.path).await.unwrap().unwrap();
            for row in agentrl_turns::read_turns(bytes).unwrap() {
                let row = row.unwrap();
                if keep(&row) {
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
    panic!("{what} never reached the turn table");
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

    let gateway = format!("{}/gateway/coder-7/v1", s.base);
    let sdk = python("gateway_client.py", vec![gateway, s.key_a.clone()]).await;

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
            "tool",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(rows[1].response_token_ids, Some(vec![11, 12]));
    assert_eq!(rows[1].prompt_token_ids, Some(vec![1, 2, 3]));
    assert_eq!(rows[1].behavior_logprobs, Some(vec![-1.0, -0.25]));
    // The upstream's usage of the call, with its reply.
    assert_eq!(rows[1].input_tokens, Some(3));
    assert!(rows[1].output_tokens.is_some(), "{:?}", rows[1]);
    assert_eq!((rows[0].input_tokens, rows[0].output_tokens), (None, None));
    // The parallel calls are one turn's, with their ids and the arguments the model wrote.
    assert_eq!(rows[3].response_token_ids, Some(vec![21, 22, 23]));
    let calls: Vec<(Option<&str>, &str, &str)> = rows[3]
        .tool_calls
        .iter()
        .map(|c| (c.id.as_deref(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            (Some("call_a"), "lookup", r#"{"q": "x"}"#),
            (Some("call_b"), "lookup", r#"{"q": "y"}"#)
        ]
    );
    assert_eq!(rows[4].tool_call_id.as_deref(), Some("call_a"));
    assert_eq!(rows[4].tool_result.as_deref(), Some("result 0"));
    assert_eq!(rows[5].tool_call_id.as_deref(), Some("call_b"));
    assert!(
        rows[0]
            .tools
            .as_deref()
            .is_some_and(|t| t.contains("lookup")),
        "the tools a chat template renders ride on every row"
    );
    assert_eq!(rows[6].content, "done");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_budget_clamps_each_call_is_charged_its_usage_and_refuses_past_its_ceiling() {
    let s = spawn_stack().await;
    let (base_url, seen) = start_upstream().await;
    let agent = json!({"agent_id": "coder-8", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_prompt": "You fix bugs."});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);
    let config = json!({"base_url": base_url, "request_timeout_ms": 1000});
    assert_eq!(s.a("PUT", "/v1/config/gateway", Some(&config)).await.0, 200);
    // A trivial budget: 500 tokens allocated, a ceiling of 1,000.
    let new = json!({"task_id": "t-1", "task": {"description": "rename a variable"},
        "complexity": "trivial"});
    let (status, created) = s.a("POST", "/v1/budgets", Some(&new)).await;
    assert_eq!(status, 201, "{created}");
    let budget = created["budget_id"].as_str().unwrap().to_owned();

    let gateway = format!("{}/gateway/coder-8/v1", s.base);
    let sdk = python(
        "gateway_budget.py",
        vec![gateway, s.key_a.clone(), budget.clone()],
    )
    .await;

    // The first call asked for 5,000 tokens and went with the ceiling's 1,000; it spent 400,
    // inside the allocation. The second (the session's budget, no header) went with the 600
    // left and spent 400: past the allocation. The stream went with 200 and was charged the
    // usage it was asked for, a chunk its client never saw.
    assert_eq!(
        sdk["first"],
        json!({"action": "CONTINUE", "remaining": "100"})
    );
    assert_eq!(
        sdk["second"],
        json!({"action": "EXHAUSTED", "remaining": "0"})
    );
    assert_eq!(sdk["stream"], json!({"text": "Hello", "usage_chunks": 0}));
    let sent: Vec<Value> = seen.lock().unwrap().clone();
    assert_eq!(sent[0]["max_tokens"], 1000);
    assert_eq!(sent[1]["max_completion_tokens"], 600);
    assert_eq!(sent[2]["max_completion_tokens"], 200);
    assert_eq!(sent[2]["stream_options"]["include_usage"], true);
    assert_eq!(
        sdk["consumed"], 1000,
        "the stream's usage is charged when it ends"
    );

    // Past the ceiling: a 429 naming the budget that the SDK does not retry (it would have
    // three times), and the upstream never asked.
    let refused = &sdk["refused"];
    assert_eq!(refused["status"], 429, "{refused}");
    assert_eq!(refused["code"], "budget_exhausted");
    assert_eq!(refused["param"], "x-agentrl-budget");
    assert_eq!(refused["retry"], "false");
    assert!(refused["message"].as_str().unwrap().contains(&budget));
    assert_eq!(sent.len(), 3, "refused calls never reach the upstream");

    // The loop limit's hand-over reaches the caller the same way.
    let (_, looping) = s.a("POST", "/v1/budgets", Some(&new)).await;
    let looping = looping["budget_id"].as_str().unwrap().to_owned();
    for i in 0..3 {
        let report = json!({"report_id": format!("loop-{i}"), "tokens": 1, "loop_completed": true});
        let path = format!("/v1/budgets/{looping}/consumption");
        assert_eq!(s.a("POST", &path, Some(&report)).await.0, 200);
    }
    let call = |budget: String, key: String| {
        reqwest::Client::new()
            .post(format!("{}/gateway/coder-8/v1/chat/completions", s.base))
            .bearer_auth(key)
            .header("x-agentrl-budget", budget)
            .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
            .send()
    };
    let response = call(looping, s.key_a.clone()).await.unwrap();
    assert_eq!(response.status(), 429);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "escalate_to_human", "{body}");

    // Another tenant's budget does not exist for this one.
    let (status, body, _) = s
        .send(
            "POST",
            "/gateway/coder-8/v1/chat/completions",
            Some(&s.key_a),
            Some(&json!({"messages": [{"role": "user", "content": "hi"}]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let other = json!({"task_id": "t-2", "task": {"description": "x"}, "complexity": "trivial"});
    let (status, theirs, _) = s
        .send("POST", "/v1/budgets", Some(&s.key_b), Some(&other))
        .await;
    assert_eq!(status, 201);
    let theirs = theirs["budget_id"].as_str().unwrap().to_owned();
    let response = call(theirs, s.key_a.clone()).await.unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["field"], "x-agentrl-budget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_sessions_end_into_trajectories_after_their_tenants_timeout() {
    let s = spawn_stack().await;
    let (base_url, _) = start_upstream().await;
    let agent = json!({"agent_id": "coder-9", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_prompt": "You fix bugs."});
    let config = json!({"base_url": base_url, "request_timeout_ms": 1000,
        "session_idle_seconds": 60});
    let slower = json!({"base_url": base_url, "session_idle_seconds": 3600});
    for (key, config) in [(&s.key_a, &config), (&s.key_b, &slower)] {
        let (status, ..) = s.send("POST", "/v1/agents", Some(key), Some(&agent)).await;
        assert_eq!(status, 201);
        let (status, ..) = s
            .send("PUT", "/v1/config/gateway", Some(key), Some(config))
            .await;
        assert_eq!(status, 200);
    }
    let stack = &s;
    let say = |key: &String, session: &str, text: &str| {
        let (key, path) = (
            key.clone(),
            format!("/gateway/coder-9/sessions/{session}/v1/chat/completions"),
        );
        let body = json!({"messages": [{"role": "user", "content": text}]});
        async move { stack.send("POST", &path, Some(&key), Some(&body)).await.0 }
    };
    assert_eq!(say(&s.key_a, "s-idle", "hi").await, 200);
    assert_eq!(say(&s.key_a, "s-failed", "fail-500").await, 500);
    assert_eq!(say(&s.key_b, "s-idle", "hi").await, 200);

    // The sweep of the deployed schedule, over the same stores, at a later clock.
    let gateway = agentrl_gateway::GatewayState::new(
        s.stores.table.clone(),
        s.stores.objects.clone(),
        s.stores.queue.clone(),
        agentrl_gateway::Upstream::new(None, None),
    );
    let now = agentrl_store::clock::now_ms();
    let early = gateway.end_idle_sessions(now + 30_000).await.unwrap();
    assert_eq!((early.visited, early.ended, early.closed_empty), (3, 0, 0));
    let swept = gateway.end_idle_sessions(now + 61_000).await.unwrap();
    assert_eq!(
        (swept.visited, swept.ended, swept.closed_empty, swept.failed),
        (3, 1, 1, 0),
        "tenant-a's sessions are idle past 60 s (one never answered); tenant-b's keeps its hour"
    );
    let rows = turns(&s, "s-idle").await;
    assert_eq!(rows[1].content, "Hello");
    assert_eq!(rows[1].response_token_ids, Some(vec![11, 12]));
    let summary = crate::trajectories::indexed(&s, "s-idle").await;
    assert_eq!(
        (&summary["source"], &summary["agent_id"]),
        (&json!("gateway"), &json!("coder-9"))
    );
    assert_eq!(say(&s.key_a, "s-idle", "more").await, 409);
    let (status, ended) = s
        .a("POST", "/gateway/coder-9/sessions/s-idle/end", None)
        .await;
    assert_eq!(
        (status, &ended["trajectory_ids"]),
        (202, &json!(["s-idle"]))
    );
    let again = gateway.end_idle_sessions(now + 3_601_000).await.unwrap();
    assert_eq!(
        (again.visited, again.ended),
        (1, 1),
        "ended sessions leave the open list; tenant-b's ends past its hour"
    );
    assert_eq!(say(&s.key_b, "s-idle", "more").await, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_larger_than_a_queue_message_ends_by_claim_check() {
    let s = spawn_stack().await;
    let (base_url, _) = start_upstream().await;
    let agent = json!({"agent_id": "coder-10", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_prompt": "You fix bugs."});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);
    let config = json!({"base_url": base_url});
    assert_eq!(s.a("PUT", "/v1/config/gateway", Some(&config)).await.0, 200);
    // Three calls, each carrying 120 KiB of fresh log output: 360 KiB of conversation.
    let log = "error: the build failed again\n".repeat(4_100);
    let mut messages = Vec::new();
    for i in 0..3 {
        // The first message comes as content parts, the others as text.
        let content = if i == 0 {
            json!([{"type": "text", "text": log}])
        } else {
            json!(log)
        };
        messages.push(json!({"role": "user", "content": content}));
        let body = json!({"messages": messages});
        let (status, answer) = s
            .a(
                "POST",
                "/gateway/coder-10/sessions/s-long/v1/chat/completions",
                Some(&body),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        messages.push(answer["choices"][0]["message"].clone());
    }
    let (status, ended) = s
        .a("POST", "/gateway/coder-10/sessions/s-long/end", None)
        .await;
    assert_eq!(status, 202, "{ended}");
    let rows = turns(&s, "s-long").await;
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[0].content, log);
    let parts: Value = serde_json::from_str(rows[0].content_parts.as_deref().unwrap()).unwrap();
    assert_eq!(parts[0]["type"], "text");
    assert_eq!(rows[2].content_parts, None);
    assert_eq!(rows[4].content.len(), log.len());
    assert_eq!(rows[5].response_token_ids, Some(vec![11, 12]));
    let claimed = s.stores.objects.list("claims/").await.unwrap();
    assert_eq!(
        claimed.len(),
        1,
        "the trajectory travelled as a claim check"
    );
}

/// The embedded object store with writes that take 300 ms: a slow store.
struct SlowWrites(std::sync::Arc<dyn agentrl_store::ports::Objects>);

#[async_trait::async_trait]
impl agentrl_store::ports::Objects for SlowWrites {
    async fn put(&self, path: &str, bytes: bytes::Bytes) -> Result<(), agentrl_store::StoreError> {
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.0.put(path, bytes).await
    }

    async fn get(&self, path: &str) -> Result<Option<bytes::Bytes>, agentrl_store::StoreError> {
        self.0.get(path).await
    }

    async fn list(
        &self,
        prefix: &str,
    ) -> Result<Vec<agentrl_store::ports::ObjectMeta>, agentrl_store::StoreError> {
        self.0.list(prefix).await
    }

    async fn delete(&self, path: &str) -> Result<(), agentrl_store::StoreError> {
        self.0.delete(path).await
    }

    async fn writer(
        &self,
        path: &str,
    ) -> Result<Box<dyn agentrl_store::ports::ObjectWriter>, agentrl_store::StoreError> {
        self.0.writer(path).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_lambda_an_answer_completes_only_once_its_call_is_recorded() {
    let s = spawn_stack().await;
    let (base_url, _) = start_upstream().await;
    let agent = json!({"agent_id": "coder-11", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);
    let config = json!({"base_url": base_url});
    assert_eq!(s.a("PUT", "/v1/config/gateway", Some(&config)).await.0, 200);
    let slow: std::sync::Arc<dyn agentrl_store::ports::Objects> =
        std::sync::Arc::new(SlowWrites(s.stores.objects.clone()));
    // The gateway as the Lambda binary builds it, and as `agentrl serve` does, side by side.
    let serve = |lambda: bool| {
        let mut state = agentrl_gateway::GatewayState::new(
            s.stores.table.clone(),
            slow.clone(),
            s.stores.queue.clone(),
            agentrl_gateway::Upstream::new(None, None),
        );
        if lambda {
            state = state.records_before_done();
        }
        let options = agentrl_http::AppOptions {
            auth: agentrl_http::Auth::api_keys([(
                agentrl_core::TenantId::parse("tenant-a").unwrap(),
                s.key_a.clone(),
            )]),
            metrics: agentrl_http::Metrics::Off,
            body_limit: agentrl_gateway::MAX_BODY_BYTES,
            idempotency: None,
        };
        let app = agentrl_http::app(vec![agentrl_gateway::service(state)], options);
        async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            format!("http://{addr}/gateway/coder-11/sessions")
        }
    };
    let http = reqwest::Client::new();
    let recorded = |session: &'static str| {
        let objects = s.stores.objects.clone();
        async move {
            let prefix = format!("gateway/tenant=tenant-a/agent=coder-11/session={session}/");
            objects.list(&prefix).await.unwrap().len()
        }
    };
    for (lambda, session) in [(true, "lambda"), (false, "serve")] {
        let base = serve(lambda).await;
        let body = json!({"messages": [{"role": "user", "content": "hi"}]});
        let answer = http
            .post(format!("{base}/{session}/v1/chat/completions"))
            .bearer_auth(&s.key_a)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        answer.bytes().await.unwrap();
        let streamed = json!({"stream": true, "messages": [{"role": "user", "content": "go"}]});
        let stream = http
            .post(format!("{base}/{session}-stream/v1/chat/completions"))
            .bearer_auth(&s.key_a)
            .json(&streamed)
            .send()
            .await
            .unwrap();
        let text = String::from_utf8(stream.bytes().await.unwrap().to_vec()).unwrap();
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        let (json_calls, streamed_calls) = match session {
            "lambda" => (recorded("lambda").await, recorded("lambda-stream").await),
            _ => (recorded("serve").await, recorded("serve-stream").await),
        };
        if lambda {
            assert_eq!(
                (json_calls, streamed_calls),
                (1, 1),
                "each answer was complete only once its record was written"
            );
        } else {
            assert_eq!(
                (json_calls, streamed_calls),
                (0, 0),
                "`agentrl serve` answers first and records behind (the store is slow here)"
            );
        }
    }
}
