//! One storage conformance suite, run against both adapter sets: embedded (real SQLite
//! files, a real directory) and AWS (DynamoDB, SQS and S3 on moto over HTTP).

mod consume;
mod objects;
mod queue;
mod table;

/// Instantiates each case once per adapter set.
macro_rules! conformance {
    ($($module:ident :: $case:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    crate::$module::$case(&agentrl_tests::embedded()).await;
                }
            )*
        }
        mod aws {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    crate::$module::$case(&agentrl_tests::aws().await).await;
                }
            )*
        }
    };
}

conformance!(
    table::conditional_writes_conflict,
    table::concurrent_writers_lose_no_update,
    table::transactions_fail_atomically,
    table::queries_paginate_in_sort_key_order,
    table::expired_items_are_absent,
    table::get_many_answers_every_key_in_order,
    queue::redelivers_after_the_visibility_timeout,
    queue::redrives_to_the_dlq_after_max_receives,
    queue::dead_letters_keep_their_reason,
    queue::batches_send_and_receive_every_message,
    consume::a_newer_envelope_is_poison_named_by_its_version,
    consume::one_batch_settles_each_message_by_its_outcome,
    consume::a_grouped_batch_retries_only_the_failed_group,
    objects::round_trips_small_and_large_objects,
    objects::lists_by_prefix_and_refuses_bad_paths,
);

/// Embedded only: the local stack, the queues' one consumer, takes back at start what a crash
/// left in flight, and a dead consumer's receipt no longer acknowledges anything.
#[tokio::test]
async fn embedded_in_flight_messages_are_redelivered_at_start() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let stores = agentrl_store::Stores::embedded(dir.path()).unwrap();
    stores.queue.send("work").await.unwrap();
    let hour = Duration::from_secs(3600);
    let first = stores.queue.receive(1, hour, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);
    assert!(
        stores
            .queue
            .receive(1, hour, Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(stores.redeliver_in_flight().await.unwrap(), 1);
    let again = stores.queue.receive(1, hour, Duration::ZERO).await.unwrap();
    assert_eq!(
        (again[0].id.as_str(), again[0].receive_count),
        (first[0].id.as_str(), 2)
    );
    // The dead consumer's receipt acknowledges nothing: the message is still there.
    stores.queue.delete(&first[0].receipt).await.unwrap();
    assert_eq!(stores.redeliver_in_flight().await.unwrap(), 1);
    assert_eq!(
        stores
            .queue
            .receive(1, hour, Duration::ZERO)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        stores.redeliver_in_flight().await.unwrap(),
        1,
        "nothing else was in flight"
    );
}
