//! The queue-consumer helper (`agentrl_http::consume`) over real queues: a newer envelope is
//! dead-lettered with its version named, a retried message comes back, and one batch settles
//! each message by its own outcome, message by message or a group at a time.

use std::{collections::HashSet, time::Duration};

use agentrl_http::{
    consume::{self, Outcome},
    sqs::Consumer,
};
use agentrl_store::ports::{Message, Queue};
use agentrl_tests::Ports;

const VISIBILITY: Duration = Duration::from_secs(1);

/// What a test message asks its handler to answer, and the group it belongs to.
struct Ask {
    then: String,
    group: String,
}

/// The message's ask, its envelope version checked as every consumer's is.
fn ask(message: &Message) -> Result<Ask, Outcome> {
    let body: serde_json::Value = consume::decode(&message.body, "a test message")?;
    let field = |name: &str| body[name].as_str().unwrap_or_default().to_owned();
    Ok(Ask {
        then: field("then"),
        group: field("group"),
    })
}

fn answer(ask: &Ask) -> Outcome {
    match ask.then.as_str() {
        "done" => Outcome::Done,
        "retry" => Outcome::Retry("asked to retry".to_owned()),
        other => Outcome::Poison(format!("asked for {other}")),
    }
}

/// Answers each message as it asks.
struct Each<'q>(&'q dyn Queue);

impl Consumer for Each<'_> {
    async fn process(&self, messages: &[Message]) -> Vec<String> {
        consume::each(self.0, messages, 4, |m| async move {
            ask(m).map_or_else(|o| o, |a| answer(&a))
        })
        .await
    }
}

/// Applies messages by group: a group with a message asking `fail` is retried whole, the
/// others answer as they ask.
struct Grouped<'q>(&'q dyn Queue);

impl Consumer for Grouped<'_> {
    async fn process(&self, messages: &[Message]) -> Vec<String> {
        consume::grouped(
            self.0,
            messages,
            2,
            |m| std::future::ready(ask(m).map(|a| (a.group.clone(), a))),
            |_, asks| async move {
                if asks.iter().any(|a| a.then == "fail") {
                    vec![Outcome::Retry("the group failed".to_owned()); asks.len()]
                } else {
                    asks.iter().map(answer).collect()
                }
            },
        )
        .await
    }
}

/// Sends `bodies`, receives them all as one batch, lets `consumer` settle it and deletes
/// what it did not list for a retry, as the SQS trigger does; the ids sent and the retried.
async fn batch(
    q: &dyn Queue,
    consumer: &impl Consumer,
    bodies: &[&str],
) -> (Vec<String>, Vec<String>) {
    let bodies: Vec<String> = bodies.iter().map(|b| (*b).to_owned()).collect();
    let ids = q.send_batch(&bodies).await.unwrap();
    let mut received: Vec<Message> = Vec::new();
    for _ in 0..20 {
        received.extend(
            q.receive(10, VISIBILITY, Duration::from_secs(1))
                .await
                .unwrap(),
        );
        if received.len() == bodies.len() {
            break;
        }
    }
    assert_eq!(
        received.len(),
        bodies.len(),
        "one batch of every message sent"
    );
    let retry = consumer.process(&received).await;
    for m in received.iter().filter(|m| !retry.contains(&m.id)) {
        q.delete(&m.receipt).await.unwrap();
    }
    (ids, retry)
}

/// Every message delivered again after the visibility timeout, by id, with its receive count.
async fn redelivered(q: &dyn Queue) -> Vec<(String, u32)> {
    tokio::time::sleep(VISIBILITY + Duration::from_millis(500)).await;
    let mut back = Vec::new();
    loop {
        let got = q
            .receive(10, VISIBILITY, Duration::from_secs(1))
            .await
            .unwrap();
        if got.is_empty() {
            break;
        }
        back.extend(got.into_iter().map(|m| (m.id, m.receive_count)));
    }
    back.sort();
    back
}

pub async fn a_newer_envelope_is_poison_named_by_its_version(p: &Ports) {
    let q = p.queue.as_ref();
    let (ids, retry) = batch(
        q,
        &Each(q),
        &[
            r#"{"version": 3, "then": "done"}"#,
            "{not json",
            r#"{"version": 2, "then": "done"}"#,
        ],
    )
    .await;
    assert!(retry.is_empty(), "{retry:?}");
    let dead = q.dead_letters(10).await.unwrap();
    let reason = |id: &str| dead.iter().find(|d| d.id == id).map(|d| d.reason.clone());
    let newer = reason(&ids[0]).expect("the newer envelope is dead-lettered");
    assert!(
        newer.contains("envelope version 3 is not supported"),
        "{newer}"
    );
    let malformed = reason(&ids[1]).expect("the malformed body is dead-lettered");
    assert!(malformed.starts_with("not a test message: "), "{malformed}");
    assert_eq!(dead.len(), 2, "the current version is handled: {dead:?}");
    assert!(
        redelivered(q).await.is_empty(),
        "nothing is left on the queue"
    );
}

pub async fn one_batch_settles_each_message_by_its_outcome(p: &Ports) {
    let q = p.queue.as_ref();
    let (ids, retry) = batch(
        q,
        &Each(q),
        &[
            r#"{"then": "done"}"#,
            r#"{"then": "retry"}"#,
            r#"{"then": "poison"}"#,
        ],
    )
    .await;
    assert_eq!(
        retry,
        [ids[1].clone()],
        "only the retry is a batch item failure"
    );
    let dead = q.dead_letters(10).await.unwrap();
    assert_eq!(
        dead.iter()
            .map(|d| (d.id.as_str(), d.reason.as_str()))
            .collect::<Vec<_>>(),
        [(ids[2].as_str(), "asked for poison")]
    );
    assert_eq!(
        redelivered(q).await,
        [(ids[1].clone(), 2)],
        "the retry comes back"
    );
}

pub async fn a_grouped_batch_retries_only_the_failed_group(p: &Ports) {
    let q = p.queue.as_ref();
    let (ids, retry) = batch(
        q,
        &Grouped(q),
        &[
            r#"{"group": "a", "then": "done"}"#,
            r#"{"group": "b", "then": "done"}"#,
            r#"{"group": "a", "then": "poison"}"#,
            r#"{"group": "b", "then": "fail"}"#,
            r#"{"version": 9, "group": "a", "then": "done"}"#,
        ],
    )
    .await;
    let retried: HashSet<&String> = retry.iter().collect();
    assert_eq!(retried, HashSet::from([&ids[1], &ids[3]]), "group b, whole");
    let mut dead: Vec<(String, String)> = q
        .dead_letters(10)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.id, d.reason))
        .collect();
    dead.sort();
    let mut expected = vec![
        (ids[2].clone(), "asked for poison".to_owned()),
        (
            ids[4].clone(),
            "envelope version 9 is not supported: this reader takes versions 0 to 2".to_owned(),
        ),
    ];
    expected.sort();
    assert_eq!(dead, expected);
    let mut back = vec![(ids[1].clone(), 2), (ids[3].clone(), 2)];
    back.sort();
    assert_eq!(redelivered(q).await, back);
}
