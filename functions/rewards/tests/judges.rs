//! The judges against a scripted OpenAI-compatible server on 127.0.0.1 (the stand-in for the
//! model provider), through the gate route of the Lambda app over a real SQLite database:
//! good JSON, a repaired reply, invalid twice, 429 with Retry-After, 500s, a hang past the
//! timeout, the cache, and the usage and cost the provider's numbers add up to.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agentrl_http::{AppOptions, Metrics, app};
use agentrl_rewards::{MAX_BODY_BYTES, Provider, RewardState, service};
use agentrl_store::Stores;
use agentrl_testkit::{
    chat::{ChatServer, Scripted},
    with_body,
};
use axum::Router;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(&format!("rewards/{name}")).unwrap()
}

async fn call(app: &Router, event: &Value) -> (u16, Value) {
    agentrl_testkit::invoke_json(app, event).await.unwrap()
}

struct Harness {
    app: Router,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// The app with no deployment provider: tenants bring their own.
    fn new() -> Self {
        Self::deployed(None)
    }

    /// The app whose deployment provider is at `base_url`, with the key `sk-test`.
    fn deployed(base_url: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let stores = Stores::embedded(dir.path()).unwrap();
        let options = AppOptions {
            metrics: Metrics::Off,
            idempotency: Some(stores.table.clone()),
            body_limit: MAX_BODY_BYTES,
            ..agentrl_http::lambda::options("rewards")
        };
        let provider = Provider::new(Some("sk-test".into()), base_url.map(str::to_owned));
        let state = RewardState::new(
            stores.table.clone(),
            stores.objects.clone(),
            stores.evaluations.clone(),
            Arc::new(provider),
        );
        Self {
            app: app(vec![service(state)], options),
            _dir: dir,
        }
    }

    /// Points the tenant's judges at `server`, with fast timeouts for the tests.
    async fn use_provider(&self, server: &ChatServer, timeout_ms: u64, max_retries: u32) {
        self.configure(Some(&server.base_url), timeout_ms, max_retries)
            .await;
    }

