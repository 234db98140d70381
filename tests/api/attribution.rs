//! The attribution routes over DynamoDB (moto) through the local stack: the storage layout
//! (transactions, the time-ordered history, session parts, the contribution counter) on the
//! AWS adapter, not only on SQLite.

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attributions_sessions_and_rankings_work_on_dynamodb() {
    let s = spawn_aws_stack().await;
    for i in 0..3 {
        let (status, a) = s
            .a(
                "POST",
                "/v1/attributions",
                Some(&json!({
                    "task_id": format!("task-{i}"),
                    "agents": ["a", "b", "c"],
                    "total_reward": 12.0,
                    "coalitions": [
                        {"members": ["a"], "value": 0}, {"members": ["b"], "value": 0},
                        {"members": ["c"], "value": 0}, {"members": ["a", "b"], "value": 0},
                        {"members": ["a", "c"], "value": 1}, {"members": ["b", "c"], "value": 1},
                        {"members": ["a", "b", "c"], "value": 1}
                    ]
                })),
            )
            .await;
        assert_eq!(status, 201, "{a}");
        let c = &a["contributions"];
        assert!((c["c"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12, "{a}");
        let total: f64 = a["rewards"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert!((total - 12.0).abs() < 1e-9);
    }
    let (status, _, _) = s
        .send("GET", "/v1/attributions/task-1", Some(&s.key_b), None)
        .await;
    assert_eq!(status, 404, "another tenant's attribution is a 404");

    let (first, next) = ndjson_page(&s, "limit=2").await;
    let next = next.expect("a second page");
    let (second, last) = ndjson_page(&s, &format!("limit=2&cursor={next}")).await;
    assert_eq!(last, None);
    let tasks: Vec<&str> = first
        .iter()
        .chain(&second)
        .map(|a| a["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, ["task-0", "task-1", "task-2"]);
    let (status, problem) = s.a("GET", "/v1/attributions?cursor=not-ours", None).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("cursor")),
        "{problem}"
    );

    // An interactive session: post the true values of what it proposes until it is done.
    let agents: Vec<String> = (0..6).map(|i| format!("g{i}")).collect();
    let weight = |m: &[Value]| {
        m.iter()
            .map(|id| id.as_str().unwrap()[1..].parse::<f64>().unwrap() + 1.0)
            .sum::<f64>()
    };
    let (status, mut state) = s
        .a(
            "POST",
            "/v1/attributions/sessions",
            Some(&json!({"task_id": "team", "agents": agents, "total_reward": 1.0, "max_permutations": 200})),
        )
        .await;
    assert_eq!(status, 201, "{state}");
    let id = state["session_id"].as_str().unwrap().to_owned();
    for _ in 0..50 {
        let proposals = state["proposals"].as_array().unwrap().clone();
        if proposals.is_empty() {
            break;
        }
        let values: Vec<Value> = proposals
            .iter()
            .map(|p| json!({"coalition": p["coalition"], "value": weight(p["coalition"].as_array().unwrap())}))
            .collect();
        let (status, next) = s
            .a(
                "POST",
                &format!("/v1/attributions/sessions/{id}/values"),
                Some(&json!({"values": values})),
            )
            .await;
        assert_eq!(status, 200, "{next}");
        state = next;
    }
    assert_eq!(state["progress"]["done"], true, "{state}");
    // An additive game: every agent's value is its own weight, with no sampling error.
    let estimates = &state["progress"]["estimates"];
    assert!(
        (estimates["g5"].as_f64().unwrap() - 6.0).abs() < 1e-9,
        "{state}"
    );

    for (agent, after) in [("x", 0.9), ("y", 0.6), ("x", 0.8)] {
        let (status, c) = s
            .a(
                "POST",
                "/v1/contributions",
                Some(&json!({"agent_id": agent, "task_id": "t", "quality_before": 0.5, "quality_after": after, "effort_ratio": 1.0})),
            )
            .await;
        assert_eq!(status, 201, "{c}");
    }
    let (status, ranking) = s.a("GET", "/v1/agents/ranking?by=sum", None).await;
    assert_eq!(status, 200);
    let order: Vec<&str> = ranking
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["x", "y"]);
    s.stop().await;
}

/// One page of the NDJSON export: its attributions and the next cursor.
async fn ndjson_page(s: &Stack, query: &str) -> (Vec<Value>, Option<String>) {
    let resp = s
        .http
        .get(format!("{}/v1/attributions?{query}", s.base))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let next = resp
        .headers()
        .get("x-next-cursor")
        .map(|v| v.to_str().unwrap().to_owned());
    let lines = resp.text().await.unwrap();
    let page = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (page, next)
}
