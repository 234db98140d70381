//! API tests of the attribution service: the composed application with API-key tenancy over a
//! real SQLite file, driven with `oneshot`.

use std::{collections::BTreeMap, sync::Arc};

use agentrl_attribution::{AttributionState, service};
use agentrl_core::TenantId;
use agentrl_http::{AppOptions, Auth, DEFAULT_BODY_LIMIT, Metrics, app};
use agentrl_store::embedded::{Database, SqliteTable};
use axum::{
    Router,
    body::Body,
    http::{HeaderMap, Request},
};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const KEY_A: &str = "key-of-tenant-a-0123456789";
const KEY_B: &str = "key-of-tenant-b-0123456789";

struct Stack {
    app: Router,
    _dir: tempfile::TempDir,
}

fn stack_with_cap(cap: u64) -> Stack {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("agentrl.db")).unwrap();
    let state = AttributionState::with_contribution_cap(Arc::new(SqliteTable::new(db)), cap);
    let auth = Auth::api_keys([
        (TenantId::parse("tenant-a").unwrap(), KEY_A.to_owned()),
        (TenantId::parse("tenant-b").unwrap(), KEY_B.to_owned()),
    ]);
    let app = app(
        vec![service(state)],
        AppOptions {
            auth,
            metrics: Metrics::Off,
            body_limit: DEFAULT_BODY_LIMIT,
            idempotency: None,
        },
    );
    Stack { app, _dir: dir }
}

fn stack() -> Stack {
    stack_with_cap(agentrl_attribution::DEFAULT_CONTRIBUTION_CAP)
}

struct Reply {
    status: u16,
    headers: HeaderMap,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

impl Stack {
    async fn call(&self, method: &str, uri: &str, key: &str, body: Option<Value>) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {key}"));
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .unwrap();
        let response = self.app.clone().oneshot(req).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        Reply {
            status,
            headers,
            text: String::from_utf8(bytes.to_vec()).unwrap(),
        }
    }

    async fn post(&self, uri: &str, body: Value) -> Reply {
        self.call("POST", uri, KEY_A, Some(body)).await
    }

    async fn get(&self, uri: &str) -> Reply {
        self.call("GET", uri, KEY_A, None).await
    }
}

