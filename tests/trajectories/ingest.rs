//! The ingest worker over real queues and object stores.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use agentrl_core::{
    TenantId,
    privacy::{TENANT, USER},
};
use agentrl_http::sqs::{Consumer, DrainOptions, drain};
use agentrl_ingest::IngestConfig;
use agentrl_store::{
    Stores, claims,
    keys::partition,
    ports::{Key, Objects},
    tenant_config::TenantConfig,
};
use serde_json::json;

use crate::helpers::{NOON, envelope, pseudonyms, receive_all, trajectory, turn_table, worker};

const DRAIN: DrainOptions = DrainOptions {
    max_messages: 100,
    visibility: Duration::from_secs(30),
    wait: Duration::from_secs(1),
};

/// Why each dead-lettered message was dead-lettered.
async fn dead_letter_reasons(stores: &Stores) -> Vec<String> {
    stores
        .queue
        .dead_letters(10)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.reason)
        .collect()
}

pub async fn rows_are_scrubbed_partitioned_by_tenant_and_poison_is_dead_lettered(stores: &Stores) {
    let mut invalid = trajectory("t-bad", "c-bad", "agent-1", None, 0.5);
    invalid["turns"][1]["behavior_logprobs"] = json!([0.5, -0.2, -0.3]);
    let bodies = vec![
        envelope(
            "tenant-a",
            NOON,
            trajectory("t-1", "c-1", "agent-1", Some("g"), 0.5),
        ),
        envelope(
            "tenant-a",
            NOON,
            trajectory("t-2", "c-2", "agent-1", Some("g"), -0.5),
        ),
        envelope(
            "tenant-b",
            NOON,
            trajectory("t-3", "c-3", "agent-9", None, 1.0),
        ),
        "not json at all".to_owned(),
        envelope("tenant-a", NOON, invalid),
        envelope("../x", NOON, trajectory("t-4", "c-4", "agent-1", None, 0.5)),
    ];
    stores.queue.send_batch(&bodies).await.unwrap();
    let mut seen = 0;
    while seen < bodies.len() {
        let got = drain(&worker(stores), stores.queue.as_ref(), DRAIN)
            .await
            .unwrap();
        assert!(got > 0, "the worker received nothing");
        seen += got;
    }
    assert!(
        stores
            .queue
            .receive(10, Duration::from_secs(1), Duration::ZERO)
            .await
            .unwrap()
            .is_empty(),
        "every message was acknowledged or dead-lettered"
    );

    let mut reasons = dead_letter_reasons(stores).await;
    reasons.sort();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(
        reasons[0].starts_with("invalid trajectory: turns[1].behavior_logprobs[0]"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].starts_with("not a trajectory message"),
        "{reasons:?}"
    );
    assert!(reasons[2].starts_with("tenant"), "{reasons:?}");

    let p = pseudonyms();
    let table = turn_table(stores).await;
    assert_eq!(table.len(), 2, "one object per tenant and date");
    for (tenant, ids) in [("tenant-a", vec!["t-1", "t-2"]), ("tenant-b", vec!["t-3"])] {
        let prefix = format!(
            "trajectories/tenant={}/date=2026-11-22/part-",
            p.pseudonym(TENANT, tenant)
        );
        let (_, rows) = table
            .iter()
            .find(|(path, _)| path.starts_with(&prefix))
            .expect(&prefix);
        let found: BTreeSet<&str> = rows.iter().map(|r| r.trajectory_id.as_str()).collect();
        assert_eq!(
            found.into_iter().collect::<Vec<_>>(),
            ids,
            "only {tenant}'s trajectories"
        );
    }
    for row in table.iter().flat_map(|(_, rows)| rows) {
        let text = format!("{} {:?} {:?}", row.content, row.tool_arguments, row.user_id);
        assert!(
            !text.contains("example.com") && !text.contains("7946"),
            "{text}"
        );
        assert_eq!(
            row.user_id.as_deref(),
            Some(p.pseudonym(USER, "alice@example.com").as_str())
        );
        assert_eq!(row.turn_count, 2);
        assert!(row.turn_reward.is_some() && row.reward_information_gain.is_some());
        assert_eq!(row.ingested_at_ms, NOON);
        // Token ids encode the scrubbed text: they are dropped with it.
        assert_eq!(row.response_token_ids, None);
        if row.role == "assistant" {
            assert!(
                row.content.contains("version 1.2.3"),
                "near misses survive: {}",
                row.content
            );
            assert_eq!(row.tool_arguments.as_deref(), Some(r#"{"to":"[EMAIL]"}"#));
            assert_eq!(row.tool_call_valid, Some(1.0));
        } else {
            assert!(
                row.content.contains("[EMAIL]") && row.content.contains("[PHONE]"),
                "{}",
                row.content
            );
        }
    }
}

pub async fn a_redelivered_batch_rewrites_the_same_object(stores: &Stores) {
    let bodies: Vec<String> = (0..3)
        .map(|i| {
            envelope(
                "tenant-a",
                NOON,
                trajectory(&format!("t-{i}"), &format!("c-{i}"), "a", None, 0.5),
            )
        })
        .collect();
    stores.queue.send_batch(&bodies).await.unwrap();
    let ingest = worker(stores);
    let first = receive_all(stores, 3, 1).await;
    assert!(ingest.process(&first).await.is_empty());
    let written = turn_table(stores).await;
    assert_eq!(written.len(), 1);
    // Not acknowledged: the same messages come back after the visibility timeout.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let again = receive_all(stores, 3, 30).await;
    assert!(again.iter().all(|m| m.receive_count == 2));
    assert!(ingest.process(&again).await.is_empty());
    assert_eq!(
        turn_table(stores).await,
        written,
        "the same object, the same rows, no second copy"
    );
}

pub async fn failed_write_leaves_the_messages_for_a_retry(
    stores: &Stores,
    broken: Arc<dyn Objects>,
) {
    let bodies: Vec<String> = (0..2)
        .map(|i| {
            envelope(
                "tenant-a",
                NOON,
                trajectory(&format!("t-{i}"), &format!("c-{i}"), "a", None, 0.5),
            )
        })
        .collect();
    stores.queue.send_batch(&bodies).await.unwrap();
    let failing = agentrl_ingest::Ingest::new(
        stores.table.clone(),
        broken,
        stores.queue.clone(),
        pseudonyms(),
        std::sync::Arc::new(agentrl_rewards::Provider::new(None, None)),
    );
    let first = receive_all(stores, 2, 1).await;
    let mut retry = failing.process(&first).await;
    retry.sort();
    let mut ids: Vec<String> = first.iter().map(|m| m.id.clone()).collect();
    ids.sort();
    assert_eq!(retry, ids, "both messages are handed back for a retry");
    assert!(stores.queue.dead_letters(10).await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let again = receive_all(stores, 2, 30).await;
    assert!(worker(stores).process(&again).await.is_empty());
    let rows: usize = turn_table(stores)
        .await
        .iter()
        .map(|(_, rows)| rows.len())
        .sum();
    assert_eq!(rows, 4, "nothing lost");
}

pub async fn private_rewards_are_charged_once_per_trajectory(stores: &Stores) {
    let tenant = TenantId::parse("tenant-a").unwrap();
    let config: IngestConfig = serde_json::from_value(json!({
        "differential_privacy": {"epsilon": 0.5, "sensitivity": 2.0, "budget": 1.0}
    }))
    .unwrap();
    TenantConfig::new(stores.table.clone(), "trajectories")
        .put(&tenant, &config)
        .await
        .unwrap();
    let ingest = worker(stores);
    let bodies: Vec<String> = ["t-1", "t-2", "t-3", "t-1"]
        .iter()
        .map(|id| {
            envelope(
                "tenant-a",
                NOON,
                trajectory(id, &format!("c-{id}"), "a", None, 0.4),
            )
        })
        .collect();
    for body in &bodies {
        // One message per batch, in order: t-3 finds the budget spent; the second t-1 is a
        // trajectory sent again.
        stores.queue.send(body).await.unwrap();
        let batch = receive_all(stores, 1, 30).await;
        assert!(ingest.process(&batch).await.is_empty());
        stores.queue.delete(&batch[0].receipt).await.unwrap();
    }
    let rows: Vec<_> = turn_table(stores)
        .await
        .into_iter()
        .flat_map(|(_, rows)| rows)
        .collect();
    let released = |id: &str| -> Vec<(Option<f64>, Option<f64>)> {
        rows.iter()
            .filter(|r| r.trajectory_id == id)
            .map(|r| (r.episode_reward, r.dp_epsilon))
            .collect()
    };
    let t1 = released("t-1");
    assert_eq!(t1.len(), 4, "two copies of two turns");
    assert!(
        t1.iter().all(|r| *r == t1[0]),
        "a trajectory sent again gets the same noisy value: {t1:?}"
    );
    assert_eq!(t1[0].1, Some(0.5));
    assert_ne!(t1[0].0, Some(0.4), "noise was added");
    assert_eq!(released("t-2")[0].1, Some(0.5));
    assert_eq!(
        released("t-3")[0],
        (None, None),
        "past the budget the reward is suppressed"
    );
    let ledger = stores
        .table
        .get(&Key::new(
            partition(&tenant, "privacy", "ledger"),
            "epsilon",
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ledger.doc["spent"], 1.0, "ε charged once per trajectory");
}

pub async fn a_trajectory_larger_than_a_message_travels_by_claim_check(stores: &Stores) {
    let tenant = TenantId::parse("tenant-a").unwrap();
    let mut long = trajectory("t-long", "c-long", "agent-1", None, 0.5);
    // Two turns of 192 K characters each, under the per-text limit (256 K).
    let text = "The build log says nothing new. ".repeat(6_000);
    long["turns"][0]["content"] = json!(text);
    long["turns"][1]["content"] = json!(text);
    let body = envelope("tenant-a", NOON, long);
    assert!(body.len() > 256 * 1024, "{}", body.len());
    let prefix = claims::prefix(&tenant);
    claims::send(
        stores.queue.as_ref(),
        stores.objects.as_ref(),
        &prefix,
        &body,
    )
    .await
    .unwrap();
    // A claim whose object is gone: retrying cannot bring it back.
    let gone = json!({"claim_check": format!("{prefix}gone.json")}).to_string();
    stores.queue.send(&gone).await.unwrap();
    let mut seen = 0;
    while seen < 2 {
        let got = drain(&worker(stores), stores.queue.as_ref(), DRAIN)
            .await
            .unwrap();
        assert!(got > 0, "the worker received nothing");
        seen += got;
    }
    let claimed = stores.objects.list(&prefix).await.unwrap();
    assert_eq!(claimed.len(), 1, "the large body went to one object");
    let rows: Vec<_> = turn_table(stores)
        .await
        .into_iter()
        .flat_map(|(_, rows)| rows)
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].trajectory_id, "t-long");
    assert_eq!(rows[0].content.chars().count(), text.chars().count());
    let reasons = dead_letter_reasons(stores).await;
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("the object is gone"), "{reasons:?}");
}
