//! `agentrl demo`: the local stack on the embedded store, and a scripted walk through the
//! budget, diff-scoring, trajectory, reward-verification and learning APIs that a person can
//! read (every request and answer is printed).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use agentrl_core::TenantId;
use agentrl_http::{Auth, Metrics};
use agentrl_store::Stores;
use anyhow::{Context, ensure};
use serde_json::{Value, json};

use crate::stack;

mod training;

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
        println!("\n→ {method} {path}");
        if let Some(b) = &body {
            println!("  {b}");
        }
        let (status, value) = self.quiet(method, path, key, body).await?;
        println!(
            "← {status} {}",
            serde_json::to_string_pretty(&value)?.replace('\n', "\n  ")
        );
        Ok((status, value))
    }

    /// A chat completion through the gateway in session `session`: the status, the version
    /// that served it (`x-agentrl-version`) and the answer; printed when `show`.
    async fn chat(
        &self,
        path: &str,
        key: &str,
        session: &str,
        body: Value,
        show: bool,
    ) -> anyhow::Result<(u16, String, Value)> {
        if show {
            println!("\n→ POST {path}  (x-agentrl-session: {session})\n  {body}");
        }
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(key)
            .header("x-agentrl-session", session)
            .json(&body)
            .send()
            .await
            .with_context(|| format!("calling {path}"))?;
        let status = resp.status().as_u16();
        let version = resp
            .headers()
            .get("x-agentrl-version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let value: Value = resp.json().await.unwrap_or(Value::Null);
        if show {
            println!(
                "← {status} (x-agentrl-version: {version}) {}",
                serde_json::to_string_pretty(&value)?.replace('\n', "\n  ")
            );
        }
        Ok((status, version, value))
    }

    /// [`Client::call`] without printing: for polls and bulk sends.
    async fn quiet(
        &self,
        method: &str,
        path: &str,
        key: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let method: reqwest::Method = method.parse()?;
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("calling {path}"))?;
        let status = resp.status().as_u16();
        let value: Value = resp.json().await.unwrap_or(Value::Null);
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
    let launch = stack::Launch::embedded(&dir)?;
    let running =
        stack::start(addr, stores.clone(), auth, Metrics::Off, pseudonyms, launch).await?;
    println!(
        "agentrl local stack on http://{} (embedded store in {})",
        running.addr,
        dir.display()
    );
    let c = Client {
        http: reqwest::Client::new(),
        base: format!("http://{}", running.addr),
    };
    let result = walk(&c, &key, &other_key, &dir, &stores).await;
    running.stop().await?;
    result?;
    println!("\ndemo finished: every answer was as documented");
    Ok(())
}

fn uuid_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

async fn walk(
    c: &Client,
    key: &str,
    other: &str,
    dir: &Path,
    stores: &Stores,
) -> anyhow::Result<()> {
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
    diffs(c, key).await?;
    trajectories(c, key, dir).await?;
    rewards(c, key).await?;
    learning(c, key, other).await?;
    training::close_the_loop(c, key, stores, dir).await
}

/// An execution verified by a JUnit report (whose summary lies) and an answer check.
async fn rewards(c: &Client, key: &str) -> anyhow::Result<()> {
    println!(
        "\n  (verifying an execution: a JUnit report recounted from its test cases, then the answer)"
    );
    let (s, e) = c
        .call(
            "POST",
            "/v1/executions",
            key,
            Some(
                json!({"agent_id": "coder-7", "input": "Fix mean() on an empty list.",
                        "output": "Guarded the division; mean([]) is 0 now.", "status": "success"}),
            ),
        )
        .await?;
    ensure!(s == 201, "execution answered {s}");
    let id = e["execution_id"].as_str().context("no execution_id")?;
    let path = format!("/v1/executions/{id}/verifications");
    // The summary claims 3 tests and no failure; the test cases say otherwise.
    let junit = r#"<testsuite name="stats" tests="3" failures="0"><testcase name="test_mean"/><testcase name="test_empty"><failure message="ZeroDivisionError"/></testcase><testcase name="test_spread"/></testsuite>"#;
    let (s, v) = c
        .call(
            "POST",
            &path,
            key,
            Some(json!({"method": "test_execution", "junit_xml": junit})),
        )
        .await?;
    ensure!(
        s == 201 && v["evidence"]["failed"] == 1 && v["evidence"]["declared_mismatch"] == true,
        "junit: {v}"
    );
    let (s, _) = c
        .call(
            "POST",
            &path,
            key,
            Some(json!({"method": "answer_match", "mode": "regex", "pattern": "(?s).*mean\\(\\[\\]\\) is 0.*"})),
        )
        .await?;
    ensure!(s == 201, "answer_match answered {s}");
    let (_, r) = c
        .call("GET", &format!("/v1/executions/{id}/reward"), key, None)
        .await?;
    let reward = r["reward"].as_f64().context("no reward")?;
    ensure!(reward > 0.67 && reward < 1.0, "composite reward: {r}");
    Ok(())
}

