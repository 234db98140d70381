//! `agentrl serve` as a process: it starts, answers, stops cleanly on SIGTERM and SIGINT,
//! and every acknowledged write is there after a restart.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::{Value, json};

const KEY: &str = "local-test-key-0123456789";

struct Server {
    child: Child,
    base: String,
}

fn start(data_dir: &std::path::Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentrl"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--api-key",
            &format!("acme={KEY}"),
        ])
        .arg("--data-dir")
        .arg(data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("the server exited before listening")
            .unwrap();
        if let Some(url) = line.strip_prefix("agentrl listening on ") {
            break url.to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Server { child, base }
}

fn stop(mut server: Server, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for _ in 0..100 {
        if let Some(exit) = server.child.try_wait().unwrap() {
            assert!(exit.success(), "exit after SIG{signal}: {exit}");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    server.child.kill().unwrap();
    panic!("the server did not stop within 5 s of SIG{signal}");
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> Value {
    let resp = http
        .post(url)
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    resp.json().await.unwrap()
}

#[tokio::test]
async fn acknowledged_writes_survive_sigterm_and_sigint_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();

    let server = start(dir.path());
    let budget = post(
        &http,
        format!("{}/v1/budgets", server.base),
        json!({"task_id": "t", "task": {"description": "Fix the off-by-one error in the pager"}}),
    )
    .await;
    let id = budget["budget_id"].as_str().unwrap().to_owned();
    let consumption = |base: &str| format!("{base}/v1/budgets/{id}/consumption");
    post(
        &http,
        consumption(&server.base),
        json!({"report_id": "a", "tokens": 300}),
    )
    .await;
    stop(server, "TERM");

    let server = start(dir.path());
    let d = post(
        &http,
        consumption(&server.base),
        json!({"report_id": "b", "tokens": 200}),
    )
    .await;
    assert_eq!(
        d["consumed_tokens"], 500,
        "the report acknowledged before SIGTERM is kept"
    );
    stop(server, "INT");

    let server = start(dir.path());
    let resp = http
        .get(format!("{}/v1/budgets/{id}", server.base))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["consumed_tokens"], 500);
    stop(server, "TERM");
}
