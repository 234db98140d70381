//! The dataset job over the turn table the worker wrote.

use std::{collections::BTreeSet, time::Duration};

use agentrl_core::{dataset::Rules, privacy::TENANT};
use agentrl_http::sqs::{DrainOptions, drain};
use agentrl_store::Stores;
use agentrl_turns::read_turns;
use serde_json::{Value, json};
use sha2::Digest;

use crate::helpers::{NOON, envelope, pseudonyms, trajectory, worker};

const WORDS: &[&str] = &[
    "parser", "cache", "retry", "ledger", "schema", "socket", "thread", "invoice", "budget",
    "tensor", "shard", "lease", "cursor", "queue", "vector", "kernel", "router", "bucket",
    "signal", "window", "packet", "stream", "module", "driver",
];

/// A trajectory whose text is its own (distinct word sequences), so only true copies are
/// near duplicates.
fn distinct(id: &str, i: usize, group: Option<&str>, reward: f64) -> Value {
    let mut t = trajectory(id, &format!("c-{i}"), "agent-1", group, reward);
    let sentence: Vec<&str> = (0..14)
        .map(|k| WORDS[(i * 7 + k * 5 + k * k * i) % WORDS.len()])
        .collect();
    t["turns"][1]["content"] = json!(format!("Fixed the {} issue", sentence.join(" ")));
    t
}

async fn send_and_drain(stores: &Stores, bodies: &[String]) {
    stores.queue.send_batch(bodies).await.unwrap();
    let options = DrainOptions {
        max_messages: 100,
        visibility: Duration::from_secs(30),
        wait: Duration::from_secs(1),
    };
    let mut seen = 0;
    while seen < bodies.len() {
        seen += drain(&worker(stores), stores.queue.as_ref(), options)
            .await
            .unwrap();
    }
}

/// Three batches: tenant-a's 13 trajectories (two GRPO groups, one near-copy), tenant-b's 5,
/// then one of tenant-a's sent again in a later batch.
pub async fn ingest_sample(stores: &Stores) {
    let rewards = [0.9, 0.1, 0.5, 0.3, 0.6, 0.6];
    let mut first: Vec<String> = (0..12)
        .map(|i| {
            let group = match i {
                0..4 => Some("g1"),
                4..6 => Some("g2"),
                _ => None,
            };
            let reward = rewards.get(i).copied().unwrap_or(0.5);
            envelope(
                "tenant-a",
                NOON,
                distinct(&format!("t-{i}"), i, group, reward),
            )
        })
        .collect();
    let mut copy = distinct("t-copy", 7, None, 0.5);
    copy["conversation_id"] = json!("c-copy");
    first.push(envelope("tenant-a", NOON, copy));
    send_and_drain(stores, &first).await;
    let second: Vec<String> = (0..5)
        .map(|i| {
            envelope(
                "tenant-b",
                NOON,
                distinct(&format!("b-{i}"), 100 + i, None, 0.7),
            )
        })
        .collect();
    send_and_drain(stores, &second).await;
    send_and_drain(
        stores,
        &[envelope(
            "tenant-a",
            NOON,
            distinct("t-3", 3, Some("g1"), 0.3),
        )],
    )
    .await;
}

