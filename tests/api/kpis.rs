//! `GET /v1/kpis` over the local stack, on SQLite and on DynamoDB (moto): what the budget,
//! diff-score and trajectory routes did is counted per tenant and day, and comes back as the
//! loop's KPIs.

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

async fn kpis(s: &Stack, key: &str, query: &str) -> (u16, Value) {
    let (status, body, _) = s
        .send("GET", &format!("/v1/kpis{query}"), Some(key), None)
        .await;
    (status, body)
}

async fn counted(s: Stack) {
    // Two budgets closed, one with success; each as the budget service answers it.
    let (mut used, mut allocated, mut escalated) = (0, 0, 0);
    for (outcome, tokens) in [("success", 9_000), ("failure", 100)] {
        let budget = s
            .create("Fix the off-by-one error in the pager", Some("standard"))
            .await;
        let id = budget["budget_id"].as_str().unwrap();
        let (status, _) = s
            .a(
                "POST",
                &format!("/v1/budgets/{id}/consumption"),
                Some(&json!({"report_id": "r-1", "tokens": tokens, "confidence": 0.2})),
            )
            .await;
        assert_eq!(status, 200);
        let (status, done) = s
            .a(
                "POST",
                &format!("/v1/budgets/{id}/complete"),
                Some(&json!({"outcome": outcome})),
            )
            .await;
        assert_eq!(status, 200, "{done}");
        used += done["consumed_tokens"].as_u64().unwrap();
        allocated += done["allocated_tokens"].as_u64().unwrap();
        escalated += u64::from(!done["escalations"].as_array().unwrap().is_empty());
        let (status, _) = s
            .a(
                "POST",
                &format!("/v1/budgets/{id}/complete"),
                Some(&json!({"outcome": outcome})),
            )
            .await;
        assert_eq!(status, 200, "a repeated completion is not counted again");
    }
    // A change that removes a test's assertion: reward hacking.
    let before = "def test_mean():\n    assert mean([1, 2, 3]) == 2\n";
    let after = "def test_mean():\n    mean([1, 2, 3])\n";
    let (status, scored) = s
        .a(
            "POST",
            "/v1/diffs/score",
            Some(
                &json!({"before": {"files": {"tests/test_stats.py": before}},
                         "after": {"files": {"tests/test_stats.py": after}}, "tests_passed": true}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{scored}");
    let flagged = u64::from(!scored["flags"].as_array().unwrap().is_empty());
    assert_eq!(flagged, 1, "{scored}");
    for (id, tool) in [("t-1", true), ("t-2", false), ("t-3", false)] {
        let mut assistant = json!({"role": "assistant", "content": "done"});
        if tool {
            assistant["tool_call"] = json!({"name": "run_tests", "arguments": {}});
        }
        let trajectory = json!({"trajectory_id": id, "agent_id": "coder-7", "conversation_id": id,
            "turns": [{"role": "user", "content": "fix it"}, assistant],
            "final_outcome": {"success": id != "t-3", "reward": 1.0}});
        let (status, _) = s.a("POST", "/v1/trajectories", Some(&trajectory)).await;
        assert_eq!(status, 202);
    }

    let (status, view) = kpis(&s, &s.key_a, "").await;
    assert_eq!(status, 200, "{view}");
    let (k, c) = (&view["kpis"], &view["kpis"]["counts"]);
    assert_eq!(
        (
            c["budgets_completed"].as_u64(),
            c["budgets_succeeded"].as_u64()
        ),
        (Some(2), Some(1)),
        "{view}"
    );
    assert_eq!(k["task_completion_rate"], 0.5);
    assert_eq!(
        (c["tokens_used"].as_u64(), c["tokens_allocated"].as_u64()),
        (Some(used), Some(allocated))
    );
    assert_eq!(
        k["thinking_efficiency"].as_f64(),
        Some(used as f64 / allocated as f64)
    );
    assert_eq!(c["budgets_escalated"].as_u64(), Some(escalated), "{view}");
    assert_eq!(k["escalation_rate"].as_f64(), Some(escalated as f64 / 2.0));
    assert_eq!(
        (
            c["diffs_scored"].as_u64(),
            c["reward_hacking_flagged"].as_u64()
        ),
        (Some(1), Some(flagged))
    );
    assert_eq!(c["trajectories"], 3);
    assert!((k["tool_adoption_rate"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert!((k["trajectory_success_rate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    let today = view["to"].as_str().unwrap().to_owned();

    let (status, other) = kpis(&s, &s.key_b, "").await;
    assert_eq!(
        (
            status,
            other["kpis"]["counts"]["budgets_completed"].as_u64()
        ),
        (200, Some(0)),
        "another tenant's counts"
    );
    assert_eq!(other["kpis"]["task_completion_rate"], Value::Null);
    let (_, past) = kpis(&s, &s.key_a, "?from=2020-01-01&to=2020-01-31").await;
    assert_eq!(past["kpis"]["counts"]["trajectories"], 0);
    let (_, day) = kpis(&s, &s.key_a, &format!("?from={today}&to={today}")).await;
    assert_eq!(day["kpis"]["counts"]["trajectories"], 3);
    let (status, bad) = kpis(&s, &s.key_a, "?from=2026-02-30").await;
    assert_eq!((status, bad["field"].as_str()), (400, Some("from")));
    // A reversed range is empty, not an error (and not a BETWEEN DynamoDB would refuse).
    let (status, reversed) = kpis(&s, &s.key_a, &format!("?from={today}&to=2020-01-01")).await;
    assert_eq!(
        (status, reversed["kpis"]["counts"]["trajectories"].as_u64()),
        (200, Some(0)),
        "{reversed}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kpis_on_sqlite() {
    counted(spawn_stack().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kpis_on_dynamodb() {
    counted(spawn_aws_stack().await).await;
}