fn glove(task: &str) -> Value {
    json!({
        "task_id": task,
        "agents": ["a", "b", "c"],
        "total_reward": 10.0,
        "strategy": "linear",
        "coalitions": [
            {"members": ["a"], "value": 0}, {"members": ["b"], "value": 0},
            {"members": ["c"], "value": 0}, {"members": ["a", "b"], "value": 0},
            {"members": ["a", "c"], "value": 1}, {"members": ["c", "b"], "value": 1},
            {"members": ["a", "b", "c"], "value": 1}
        ]
    })
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

fn assert_rewards_sum(doc: &Value, total: f64) {
    let sum: f64 = doc["rewards"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!(close(sum, total, 1e-9), "rewards sum to {sum}, not {total}");
}

#[tokio::test]
async fn exact_glove_game_gives_the_known_shapley_values() {
    let s = stack();
    let r = s.post("/v1/attributions", glove("glove")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.headers["location"], "/v1/attributions/glove");
    let doc = r.json();
    assert_eq!(doc["method"], "exact");
    let phi = &doc["contributions"];
    for (id, want) in [("a", 1.0 / 6.0), ("b", 1.0 / 6.0), ("c", 2.0 / 3.0)] {
        assert!(close(phi[id].as_f64().unwrap(), want, 1e-12), "{doc}");
        assert_eq!(doc["std_errors"][id], 0.0);
    }
    assert!(doc["banzhaf"]["c"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["additive"], false);
    assert!(doc["efficiency_gap"].as_f64().unwrap().abs() < 1e-12);
    assert!(doc.get("permutations").is_none());
    assert_rewards_sum(&doc, 10.0);
    assert!(close(
        doc["rewards"]["c"].as_f64().unwrap(),
        10.0 * 2.0 / 3.0,
        1e-9
    ));
    assert_eq!(doc["strategy"]["kind"], "linear");
    for k in ["min", "max", "mean", "gini"] {
        assert!(doc["reward_stats"][k].is_number(), "{k}");
    }

    let got = s.get("/v1/attributions/glove").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["contributions"], doc["contributions"]);
    let other = s.call("GET", "/v1/attributions/glove", KEY_B, None).await;
    assert_eq!(other.status, 404);
    assert_eq!(s.get("/v1/attributions/nope").await.status, 404);
}

#[tokio::test]
async fn additive_and_pairwise_games_use_their_closed_forms() {
    let s = stack();
    let r = s
        .post(
            "/v1/attributions",
            json!({"task_id": "add", "agents": ["a", "b", "c"], "total_reward": 6.0,
                   "strategy": {"kind": "exponential", "temperature": 0.5},
                   "contributions": {"a": 1.0, "b": 2.0, "c": 3.0}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let doc = r.json();
    assert_eq!(doc["method"], "closed_form");
    assert_eq!(doc["additive"], true);
    assert!(doc["note"].as_str().unwrap().contains("additive"));
    assert_eq!(doc["contributions"], json!({"a": 1.0, "b": 2.0, "c": 3.0}));
    assert_eq!(
        doc["strategy"],
        json!({"kind": "exponential", "temperature": 0.5})
    );
    assert_rewards_sum(&doc, 6.0);

    let r = s
        .post(
            "/v1/attributions",
            json!({"task_id": "pair", "agents": ["a", "b", "c"], "total_reward": 1.0,
                   "strategy": "sigmoid",
                   "pairwise": {"base": {"a": 1.0, "b": 2.0, "c": 0.0},
                                "synergy": [["a", "b", 2.0], ["c", "a", -1.0]]}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let doc = r.json();
    assert_eq!(doc["method"], "closed_form");
    assert_eq!(doc["additive"], false);
    assert_eq!(doc["contributions"], json!({"a": 1.5, "b": 3.0, "c": -0.5}));
    assert_eq!(doc["banzhaf"], doc["contributions"]);
    assert!(doc["efficiency_gap"].as_f64().unwrap().abs() < 1e-12);
    assert_rewards_sum(&doc, 1.0);
}

#[tokio::test]
async fn monte_carlo_estimates_lie_within_their_error_bars() {
    let s = stack();
    let n = 30;
    let agents: Vec<String> = (0..n).map(|i| format!("agent-{i:02}")).collect();
    let base: BTreeMap<String, f64> = agents
        .iter()
        .enumerate()
        .map(|(i, a)| (a.clone(), 0.1 * i as f64))
        .collect();
    let mut synergy = Vec::new();
    let mut closed: Vec<f64> = (0..n).map(|i| 0.1 * i as f64).collect();
    for i in 0..n {
        for d in [1, 7] {
            let j = (i + d) % n;
            let w = ((i * 13 + j * 7) % 11) as f64 / 5.0 - 1.0;
            synergy.push(json!([agents[i], agents[j], w]));
            closed[i] += w / 2.0;
            closed[j] += w / 2.0;
        }
    }
    let request = json!({"task_id": "mc", "agents": agents, "total_reward": 100.0,
                   "method": "monte_carlo", "seed": 7, "max_permutations": 5000,
                   "target_error": 0.005,
                   "pairwise": {"base": base, "synergy": synergy}});
    let r = s.post("/v1/attributions", request.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let doc = r.json();
    assert_eq!(doc["method"], "monte_carlo");
    assert!(doc["permutations"].as_u64().unwrap() >= 100);
    assert!(doc["target_reached"].is_boolean());
    assert!(doc.get("banzhaf").is_none());
    for (i, id) in agents.iter().enumerate() {
        let est = doc["contributions"][id].as_f64().unwrap();
        let se = doc["std_errors"][id].as_f64().unwrap();
        assert!(se > 0.0, "{id}: se {se}");
        assert!(
            doc["hoeffding_95"][id].as_f64().unwrap() > 1.96 * se,
            "{id}"
        );
        assert!(
            (est - closed[i]).abs() <= 4.0 * se + 1e-9,
            "{id}: {est} vs {} (se {se})",
            closed[i]
        );
    }
    assert!(doc["efficiency_gap"].as_f64().unwrap().abs() < 1e-9);
    assert_rewards_sum(&doc, 100.0);

    // The same request gives the same estimates (fixed default seed semantics).
    let again = s.post("/v1/attributions", request).await.json();
    assert_eq!(again["contributions"], doc["contributions"]);
}

#[tokio::test]
async fn invalid_games_are_400_naming_the_field() {
    let s = stack();
    let mut missing = glove("m");
    missing["coalitions"].as_array_mut().unwrap().remove(3); // {a, b}
    missing["coalitions"].as_array_mut().unwrap().remove(0); // {a}
    let r = s.post("/v1/attributions", missing).await;
    assert_eq!(r.status, 400, "{}", r.text);
    let p = r.json();
    assert_eq!(p["field"], "coalitions");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains(r#"["a"]"#) && detail.contains(r#"["a","b"]"#),
        "{detail}"
    );
    assert!(detail.contains("2 coalitions"), "{detail}");

    let mut dup = glove("d");
    dup["agents"] = json!(["a", "b", "a"]);
    let p = s.post("/v1/attributions", dup).await.json();
    assert_eq!(
        (p["status"].as_u64(), p["field"].as_str()),
        (Some(400), Some("agents[2]"))
    );

    let mut two = glove("t");
    two["contributions"] = json!({"a": 1, "b": 1, "c": 1});
    let r = s.post("/v1/attributions", two).await;
    assert_eq!(
        (r.status, r.json()["field"].as_str()),
        (400, Some("coalitions"))
    );

    let none = json!({"task_id": "n", "agents": ["a"], "total_reward": 1.0});
    assert_eq!(s.post("/v1/attributions", none).await.status, 400);

    let mut unknown = glove("u");
    unknown["coalitions"][6]["members"] = json!(["a", "b", "zed"]);
    let p = s.post("/v1/attributions", unknown).await.json();
    assert_eq!(p["field"], "coalitions[6].members[2]");

    let synergy = json!({"task_id": "s", "agents": ["a", "b"], "total_reward": 1.0,
        "pairwise": {"base": {"a": 1, "b": 1}, "synergy": [["a", "q", 1.0]]}});
    let p = s.post("/v1/attributions", synergy).await.json();
    assert_eq!(p["field"], "pairwise.synergy[0][1]");

    let nan = r#"{"task_id":"x","agents":["a"],"total_reward":1,"contributions":{"a":NaN}}"#;
    let req = Request::post("/v1/attributions")
        .header("authorization", format!("Bearer {KEY_A}"))
        .header("content-type", "application/json")
        .body(Body::from(nan))
        .unwrap();
    assert_eq!(s.app.clone().oneshot(req).await.unwrap().status(), 400);

    let mut big = glove("big");
    big["max_permutations"] = json!(2_000_000);
    let p = s.post("/v1/attributions", big).await.json();
    assert_eq!(p["field"], "max_permutations");

    let mut reserved = glove("stats");
    reserved["task_id"] = json!("stats");
    assert_eq!(
        s.post("/v1/attributions", reserved).await.json()["field"],
        "task_id"
    );
}

#[tokio::test]
async fn reposting_a_task_replaces_it_and_the_export_pages_in_order() {
    let s = stack();
    for k in 0..5 {
        let r = s
            .post("/v1/attributions", glove(&format!("task-{k}")))
            .await;
        assert_eq!(r.status, 201);
    }
    // Replacing task-0 moves it to the end of the history.
    let mut replaced = glove("task-0");
    replaced["total_reward"] = json!(20.0);
    assert_eq!(s.post("/v1/attributions", replaced).await.status, 201);

    let mut seen = Vec::new();
    let mut uri = "/v1/attributions?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let r = s.get(&uri).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.headers["content-type"], "application/x-ndjson");
        pages += 1;
        for line in r.text.lines() {
            let doc: Value = serde_json::from_str(line).unwrap();
            seen.push((
                doc["created_at_ms"].as_u64().unwrap(),
                doc["task_id"].as_str().unwrap().to_owned(),
                doc["total_reward"].as_f64().unwrap(),
            ));
        }
        let Some(link) = r.headers.get("link") else {
            assert!(r.headers.get("x-next-cursor").is_none());
            break;
        };
        let link = link.to_str().unwrap();
        assert!(link.ends_with(r#">; rel="next""#), "{link}");
        let cursor = r.headers["x-next-cursor"].to_str().unwrap();
        assert!(link.contains(cursor));
        uri = link[1..link.find('>').unwrap()].to_owned();
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 5);
    let mut tasks: Vec<&str> = seen.iter().map(|s| s.1.as_str()).collect();
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    assert_eq!(seen.last().unwrap().1, "task-0");
    assert_eq!(seen.last().unwrap().2, 20.0);
    tasks.sort_unstable();
    tasks.dedup();
    assert_eq!(tasks.len(), 5);

    // The window is half-open on created_at_ms; another tenant sees nothing.
    let last = seen.last().unwrap().0;
    let r = s
        .get(&format!("/v1/attributions?from={last}&to={}", last + 1))
        .await;
    assert!(r.text.lines().any(|l| l.contains("task-0")));
    let r = s.get(&format!("/v1/attributions?to={}", seen[0].0)).await;
    assert_eq!(r.text, "");
    let r = s.call("GET", "/v1/attributions", KEY_B, None).await;
    assert_eq!((r.status, r.text.as_str()), (200, ""));
    let p = s.get("/v1/attributions?from=abc").await.json();
    assert_eq!(p["field"], "from");
    let p = s.get("/v1/attributions?limit=1001").await.json();
    assert_eq!(p["field"], "limit");
}

#[tokio::test]
async fn stats_summarise_rewards_per_strategy() {
    let s = stack();
    s.post("/v1/attributions", glove("l1")).await;
    let mut e = glove("e1");
    e["strategy"] = json!("exponential");
    s.post("/v1/attributions", e).await;
    let doc = s.get("/v1/attributions/stats").await.json();
    let by: BTreeMap<String, Value> = doc["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["strategy"].as_str().unwrap().to_owned(), v.clone()))
        .collect();
    assert_eq!(by["linear"]["count"], 1);
    assert_eq!(by["exponential"]["count"], 1);
    assert_eq!(by["sigmoid"]["count"], 0);
    assert!(close(
        by["linear"]["mean_max_share"].as_f64().unwrap(),
        2.0 / 3.0,
        1e-9
    ));
    let one = s.get("/v1/attributions/stats?strategy=linear").await.json();
    assert_eq!(one["strategies"].as_array().unwrap().len(), 1);
    let p = s.get("/v1/attributions/stats?strategy=cubic").await.json();
    assert_eq!(p["field"], "strategy");
}

/// v of the 4-agent game used by the session test: a weighted majority with a bonus pair.
fn game4(members: &[String]) -> f64 {
    let w = |id: &str| match id {
        "w" => 3.0,
        "x" => 2.0,
        "y" => 1.0,
        _ => 1.0,
    };
    let total: f64 = members.iter().map(|m| w(m)).sum();
    let win = if total >= 4.0 { 1.0 } else { 0.0 };
    let bonus = if members.iter().any(|m| m == "x") && members.iter().any(|m| m == "z") {
        0.5
    } else {
        0.0
    };
    win + bonus
}

#[tokio::test]
async fn an_interactive_session_converges_to_the_exact_values() {
    let s = stack();
    let agents: Vec<String> = ["w", "x", "y", "z"]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    // The exact values, from a full table.
    let mut coalitions = Vec::new();
    for mask in 1u32..16 {
        let members: Vec<String> = (0..4)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| agents[i].clone())
            .collect();
        coalitions.push(json!({"members": members, "value": game4(&members)}));
    }
    let exact = s
        .post(
            "/v1/attributions",
            json!({"task_id": "exact4", "agents": agents, "total_reward": 1.0,
                   "coalitions": coalitions}),
        )
        .await
        .json();

    let r = s
        .post(
            "/v1/attributions/sessions",
            json!({"task_id": "live4", "agents": agents, "total_reward": 1.0,
                   "target_error": 0.02, "max_permutations": 20000, "batch_size": 8,
                   "seed": 3}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut doc = r.json();
    let id = doc["session_id"].as_str().unwrap().to_owned();
    assert!(!doc["proposals"].as_array().unwrap().is_empty());
    let mut rounds = 0;
    while doc["progress"]["done"] != true {
        rounds += 1;
        assert!(rounds < 100, "no convergence: {doc}");
        let values: Vec<Value> = doc["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let members: Vec<String> = serde_json::from_value(p["coalition"].clone()).unwrap();
                json!({"members": members, "value": game4(&members)})
            })
            .collect();
        let r = s
            .post(
                &format!("/v1/attributions/sessions/{id}/values"),
                json!({ "values": values }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        doc = r.json();
    }
    assert_eq!(doc["proposals"], json!([]));
    let progress = &doc["progress"];
    assert_eq!(progress["target_reached"], true, "{doc}");
    for a in &agents {
        let est = progress["estimates"][a].as_f64().unwrap();
        let se = progress["std_errors"][a].as_f64().unwrap();
        let phi = exact["contributions"][a].as_f64().unwrap();
        assert!(
            (est - phi).abs() <= 4.0 * se + 1e-9,
            "{a}: {est} vs {phi} (se {se})"
        );
    }
    let read = s.get(&format!("/v1/attributions/sessions/{id}")).await;
    assert_eq!((read.status, &read.json()["progress"]), (200, progress));

    let stored = s.get("/v1/attributions/live4").await.json();
    assert_eq!(stored["method"], "monte_carlo");
    assert_eq!(stored["contributions"], progress["estimates"]);
    assert!(stored["efficiency_gap"].as_f64().unwrap().abs() < 1e-9);
    assert_rewards_sum(&stored, 1.0);

    // A coalition that was never proposed, and another tenant.
    let other = s
        .call(
            "GET",
            &format!("/v1/attributions/sessions/{id}"),
            KEY_B,
            None,
        )
        .await;
    assert_eq!(other.status, 404);
    let r = s
        .post(
            "/v1/attributions/sessions",
            json!({"task_id": "t", "agents": ["p", "q"], "total_reward": 1.0}),
        )
        .await
        .json();
    let sid = r["session_id"].as_str().unwrap();
    let p = s
        .post(
            &format!("/v1/attributions/sessions/{sid}/values"),
            json!({"values": [{"members": ["p", "nobody"], "value": 1.0}]}),
        )
        .await
        .json();
    assert_eq!(p["field"], "values[0].members[1]");
}

async fn contribute(s: &Stack, agent: &str, after: f64, at: u64) -> Value {
    let r = s
        .post(
            "/v1/contributions",
            json!({"agent_id": agent, "task_id": "t", "quality_before": 0.5,
                   "quality_after": after, "effort_ratio": 0.5, "timestamp_ms": at}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()
}

#[tokio::test]
async fn contributions_are_scored_and_ranked_with_ties_by_id() {
    let s = stack();
    let first = contribute(&s, "bob", 0.75, 1_000).await;
    // (0.75 − 0.5) × 1 / 0.5
    assert_eq!(first["score"], 0.5);
    assert_eq!(first["entry"]["impact_multiplier"], 1.0);
    contribute(&s, "ann", 0.75, 2_000).await; // 0.5
    contribute(&s, "cat", 1.0, 3_000).await; // 1.0
    contribute(&s, "cat", 0.25, 4_000).await; // −0.5
    contribute(&s, "dan", 0.5, 5_000).await; // 0

    let ranking = s.get("/v1/agents/ranking?from=0").await.json();
    let order: Vec<(&str, f64, u64)> = ranking
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["agent_id"].as_str().unwrap(),
                r["score"].as_f64().unwrap(),
                r["rank"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("ann", 0.5, 1),
            ("bob", 0.5, 2),
            ("cat", 0.5, 3),
            ("dan", 0.0, 4)
        ]
    );
    let by_mean = s
        .get("/v1/agents/ranking?from=0&by=mean&limit=2")
        .await
        .json();
    assert_eq!(by_mean.as_array().unwrap().len(), 2);
    assert_eq!(by_mean[0]["agent_id"], "ann");
    assert_eq!(by_mean[1]["agent_id"], "bob");
    let window = s.get("/v1/agents/ranking?from=3000&to=4000").await.json();
    assert_eq!(
        window,
        json!([{"rank": 1, "agent_id": "cat", "score": 1.0, "count": 1, "mean": 1.0}])
    );
    // The default window is the last 30 days: these timestamps are from 1970.
    assert_eq!(s.get("/v1/agents/ranking").await.json(), json!([]));
    assert_eq!(s.get("/v1/agents/ranking?by=max").await.status, 400);

    let bad = s
        .post(
            "/v1/contributions",
            json!({"agent_id": "a", "task_id": "t", "quality_before": 1.5,
                   "quality_after": 0.5, "effort_ratio": 1.0}),
        )
        .await;
    assert_eq!(
        (bad.status, bad.json()["field"].as_str()),
        (400, Some("quality_before"))
    );
    let bad = s
        .post(
            "/v1/contributions",
            json!({"agent_id": "a", "task_id": "t", "quality_before": 0.5,
                   "quality_after": 0.5, "effort_ratio": 0.0}),
        )
        .await;
    assert_eq!(bad.json()["field"], "effort_ratio");
}

#[tokio::test]
async fn the_contribution_history_drops_the_oldest_over_its_cap() {
    let s = stack_with_cap(5);
    let mut evicted = 0;
    for k in 1..=7u64 {
        evicted += contribute(&s, &format!("a{k}"), 1.0, k * 10).await["evicted"]
            .as_u64()
            .unwrap();
    }
    assert_eq!(evicted, 2);
    let ranking = s.get("/v1/agents/ranking?from=0").await.json();
    let mut agents: Vec<&str> = ranking
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["agent_id"].as_str().unwrap())
        .collect();
    agents.sort_unstable();
    assert_eq!(agents, vec!["a3", "a4", "a5", "a6", "a7"]);
}
