//! `agentrl demo`: the local stack on the embedded store, and a scripted walk through the
//! budget and attribution APIs that a person can read (every request and answer is printed).

use std::{net::SocketAddr, path::PathBuf};

use agentrl_core::TenantId;
use agentrl_http::{Auth, Metrics};
use agentrl_store::Stores;
use anyhow::{Context, ensure};
use serde_json::{Value, json};

use crate::stack;

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    async fn call(
        &self,
        method: &str,
        path: &str,
        key: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let method: reqwest::Method = method.parse()?;
        println!("\n→ {method} {path}");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(key);
        if let Some(b) = body {
            println!("  {b}");
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("calling {path}"))?;
        let status = resp.status().as_u16();
        let value: Value = resp.json().await.unwrap_or(Value::Null);
        println!(
            "← {status} {}",
            serde_json::to_string_pretty(&value)?.replace('\n', "\n  ")
        );
        Ok((status, value))
    }
}

/// Runs the walk; fails if any answer is not what the API promises.
pub async fn run(data_dir: Option<PathBuf>, addr: SocketAddr) -> anyhow::Result<()> {
    let temp = tempfile::tempdir()?;
    let dir = data_dir.unwrap_or_else(|| temp.path().to_path_buf());
    let key = format!("demo-{}", uuid_hex());
    let other_key = format!("other-{}", uuid_hex());
    let auth = Auth::api_keys([
        (TenantId::parse("demo")?, key.clone()),
        (TenantId::parse("other")?, other_key.clone()),
    ]);
    let stores = Stores::embedded(&dir)?;
    let pseudonyms = crate::secret::local_pseudonyms(&dir)?;
    let running = stack::start(addr, stores, auth, Metrics::Off, pseudonyms).await?;
    println!(
        "agentrl local stack on http://{} (embedded store in {})",
        running.addr,
        dir.display()
    );
    let c = Client {
        http: reqwest::Client::new(),
        base: format!("http://{}", running.addr),
    };
    let result = walk(&c, &key, &other_key).await;
    running.stop().await?;
    result?;
    println!("\ndemo finished: every answer was as documented");
    Ok(())
}

fn uuid_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

async fn walk(c: &Client, key: &str, other: &str) -> anyhow::Result<()> {
    let (s, _) = c.call("GET", "/health", key, None).await?;
    ensure!(s == 200, "health answered {s}");

    let (s, b) = c
        .call(
            "POST",
            "/v1/budgets",
            key,
            Some(json!({
                "task_id": "task-42",
                "task": {
                    "description": "Fix the off-by-one error in the pagination helper",
                    "files_touched": ["src/pager.rs"],
                    "tools_available": ["bash", "editor"]
                }
            })),
        )
        .await?;
    ensure!(
        s == 201 && b["complexity"] == "standard",
        "create answered {s}"
    );
    let id = b["budget_id"].as_str().context("no budget_id")?.to_owned();
    let path = format!("/v1/budgets/{id}/consumption");

    let report = json!({"report_id": "r-1", "tokens": 1500, "confidence": 0.9});
    let (_, d) = c.call("POST", &path, key, Some(report.clone())).await?;
    ensure!(d["action"] == "CONTINUE", "first report: {d}");
    println!("  (the same report again counts once:)");
    let (_, again) = c.call("POST", &path, key, Some(report)).await?;
    ensure!(again == d, "a repeated report changed the answer");

    let (_, d) = c
        .call(
            "POST",
            &path,
            key,
            Some(json!({"report_id": "r-2", "tokens": 600})),
        )
        .await?;
    ensure!(d["action"] == "EXHAUSTED", "over the allocation: {d}");

    let (_, d) = c
        .call(
            "POST",
            &path,
            key,
            Some(json!({"report_id": "r-3", "tokens": 0, "trigger": "partial-success"})),
        )
        .await?;
    ensure!(d["action"] == "ESCALATED", "escalation: {d}");

    let (_, d) = c
        .call(
            "POST",
            &path,
            key,
            Some(json!({"report_id": "r-4", "tokens": 5000})),
        )
        .await?;
    ensure!(
        d["action"] == "EXHAUSTED" && d["consumed_tokens"] == d["max_total_tokens"],
        "ceiling: {d}"
    );

    let (s, _) = c
        .call(
            "POST",
            &format!("/v1/budgets/{id}/complete"),
            key,
            Some(json!({"outcome": "success"})),
        )
        .await?;
    ensure!(s == 200, "complete answered {s}");

    println!("\n  (credit for a three-agent task: the coder and reviewer only score together)");
    let table = [
        (vec!["planner"], 0.0),
        (vec!["coder"], 0.0),
        (vec!["reviewer"], 0.0),
        (vec!["planner", "coder"], 0.0),
        (vec!["planner", "reviewer"], 0.0),
        (vec!["coder", "reviewer"], 0.8),
        (vec!["planner", "coder", "reviewer"], 1.0),
    ];
    let coalitions: Vec<Value> = table
        .iter()
        .map(|(members, value)| json!({"members": members, "value": value}))
        .collect();
    let (s, a) = c
        .call(
            "POST",
            "/v1/attributions",
            key,
            Some(json!({
                "task_id": "task-42",
                "agents": ["planner", "coder", "reviewer"],
                "total_reward": 100.0,
                "strategy": "linear",
                "coalitions": coalitions
            })),
        )
        .await?;
    let planner = a["contributions"]["planner"].as_f64().unwrap_or(f64::NAN);
    ensure!(
        s == 201 && (planner - 0.2 / 3.0).abs() < 1e-9,
        "attribution: {a}"
    );

    println!("\n  (another tenant cannot see it, and bad input is a 4xx problem:)");
    let (s, _) = c
        .call("GET", &format!("/v1/budgets/{id}"), other, None)
        .await?;
    ensure!(s == 404, "another tenant got {s}");
    let (s, p) = c
        .call(
            "POST",
            &path,
            key,
            Some(json!({"report_id": "r-5", "tokens": -1})),
        )
        .await?;
    ensure!(s == 400 && p["field"] == "tokens", "bad input got {s}");
    Ok(())
}
