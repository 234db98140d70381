//! Resource limits, each tried at and just past its bound through the whole HTTP stack: the
//! request at the limit is taken, the one past it is a 4xx problem that names what is over,
//! and every answer comes back within a minute (no unbounded work, no crash).

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_stack};

/// Sends `body` as raw bytes; the status and the body read as JSON.
async fn raw(s: &Stack, path: &str, body: Vec<u8>) -> (u16, Value) {
    let send = s
        .http
        .post(format!("{}{path}", s.base))
        .bearer_auth(&s.key_a)
        .header("content-type", "application/json")
        .body(body)
        .send();
    let response = tokio::time::timeout(Duration::from_secs(60), send)
        .await
        .expect("answered within a minute")
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn post(s: &Stack, path: &str, body: &Value) -> (u16, Value) {
    raw(s, path, serde_json::to_vec(body).unwrap()).await
}

/// `{"a": {"a": … 0}}`, `depth` levels deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| json!({ "a": inner }))
}

fn assert_refused(status: u16, answer: &Value, want: u16, field: &str) {
    assert_eq!(status, want, "{answer}");
    assert_eq!(answer["status"], want, "{answer}");
    if !field.is_empty() {
        assert_eq!(answer["field"], field, "{answer}");
    }
}

#[tokio::test]
async fn every_limit_holds_at_its_bound_and_refuses_past_it() {
    let s = spawn_stack().await;

    // The default body limit (1 MiB): whitespace pads a valid budget to exactly the limit.
    let budget = json!({"task_id": "limits", "task": {"description": "Fix the flaky test"}});
    let padded = |len: usize| {
        let mut bytes = serde_json::to_vec(&budget).unwrap();
        bytes.resize(len, b' ');
        bytes
    };
    let (status, answer) = raw(&s, "/v1/budgets", padded(1 << 20)).await;
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = raw(&s, "/v1/budgets", padded((1 << 20) + 1)).await;
    assert_refused(status, &answer, 413, "");

    // JSON nesting: tool-call arguments up to 64 levels; past that a 400 naming them, and a
    // body nested far past serde's recursion limit is a 400 too, not a stack overflow.
    let trajectory = |arguments: Value| {
        json!({"trajectory_id": "deep", "agent_id": "a", "conversation_id": "c",
               "turns": [{"role": "user", "content": "go"},
                         {"role": "assistant", "content": "", "tool_call": {"name": "t", "arguments": arguments}}]})
    };
    let (status, answer) = post(&s, "/v1/trajectories", &trajectory(nested(64))).await;
    assert_eq!(status, 202, "{answer}");
    let (status, answer) = post(&s, "/v1/trajectories", &trajectory(nested(65))).await;
    assert_refused(status, &answer, 400, "turns[1].tool_call.arguments");
    let arguments = format!("{}0{}", r#"{"a":"#.repeat(100_000), "}".repeat(100_000));
    let deep = serde_json::to_string(&trajectory(json!("ARGUMENTS")))
        .unwrap()
        .replace(r#""ARGUMENTS""#, &arguments);
    let (status, answer) = raw(&s, "/v1/trajectories", deep.into_bytes()).await;
    assert_refused(status, &answer, 400, "");
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .contains("recursion limit"),
        "{answer}"
    );

    // Diff inputs: 500 files in the union of both snapshots, not 501.
    let files = |n: usize| -> Value {
        (0..n)
            .map(|i| (format!("src/m{i}.py"), json!(format!("x = {i}\n"))))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let diff = |n: usize| json!({"before": {"files": files(n)}, "after": {"files": files(n)}});
    let (status, answer) = post(&s, "/v1/diffs/score", &diff(500)).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = post(&s, "/v1/diffs/score", &diff(501)).await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["detail"].as_str().unwrap().contains("500"),
        "{answer}"
    );

    // Answer matching: a regular expression whose compiled program passes 1 MiB is refused on
    // `pattern`; one well inside runs.
    let (status, execution) = post(
        &s,
        "/v1/executions",
        &json!({"agent_id": "a", "input": "6 × 7?", "output": "42"}),
    )
    .await;
    assert_eq!(status, 201, "{execution}");
    let verifications = format!(
        "/v1/executions/{}/verifications",
        execution["execution_id"].as_str().unwrap()
    );
    let regex =
        |pattern: &str| json!({"method": "answer_match", "mode": "regex", "pattern": pattern});
    let (status, answer) = post(&s, &verifications, &regex(r"\d{1,100}")).await;
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = post(&s, &verifications, &regex(r"(?:\w{1000}){1000}")).await;
    assert_refused(status, &answer, 400, "pattern");

    // Attribution: 1,000 agents, not 1,001; full coalition tables for 20 agents, not 21.
    let agents = |n: usize| (0..n).map(|i| format!("agent-{i}")).collect::<Vec<_>>();
    let contributions = |n: usize| {
        json!({"task_id": "wide", "agents": agents(n), "total_reward": 1.0,
               "contributions": agents(n).into_iter().map(|a| (a, json!(1.0))).collect::<serde_json::Map<_, _>>()})
    };
    let (status, answer) = post(&s, "/v1/attributions", &contributions(1000)).await;
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = post(&s, "/v1/attributions", &contributions(1001)).await;
    assert_refused(status, &answer, 400, "agents");
    let table = json!({"task_id": "table", "agents": agents(21), "total_reward": 1.0,
                       "coalitions": [{"members": ["agent-0"], "value": 1.0}]});
    let (status, answer) = post(&s, "/v1/attributions", &table).await;
    assert_refused(status, &answer, 400, "");
    assert!(
        answer["detail"].as_str().unwrap().contains("20"),
        "{answer}"
    );

    // Learning events: 100 per request, not 101.
    let events = |n: usize| -> Value {
        (0..n)
            .map(|i| {
                json!({"event_id": format!("e-{i}"), "type": "feedback.created",
                            "agent_id": "a", "user_id": "u", "value": 0.5})
            })
            .collect::<Vec<_>>()
            .into()
    };
    let (status, answer) = post(&s, "/v1/events", &events(100)).await;
    assert_eq!(status, 202, "{answer}");
    let (status, answer) = post(&s, "/v1/events", &events(101)).await;
    assert_eq!(status, 400, "{answer}");
    s.stop().await;
}
