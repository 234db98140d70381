//! OTLP trace ingest throughput: spans per second that `agentrl serve` acknowledges, durably,
//! for 10-span agent conversations (an `invoke_agent` root, five model calls with their
//! messages, four tool runs) exported in requests of 512 spans, the batch span processor's
//! default. The floor is `/health` on the same server with the same clients in the same run.
//! Requests are OTLP/JSON (the JavaScript exporter's default; the protobuf decoder does less
//! work). The server is the release binary in its own process on the embedded store; after
//! the run every conversation's spans are counted on disk.
//!
//! `cargo bench -p agentrl --bench traces [-- --requests N --clients N]`

mod support;

use std::time::Instant;

use serde_json::{Value, json};
use support::{KEY, arg};

/// Spans per request (the batch span processor's `max_export_batch_size`).
const BATCH: usize = 512;
/// Spans per conversation.
const CONVERSATION: usize = 10;

fn attr(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

fn int(key: &str, value: u64) -> Value {
    json!({"key": key, "value": {"intValue": value.to_string()}})
}

/// The spans of conversation `c` of request `r`, `count` of its 10.
fn conversation(r: u64, c: u64, count: usize) -> Vec<Value> {
    let trace = format!("{:016x}{:016x}", r + 1, c + 1);
    let id = |k: usize| format!("{:08x}{:08x}", c + 1, k + 1);
    let text =
        |role: &str, t: String| json!({"role": role, "parts": [{"type": "text", "content": t}]});
    let span = |k: usize, parent: Option<usize>, attributes: Vec<Value>| {
        let start = 1_795_000_000_000_000_000_u64 + k as u64 * 1_000_000;
        json!({"traceId": trace, "spanId": id(k), "parentSpanId": parent.map(id).unwrap_or_default(),
               "name": "span", "kind": 1, "startTimeUnixNano": start.to_string(),
               "endTimeUnixNano": (start + 900_000).to_string(), "attributes": attributes})
    };
    let mut history = vec![text(
        "user",
        format!("Task {r}-{c}: find the bug in pager.py and fix it."),
    )];
    let mut spans = vec![span(
        0,
        None,
        vec![
            attr("gen_ai.operation.name", "invoke_agent"),
            attr("gen_ai.agent.name", "coder"),
            attr("gen_ai.conversation.id", &format!("conv-{r}-{c}")),
        ],
    )];
    for turn in 0..5 {
        let call = format!("call_{turn}");
        let reply = if turn < 4 {
            json!({"role": "assistant", "parts": [{"type": "tool_call", "id": call,
                "name": "run_tests", "arguments": {"path": "tests/test_pager.py", "k": turn}}]})
        } else {
            text(
                "assistant",
                "Fixed: the last page is ceil(n / k), not n // k.".into(),
            )
        };
        spans.push(span(
            1 + 2 * turn,
            Some(0),
            vec![
                attr("gen_ai.operation.name", "chat"),
                attr("gen_ai.request.model", "qwen2.5-coder-7b"),
                attr(
                    "gen_ai.input.messages",
                    &Value::from(history.clone()).to_string(),
                ),
                attr("gen_ai.output.messages", &json!([reply]).to_string()),
                int("gen_ai.usage.input_tokens", 400 + 120 * turn as u64),
                int("gen_ai.usage.output_tokens", 40),
            ],
        ));
        if turn < 4 {
            let result = format!("1 failed, {turn} passed: test_last_page expected 3, got 2");
            spans.push(span(
                2 + 2 * turn,
                Some(0),
                vec![
                    attr("gen_ai.operation.name", "execute_tool"),
                    attr("gen_ai.tool.name", "run_tests"),
                    attr("gen_ai.tool.call.id", &call),
                    attr("gen_ai.tool.call.result", &result),
                ],
            ));
            history.push(reply);
            history.push(
                json!({"role": "tool", "parts": [{"type": "tool_call_response",
                "id": call, "response": result}]}),
            );
        }
    }
    spans.truncate(count);
    spans
}

/// Request `r`: 512 spans, whole conversations and the start of one more.
fn request(r: u64) -> Vec<u8> {
    let mut spans = Vec::with_capacity(BATCH);
    let mut c = 0;
    while spans.len() < BATCH {
        let count = CONVERSATION.min(BATCH - spans.len());
        spans.extend(conversation(r, c, count));
        c += 1;
    }
    serde_json::to_vec(&json!({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", "coder-service")]},
        "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
    }]}))
    .unwrap()
}

/// Requests per second of `n` calls of `call`, from `clients` concurrent clients.
async fn rate<F, Fut>(n: u64, clients: u64, call: F) -> f64
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|k| {
            let call = call.clone();
            tokio::spawn(async move {
                let mut i = k;
                while i < n {
                    call(i).await;
                    i += clients;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    n as f64 / started.elapsed().as_secs_f64()
}

fn count_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .map(|e| e.unwrap().path())
            .map(|p| if p.is_dir() { count_files(&p) } else { 1 })
            .sum()
    })
}

fn main() {
    let requests = arg("--requests", 400);
    let clients = arg("--clients", 4);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let data = tempfile::tempdir().unwrap();
        let server = support::start(support::serve(data.path()));
        let http = reqwest::Client::new();
        let bodies: std::sync::Arc<Vec<Vec<u8>>> =
            std::sync::Arc::new((0..requests).map(request).collect());
        let bytes: usize = bodies.iter().map(Vec::len).sum();

        let health = format!("{}/health", server.base);
        let floor = {
            let (http, health) = (http.clone(), health.clone());
            rate(requests * 10, clients, move |_| {
                let (http, health) = (http.clone(), health.clone());
                async move {
                    let r = http.get(&health).send().await.unwrap();
                    assert_eq!(r.status(), 200);
                    r.bytes().await.unwrap();
                }
            })
            .await
        };
        let traces = format!("{}/v1/traces", server.base);
        let exports = {
            let (http, traces, bodies) = (http.clone(), traces.clone(), bodies.clone());
            rate(requests, clients, move |i| {
                let (http, traces, bodies) = (http.clone(), traces.clone(), bodies.clone());
                async move {
                    let r = http
                        .post(&traces)
                        .bearer_auth(KEY)
                        .header("content-type", "application/json")
                        .body(bodies[i as usize].clone())
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                    assert_eq!(r.bytes().await.unwrap().as_ref(), b"{}");
                }
            })
            .await
        };
        let stored = count_files(&data.path().join("objects/traces"));
        let log = server.log.clone();
        server.stop();
        let (lines, panics) = {
            let log = log.lock().unwrap();
            (log.lines, log.panics)
        };
        let conversations = requests as usize * BATCH.div_ceil(CONVERSATION);
        println!(
            "OTLP/JSON exports of {BATCH} spans ({CONVERSATION}-span conversations), {requests} requests, \
             {clients} clients, {:.1} MiB",
            bytes as f64 / (1024.0 * 1024.0)
        );
        println!("| | requests/s | spans/s |");
        println!("|---|---|---|");
        println!("| `/health` (floor) | {floor:.0} | |");
        println!(
            "| `POST /v1/traces` | {exports:.0} | **{:.0}** |",
            exports * BATCH as f64
        );
        println!(
            "exports at {:.1}% of the floor's request rate; {stored} span objects on disk for \
             {conversations} conversations; server log: {} lines, {} panics",
            100.0 * exports / floor,
            lines,
            panics
        );
    });
}
