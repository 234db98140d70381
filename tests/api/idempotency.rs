//! `Idempotency-Key` on the local stack: replay, mismatch, in-progress, per tenant.

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_stack};

fn task(description: &str) -> Value {
    json!({"task_id": "t-idem", "task": {"description": description}})
}

async fn create(
    s: &Stack,
    key: &str,
    idem: &str,
    body: &Value,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let resp = s
        .http
        .post(format!("{}/v1/budgets", s.base))
        .bearer_auth(key)
        .header("idempotency-key", idem)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, resp.json().await.unwrap(), headers)
}

#[tokio::test]
async fn a_retried_create_returns_the_first_answer_and_creates_nothing_more() {
    let s = spawn_stack().await;
    let body = task("Fix the off-by-one error in the pagination helper");
    let (status, first, headers) = create(&s, &s.key_a, "create-1", &body).await;
    assert_eq!(status, 201);
    assert!(headers.get("idempotency-replayed").is_none());
    let (status, again, headers) = create(&s, &s.key_a, "create-1", &body).await;
    assert_eq!(status, 201);
    assert_eq!(headers["idempotency-replayed"], "true");
    assert_eq!(again, first, "the same budget, not a second one");

    let (status, problem, _) =
        create(&s, &s.key_a, "create-1", &task("Another task entirely")).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (422, Some("idempotency-key"))
    );

    // Keys are per tenant: tenant B's request with the same key is its own.
    let (status, theirs, _) = create(&s, &s.key_b, "create-1", &body).await;
    assert_eq!(status, 201);
    assert_ne!(theirs["budget_id"], first["budget_id"]);

    // A client error is replayed too (it would fail the same way again).
    let bad = json!({"task_id": "", "task": {"description": "x"}});
    assert_eq!(create(&s, &s.key_a, "bad-1", &bad).await.0, 400);
    let (status, _, headers) = create(&s, &s.key_a, "bad-1", &bad).await;
    assert_eq!(
        (status, headers.get("idempotency-replayed").is_some()),
        (400, true)
    );

    let (status, problem, _) = create(&s, &s.key_a, "bad key with spaces", &body).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("idempotency-key"))
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_duplicates_run_the_handler_once() {
    let s = spawn_stack().await;
    let body = task("Refactor the storage layer to remove the race condition");
    let attempts: Vec<_> = (0..8)
        .map(|_| {
            let (http, url, key, body) = (
                s.http.clone(),
                format!("{}/v1/budgets", s.base),
                s.key_a.clone(),
                body.clone(),
            );
            tokio::spawn(async move {
                let resp = http
                    .post(url)
                    .bearer_auth(key)
                    .header("idempotency-key", "race")
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = resp.status().as_u16();
                (status, resp.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for a in attempts {
        let (status, v) = a.await.unwrap();
        match status {
            201 => {
                ids.insert(v["budget_id"].as_str().unwrap().to_owned());
            }
            409 => assert!(v["detail"].as_str().unwrap().contains("in progress"), "{v}"),
            other => panic!("unexpected {other}: {v}"),
        }
    }
    assert_eq!(
        ids.len(),
        1,
        "one budget, whatever the interleaving: {ids:?}"
    );
    s.stop().await;
}
