//! `kill -9` of `agentrl serve` while instrumented agents export OTLP traces and the sweep
//! ingests quiet conversations, at several points; the server restarts on the same data
//! directory each time and exporters re-send only what was not acknowledged (as the batch
//! span processor does). Then every acknowledged conversation is in the turn table, with its
//! turns, and nothing that was never sent is.

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use support::{KEY, start};

const ROUNDS: u64 = 4;
const WRITERS: u64 = 4;
/// Acknowledged exports a round waits for before the kill.
const ACKED_BEFORE_KILL: usize = 40;

fn attr(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

/// One conversation in one export: the agent's root span and a model call under it.
fn export(conversation: &str, n: u64) -> Value {
    let trace = format!("{n:032x}");
    let root = format!("{:016x}", n * 2 + 1);
    let chat = format!("{:016x}", n * 2 + 2);
    let messages = |role: &str, text: &str| {
        json!([{"role": role, "parts": [{"type": "text", "content": text}]}]).to_string()
    };
    let span = |id: &str, parent: &str, attributes: Vec<Value>| {
        json!({"traceId": trace, "spanId": id, "parentSpanId": parent, "name": "s",
               "startTimeUnixNano": "1795000000000000000", "endTimeUnixNano": "1795000001000000000",
               "attributes": attributes})
    };
    json!({"resourceSpans": [{"scopeSpans": [{"spans": [
        span(&root, "", vec![
            attr("gen_ai.operation.name", "invoke_agent"),
            attr("gen_ai.agent.name", "tutor"),
            attr("gen_ai.conversation.id", conversation),
        ]),
        span(&chat, &root, vec![
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.input.messages", &messages("user", conversation)),
            attr("gen_ai.output.messages", &messages("assistant", "ok")),
        ]),
    ]}]}]})
}

/// Per writer, the conversations acknowledged; and every conversation sent.
#[derive(Default)]
struct Sent {
    all: BTreeSet<String>,
    acked: BTreeSet<String>,
}

async fn export_until_killed(base: String, round: u64, writer: u64, sent: Arc<Mutex<Sent>>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    for i in 0.. {
        let n = (round * WRITERS + writer) * 1_000_000 + i + 1;
        let conversation = format!("conv-{round}-{writer}-{i}");
        sent.lock().unwrap().all.insert(conversation.clone());
        let answer = http
            .post(format!("{base}/v1/traces"))
            .bearer_auth(KEY)
            .json(&export(&conversation, n))
            .send()
            .await;
        let Ok(answer) = answer else { return };
        if answer.status() != 200 {
            // The store failed under the kill: not acknowledged, as a 503 says.
            continue;
        }
        if answer.bytes().await.is_err() {
            return;
        }
        sent.lock().unwrap().acked.insert(conversation);
    }
}

/// The conversations in the turn table, each with its rows' roles.
async fn turn_table(dir: &std::path::Path) -> BTreeMap<String, Vec<String>> {
    let stores = agentrl_store::Stores::embedded(dir).unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for meta in stores.objects.list("trajectories/").await.unwrap() {
        let bytes = stores.objects.get(&meta.path).await.unwrap().unwrap();
        for row in agentrl_turns::read_turns(bytes).unwrap() {
            let row = row.unwrap();
            out.entry(row.conversation_id).or_default().push(row.role);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_acknowledged_span_survives_a_crash_into_the_turn_table() {
    let data = tempfile::tempdir().unwrap();
    let sent = Arc::new(Mutex::new(Sent::default()));
    for round in 0..ROUNDS {
        let server = start(data.path());
        if round == 0 {
            // Quiet after a second: conversations are swept into trajectories during the
            // rounds, so kills also land in the middle of ingesting them.
            let put = reqwest::Client::new()
                .put(format!("{}/v1/config/traces", server.base))
                .bearer_auth(KEY)
                .json(&json!({"quiet_seconds": 1, "orphan_seconds": 60}))
                .send()
                .await
                .unwrap();
            assert_eq!(put.status(), 200);
        }
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                tokio::spawn(export_until_killed(
                    server.base.clone(),
                    round,
                    w,
                    sent.clone(),
                ))
            })
            .collect();
        let target = (round as usize + 1) * ACKED_BEFORE_KILL + 13 * round as usize;
        for _ in 0..3000 {
            if sent.lock().unwrap().acked.len() >= target {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Some rounds are cut while the sweep ingests what came before.
        tokio::time::sleep(Duration::from_millis(700 * (round % 3))).await;
        let mut child = server.child;
        child.kill().unwrap();
        child.wait().unwrap();
        for w in writers {
            w.await.unwrap();
        }
    }

    // A last start, left running until every acknowledged conversation is ingested.
    let server = start(data.path());
    let acked = sent.lock().unwrap().acked.clone();
    let mut table = BTreeMap::new();
    for _ in 0..120 {
        table = turn_table(data.path()).await;
        if acked.iter().all(|c| table.contains_key(c)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    support::stop(server, "TERM");
    let missing: Vec<&String> = acked.iter().filter(|c| !table.contains_key(*c)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged conversations never reached the turn table: {missing:?}",
        missing.len(),
        acked.len()
    );
    let all = &sent.lock().unwrap().all;
    assert!(
        table.keys().all(|c| all.contains(c)),
        "a conversation never sent"
    );
    // At least once: a kill between the enqueue and the deletion of the spans enqueues the
    // same trajectory again; each ingest holds the whole conversation.
    for (conversation, roles) in &table {
        assert!(
            !roles.is_empty() && roles.chunks(2).all(|t| t == ["user", "assistant"]),
            "{conversation}: {roles:?}"
        );
    }
    eprintln!(
        "{ROUNDS} kills: {} conversations acknowledged, {} ingested",
        acked.len(),
        table.len()
    );
}
