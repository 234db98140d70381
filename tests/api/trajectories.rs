//! The trajectory index and read-back, on SQLite and on DynamoDB (moto): trajectories of two
//! agents and two tenants posted with tool calls and rewards, listed newest first with every
//! filter and page by page, one read back with its turns equal to what was posted and to the
//! turn table's rows, another tenant's id a 404, and a trajectory delivered again (a repost,
//! the same envelope sent to the queue) indexed once.

use std::time::Duration;

use agentrl_core::envelope::{Envelope, Source};
use serde_json::{Value, json};

use crate::gateway::rows_where;
use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

fn trajectory(id: &str, agent: &str, conversation: &str, version: &str, outcome: Value) -> Value {
    let mut t = json!({
        "trajectory_id": id, "agent_id": agent, "conversation_id": conversation,
        "user_id": "alice@example.com", "policy_version": version,
        "tools": [{"name": "read_file", "description": "Reads a file",
                   "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}],
        "turns": [
            {"role": "user", "content": "The pager skips the last page; mail ops@example.com when fixed."},
            {"role": "assistant", "content": "Reading the pager.",
             "tool_calls": [{"id": "call-1", "name": "read_file", "arguments": {"path": "src/pager.rs"}}],
             "input_tokens": 120, "output_tokens": 14, "reward": 0.5},
            {"role": "tool", "tool_call_id": "call-1", "content": "", "tool_result": "fn pages(n: usize) -> usize { n / 10 }"},
            {"role": "assistant", "content": "The bound should round up: fixed with `n.div_ceil(10)`.",
             "input_tokens": 160, "output_tokens": 22}
        ]
    });
    if !outcome.is_null() {
        t["final_outcome"] = outcome;
    }
    t
}

/// Polls `GET path` with `key` until the page holds `n` trajectories; the page.
async fn listed(s: &Stack, key: &str, path: &str, n: usize) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let (status, page, _) = s.send("GET", path, Some(key), None).await;
        assert_eq!(status, 200, "{page}");
        if page["trajectories"].as_array().unwrap().len() == n {
            return page;
        }
        last = page;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} never listed {n}: {last}");
}

fn ids(page: &Value) -> Vec<&str> {
    page["trajectories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trajectory_id"].as_str().unwrap())
        .collect()
}

async fn ids_of(s: &Stack, query: &str) -> Vec<String> {
    let (status, page) = s.a("GET", &format!("/v1/trajectories?{query}"), None).await;
    assert_eq!(status, 200, "{query}: {page}");
    ids(&page).into_iter().map(str::to_owned).collect()
}

