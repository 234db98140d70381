//! The ledger invariant under concurrent reporters, on SQLite and on DynamoDB (moto):
//! `consumed_tokens` = Σ accepted over distinct reports ≤ `max_total_tokens`.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

pub(crate) async fn hammer(s: &Stack, reporters: usize, each: usize) {
    let b = s
        .create(
            "Refactor the storage layer to remove the race condition",
            Some("complex"),
        )
        .await;
    let id = b["budget_id"].as_str().unwrap().to_owned();
    let path = format!("/v1/budgets/{id}/consumption");
    let tasks: Vec<_> = (0..reporters)
        .map(|r| {
            let (http, url, key) = (s.http.clone(), format!("{}{path}", s.base), s.key_a.clone());
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for i in 0..each {
                    // Every report is sent twice (at-least-once clients): it must count once.
                    let report_id = format!("r{r}-{i}");
                    let tokens = 97 + (r * 31 + i * 17) % 400;
                    for _ in 0..2 {
                        let resp = http
                            .post(&url)
                            .bearer_auth(&key)
                            .json(&json!({"report_id": report_id, "tokens": tokens}))
                            .send()
                            .await
                            .unwrap();
                        assert_eq!(resp.status(), 200);
                        let d: Value = resp.json().await.unwrap();
                        answers.push((report_id.clone(), d));
                    }
                }
                answers
            })
        })
        .collect();
    let mut accepted: HashMap<String, u64> = HashMap::new();
    for t in tasks {
        for (report_id, d) in t.await.unwrap() {
            let a = d["accepted_tokens"].as_u64().unwrap();
            assert!(d["consumed_tokens"].as_u64().unwrap() <= 16_000);
            if let Some(prev) = accepted.insert(report_id.clone(), a) {
                assert_eq!(prev, a, "a repeated report got another answer");
            }
        }
    }
    let (_, b) = s.a("GET", &format!("/v1/budgets/{id}"), None).await;
    let consumed = b["consumed_tokens"].as_u64().unwrap();
    assert_eq!(consumed, accepted.values().sum::<u64>());
    assert!(consumed <= 16_000);
    assert_eq!(
        consumed, 16_000,
        "the offered load exceeds the ceiling, so it must be reached exactly"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reporters_never_overspend_on_sqlite() {
    let s = spawn_stack().await;
    hammer(&s, 24, 6).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reporters_never_overspend_on_dynamodb() {
    let s = spawn_aws_stack().await;
    hammer(&s, 12, 6).await;
    s.stop().await;
}
