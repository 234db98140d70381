//! Evaluations under injected store failures, over a real SQLite database: a queue that
//! refuses the job makes the route answer 503 and mark the evaluation failed; a verdict that
//! cannot be recorded is retried while the queue has deliveries left, and on the last one the
//! evaluation is marked failed and the message dead-lettered with the reason, so nothing is
//! left "queued" or "running".

use std::{sync::Arc, time::Duration};

use agentrl_diff::{Limits, Scorer};
use agentrl_http::{AppOptions, Metrics, app, sqs::Consumer};
use agentrl_rewards::{Evaluator, MAX_BODY_BYTES, Provider, RewardState, service};
use agentrl_store::{
    MAX_RECEIVES, StoreError, Stores,
    ports::{Condition, DeadLetter, Item, Key, Message, Page, Put, Query, Queue, Table, Write},
};
use async_trait::async_trait;
use serde_json::{Value, json};

/// The table with every transaction refused (what a DynamoDB outage looks like to a verdict).
struct RefusingTransactions(Arc<dyn Table>);

#[async_trait]
impl Table for RefusingTransactions {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.0.get(key).await
    }
    async fn put(&self, put: Put) -> Result<u64, StoreError> {
        self.0.put(put).await
    }
    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        self.0.delete(key, condition).await
    }
    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.0.query(query).await
    }
    async fn transact(&self, _: Vec<Write>) -> Result<(), StoreError> {
        Err(StoreError::Backend(anyhow::anyhow!(
            "injected: the table is unavailable"
        )))
    }
}

/// A queue that is down for sending.
struct RefusingSends;

#[async_trait]
impl Queue for RefusingSends {
    async fn send_batch(&self, _: &[String]) -> Result<Vec<String>, StoreError> {
        Err(StoreError::Backend(anyhow::anyhow!(
            "injected: the queue is unavailable"
        )))
    }
    async fn receive(
        &self,
        _: usize,
        _: Duration,
        _: Duration,
    ) -> Result<Vec<Message>, StoreError> {
        Ok(Vec::new())
    }
    async fn delete(&self, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    async fn dead_letter(&self, _: &Message, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    async fn dead_letters(&self, _: usize) -> Result<Vec<DeadLetter>, StoreError> {
        Ok(Vec::new())
    }
}

/// The rewards app as in Lambda over `stores`, queueing evaluations on `queue`.
fn api(stores: &Stores, queue: Arc<dyn Queue>, provider: Arc<Provider>) -> axum::Router {
    let options = AppOptions {
        metrics: Metrics::Off,
        body_limit: MAX_BODY_BYTES,
        ..agentrl_http::lambda::options("rewards")
    };
    let state = RewardState::new(
        stores.table.clone(),
        stores.objects.clone(),
        queue,
        provider,
    );
    app(vec![service(state)], options)
}

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(&format!("rewards/{name}")).unwrap()
}

#[tokio::test]
async fn a_verdict_that_cannot_be_recorded_is_retried_then_fails_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let provider = Arc::new(Provider::new(None, None));
    let api = api(&stores, stores.evaluations.clone(), provider.clone());
    let (status, execution) = agentrl_testkit::invoke_json(&api, &fixture("create-execution.json"))
        .await
        .unwrap();
    assert_eq!(status, 201, "{execution}");
    let create = fixture("create-evaluation.json").to_string().replace(
        "0192f1a0-0000-7000-8000-000000000001",
        execution["execution_id"].as_str().unwrap(),
    );
    let (status, accepted) =
        agentrl_testkit::invoke_json(&api, &serde_json::from_str(&create).unwrap())
            .await
            .unwrap();
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["evaluation_id"].as_str().unwrap().to_owned();

    let worker = Evaluator::new(
        Arc::new(RefusingTransactions(stores.table.clone())),
        stores.objects.clone(),
        stores.evaluations.clone(),
        provider,
        Arc::new(Scorer::new(Limits::default())),
    );
    let get = fixture("get-evaluation.json")
        .to_string()
        .replace("0192f1a0-0000-7000-8000-000000000001", &id);
    let get: Value = serde_json::from_str(&get).unwrap();

