//! Reward verification over the local stack, on SQLite and on DynamoDB (moto): executions,
//! every verifier, the composite reward, training examples, idempotency, concurrent
//! verifications and tenant isolation.

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

async fn execution(s: &Stack, output: &str) -> String {
    let (status, created) = s
        .a(
            "POST",
            "/v1/executions",
            Some(&json!({
                "agent_id": "coder-7", "agent_version": "v3",
                "input": "What is 6 * 7?", "output": output,
                "tokens_used": 120, "cost": 0.002, "status": "success", "latency_ms": 900,
            })),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    created["execution_id"].as_str().unwrap().to_owned()
}

async fn verify(s: &Stack, id: &str, body: Value) -> (u16, Value) {
    s.a(
        "POST",
        &format!("/v1/executions/{id}/verifications"),
        Some(&body),
    )
    .await
}

async fn reward(s: &Stack, id: &str) -> Value {
    let (status, r) = s
        .a("GET", &format!("/v1/executions/{id}/reward"), None)
        .await;
    assert_eq!(status, 200, "{r}");
    r
}

async fn rewards_end_to_end(s: &Stack) {
    let id = execution(s, "The answer is 42.").await;
    let (status, v) = verify(
        s,
        &id,
        json!({"method": "answer_match", "mode": "regex", "pattern": ".*\\b42\\b.*"}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["value"].as_f64()),
        (Some("ok"), Some(1.0))
    );
    let (status, v) = verify(
        s,
        &id,
        json!({"method": "test_execution", "tests_passed": 3, "tests_total": 4}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["value"], 0.75);
    // Abstentions are recorded and listed, never scored.
    let (status, v) = verify(s, &id, json!({"method": "user_feedback", "text": "hmm"})).await;
    assert_eq!(
        (status, v["status"].as_str()),
        (201, Some("abstain")),
        "{v}"
    );
    assert_eq!(v["value"], Value::Null);
    let r = reward(s, &id).await;
    let (c1, c2) = (1.0, r["verifications"][1]["confidence"].as_f64().unwrap());
    let expected = (c1 * 1.0 + c2 * 0.75) / (c1 + c2);
    assert!(
        (r["reward"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{r}"
    );
    assert_eq!(r["verifications"].as_array().unwrap().len(), 3);
    assert_eq!(
        (r["ok"].as_u64(), r["abstained"].as_u64()),
        (Some(2), Some(1))
    );

    // Malformed input records nothing and names the field.
    let (status, p) = verify(
        s,
        &id,
        json!({"method": "test_execution", "junit_xml": "<testsuite><testcase name=\"a\">"}),
    )
    .await;
    assert_eq!(
        (status, p["field"].as_str()),
        (400, Some("junit_xml")),
        "{p}"
    );
    let (status, p) = verify(s, &id, json!({"method": "astrology"})).await;
    assert_eq!(status, 400, "{p}");
    assert_eq!(
        reward(s, &id).await["verifications"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // The example moves with the reward; a safety violation sends it to the minimum.
    let (status, page) = s
        .a("GET", "/v1/training-examples?type=positive", None)
        .await;
    assert_eq!(status, 200);
    assert!(
        page["examples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["execution_id"] == id.as_str())
    );
    let (status, v) = verify(
        s,
        &id,
        json!({"method": "automated_check", "checks": {"compiles": true, "safety": false}}),
    )
    .await;
    assert_eq!(
        (status, v["safety_violation"].as_bool()),
        (201, Some(true)),
        "{v}"
    );
    let r = reward(s, &id).await;
    assert_eq!(
        (r["reward"].as_f64(), r["safety_override"].as_bool()),
        (Some(0.0), Some(true))
    );
    assert_eq!(r["example_type"], "negative");
    let (_, page) = s
        .a("GET", "/v1/training-examples?type=positive", None)
        .await;
    assert!(
        !page["examples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["execution_id"] == id.as_str())
    );
    let resp = s
        .http
        .get(format!(
            "{}/v1/training-examples/export?type=negative&agent_id=coder-7",
            s.base
        ))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    let lines = resp.text().await.unwrap();
    let line: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(
        (
            line["prompt"].as_str(),
            line["completion"].as_str(),
            line["type"].as_str()
        ),
        (
            Some("What is 6 * 7?"),
            Some("The answer is 42."),
            Some("negative")
        )
    );

    // One agent's examples of every type, without `type`.
    for (agent, listed) in [("coder-7", true), ("coder-8", false)] {
        let (status, page) = s
            .a(
                "GET",
                &format!("/v1/training-examples?agent_id={agent}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{page}");
        let ids: Vec<&str> = page["examples"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["execution_id"].as_str())
            .collect();
        assert_eq!(ids.contains(&id.as_str()), listed, "{agent}: {page}");
    }

    // Another tenant sees nothing of it.
    for path in [
        format!("/v1/executions/{id}"),
        format!("/v1/executions/{id}/reward"),
    ] {
        let (status, _, _) = s.send("GET", &path, Some(&s.key_b), None).await;
        assert_eq!(status, 404);
    }
    let (status, _, _) = s
        .send(
            "POST",
            &format!("/v1/executions/{id}/verifications"),
            Some(&s.key_b),
            Some(&json!({"method": "judge", "score": 1.0, "confidence": 0.9})),
        )
        .await;
    assert_eq!(status, 404);
    let (_, page, _) = s
        .send("GET", "/v1/training-examples", Some(&s.key_b), None)
        .await;
    assert_eq!(page["examples"], json!([]));
    let (status, problem) = s
        .a("GET", "/v1/training-examples?cursor=not-ours", None)
        .await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("cursor")),
        "{problem}"
    );
}

/// Concurrent verifications of one execution all count, and the stored reward is the one
/// computed from all of them.
async fn concurrent_verifications(s: &Stack) {
    let id = execution(s, "42").await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (http, url, key) = (
                s.http.clone(),
                format!("{}/v1/executions/{id}/verifications", s.base),
                s.key_a.clone(),
            );
            tokio::spawn(async move {
                let body =
                    json!({"method": "judge", "score": f64::from(i) / 7.0, "confidence": 0.9});
                let resp = http
                    .post(&url)
                    .bearer_auth(&key)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status(), 201);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let r = reward(s, &id).await;
    assert_eq!(r["verifications"].as_array().unwrap().len(), 8);
    assert!((r["reward"].as_f64().unwrap() - 0.5).abs() < 1e-9, "{r}");
    let (_, e) = s.a("GET", &format!("/v1/executions/{id}"), None).await;
    assert_eq!(
        (e["verifications"].as_u64(), e["reward"].as_f64()),
        (Some(8), r["reward"].as_f64())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewards_on_sqlite() {
    let s = spawn_stack().await;
    rewards_end_to_end(&s).await;
    concurrent_verifications(&s).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewards_on_dynamodb() {
    let s = spawn_aws_stack().await;
    rewards_end_to_end(&s).await;
    concurrent_verifications(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn a_retried_verification_is_recorded_once() {
    let s = spawn_stack().await;
    let id = execution(&s, "42").await;
    let url = format!("{}/v1/executions/{id}/verifications", s.base);
    let send = |body: Value| {
        s.http
            .post(&url)
            .bearer_auth(&s.key_a)
            .header("idempotency-key", "verify-1")
            .json(&body)
            .send()
    };
    let body = json!({"method": "answer_match", "mode": "exact", "expected": "42"});
    let first: Value = send(body.clone()).await.unwrap().json().await.unwrap();
    let again = send(body).await.unwrap();
    assert_eq!(again.headers()["idempotency-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(first["verification_id"], again["verification_id"]);
    let other = send(json!({"method": "answer_match", "mode": "exact", "expected": "41"}))
        .await
        .unwrap();
    assert_eq!(other.status(), 422);
    assert_eq!(
        reward(&s, &id).await["verifications"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    s.stop().await;
}