async fn listed_and_read_back(s: Stack) {
    let posted = [
        trajectory(
            "a-1",
            "coder-7",
            "c-1",
            "v1",
            json!({"success": true, "reward": 0.75}),
        ),
        trajectory(
            "a-2",
            "coder-7",
            "c-1",
            "v2",
            json!({"success": false, "reward": 0.0}),
        ),
        trajectory("tutor/3", "tutor-2", "c-2", "v1", Value::Null),
    ];
    let mut message_ids = Vec::new();
    for t in &posted {
        let (status, accepted) = s.a("POST", "/v1/trajectories", Some(t)).await;
        assert_eq!(status, 202, "{accepted}");
        message_ids.push(accepted["message_id"].as_str().unwrap().to_owned());
        // Distinct acceptance times, so newest first is one order.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let b = trajectory(
        "b-1",
        "coder-7",
        "c-1",
        "v1",
        json!({"success": true, "reward": 1.0}),
    );
    let (status, _, _) = s
        .send("POST", "/v1/trajectories", Some(&s.key_b), Some(&b))
        .await;
    assert_eq!(status, 202);

    let page = listed(&s, &s.key_a, "/v1/trajectories", 3).await;
    assert_eq!(ids(&page), ["tutor/3", "a-2", "a-1"]);
    assert_eq!(page["next_cursor"], Value::Null);
    let page_b = listed(&s, &s.key_b, "/v1/trajectories", 1).await;
    assert_eq!(ids(&page_b), ["b-1"]);

    let summary = &page["trajectories"][2];
    assert_eq!(summary["agent_id"], "coder-7");
    assert_eq!(summary["conversation_id"], "c-1");
    assert_eq!(summary["policy_version"], "v1");
    assert_eq!(summary["source"], "api");
    assert_eq!(summary["success"], true);
    assert_eq!(summary["reward"], 0.75);
    assert_eq!(summary["turn_count"], 4);
    assert_eq!(summary["tool_call_count"], 1);
    assert_eq!(summary["input_tokens"], 280);
    assert_eq!(summary["output_tokens"], 36);
    assert_eq!(summary["message_id"], message_ids[0].as_str());
    // Pseudonymised as stored: the user is a keyed hash, never the address.
    let user = summary["user_id"].as_str().unwrap();
    assert!(!user.contains("alice") && user.len() == 32, "{user}");
    let objects = summary["objects"].as_array().unwrap();
    assert!(
        objects[0]
            .as_str()
            .unwrap()
            .starts_with("trajectories/tenant=")
    );
    let third = &page["trajectories"][0];
    assert_eq!(
        (&third["success"], &third["reward"]),
        (&Value::Null, &Value::Null)
    );

    // Filters: by partition (agent, session), while paging (version, outcome), by time.
    assert_eq!(ids_of(&s, "agent_id=coder-7").await, ["a-2", "a-1"]);
    assert_eq!(ids_of(&s, "session_id=c-1").await, ["a-2", "a-1"]);
    assert!(
        ids_of(&s, "session_id=c-1&agent_id=tutor-2")
            .await
            .is_empty()
    );
    assert_eq!(ids_of(&s, "version=v1").await, ["tutor/3", "a-1"]);
    assert_eq!(ids_of(&s, "outcome=success").await, ["a-1"]);
    assert_eq!(ids_of(&s, "outcome=failure").await, ["a-2"]);
    assert_eq!(ids_of(&s, "outcome=unknown").await, ["tutor/3"]);
    assert_eq!(ids_of(&s, "agent_id=nobody").await, Vec::<String>::new());
    let at = |i: usize| page["trajectories"][i]["received_at_ms"].as_u64().unwrap();
    assert_eq!(
        ids_of(&s, &format!("from={}&to={}", at(1), at(0))).await,
        ["a-2"]
    );
    assert_eq!(
        ids_of(&s, &format!("from={}", at(1))).await,
        ["tutor/3", "a-2"]
    );

    // Page by page: a cursor per page, the same order.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/trajectories?limit=1&cursor={}", urlencode(c)),
            None => "/v1/trajectories?limit=1".to_owned(),
        };
        let (status, page) = s.a("GET", &path, None).await;
        assert_eq!(status, 200, "{page}");
        seen.extend(ids(&page).into_iter().map(str::to_owned));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, ["tutor/3", "a-2", "a-1"]);

    for (query, field) in [
        ("outcome=maybe", "outcome"),
        ("limit=0", "limit"),
        ("from=x", "from"),
        ("cursor=not-a-cursor", "cursor"),
    ] {
        let (status, problem) = s.a("GET", &format!("/v1/trajectories?{query}"), None).await;
        assert_eq!(status, 400, "{query}: {problem}");
        assert_eq!(problem["field"], field, "{problem}");
    }

    // One read back: its turns as posted, their rewards as the turn table holds them.
    let (status, detail) = s.a("GET", "/v1/trajectories/a-1", None).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["trajectory_id"], "a-1");
    assert_eq!(detail["reward"], 0.75);
    assert_eq!(detail["tools"][0]["function"]["name"], "read_file");
    let turns = detail["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 4);
    let sent = posted[0]["turns"].as_array().unwrap();
    for (i, (turn, sent)) in turns.iter().zip(sent).enumerate() {
        assert_eq!(turn["turn_index"], i);
        assert_eq!(turn["role"], sent["role"]);
    }
    assert_eq!(
        turns[0]["content"],
        "The pager skips the last page; mail [EMAIL] when fixed."
    );
    let call = &turns[1]["tool_calls"][0];
    assert_eq!(
        (&call["id"], &call["name"]),
        (&json!("call-1"), &json!("read_file"))
    );
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, sent[1]["tool_calls"][0]["arguments"]);
    assert_eq!(turns[1]["input_tokens"], 120);
    assert_eq!(turns[2]["tool_call_id"], "call-1");
    assert_eq!(turns[2]["tool_result"], sent[2]["tool_result"]);
    assert_eq!(turns[3]["content"], sent[3]["content"]);
    let rows = rows_where(&s, 100, "a-1's rows", |r| r.message_id == message_ids[0]).await;
    for (turn, row) in turns.iter().zip(&rows) {
        let reward = &turn["reward"];
        for (name, stored) in [
            ("total", row.turn_reward),
            ("information_gain", row.reward_information_gain),
            ("format", row.reward_format),
            ("progress", row.reward_progress),
            ("tool_call_valid", row.tool_call_valid),
            ("tool_choice", row.tool_choice),
            ("tool_error_handling", row.tool_error_handling),
            ("tool_efficiency", row.tool_efficiency),
        ] {
            assert!(
                same(reward[name].as_f64(), stored),
                "{name}: {reward} vs {stored:?}"
            );
        }
        assert_eq!(
            reward["progress_source"].as_str(),
            row.progress_source.as_deref()
        );
        assert_eq!(turn["safety_violation"], row.safety_violation);
    }
    // The assistant's own reward (0.5) is its progress, mapped to [0, 1]; its call is valid.
    assert_eq!(turns[1]["reward"]["progress"], 0.75);
    assert_eq!(turns[1]["reward"]["tool_call_valid"], 1.0);
    assert_eq!(turns[1]["reward"]["information_gain_source"], "heuristic");
    let (status, detail) = s.a("GET", "/v1/trajectories/tutor%2F3", None).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["agent_id"], "tutor-2");

    // Another tenant's id is a 404, like a missing one.
    for (key, path) in [
        (&s.key_b, "/v1/trajectories/a-1"),
        (&s.key_a, "/v1/trajectories/b-1"),
        (&s.key_a, "/v1/trajectories/nothing"),
    ] {
        let (status, problem, headers) = s.send("GET", path, Some(key.as_str()), None).await;
        assert_eq!(status, 404, "{path}: {problem}");
        assert_eq!(headers["content-type"], "application/problem+json");
    }

    // Delivered again: the same envelope on the queue, and the same trajectory posted again.
    let received_at_ms = page["trajectories"][2]["received_at_ms"].as_i64().unwrap();
    let envelope = Envelope::new(
        "tenant-a",
        received_at_ms,
        serde_json::from_value(posted[0].clone()).unwrap(),
        Source::Api,
    );
    let resent = s
        .stores
        .queue
        .send(&serde_json::to_string(&envelope).unwrap())
        .await
        .unwrap();
    let (status, reposted) = s.a("POST", "/v1/trajectories", Some(&posted[0])).await;
    assert_eq!(status, 202);
    let reposted = reposted["message_id"].as_str().unwrap().to_owned();
    for message in [resent, reposted] {
        rows_where(&s, 100, "the copy's rows", |r| r.message_id == message).await;
    }
    // The worker indexes right after writing the rows: give it that moment.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        ids_of(&s, "").await,
        ["tutor/3", "a-2", "a-1"],
        "no second summary"
    );
    let (_, detail) = s.a("GET", "/v1/trajectories/a-1", None).await;
    assert_eq!(detail["message_id"], message_ids[0].as_str());
    assert_eq!(detail["turns"].as_array().unwrap().len(), 4);
    s.stop().await;
}

/// `id` of tenant-a as `GET /v1/trajectories/{id}` shows it, once the worker indexed it.
pub(crate) async fn indexed(s: &Stack, id: &str) -> Value {
    let path = format!("/v1/trajectories/{}", urlencode(id));
    for _ in 0..200 {
        let (status, detail) = s.a("GET", &path, None).await;
        if status == 200 {
            return detail;
        }
        assert_eq!(status, 404, "{detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{id} was never indexed");
}

/// Equal up to the last place: serde_json's default parser (the client's) may read a
/// shortest-round-trip number one unit off.
fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * a.abs().max(b.abs()),
        (a, b) => a == b,
    }
}

/// A cursor as a query value.
fn urlencode(s: &str) -> String {
    agentrl_http::query::encode_component(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn trajectories_are_listed_and_read_back_on_sqlite() {
    listed_and_read_back(spawn_stack().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn trajectories_are_listed_and_read_back_on_dynamodb() {
    listed_and_read_back(spawn_aws_stack().await).await;
}