    /// The tenant's judge settings: its own provider at `base_url`, or the deployment's.
    async fn configure(&self, base_url: Option<&str>, timeout_ms: u64, max_retries: u32) {
        let config = json!({
            "base_url": base_url,
            "judge_model": "big-judge",
            "critic_model": "small-critic",
            "timeout_ms": timeout_ms,
            "max_retries": max_retries,
            "prices": {"small-critic": {"input_per_million": 0.5, "output_per_million": 2.0}},
        });
        let (status, body) = call(
            &self.app,
            &with_body(fixture("put-judge-config.json"), &config),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }

    async fn gate(&self, stage: &str, artifact: &str, refinements: u32) -> Value {
        let mut event = with_body(
            fixture("check-gate.json"),
            &json!({"task": "answer the user's question", "artifact": artifact,
                    "refinements": refinements}),
        );
        let path = format!("/v1/gates/{stage}/check");
        event["rawPath"] = path.clone().into();
        event["requestContext"]["http"]["path"] = path.into();
        event["pathParameters"]["stage"] = stage.into();
        let (status, body) = call(&self.app, &event).await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

#[tokio::test]
async fn a_good_reply_is_one_call_with_the_key_the_critic_model_and_a_schema_request() {
    let server = ChatServer::start(|_, _| Scripted::judgment(8.0, 0.9, "clear and correct")).await;
    let h = Harness::deployed(Some(&server.base_url));
    h.configure(None, 2_000, 2).await;
    let gate = h.gate("response", "Use the musl target.", 0).await;
    assert_eq!(gate["decision"], "pass", "{gate}");
    assert_eq!(
        (gate["score"].as_f64(), gate["threshold"].as_f64()),
        (Some(8.0), Some(7.0))
    );
    let j = &gate["judgment"];
    assert_eq!(
        (j["source"].as_str(), j["model"].as_str()),
        (Some("model"), Some("small-critic"))
    );
    assert_eq!(
        (j["calls"].as_u64(), j["cached"].as_bool()),
        (Some(1), Some(false))
    );
    assert_eq!(
        j["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 20})
    );
    assert_eq!(j["rubric_version"], "response@1");
    let sent = server.received();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(sent[0].body["model"], "small-critic");
    assert_eq!(sent[0].body["response_format"]["type"], "json_object");
    let prompt = sent[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("Use the musl target."), "{prompt}");

    // The same artifact again: served from the cache, no second call.
    let again = h.gate("response", "Use the musl target.", 0).await;
    assert_eq!(again["judgment"]["cached"], true, "{again}");
    assert_eq!(again["judgment"]["calls"], 0);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn the_deployment_key_never_goes_to_a_tenant_chosen_provider() {
    let deployment = ChatServer::start(|_, _| Scripted::judgment(8.0, 0.9, "ok")).await;
    let tenants = ChatServer::start(|_, _| Scripted::judgment(8.0, 0.9, "ok")).await;
    let h = Harness::deployed(Some(&deployment.base_url));
    h.use_provider(&tenants, 2_000, 0).await;
    let gate = h.gate("response", "an answer", 0).await;
    assert_eq!(gate["decision"], "pass", "{gate}");
    let sent = tenants.received();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].authorization, None,
        "no credentials for the tenant's URL"
    );
    assert!(deployment.received().is_empty());
}

#[tokio::test]
async fn an_unsure_critic_passes_nothing() {
    let h = Harness::new();
    let server = ChatServer::start(|_, _| Scripted::judgment(10.0, 0.2, "probably fine?")).await;
    h.use_provider(&server, 2_000, 0).await;
    let gate = h.gate("triage", "bug, P3", 0).await;
    assert_eq!(gate["decision"], "escalate_to_human", "{gate}");
    assert_eq!(gate["score"], Value::Null);
    assert_eq!(
        gate["judgment"]["score"], 10.0,
        "what the critic said is kept"
    );
}

#[tokio::test]
async fn an_invalid_reply_is_repaired_once_and_invalid_twice_abstains() {
    let h = Harness::new();
    let server = ChatServer::start(|i, body| {
        let artifact = body["messages"][1]["content"].as_str().unwrap_or_default();
        match (artifact.contains("twice"), i) {
            (false, 0) => Scripted::text("I'd give it a 4 out of 10."),
            (false, _) => Scripted::judgment(4.0, 0.8, "misses the version constraint"),
            (true, _) => Scripted::text("{\"score\": 42}"),
        }
    })
    .await;
    h.use_provider(&server, 2_000, 0).await;
    let gate = h.gate("response", "Upgrade the crate.", 0).await;
    assert_eq!(gate["decision"], "refine", "{gate}");
    assert_eq!(gate["reasons"], "misses the version constraint");
    assert_eq!(gate["judgment"]["calls"], 2);
    assert_eq!(gate["judgment"]["usage"]["prompt_tokens"], 200);
    let repair = &server.received()[1].body["messages"];
    assert_eq!(repair.as_array().unwrap().len(), 4, "{repair}");
    assert_eq!(repair[2]["content"], "I'd give it a 4 out of 10.");
    assert!(
        repair[3]["content"]
            .as_str()
            .unwrap()
            .contains("no JSON object")
    );

    let gate = h.gate("response", "Answer it twice.", 0).await;
    assert_eq!(gate["decision"], "escalate_to_human", "{gate}");
    let j = &gate["judgment"];
    assert_eq!(
        (j["source"].as_str(), j["score"].as_f64()),
        (Some("abstained"), None)
    );
    let reason = j["reason"].as_str().unwrap();
    assert!(
        reason.contains("invalid reply twice") && reason.contains("within 1 and 10"),
        "{reason}"
    );
    // An abstention is not cached: the next check asks again.
    let before = server.received().len();
    h.gate("response", "Answer it twice.", 0).await;
    assert_eq!(server.received().len(), before + 2);
}

#[tokio::test]
async fn a_429_waits_for_its_retry_after_and_5xx_are_retried_up_to_the_limit() {
    let h = Harness::new();
    let server = ChatServer::start(|i, body| {
        let artifact = body["messages"][1]["content"].as_str().unwrap_or_default();
        if artifact.contains("always down") {
            return Scripted::Status {
                status: 503,
                retry_after: None,
            };
        }
        match i {
            0 => Scripted::Status {
                status: 429,
                retry_after: Some("1".into()),
            },
            1 | 2 => Scripted::Status {
                status: 500,
                retry_after: None,
            },
            _ => Scripted::judgment(9.0, 0.95, "good"),
        }
    })
    .await;
    h.use_provider(&server, 2_000, 3).await;
    let gate = h.gate("triage", "bug, P2, storage team", 0).await;
    assert_eq!(gate["decision"], "pass", "{gate}");
    assert_eq!(gate["judgment"]["calls"], 4);
    let sent = server.received();
    let waited = sent[1].at.duration_since(sent[0].at);
    assert!(
        waited >= Duration::from_millis(950),
        "Retry-After: 1 honoured, waited {waited:?}"
    );

    let started = Instant::now();
    let gate = h.gate("triage", "always down", 0).await;
    assert_eq!(gate["decision"], "escalate_to_human", "{gate}");
    assert_eq!(gate["judgment"]["calls"], 4, "the first try and 3 retries");
    assert!(
        gate["judgment"]["reason"].as_str().unwrap().contains("503"),
        "{gate}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn a_hang_past_the_timeout_abstains_without_waiting_for_it() {
    let h = Harness::new();
    let server = ChatServer::start(|_, _| Scripted::Hang(Duration::from_secs(20))).await;
    h.use_provider(&server, 300, 1).await;
    let started = Instant::now();
    let gate = h.gate("research", "notes", 0).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(gate["decision"], "escalate_to_human", "{gate}");
    assert!(
        gate["judgment"]["reason"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{gate}"
    );
    assert_eq!(gate["judgment"]["calls"], 2);
}

#[tokio::test]
async fn a_reply_past_the_size_cap_abstains_without_reading_it_all() {
    let h = Harness::new();
    let server = ChatServer::start(|_, _| Scripted::text(&"x".repeat(3 << 20))).await;
    h.use_provider(&server, 5_000, 2).await;
    let gate = h.gate("research", "notes", 0).await;
    assert_eq!(gate["decision"], "escalate_to_human", "{gate}");
    assert!(
        gate["judgment"]["reason"]
            .as_str()
            .unwrap()
            .contains("larger than 1048576 bytes"),
        "{gate}"
    );
    // Not a transient failure: no retry.
    assert_eq!(gate["judgment"]["calls"], 1, "{gate}");
}

#[tokio::test]
async fn the_refinement_cap_escalates_and_usage_adds_up_to_the_price_table() {
    let h = Harness::new();
    let server = ChatServer::start(|_, _| Scripted::judgment(3.0, 0.9, "too vague")).await;
    h.use_provider(&server, 2_000, 0).await;
    let first = h.gate("response", "draft 1", 0).await;
    assert_eq!(first["decision"], "refine");
    let last = h.gate("response", "draft 4", 3).await;
    assert_eq!(last["decision"], "escalate_to_human", "{last}");
    assert_eq!(last["reasons"], "too vague");
    assert_eq!(last["max_refinements"], 3);

    // The fixture's window is in the past: ask for everything.
    let mut event = fixture("judge-usage.json");
    event["rawQueryString"] = "".into();
    event
        .as_object_mut()
        .unwrap()
        .remove("queryStringParameters");
    let (status, usage) = call(&h.app, &event).await;
    assert_eq!(status, 200, "{usage}");
    let critic = &usage["models"]["small-critic"];
    assert_eq!(critic["judgments"], 2, "{usage}");
    assert_eq!(
        (
            critic["prompt_tokens"].as_u64(),
            critic["completion_tokens"].as_u64()
        ),
        (Some(200), Some(40))
    );
    let cost = critic["cost"].as_f64().unwrap();
    assert!(
        (cost - (200.0 * 0.5 + 40.0 * 2.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    assert_eq!(usage["total"]["calls"], 2);
}

#[tokio::test]
async fn concurrent_checks_of_one_artifact_call_the_provider_once() {
    let h = Harness::new();
    let server = ChatServer::start(|_, _| {
        Scripted::Delayed(
            Duration::from_millis(600),
            Box::new(Scripted::judgment(7.0, 0.8, "fine")),
        )
    })
    .await;
    h.use_provider(&server, 5_000, 0).await;
    let (a, b) = tokio::join!(
        h.gate("response", "the same answer", 0),
        h.gate("response", "the same answer", 0)
    );
    assert_eq!(
        server.received().len(),
        1,
        "the second waited on the first's claim"
    );
    let cached: Vec<bool> = [&a, &b]
        .iter()
        .map(|g| g["judgment"]["cached"].as_bool().unwrap())
        .collect();
    assert_eq!(cached.iter().filter(|c| **c).count(), 1, "{a} {b}");
    assert_eq!(
        (a["score"].as_f64(), b["score"].as_f64()),
        (Some(7.0), Some(7.0))
    );
}
