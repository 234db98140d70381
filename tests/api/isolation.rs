//! The tenant-isolation sweep, generated from the OpenAPI document: tenant A creates one of
//! every kind of resource; then tenant B calls every operation of the document, with every id
//! A holds in every path parameter. B never sees A's data (reads of A's resources are 404,
//! lists and settings carry nothing of A's), and nothing B does changes what A reads back.

use std::{collections::BTreeSet, time::Duration};

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_stack};

/// Strings only tenant A's data contains.
const MARK: &str = "a-secret-7f3c";

async fn created(s: &Stack, path: &str, body: Value) -> Value {
    let (status, answer) = s.a("POST", path, Some(&body)).await;
    assert!((200..300).contains(&status), "{path}: {status} {answer}");
    answer
}

/// Every string under an `id` or `*_id` key.
fn ids(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(fields) => {
            for (key, v) in fields {
                if (key == "id" || key.ends_with("_id")) && v.is_string() {
                    out.insert(v.as_str().unwrap_or_default().to_owned());
                }
                ids(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| ids(v, out)),
        _ => {}
    }
}

/// A's resources, one of each kind; returns the paths A reads them back at.
async fn tenant_a_resources(s: &Stack) -> (Vec<String>, BTreeSet<String>) {
    let mut owned = BTreeSet::new();
    let mut reads = Vec::new();
    let budget = created(
        s,
        "/v1/budgets",
        json!({"task_id": format!("{MARK}-task"),
        "task": {"description": format!("Fix the pager ({MARK})")}}),
    )
    .await;
    reads.push(format!(
        "/v1/budgets/{}",
        budget["budget_id"].as_str().unwrap()
    ));
    let execution = created(
        s,
        "/v1/executions",
        json!({"agent_id": "a-agent",
        "input": format!("What is 6 * 7? {MARK}"), "output": "42"}),
    )
    .await;
    let execution_id = execution["execution_id"].as_str().unwrap().to_owned();
    created(
        s,
        &format!("/v1/executions/{execution_id}/verifications"),
        json!({"method": "answer_match", "mode": "exact", "expected": "42"}),
    )
    .await;
    reads.push(format!("/v1/executions/{execution_id}"));
    reads.push(format!("/v1/executions/{execution_id}/reward"));
    let evaluation = created(
        s,
        "/v1/evaluations",
        json!({"execution_id": execution_id,
        "task_type": "text", "output": format!("forty-two {MARK}")}),
    )
    .await;
    let evaluation_id = evaluation["evaluation_id"].as_str().unwrap().to_owned();
    reads.push(format!("/v1/evaluations/{evaluation_id}"));
    let attribution = created(
        s,
        "/v1/attributions",
        json!({"task_id": format!("{MARK}-team"),
        "agents": ["a1", "a2"], "total_reward": 3.0,
        "coalitions": [{"members": ["a1"], "value": 1}, {"members": ["a2"], "value": 1},
                       {"members": ["a1", "a2"], "value": 3}]}),
    )
    .await;
    reads.push(format!(
        "/v1/attributions/{}",
        attribution["task_id"].as_str().unwrap()
    ));
    let session = created(
        s,
        "/v1/attributions/sessions",
        json!({"task_id": format!("{MARK}-session"),
        "agents": ["a1", "a2", "a3"], "total_reward": 1.0, "max_permutations": 50}),
    )
    .await;
    reads.push(format!(
        "/v1/attributions/sessions/{}",
        session["session_id"].as_str().unwrap()
    ));
    let agent = created(
        s,
        "/v1/agents",
        json!({"agent_id": "a-agent", "name": format!("Agent {MARK}"),
        "type": "coding", "model": {"provider": "self-hosted", "name": "tiny"},
        "base_prompt": format!("You fix bugs. {MARK}"), "base_model": "tiny"}),
    )
    .await;
    reads.push(format!(
        "/v1/agents/{}",
        agent["agent_id"].as_str().unwrap()
    ));
    reads.push("/v1/agents/a-agent/versions".to_owned());
    created(s, "/v1/events", json!([{"event_id": format!("{MARK}-e1"), "type": "feedback.created",
        "agent_id": "a-agent", "user_id": "alice", "occurred_at_ms": 1_767_225_600_000_i64, "value": 0.5}])).await;
    created(s, "/v1/trajectories", json!({"trajectory_id": format!("{MARK}-t1"), "agent_id": "a-agent",
        "conversation_id": "c1", "turns": [{"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "done"}], "final_outcome": {"success": true, "reward": 1.0}})).await;
    for (path, body) in [
        (
            "/v1/config/judges",
            json!({"critic_model": format!("{MARK}-critic")}),
        ),
        (
            "/v1/config/rewards",
            json!({"safety_checks": [format!("{MARK}-check")]}),
        ),
    ] {
        let (status, answer) = s.a("PUT", path, Some(&body)).await;
        assert_eq!(status, 200, "{path}: {answer}");
    }
    // Let the evaluation finish (no provider: its judges abstain) so A's reads are stable.
    for _ in 0..100 {
        let (_, e) = s
            .a("GET", &format!("/v1/evaluations/{evaluation_id}"), None)
            .await;
        if e["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for path in &reads {
        let (status, answer) = s.a("GET", path, None).await;
        assert_eq!(status, 200, "{path}: {answer}");
        ids(&answer, &mut owned);
    }
    owned.retain(|id| !id.is_empty());
    (reads, owned)
}

/// A body that would succeed on B's own resource of that kind: so a write that is not
/// refused for A's id would really change A's data (an empty body would only be a 400).
fn write_body(method: &str, template: &str) -> Option<Value> {
    let body = match (method, template) {
        ("get", _) => return None,
        (_, "/v1/budgets/{id}/consumption") => json!({"report_id": "b-1", "tokens": 5}),
        (_, "/v1/budgets/{id}/complete") => json!({"outcome": "failure"}),
        (_, "/v1/executions/{id}/verifications") => {
            json!({"method": "answer_match", "mode": "exact", "expected": "0"})
        }
        (_, "/v1/attributions/sessions/{id}/values") => {
            json!({"values": [{"members": ["a1"], "value": 9}]})
        }
        ("patch", "/v1/agents/{id}") => json!({"name": "B was here"}),
        (_, "/v1/agents/{id}/learning/settings") => json!({"trusted": true}),
        _ => json!({}),
    };
    Some(body)
}

/// Writes that may only ever touch an existing resource of the caller: on A's ids, B must
/// get no 2xx.
const OWNED_WRITES: [&str; 5] = [
    "/v1/budgets/{id}/consumption",
    "/v1/budgets/{id}/complete",
    "/v1/executions/{id}/verifications",
    "/v1/attributions/sessions/{id}/values",
    "/v1/agents/{id}",
];

async fn snapshot(s: &Stack, reads: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for path in reads {
        out.push(s.a("GET", path, None).await.1);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_b_reaches_nothing_of_tenant_a_through_any_operation() {
    let s = spawn_stack().await;
    let (reads, owned) = tenant_a_resources(&s).await;
    let before = snapshot(&s, &reads).await;
    let (_, doc, _) = s.send("GET", "/openapi.json", None, None).await;

    let leaks = |answer: &Value| {
        let text = answer.to_string();
        text.contains(MARK)
            || owned
                .iter()
                .any(|id| id.len() >= 8 && text.contains(id.as_str()))
    };
    let mut calls = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, _) in item.as_object().unwrap() {
            let concrete: Vec<String> = if template.contains('{') {
                owned
                    .iter()
                    .map(|id| {
                        let mut path = template.clone();
                        while let (Some(open), Some(close)) = (path.find('{'), path.find('}')) {
                            path.replace_range(open..=close, id);
                        }
                        path
                    })
                    .collect()
            } else {
                vec![template.clone()]
            };
            for path in concrete {
                let body = write_body(method, template);
                let (status, answer, _) = s
                    .send(&method.to_uppercase(), &path, Some(&s.key_b), body.as_ref())
                    .await;
                calls += 1;
                assert!(status < 500, "{method} {path} as B: {status} {answer}");
                // A write by B may create B's own resource under the same id; it must never
                // answer with A's.
                assert!(
                    !leaks(&answer),
                    "{method} {path} as B leaked A's data: {answer}"
                );
                if method == "get" && reads.contains(&path) {
                    assert_eq!(status, 404, "GET {path} as B: {answer}");
                }
                if method != "get"
                    && OWNED_WRITES.contains(&template.as_str())
                    && owned.iter().any(|id| path.contains(id.as_str()))
                {
                    assert!(
                        !(200..300).contains(&status),
                        "{method} {path} as B: {status} {answer}"
                    );
                }
            }
        }
    }
    assert!(calls > 100, "{calls} calls");
    eprintln!(
        "isolation: {calls} calls as tenant B with {} of tenant A's ids",
        owned.len()
    );
    assert_eq!(snapshot(&s, &reads).await, before, "B changed what A reads");
    s.stop().await;
}