/// Feedback on a reply, through the queue and the worker into the agent's projection.
async fn learning(c: &Client, key: &str, other: &str) -> anyhow::Result<()> {
    println!("\n  (learning from feedback: a reply, then the user's rating of it)");
    let (s, _) = c
        .call(
            "POST",
            "/v1/events",
            key,
            Some(json!([
                {"event_id": "evt-1", "type": "ai.message.reply", "agent_id": "coder-7",
                 "user_id": "alice", "message_id": "msg-1", "traits": {"verbosity": 0.3}},
                {"event_id": "evt-2", "type": "feedback.created", "agent_id": "coder-7",
                 "user_id": "alice", "rating": 5, "reaction": "thumbs_up", "source_id": "msg-1"}
            ])),
        )
        .await?;
    ensure!(s == 202, "events answered {s}");
    for _ in 0..150 {
        let (s, v) = c
            .call("GET", "/v1/agents/coder-7/learning", key, None)
            .await?;
        if s == 200 && v["feedback"]["positive_count"] == 1 {
            let (_, reply) = c
                .call("GET", "/v1/agents/coder-7/replies/msg-1", key, None)
                .await?;
            ensure!(
                reply["reward"].as_f64().is_some_and(|r| r > 0.0),
                "reply: {reply}"
            );
            let (s, _) = c
                .call("GET", "/v1/agents/coder-7/learning", other, None)
                .await?;
            ensure!(s == 404, "another tenant got {s}");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the worker did not apply the feedback within 15 s")
}

/// A one-line fix scores high; the same fix with a skipped test gets the floor.
async fn diffs(c: &Client, key: &str) -> anyhow::Result<()> {
    println!(
        "\n  (scoring an agent's change: a minimal fix, then one that skips the failing test)"
    );
    let source = "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs)\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n";
    let test = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n";
    let fixed = source.replace(
        "    return total / len(xs)",
        "    return total / max(len(xs), 1)",
    );
    let score = |after_test: &str| {
        json!({
            "before": {"files": {"stats.py": source, "test_stats.py": test}},
            "after": {"files": {"stats.py": fixed, "test_stats.py": after_test}},
            "tests_passed": true
        })
    };
    let (s, honest) = c
        .call("POST", "/v1/diffs/score", key, Some(score(test)))
        .await?;
    ensure!(
        s == 200 && honest["flags"] == json!([]) && honest["exact"] == true,
        "honest fix: {honest}"
    );
    let skipped = test.replace(
        "def test_mean",
        "import pytest\n\n\n@pytest.mark.skip\ndef test_mean",
    );
    let (_, gamed) = c
        .call("POST", "/v1/diffs/score", key, Some(score(&skipped)))
        .await?;
    ensure!(
        gamed["reward_multiplier"] == 0.1
            && gamed["flags"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["kind"] == "test_skipped")),
        "a skipped test: {gamed}"
    );
    Ok(())
}

/// A trajectory goes through the queue and the worker into the Parquet turn table.
async fn trajectories(c: &Client, key: &str, dir: &Path) -> anyhow::Result<()> {
    println!(
        "\n  (collecting a trajectory: validated, queued, rewarded per turn, anonymised, written as Parquet)"
    );
    let trajectory = json!({
        "trajectory_id": "traj-1", "agent_id": "coder-7", "conversation_id": "conv-1",
        "user_id": "alice@example.com",
        "turns": [
            {"role": "user", "content": "mean() crashes on an empty list; mail me at alice@example.com"},
            {"role": "assistant", "content": "Guarded the division in stats.mean; the tests pass."}
        ],
        "final_outcome": {"success": true, "reward": 1.0}
    });
    let (s, accepted) = c
        .call("POST", "/v1/trajectories", key, Some(trajectory))
        .await?;
    ensure!(s == 202, "trajectory answered {s}: {accepted}");
    let root = dir.join("objects").join("trajectories");
    for _ in 0..150 {
        if let Some(file) = parquet_under(&root) {
            println!("\n  turn table object: {}", file.display());
            println!(
                "  (with --data-dir the data stays; query it: duckdb -c \"SELECT * FROM read_parquet('{}/**/*.parquet', hive_partitioning=true)\")",
                root.display()
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the worker wrote no Parquet object within 15 s")
}

/// The first `.parquet` file below `dir`, if any.
fn parquet_under(dir: &Path) -> Option<PathBuf> {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                return Some(path);
            }
        }
    }
    None
}
