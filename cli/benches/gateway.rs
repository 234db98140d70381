//! What the gateway costs an agent: the latency it adds over calling the same upstream
//! directly on loopback (a JSON answer's P50/P99 and a stream's time to first token, the two
//! paths interleaved call by call in one run), then 1,000 concurrent streaming sessions with
//! the server's memory read from `/proc` and every call's record counted on disk. The server
//! is the release `agentrl serve` binary in its own process; the upstream is a scripted
//! OpenAI-compatible server in this process (the same one for both paths).
//!
//! `cargo bench -p agentrl --bench gateway [-- --calls N --sessions N --chunk-ms MS]`

mod support;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use axum::{Json, body::Body, response::Response};
use serde_json::{Value, json};
use support::{KEY, arg};

/// The answer every JSON call gets: vLLM's shape, token ids and logprobs included.
fn answer(model: &Value) -> Value {
    json!({"id": "c", "object": "chat.completion", "created": 0, "model": model,
        "prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8],
        "choices": [{"index": 0, "finish_reason": "stop", "token_ids": [11, 12, 13, 14],
            "logprobs": {"content": [{"token": "a", "logprob": -0.1}, {"token": "b", "logprob": -0.2},
                                     {"token": "c", "logprob": -0.3}, {"token": "d", "logprob": -0.4}]},
            "message": {"role": "assistant", "content": "Four tokens of answer."}}],
        "usage": {"prompt_tokens": 8, "completion_tokens": 4, "total_tokens": 12}})
}

/// The scripted upstream: a JSON answer at once, or a stream of `max_tokens` deltas, the first
/// at once and the others `metadata.chunk_ms` apart.
async fn upstream(Json(body): Json<Value>) -> Response {
    if body["stream"] != json!(true) {
        return Response::new(Body::from(answer(&body["model"]).to_string()));
    }
    let chunks = body["max_tokens"].as_u64().unwrap_or(8);
    let chunk_ms = body["metadata"]["chunk_ms"].as_u64().unwrap_or(0);
    let model = body["model"].clone();
    let stream = futures::stream::unfold(0u64, move |i| {
        let model = model.clone();
        async move {
            if i > chunks {
                return None;
            }
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(chunk_ms)).await;
            }
            let line = if i == chunks {
                "data: [DONE]\n\n".to_owned()
            } else {
                let finish = if i + 1 == chunks {
                    json!("stop")
                } else {
                    Value::Null
                };
                let chunk = json!({"model": model, "choices": [{"index": 0,
                    "delta": {"content": format!("t{i} ")}, "token_ids": [100 + i],
                    "logprobs": {"content": [{"logprob": -0.5}]}, "finish_reason": finish}]});
                format!("data: {chunk}\n\n")
            };
            Some((Ok::<_, std::io::Error>(line), i + 1))
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        "content-type",
        axum::http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

async fn start_upstream() -> String {
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(upstream));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

fn request(stream: bool, tokens: u64, chunk_ms: u64) -> Value {
    json!({"model": "x", "stream": stream, "max_tokens": tokens,
        "metadata": {"chunk_ms": chunk_ms}, "messages": [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "The test `parses_dates` fails on leap years; fix it."}]})
}

/// Microseconds until the whole JSON answer (`stream: false`) or the first chunk arrives.
async fn timed(http: &reqwest::Client, url: &str, session: Option<&str>, stream: bool) -> u64 {
    let mut call = http.post(url).bearer_auth(KEY).json(&request(stream, 8, 0));
    if let Some(s) = session {
        call = call.header("x-agentrl-session", s);
    }
    let started = Instant::now();
    let mut response = call.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let first = if stream {
        let chunk = response.chunk().await.unwrap().expect("a first chunk");
        assert!(chunk.starts_with(b"data:"));
        let at = started.elapsed();
        while response.chunk().await.unwrap().is_some() {}
        at
    } else {
        response.bytes().await.unwrap();
        started.elapsed()
    };
    first.as_micros() as u64
}

/// Calls of each path before the measured ones.
const WARM: usize = 50;

fn percentile_ms(latencies_us: &[u64], p: f64) -> f64 {
    let mut l = latencies_us.to_vec();
    l.sort_unstable();
    let rank = ((p * l.len() as f64).ceil() as usize).clamp(1, l.len());
    l[rank - 1] as f64 / 1_000.0
}

/// A `/proc/{pid}/status` field in MiB (`VmRSS`, `VmHWM`).
fn memory_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim_start_matches(':')
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap();
    kib / 1024.0
}