pub async fn datasets_split_by_conversation_without_duplicates(stores: &Stores) {
    ingest_sample(stores).await;
    let rules = Rules {
        min_positive_feedback: 0,
        min_high_quality_interactions: 0,
        validation_fraction: 0.3,
        ..Rules::default()
    };
    let now = NOON + 3_600_000;
    let manifests = agentrl_dataset::build(
        stores.objects.as_ref(),
        stores.events.as_ref(),
        stores.training.as_ref(),
        &rules,
        now,
    )
    .await
    .unwrap();
    assert_eq!(manifests.len(), 2, "one dataset per tenant");
    let a = manifests
        .iter()
        .find(|m| m.tenant == pseudonyms().pseudonym(TENANT, "tenant-a"))
        .unwrap();
    let c = &a.counts;
    assert_eq!((c.episodes_considered, c.duplicates_removed), (13, 1));
    assert_eq!(c.train_trajectories + c.validation_trajectories, 12);
    assert_eq!(
        c.train_rows + c.validation_rows,
        24,
        "t-3's second copy is not in the dataset"
    );
    assert!(c.validation_trajectories > 0 && c.train_trajectories > 0);
    assert_eq!(
        (c.groups, c.zero_variance_groups, c.preference_pairs),
        (2, 1, 1)
    );
    assert_eq!(
        c.sft_examples, 12,
        "every kept episode has a positive reward"
    );

    // The exports: the same positive episodes in the OpenAI chat format, split like the rest,
    // and the best of the training ones per agent; listed with their hashes.
    assert_eq!(c.openai_chat_examples, 12);
    let mut chat_lines = 0;
    for name in ["openai_chat", "openai_chat_validation"] {
        let entry = &a.files[name];
        let bytes = stores.objects.get(&entry.path).await.unwrap().unwrap();
        assert_eq!(entry.sha256, hex::encode(sha2::Sha256::digest(&bytes)));
        for line in std::str::from_utf8(&bytes).unwrap().lines() {
            let example: Value = serde_json::from_str(line).unwrap();
            let messages = example["messages"].as_array().unwrap();
            let last = messages.last().unwrap();
            assert_eq!(last["role"], "assistant", "{example}");
            let call = &last["tool_calls"][0];
            assert_eq!(
                (call["type"].as_str(), call["function"]["name"].as_str()),
                (Some("function"), Some("send_email"))
            );
            let arguments: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
            assert!(arguments["to"].is_string(), "{arguments}");
            chat_lines += 1;
        }
    }
    assert_eq!(chat_lines, 12);
    let few_shot: Value = serde_json::from_slice(
        &stores
            .objects
            .get(&a.files["few_shot"].path)
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    let mut examples = 0;
    for (_, best) in few_shot.as_object().unwrap() {
        let rewards: Vec<f64> = best
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["reward"].as_f64().unwrap())
            .collect();
        assert!(
            rewards.len() <= 5 && rewards.windows(2).all(|w| w[0] >= w[1]),
            "{rewards:?}"
        );
        examples += rewards.len() as u64;
    }
    assert!(examples > 0);
    assert_eq!(examples, c.few_shot_examples);

    let mut conversations: Vec<BTreeSet<String>> = Vec::new();
    let mut turns = BTreeSet::new();
    for split in ["train", "validation"] {
        let bytes = stores
            .objects
            .get(&a.files[split].path)
            .await
            .unwrap()
            .unwrap();
        let mut seen = BTreeSet::new();
        for row in read_turns(bytes).unwrap() {
            let row = row.unwrap();
            assert!(
                turns.insert((row.trajectory_id.clone(), row.turn_index)),
                "a turn twice"
            );
            seen.insert(row.conversation_id);
        }
        conversations.push(seen);
    }
    assert!(
        conversations[0].is_disjoint(&conversations[1]),
        "no conversation in both splits"
    );
    let manifest = stores
        .objects
        .get(&format!(
            "datasets/tenant={}/{}/manifest.json",
            a.tenant, a.dataset_id
        ))
        .await
        .unwrap()
        .expect("manifest.json beside the splits");
    let manifest: Value = serde_json::from_slice(&manifest).unwrap();
    assert_eq!(manifest["schema_version"], agentrl_turns::SCHEMA_VERSION);
    assert_eq!(manifest["content_hash"], a.content_hash);
    let preferences = stores
        .objects
        .get(&a.files["preferences"].path)
        .await
        .unwrap()
        .unwrap();
    let pair: Value =
        serde_json::from_slice(preferences.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(
        (
            pair["chosen_trajectory_id"].as_str(),
            pair["rejected_trajectory_id"].as_str()
        ),
        (Some("t-0"), Some("t-1"))
    );

    let ready = receive(stores.events.as_ref(), 2).await;
    assert_eq!(ready.len(), 2);
    assert!(ready.iter().all(|e| e["type"] == "training.dataset.ready"));
    let mut for_training = receive(stores.training.as_ref(), 2).await;
    let mut announced = ready.clone();
    let by_dataset = |e: &Value| e["dataset_id"].as_str().unwrap_or_default().to_owned();
    for_training.sort_by_key(by_dataset);
    announced.sort_by_key(by_dataset);
    assert_eq!(
        for_training, announced,
        "the training queue gets the same events"
    );

    let again = agentrl_dataset::build(
        stores.objects.as_ref(),
        stores.events.as_ref(),
        stores.training.as_ref(),
        &rules,
        now,
    )
    .await
    .unwrap();
    let ids = |ms: &[agentrl_dataset::Manifest]| {
        ms.iter().map(|m| m.dataset_id.clone()).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&again),
        ids(&manifests),
        "the same inputs build the same datasets"
    );
}

