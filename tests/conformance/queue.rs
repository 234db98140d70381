//! Queue cases: visibility timeout, redrive, dead letters with reasons, batches.

use std::{collections::HashSet, time::Duration};

use agentrl_store::ports::Queue;
use agentrl_tests::{Ports, TEST_MAX_RECEIVES};

const VISIBILITY: Duration = Duration::from_secs(1);
const NO_WAIT: Duration = Duration::ZERO;

async fn receive_one(q: &dyn Queue, wait: Duration) -> Option<agentrl_store::ports::Message> {
    let mut got = q.receive(1, VISIBILITY, wait).await.unwrap();
    assert!(got.len() <= 1);
    got.pop()
}

pub async fn redelivers_after_the_visibility_timeout(p: &Ports) {
    let q = p.queue.as_ref();
    let id = q.send("hello").await.unwrap();
    let first = receive_one(q, Duration::from_secs(2))
        .await
        .expect("first delivery");
    assert_eq!(
        (first.id.as_str(), first.body.as_str(), first.receive_count),
        (id.as_str(), "hello", 1)
    );
    assert!(
        receive_one(q, NO_WAIT).await.is_none(),
        "hidden while in flight"
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let second = receive_one(q, Duration::from_secs(2))
        .await
        .expect("redelivery");
    assert_eq!((second.id, second.receive_count), (id, 2));
    q.delete(&second.receipt).await.unwrap();
    q.delete(&second.receipt).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        receive_one(q, NO_WAIT).await.is_none(),
        "deleted messages never come back"
    );
}

pub async fn redrives_to_the_dlq_after_max_receives(p: &Ports) {
    let q = p.queue.as_ref();
    let id = q.send("poison").await.unwrap();
    for n in 1..=TEST_MAX_RECEIVES {
        let m = receive_one(q, Duration::from_secs(3))
            .await
            .expect("a delivery");
        assert_eq!(m.receive_count, n);
        tokio::time::sleep(Duration::from_millis(1_200)).await;
    }
    assert!(
        receive_one(q, Duration::from_secs(1)).await.is_none(),
        "redriven, not delivered again"
    );
    let dead = q.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(
        (dead[0].id.as_str(), dead[0].body.as_str()),
        (id.as_str(), "poison")
    );
    assert!(
        dead[0].reason.contains("max receives"),
        "{}",
        dead[0].reason
    );
}

pub async fn dead_letters_keep_their_reason(p: &Ports) {
    let q = p.queue.as_ref();
    let id = q.send("{not json").await.unwrap();
    let m = receive_one(q, Duration::from_secs(2)).await.unwrap();
    q.dead_letter(&m, "poison: body is not JSON").await.unwrap();
    let dead = q.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].id, id);
    assert_eq!(dead[0].reason, "poison: body is not JSON");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        receive_one(q, NO_WAIT).await.is_none(),
        "a dead-lettered message leaves the queue"
    );
}

pub async fn batches_send_and_receive_every_message(p: &Ports) {
    let q = p.queue.as_ref();
    let bodies: Vec<String> = (0..25).map(|i| format!("m{i}")).collect();
    let ids = q.send_batch(&bodies).await.unwrap();
    assert_eq!(ids.len(), 25);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 25);
    let mut got = HashSet::new();
    for _ in 0..40 {
        for m in q
            .receive(10, Duration::from_secs(30), Duration::from_secs(1))
            .await
            .unwrap()
        {
            q.delete(&m.receipt).await.unwrap();
            got.insert(m.body);
        }
        if got.len() == 25 {
            break;
        }
    }
    assert_eq!(got, bodies.into_iter().collect());
    let too_big = "x".repeat(256 * 1024 + 1);
    assert!(q.send(&too_big).await.is_err());
}