    // The message the route queued, as delivered: first, then as its last delivery.
    let mut delivered = stores
        .evaluations
        .receive(1, Duration::from_secs(60), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(delivered.len(), 1);
    assert!(delivered[0].body.contains(&id));
    let message_id = delivered[0].id.clone();
    assert_eq!(worker.process(&delivered).await, [message_id], "retried");
    let (_, shown) = agentrl_testkit::invoke_json(&api, &get).await.unwrap();
    assert_eq!(shown["status"], "running", "{shown}");

    delivered[0].receive_count = MAX_RECEIVES;
    assert!(worker.process(&delivered).await.is_empty(), "handled");
    let (_, shown) = agentrl_testkit::invoke_json(&api, &get).await.unwrap();
    assert_eq!(shown["status"], "failed", "{shown}");
    let error = shown["error"].as_str().unwrap();
    assert!(
        error.contains("gave up after 5 attempts") && error.contains("injected"),
        "{error}"
    );
    let parked = stores.evaluations.dead_letters(10).await.unwrap();
    assert_eq!(parked.len(), 1);
    assert!(parked[0].reason.contains("injected"), "{:?}", parked[0]);
    let (_, reward) = agentrl_testkit::invoke_json(
        &api,
        &serde_json::from_str(&fixture("reward.json").to_string().replace(
            "0192f1a0-0000-7000-8000-000000000001",
            execution["execution_id"].as_str().unwrap(),
        ))
        .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        reward["verifications"],
        json!([]),
        "nothing recorded: {reward}"
    );
}

#[tokio::test]
async fn an_evaluation_the_queue_refuses_is_a_503_and_marked_failed() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let provider = Arc::new(Provider::new(None, None));
    let api = api(&stores, Arc::new(RefusingSends), provider);
    let (_, execution) = agentrl_testkit::invoke_json(&api, &fixture("create-execution.json"))
        .await
        .unwrap();
    let create = fixture("create-evaluation.json").to_string().replace(
        "0192f1a0-0000-7000-8000-000000000001",
        execution["execution_id"].as_str().unwrap(),
    );
    let (status, problem) =
        agentrl_testkit::invoke_json(&api, &serde_json::from_str(&create).unwrap())
            .await
            .unwrap();
    assert_eq!(status, 503, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("retry"),
        "{problem}"
    );
    let stored = stores.objects.list("evaluations/tenant-a/").await.unwrap();
    assert_eq!(
        stored.len(),
        1,
        "the request was stored before the queue refused it"
    );
    let id = stored[0]
        .path
        .rsplit('/')
        .next()
        .unwrap()
        .trim_end_matches(".json");
    let get = fixture("get-evaluation.json")
        .to_string()
        .replace("0192f1a0-0000-7000-8000-000000000001", id);
    let (_, shown) = agentrl_testkit::invoke_json(&api, &serde_json::from_str(&get).unwrap())
        .await
        .unwrap();
    assert_eq!(shown["status"], "failed", "{shown}");
    assert!(
        shown["error"]
            .as_str()
            .unwrap()
            .contains("could not be queued"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_job_of_a_newer_envelope_version_is_parked_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let provider = Arc::new(Provider::new(None, None));
    let job = json!({"version": 3, "tenant": "tenant-a", "evaluation_id": "e-1", "priority": 1});
    stores.evaluations.send(&job.to_string()).await.unwrap();
    let delivered = stores
        .evaluations
        .receive(1, Duration::from_secs(60), Duration::ZERO)
        .await
        .unwrap();
    let worker = Evaluator::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.evaluations.clone(),
        provider,
        Arc::new(Scorer::new(Limits::default())),
    );
    assert!(worker.process(&delivered).await.is_empty());
    let parked = stores.evaluations.dead_letters(10).await.unwrap();
    assert_eq!(parked.len(), 1);
    assert!(
        parked[0]
            .reason
            .contains("envelope version 3 is not supported"),
        "{}",
        parked[0].reason
    );
}