/// Call records on disk under the data directory.
fn records(data_dir: &Path) -> usize {
    fn count(dir: &Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .map_while(Result::ok)
                .map(|e| {
                    let path = e.path();
                    if path.is_dir() {
                        count(&path)
                    } else {
                        usize::from(path.extension().is_some_and(|x| x == "json"))
                    }
                })
                .sum()
        })
    }
    count(&data_dir.join("objects/gateway"))
}

fn main() {
    let calls = arg("--calls", 2_000) as usize;
    let sessions = arg("--sessions", 1_000) as usize;
    let chunk_ms = arg("--chunk-ms", 50);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let direct = start_upstream().await;
        let data = tempfile::tempdir().unwrap();
        let mut command = support::serve(data.path());
        command.env("AGENTRL_GATEWAY_BASE_URL", &direct);
        let server = support::start(command);
        let pid = server.child.id();
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(sessions + 16)
            .build()
            .unwrap();
        let agent = json!({"agent_id": "bench-agent", "name": "Bench", "type": "coding",
            "model": {"provider": "self-hosted", "name": "qwen-bench"}});
        let created = http
            .post(format!("{}/v1/agents", server.base))
            .bearer_auth(KEY)
            .json(&agent)
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
        let gateway = format!("{}/gateway/bench-agent/v1/chat/completions", server.base);
        let upstream = format!("{direct}/chat/completions");

        // Warm both paths (connections, caches), then interleave them call by call so both
        // see the same moment of a noisy host.
        for i in 0..WARM {
            timed(&http, &upstream, None, false).await;
            timed(&http, &gateway, Some(&format!("warm-{i}")), false).await;
        }
        let mut figures = Vec::new();
        for (name, stream) in [("JSON answer", false), ("time to first token", true)] {
            let (mut d, mut g) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
            for i in 0..calls {
                d.push(timed(&http, &upstream, None, stream).await);
                g.push(timed(&http, &gateway, Some(&format!("s{stream}-{i}")), stream).await);
            }
            figures.push((name, d, g));
        }
        println!("gateway over the same upstream on loopback, {calls} calls a path, interleaved");
        println!("| path | direct P50 ms | gateway P50 ms | added P50 ms | direct P99 ms | gateway P99 ms | added P99 ms |");
        println!("|---|---|---|---|---|---|---|");
        for (name, d, g) in &figures {
            let (d50, g50, d99, g99) = (
                percentile_ms(d, 0.5),
                percentile_ms(g, 0.5),
                percentile_ms(d, 0.99),
                percentile_ms(g, 0.99),
            );
            println!(
                "| {name} | {d50:.3} | {g50:.3} | {:.3} | {d99:.3} | {g99:.3} | {:.3} |",
                g50 - d50,
                g99 - d99
            );
        }

        // Concurrent streams: each session's stream lasts 20 chunks × chunk_ms.
        let before = memory_mib(pid, "VmRSS");
        let started = Instant::now();
        let tasks: Vec<_> = (0..sessions)
            .map(|i| {
                let (http, gateway) = (http.clone(), gateway.clone());
                tokio::spawn(async move {
                    let mut response = http
                        .post(&gateway)
                        .bearer_auth(KEY)
                        .header("x-agentrl-session", format!("stream-{i}"))
                        .json(&request(true, 20, chunk_ms))
                        .send()
                        .await
                        .unwrap();
                    assert!(response.status().is_success());
                    let mut bytes = 0;
                    while let Some(chunk) = response.chunk().await.unwrap() {
                        bytes += chunk.len();
                    }
                    bytes
                })
            })
            .collect();
        let mut peak = before;
        let mut done = 0;
        for t in tasks {
            assert!(t.await.unwrap() > 0);
            done += 1;
            if done % 100 == 0 {
                peak = peak.max(memory_mib(pid, "VmRSS"));
            }
        }
        let wall = started.elapsed();
        let hwm = memory_mib(pid, "VmHWM");
        // Records land behind the answers: give the writer a moment, then count them.
        let expected = WARM + 2 * calls + sessions;
        let deadline = Instant::now() + Duration::from_secs(30);
        while records(data.path()) < expected && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "\n{sessions} concurrent streaming sessions of 20 chunks {chunk_ms} ms apart: all \
             {done} complete in {:.2} s; server RSS {before:.1} MiB before, {peak:.1} MiB \
             sampled during, high-water mark {hwm:.1} MiB; call records on disk {} of {expected}",
            wall.as_secs_f64(),
            records(data.path())
        );
        let log = server.log.lock().unwrap().panics;
        assert_eq!(log, 0, "the server panicked");
        server.stop();
    });
}
