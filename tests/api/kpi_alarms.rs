//! `GET`/`PUT /v1/config/kpi-alarms` and `GET /v1/kpis/alarms` over the local stack, on SQLite
//! and on DynamoDB (moto): a tenant's thresholds are its own, a day whose KPI crosses one is
//! `ALARM`, a rate with nothing counted is `INSUFFICIENT_DATA`, and another tenant's counts
//! never enter the evaluation.

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

fn alarms() -> Value {
    json!({"alarms": [
        {"name": "tools-low", "kpi": "tool_adoption_rate", "comparison": "below", "threshold": 0.75},
        {"name": "hacking", "kpi": "reward_hacking_incidents", "comparison": "above", "threshold": 0.0},
    ]})
}

/// The state and value of alarm `i` on the last day of `view`.
fn last_day(view: &Value, i: usize) -> (Option<&str>, Option<f64>) {
    let day = view["alarms"][i]["days"]
        .as_array()
        .and_then(|d| d.last())
        .unwrap_or(&Value::Null);
    (day["state"].as_str(), day["value"].as_f64())
}

async fn evaluated(s: Stack) {
    let (status, none) = s.a("GET", "/v1/config/kpi-alarms", None).await;
    assert_eq!((status, none), (200, json!({"alarms": []})));
    let (status, put) = s.a("PUT", "/v1/config/kpi-alarms", Some(&alarms())).await;
    assert_eq!((status, &put), (200, &alarms()));
    let (status, other) = s.b("GET", "/v1/config/kpi-alarms", None).await;
    assert_eq!(
        (status, other),
        (200, json!({"alarms": []})),
        "another tenant's alarms"
    );

    // Tenant A today: one trajectory of two used a tool, under the 0.75 threshold.
    for (id, tool) in [("t-1", true), ("t-2", false)] {
        let mut assistant = json!({"role": "assistant", "content": "done"});
        if tool {
            assistant["tool_call"] = json!({"name": "run_tests", "arguments": {}});
        }
        let trajectory = json!({"trajectory_id": id, "agent_id": "coder-7", "conversation_id": id,
            "turns": [{"role": "user", "content": "fix it"}, assistant],
            "final_outcome": {"success": true, "reward": 1.0}});
        let (status, _) = s.a("POST", "/v1/trajectories", Some(&trajectory)).await;
        assert_eq!(status, 202);
    }
    let (status, view) = s.a("GET", "/v1/kpis/alarms", None).await;
    assert_eq!(status, 200, "{view}");
    let days = view["alarms"][0]["days"].as_array().unwrap();
    assert_eq!(days.len(), 7, "the last 7 days by default: {view}");
    assert_eq!(days[0]["state"], "INSUFFICIENT_DATA", "{view}");
    assert_eq!(view["alarms"][0]["name"], "tools-low");
    assert_eq!(last_day(&view, 0), (Some("ALARM"), Some(0.5)), "{view}");
    assert_eq!(last_day(&view, 1), (Some("OK"), Some(0.0)), "{view}");

    // Tenant B, with the same threshold, has counted nothing: A's trajectories are not its.
    let (status, _) = s.b("PUT", "/v1/config/kpi-alarms", Some(&alarms())).await;
    assert_eq!(status, 200);
    let (_, other) = s.b("GET", "/v1/kpis/alarms", None).await;
    assert_eq!(
        last_day(&other, 0),
        (Some("INSUFFICIENT_DATA"), None),
        "{other}"
    );

    let (status, month) = s
        .a("GET", "/v1/kpis/alarms?from=2020-01-01&to=2020-01-31", None)
        .await;
    assert_eq!(
        (status, month["alarms"][0]["days"].as_array().map(Vec::len)),
        (200, Some(31))
    );
    let (status, long) = s
        .a("GET", "/v1/kpis/alarms?from=2020-01-01&to=2020-02-01", None)
        .await;
    assert_eq!(
        (
            status,
            long["from"].as_str(),
            long["alarms"][0]["days"].as_array().map(Vec::len)
        ),
        (200, Some("2020-01-02"), Some(31)),
        "the last 31 days of a longer range: {long}"
    );
    let (status, bad) = s.a("GET", "/v1/kpis/alarms?to=2026-02-30", None).await;
    assert_eq!((status, bad["field"].as_str()), (400, Some("to")));

    let mut long_name = alarms();
    long_name["alarms"][1]["name"] = json!("x".repeat(65));
    let (status, refused) = s.a("PUT", "/v1/config/kpi-alarms", Some(&long_name)).await;
    assert_eq!(
        (status, refused["field"].as_str()),
        (400, Some("alarms[1].name")),
        "{refused}"
    );
    let mut unknown = alarms();
    unknown["alarms"][1]["kpi"] = json!("mood");
    let (status, refused) = s.a("PUT", "/v1/config/kpi-alarms", Some(&unknown)).await;
    assert_eq!(status, 400, "{refused}");
    let (_, kept) = s.a("GET", "/v1/config/kpi-alarms", None).await;
    assert_eq!(kept, alarms(), "a refused document changes nothing");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kpi_alarms_on_sqlite() {
    evaluated(spawn_stack().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kpi_alarms_on_dynamodb() {
    evaluated(spawn_aws_stack().await).await;
}
