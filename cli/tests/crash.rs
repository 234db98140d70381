//! `kill -9` of `agentrl serve` in the middle of concurrent budget reports, learning events
//! and trajectory ingest, at several points; each time the server restarts on the same data
//! directory and the clients re-send what was not acknowledged. Then everything is accounted
//! for: every report counted exactly once (`consumed_tokens` = Σ reports, within the ceiling,
//! and a second re-send of all of them changes nothing), every event reflected once in the
//! agent's projection, every accepted trajectory in the turn table or dead-lettered with a
//! reason.

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use support::{KEY, Server, start, stop};

/// Kill points per run (each round is cut short at a different moment); a longer run:
/// `AGENTRL_CRASH_ROUNDS=200 cargo test -p agentrl --test crash -- --nocapture`.
fn rounds() -> u64 {
    std::env::var("AGENTRL_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(12)
}
/// Concurrent clients per round.
const WRITERS: u64 = 6;

/// What the clients sent, and whether the server acknowledged it.
#[derive(Default)]
struct Ledger {
    /// Report id → (tokens, acknowledged).
    reports: BTreeMap<String, (u64, bool)>,
    /// Event id → acknowledged.
    events: BTreeMap<String, bool>,
    /// Trajectory id → acknowledged.
    trajectories: BTreeMap<String, bool>,
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> Result<(u16, Value), reqwest::Error> {
    let mut request = http.request(method, url).bearer_auth(KEY);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    let text = response.text().await?;
    Ok((
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    ))
}

fn trajectory(id: &str) -> Value {
    json!({"trajectory_id": id, "agent_id": "coder-7", "conversation_id": id,
           "turns": [{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "done"}],
           "final_outcome": {"success": true, "reward": 1.0}})
}

fn feedback(id: &str) -> Value {
    json!([{"event_id": id, "type": "feedback.created", "agent_id": "coder-7",
            "user_id": "alice", "occurred_at_ms": 1_767_225_600_000_i64, "value": 0.5}])
}

/// One writer: reports (and every third time an event) until the server goes away.
async fn write_until_killed(
    base: String,
    budget: String,
    writer: u64,
    round: u64,
    ledger: Arc<Mutex<Ledger>>,
) {
    let http = client();
    for i in 0.. {
        let id = format!("r{round}-{writer}-{i}");
        let tokens = 1 + (i % 3);
        ledger
            .lock()
            .unwrap()
            .reports
            .insert(id.clone(), (tokens, false));
        let url = format!("{base}/v1/budgets/{budget}/consumption");
        match send(
            &http,
            reqwest::Method::POST,
            url,
            Some(json!({"report_id": id, "tokens": tokens})),
        )
        .await
        {
            Ok((200, _)) => ledger.lock().unwrap().reports.insert(id, (tokens, true)),
            Ok((status, body)) => panic!("report {id}: {status} {body}"),
            Err(_) => return,
        };
        if i % 4 == 1 {
            let id = format!("t{round}-{writer}-{i}");
            ledger
                .lock()
                .unwrap()
                .trajectories
                .insert(id.clone(), false);
            match send(
                &http,
                reqwest::Method::POST,
                format!("{base}/v1/trajectories"),
                Some(trajectory(&id)),
            )
            .await
            {
                Ok((202, _)) => ledger.lock().unwrap().trajectories.insert(id, true),
                Ok((status, body)) => panic!("trajectory {id}: {status} {body}"),
                Err(_) => return,
            };
        }
        if i % 3 == 0 {
            let event = format!("e{round}-{writer}-{i}");
            ledger.lock().unwrap().events.insert(event.clone(), false);
            match send(
                &http,
                reqwest::Method::POST,
                format!("{base}/v1/events"),
                Some(feedback(&event)),
            )
            .await
            {
                Ok((202, _)) => ledger.lock().unwrap().events.insert(event, true),
                Ok((status, body)) => panic!("event {event}: {status} {body}"),
                Err(_) => return,
            };
        }
    }
}

/// Waits until `count` reports of `round` are acknowledged (at most 30 s).
async fn wait_for_acknowledged(ledger: &Mutex<Ledger>, round: u64, count: u64) {
    let prefix = format!("r{round}-");
    for _ in 0..3000 {
        let acknowledged = ledger
            .lock()
            .unwrap()
            .reports
            .iter()
            .filter(|(id, (_, acked))| *acked && id.starts_with(&prefix))
            .count() as u64;
        if acknowledged >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("round {round}: fewer than {count} reports acknowledged within 30 s");
}

/// Re-sends everything not acknowledged; each must now be acknowledged.
async fn resend_unacknowledged(server: &Server, budget: &str, ledger: &Mutex<Ledger>) {
    let http = client();
    let unacknowledged = |m: &BTreeMap<String, bool>| -> Vec<String> {
        m.iter()
            .filter(|(_, acked)| !**acked)
            .map(|(id, _)| id.clone())
            .collect()
    };
    let (reports, events, trajectories) = {
        let l = ledger.lock().unwrap();
        let reports: Vec<(String, u64)> = l
            .reports
            .iter()
            .filter(|(_, (_, acked))| !acked)
            .map(|(id, (t, _))| (id.clone(), *t))
            .collect();
        (
            reports,
            unacknowledged(&l.events),
            unacknowledged(&l.trajectories),
        )
    };
    let post = |path: String, body: Value| {
        let http = http.clone();
        let url = format!("{}{path}", server.base);
        async move {
            send(&http, reqwest::Method::POST, url, Some(body))
                .await
                .unwrap()
        }
    };
    for (id, tokens) in reports {
        let body = json!({"report_id": id, "tokens": tokens});
        let (status, answer) = post(format!("/v1/budgets/{budget}/consumption"), body).await;
        assert_eq!(status, 200, "re-sent report {id}: {answer}");
        ledger.lock().unwrap().reports.insert(id, (tokens, true));
    }
    for id in events {
        let (status, answer) = post("/v1/events".to_owned(), feedback(&id)).await;
        assert_eq!(status, 202, "re-sent event {id}: {answer}");
        ledger.lock().unwrap().events.insert(id, true);
    }
    for id in trajectories {
        let (status, answer) = post("/v1/trajectories".to_owned(), trajectory(&id)).await;
        assert_eq!(status, 202, "re-sent trajectory {id}: {answer}");
        ledger.lock().unwrap().trajectories.insert(id, true);
    }
}

/// The trajectory ids in the turn table.
async fn turn_table_trajectories(stores: &agentrl_store::Stores) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for meta in stores.objects.list("trajectories/").await.unwrap() {
        let bytes = stores.objects.get(&meta.path).await.unwrap().unwrap();
        for row in agentrl_turns::read_turns(bytes).unwrap() {
            ids.insert(row.unwrap().trajectory_id);
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_write_counts_once_across_kill_9_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let http = client();
    let mut server = start(dir.path());
    let (status, budget) = send(&http, reqwest::Method::POST, format!("{}/v1/budgets", server.base), Some(json!({
        "task_id": "crash", "task": {"description": "Refactor the storage layer to remove the race condition between writers",
                                     "files_touched": ["a.rs", "b.rs", "c.rs", "d.rs", "e.rs", "f.rs"]}}))).await.unwrap();
    assert_eq!(status, 201, "{budget}");
    let budget_id = budget["budget_id"].as_str().unwrap().to_owned();
    let ceiling = budget["max_total_tokens"].as_u64().unwrap();
    // Updates on demand only: the projection counts events and nothing else moves it.
    let (status, _) = send(
        &http,
        reqwest::Method::PUT,
        format!("{}/v1/config/learning", server.base),
        Some(json!({"policy": {"update_threshold": 1000}})),
    )
    .await
    .unwrap();
    assert_eq!(status, 200);

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let rounds = rounds();
    for round in 0..rounds {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                tokio::spawn(write_until_killed(
                    server.base.clone(),
                    budget_id.clone(),
                    w,
                    round,
                    ledger.clone(),
                ))
            })
            .collect();
        // A different moment each round, from before the first write lands to well into them,
        // counted in acknowledged reports rather than time: a loaded machine can take longer
        // than any fixed sleep to answer the first one.
        wait_for_acknowledged(&ledger, round, (round * 7) % 40).await;
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        for w in writers {
            w.await.unwrap();
        }
        server = start(dir.path());
        resend_unacknowledged(&server, &budget_id, &ledger).await;
    }

    let (reports, events, trajectories) = {
        let l = ledger.lock().unwrap();
        (
            l.reports.clone(),
            l.events.len() as u64,
            l.trajectories.keys().cloned().collect::<BTreeSet<_>>(),
        )
    };
    let sent: u64 = reports.values().map(|(t, _)| t).sum();
    assert!(
        sent < ceiling,
        "the run stays under the ceiling ({sent} of {ceiling})"
    );
    let read = |server: &Server| {
        let (http, url) = (client(), format!("{}/v1/budgets/{budget_id}", server.base));
        async move {
            send(&http, reqwest::Method::GET, url, None)
                .await
                .unwrap()
                .1
        }
    };
    let b = read(&server).await;
    assert_eq!(
        b["consumed_tokens"].as_u64(),
        Some(sent),
        "{} reports: {b}",
        reports.len()
    );
    // Every report again: all known, nothing counted twice.
    for (id, (tokens, _)) in &reports {
        let url = format!("{}/v1/budgets/{budget_id}/consumption", server.base);
        let (status, _) = send(
            &http,
            reqwest::Method::POST,
            url,
            Some(json!({"report_id": id, "tokens": tokens})),
        )
        .await
        .unwrap();
        assert_eq!(status, 200);
    }
    assert_eq!(read(&server).await["consumed_tokens"].as_u64(), Some(sent));

    // Every accepted event reflected once, once the worker has drained the queue.
    let learning = format!("{}/v1/agents/coder-7/learning", server.base);
    let mut positives = 0;
    for _ in 0..400 {
        let (_, v) = send(&http, reqwest::Method::GET, learning.clone(), None)
            .await
            .unwrap();
        positives = v["feedback"]["positive_count"].as_u64().unwrap_or(0);
        if positives >= events {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, v) = send(&http, reqwest::Method::GET, learning, None)
        .await
        .unwrap();
    assert_eq!(
        (positives, v["feedback"]["positive_count"].as_u64()),
        (events, Some(events)),
        "{v}"
    );
    // Every accepted trajectory is in the turn table (a trajectory re-sent after a kill may be
    // there twice: ingest is at least once, and readers deduplicate by trajectory id) or
    // dead-lettered with its reason.
    let stores = agentrl_store::Stores::embedded(dir.path()).unwrap();
    let mut ingested = BTreeSet::new();
    for _ in 0..400 {
        ingested = turn_table_trajectories(&stores).await;
        if ingested.len() >= trajectories.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let parked = stores.queue.dead_letters(1000).await.unwrap();
    assert!(parked.iter().all(|d| !d.reason.is_empty()), "{parked:?}");
    let accounted: BTreeSet<String> = ingested
        .iter()
        .cloned()
        .chain(parked.iter().filter_map(|d| {
            let body: Value = serde_json::from_str(&d.body).ok()?;
            body["trajectory"]["trajectory_id"]
                .as_str()
                .map(str::to_owned)
        }))
        .collect();
    let missing: Vec<_> = trajectories.difference(&accounted).collect();
    assert!(
        missing.is_empty(),
        "accepted but neither ingested nor dead-lettered: {missing:?}"
    );
    assert!(
        reports.len() as u64 > rounds * WRITERS,
        "the kills landed mid-stream: {} reports",
        reports.len()
    );
    eprintln!(
        "crash: {rounds} kill points, {} reports ({sent} tokens), {events} events, {} trajectories \
         ({} dead-lettered) accounted for",
        reports.len(),
        trajectories.len(),
        parked.len()
    );
    stop(server, "TERM");
}