/// Up to `n` messages of `queue` as JSON, waiting a little for each batch.
async fn receive(queue: &dyn agentrl_store::ports::Queue, n: usize) -> Vec<Value> {
    let mut got = Vec::new();
    for _ in 0..5 {
        if got.len() >= n {
            break;
        }
        let batch = queue
            .receive(10, Duration::from_secs(30), Duration::from_secs(1))
            .await
            .unwrap();
        got.extend(
            batch
                .iter()
                .map(|m| serde_json::from_str::<Value>(&m.body).unwrap()),
        );
    }
    got
}

/// `dataset.generation.requested` as the learning service sends it (the learning tests check
/// the same body reaches the dataset queue).
fn requested(tenant: &str, agent: &str, positive: u32) -> String {
    json!({
        "event_id": format!("{tenant}-{agent}-{positive}"),
        "type": "dataset.generation.requested",
        "tenant": tenant,
        "agent_id": agent,
        "learning_version": 3,
        "at_ms": NOON,
        "detail": {"positive_count": positive, "high_quality": 60},
    })
    .to_string()
}

/// The manifests written for a tenant partition.
async fn manifests(stores: &Stores, partition: &str) -> Vec<String> {
    let listed = stores
        .objects
        .list(&format!("datasets/tenant={partition}/"))
        .await
        .unwrap();
    listed
        .into_iter()
        .filter(|m| m.path.ends_with("/manifest.json"))
        .map(|m| m.path)
        .collect()
}

/// Drains the dataset queue with the dataset job's consumer; returns how many were handled.
async fn drain_requests(stores: &Stores, expected: usize) -> usize {
    let requests = agentrl_dataset::DatasetRequests::new(
        agentrl_dataset::Datasets::new(
            stores.objects.clone(),
            stores.events.clone(),
            stores.training.clone(),
            Rules::default(),
        ),
        stores.datasets.clone(),
        pseudonyms(),
    );
    let options = DrainOptions {
        max_messages: 10,
        visibility: Duration::from_secs(30),
        wait: Duration::from_secs(1),
    };
    let mut seen = 0;
    for _ in 0..5 {
        if seen >= expected {
            break;
        }
        seen += drain(&requests, stores.datasets.as_ref(), options)
            .await
            .unwrap();
    }
    seen
}

pub async fn requested_datasets_take_the_named_agents_on_the_learning_counts(stores: &Stores) {
    ingest_sample(stores).await;
    // A second agent of tenant-a, with rewards far below the default rules' thresholds.
    let now = agentrl_store::clock::now_ms_i64();
    let second: Vec<String> = (0..4)
        .map(|i| {
            let mut t = distinct(&format!("r-{i}"), 200 + i, None, 0.2);
            t["agent_id"] = json!("agent-2");
            envelope("tenant-a", now, t)
        })
        .collect();
    send_and_drain(stores, &second).await;

    let poison =
        json!({"type": "agent.learning.updated", "tenant": "tenant-a", "agent_id": "agent-2"});
    // A request from a newer producer than this build reads.
    let mut newer: Value = serde_json::from_str(&requested("tenant-a", "agent-3", 140)).unwrap();
    newer["version"] = json!(99);
    stores
        .datasets
        .send_batch(&[
            requested("tenant-a", "agent-2", 130),
            requested("tenant-b", "nobody", 101),
            poison.to_string(),
            newer.to_string(),
        ])
        .await
        .unwrap();
    assert_eq!(drain_requests(stores, 4).await, 4);

    let partition = pseudonyms().pseudonym(TENANT, "tenant-a");
    let written = manifests(stores, &partition).await;
    assert_eq!(written.len(), 1, "{written:?}");
    let manifest: Value =
        serde_json::from_slice(&stores.objects.get(&written[0]).await.unwrap().unwrap()).unwrap();
    assert_eq!(
        manifest["agents"],
        json!([{"agent_id": "agent-2", "episodes": 4, "positive_feedback": 130,
                "high_quality_interactions": 60, "counts_from": "learning", "selected": true}]),
        "only the named agent, on the learning projection's counts"
    );
    let counts = &manifest["counts"];
    assert_eq!(
        counts["train_trajectories"].as_u64().unwrap()
            + counts["validation_trajectories"].as_u64().unwrap(),
        4,
        "agent-2's episodes, none of agent-1's: {counts}"
    );
    let ready = receive(stores.training.as_ref(), 1).await;
    assert_eq!(
        ready.len(),
        1,
        "tenant-b's agent has no episodes: no dataset"
    );
    assert_eq!(ready[0]["dataset_id"], manifest["dataset_id"]);
    let dead = stores.datasets.dead_letters(10).await.unwrap();
    let mut reasons: Vec<&str> = dead.iter().map(|d| d.reason.as_str()).collect();
    reasons.sort_unstable();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].starts_with("envelope version 99 is not supported")
            && reasons[1].contains("unexpected event type"),
        "{reasons:?}"
    );

    // Redelivered: the same dataset, rewritten, announced again for the training function
    // (which creates one run per agent, dataset and config).
    stores
        .datasets
        .send(&requested("tenant-a", "agent-2", 130))
        .await
        .unwrap();
    assert_eq!(drain_requests(stores, 1).await, 1);
    assert_eq!(
        manifests(stores, &partition).await,
        written,
        "no second dataset"
    );
    let again = receive(stores.training.as_ref(), 1).await;
    assert_eq!(again[0]["dataset_id"], manifest["dataset_id"]);
}

