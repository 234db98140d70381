//! Budget requests and reward verifications through the full HTTP stack on the embedded
//! store, next to `/health` (the HTTP floor) in the same run: requests/s and latency
//! percentiles with concurrent clients on loopback. The server is the release `agentrl serve`
//! binary in its own process.
//!
//! `cargo bench -p agentrl --bench http_api [-- --clients N --seconds S]`

mod support;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::{KEY, arg};

struct Phase {
    name: &'static str,
    requests: usize,
    elapsed: Duration,
    latencies_us: Vec<u64>,
}

impl Phase {
    fn per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile_ms(&self, p: f64) -> f64 {
        let mut l = self.latencies_us.clone();
        l.sort_unstable();
        let rank = ((p * l.len() as f64).ceil() as usize).clamp(1, l.len());
        l[rank - 1] as f64 / 1_000.0
    }
}

/// Runs `clients` loops of `step` for `seconds`; each step returns the latencies of its requests.
async fn phase<F, Fut>(name: &'static str, clients: usize, seconds: u64, step: F) -> Phase
where
    F: Fn(reqwest::Client, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Vec<u64>> + Send,
{
    let step = Arc::new(step);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let step = step.clone();
            tokio::spawn(async move {
                let http = reqwest::Client::builder()
                    .pool_max_idle_per_host(1)
                    .build()
                    .unwrap();
                let mut out = Vec::new();
                let mut i = 0u64;
                while Instant::now() < deadline {
                    out.extend(step(http.clone(), (c as u64) << 32 | i).await);
                    i += 1;
                }
                out
            })
        })
        .collect();
    let mut latencies_us = Vec::new();
    for t in tasks {
        latencies_us.extend(t.await.unwrap());
    }
    Phase {
        name,
        requests: latencies_us.len(),
        elapsed: started.elapsed(),
        latencies_us,
    }
}

async fn timed(req: reqwest::RequestBuilder) -> (u64, Value) {
    let t = Instant::now();
    let resp = req.send().await.expect("request");
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{status}: {body}");
    (t.elapsed().as_micros() as u64, body)
}

fn main() {
    let clients = arg("--clients", 8) as usize;
    let seconds = arg("--seconds", 5);
    let dir = tempfile::tempdir().unwrap();
    let server = support::start(support::serve(dir.path()));
    let base = server.base.clone();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let phases = runtime.block_on(async {
        let b = base.clone();
        let health = phase("GET /health (floor)", clients, seconds, move |http, _| {
            let url = format!("{b}/health");
            async move { vec![timed(http.get(url)).await.0] }
        })
        .await;
        let b = base.clone();
        let budget = phase("POST /v1/budgets + POST …/consumption", clients, seconds, move |http, n| {
            let b = b.clone();
            async move {
                let (t1, created) = timed(http.post(format!("{b}/v1/budgets")).bearer_auth(KEY).json(&json!({
                    "task_id": format!("bench-{n}"),
                    "task": {"description": "Fix the off-by-one error in the pagination helper", "files_touched": ["src/pager.rs"]}
                })))
                .await;
                let id = created["budget_id"].as_str().unwrap().to_owned();
                let (t2, _) = timed(http.post(format!("{b}/v1/budgets/{id}/consumption")).bearer_auth(KEY).json(&json!({
                    "report_id": "r1", "tokens": 700, "confidence": 0.8
                })))
                .await;
                vec![t1, t2]
            }
        })
        .await;
        let b = base.clone();
        let verify = phase("POST /v1/executions + 3 × POST …/verifications", clients, seconds, move |http, n| {
            let b = b.clone();
            async move {
                let (t0, created) = timed(http.post(format!("{b}/v1/executions")).bearer_auth(KEY).json(&json!({
                    "agent_id": format!("agent-{}", n % 16), "input": "What is 6 * 7?",
                    "output": "The answer is 42.", "tokens_used": 812, "latency_ms": 1840
                })))
                .await;
                let id = created["execution_id"].as_str().unwrap().to_owned();
                let url = format!("{b}/v1/executions/{id}/verifications");
                let mut out = vec![t0];
                for body in [
                    json!({"method": "answer_match", "mode": "regex", "pattern": ".*\\b42\\b.*"}),
                    json!({"method": "test_execution", "tests_passed": 11, "tests_total": 12}),
                    json!({"method": "judge", "score": 8.0, "scale_max": 10.0, "confidence": 0.8}),
                ] {
                    out.push(timed(http.post(&url).bearer_auth(KEY).json(&body)).await.0);
                }
                out
            }
        })
        .await;
        vec![health, budget, verify]
    });
    let _ = server.stop();

    println!(
        "clients: {clients}, seconds per phase: {seconds}, cores: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("| phase | requests/s | P50 ms | P99 ms |");
    println!("|---|---|---|---|");
    for p in &phases {
        println!(
            "| {} | {:.0} | {:.2} | {:.2} |",
            p.name,
            p.per_second(),
            p.percentile_ms(0.50),
            p.percentile_ms(0.99)
        );
    }
    println!(
        "budget / floor throughput: {:.2}",
        phases[1].per_second() / phases[0].per_second()
    );
    println!(
        "verifications/s: {:.0} (3 of every 4 requests of the last phase)",
        phases[2].per_second() * 0.75
    );
}