/// On AWS, a table past the Lambda's limit is handed to AWS Batch; the job's command line,
/// run as the binary runs it, builds the same dataset the Lambda would have.
pub async fn large_tables_are_built_by_a_batch_job() {
    let (stores, settings, _) = agentrl_tests::aws_stores_on().await;
    let now = agentrl_store::clock::now_ms_i64();
    let bodies: Vec<String> = (0..3)
        .map(|i| {
            envelope(
                "tenant-a",
                now,
                distinct(&format!("l-{i}"), 300 + i, None, 0.9),
            )
        })
        .collect();
    send_and_drain(&stores, &bodies).await;
    let (batch, queues, definition) = agentrl_tests::batch_resources(&settings, &["dataset"]).await;
    let queue = queues[0].clone();
    let datasets = || {
        agentrl_dataset::Datasets::new(
            stores.objects.clone(),
            stores.events.clone(),
            stores.training.clone(),
            Rules::default(),
        )
    };
    let limited = datasets().with_batch(Some(
        agentrl_dataset::BatchDatasets::new(&settings, queue, definition, 1).await,
    ));
    let partition = pseudonyms().pseudonym(TENANT, "tenant-a");
    let selection =
        agentrl_core::dataset::Selection::Requested(vec![agentrl_core::dataset::Request {
            agent_id: "agent-1".into(),
            positive_count: 150,
            high_quality: 80,
        }]);
    let outcome = limited.tenant(&partition, &selection, now).await.unwrap();
    let agentrl_dataset::Outcome::Submitted {
        table_bytes,
        job_id,
        ..
    } = outcome
    else {
        panic!("not submitted: {outcome:?}");
    };
    assert!(table_bytes > 1);
    assert!(
        manifests(&stores, &partition).await.is_empty(),
        "nothing built in the function"
    );
    let jobs = batch.describe_jobs().jobs(&job_id).send().await.unwrap();
    let job = &jobs.jobs()[0];
    assert_eq!(
        job.tags().unwrap()["agentrl_kind"].as_str(),
        "dataset",
        "the training function's job-state consumer tells its jobs by tag"
    );
    let command = job.container().unwrap().command().to_vec();
    assert_eq!(command[..3], ["dataset", "--tenant", partition.as_str()]);

    let job: agentrl_dataset::BatchJob = clap::Parser::try_parse_from(&command).unwrap();
    let built = job.run(&datasets()).await.unwrap();
    let agentrl_dataset::Outcome::Built(manifest) = built else {
        panic!("the job built nothing: {built:?}");
    };
    assert_eq!(manifests(&stores, &partition).await.len(), 1);
    assert_eq!(manifest.agents.len(), 1);
    assert_eq!(
        (
            manifest.agents[0].agent_id.as_str(),
            manifest.agents[0].positive_feedback
        ),
        ("agent-1", 150)
    );
    assert_eq!(
        manifest.created_at_ms, now,
        "the job keeps the request's clock"
    );
}
