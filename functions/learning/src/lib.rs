//! The agent-learning service: learning events (`feedback.created`, `ai.message.reply`,
//! `session.ended`, `ai.action`) become bounded rewards and per-agent projections — summary,
//! feedback aggregation, relationships, behaviour — from which a policy update loop moves
//! each agent's traits, and which queue agents for dataset generation.
//!
//! Events arrive on the work queue (from `POST /v1/events` or straight from producers) and are
//! applied by [`Learner`], which the ingest worker runs for every message that carries an
//! `event`. The routes read and steer the projections; [`Policy`] is the update loop (the
//! `learning-policy` binary runs it on a schedule).

mod agents;
mod apply;
mod envelope;
mod policy;
mod repo;
mod routes;
mod worker;

use std::sync::Arc;

use agentrl_core::learning::LearningConfig;
use agentrl_http::{Service, config::ConfigApi};
use agentrl_store::ports::{Queue, Table};
use axum::{
    Router,
    routing::{get, post, put},
};
use utoipa::OpenApi;

pub use envelope::{EventEnvelope, is_event_message};
pub use policy::{PendingRun, Policy, UpdateReport};
pub use repo::LearningRepo;
pub use worker::Learner;

/// Where the learning service announces what it did: every emitted event on `events` (for
/// everyone), and `dataset.generation.requested` also on `datasets` (the dataset job's work).
#[derive(Clone)]
pub struct Outlets {
    /// The event queue.
    pub events: Arc<dyn Queue>,
    /// The dataset queue.
    pub datasets: Arc<dyn Queue>,
}

impl Outlets {
    /// The event and dataset queues of `stores`.
    pub fn of(stores: &agentrl_store::Stores) -> Self {
        Self {
            events: stores.events.clone(),
            datasets: stores.datasets.clone(),
        }
    }
}

/// What the handlers need.
#[derive(Clone)]
pub struct LearningState {
    repo: LearningRepo,
    policy: Policy,
    queue: Arc<dyn Queue>,
}

impl LearningState {
    /// State over `table`, sending events to `queue` (the work queue) and emitting updates on
    /// `outlets`.
    pub fn new(table: Arc<dyn Table>, queue: Arc<dyn Queue>, outlets: Outlets) -> Self {
        let repo = LearningRepo::new(table);
        Self {
            policy: Policy::new(repo.clone(), outlets),
            repo,
            queue,
        }
    }
}

/// The update loop over `table`, emitting on `outlets`: what the scheduled binary and
/// `agentrl serve` run.
pub fn policy(table: Arc<dyn Table>, outlets: Outlets) -> Policy {
    Policy::new(LearningRepo::new(table), outlets)
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::events::post,
        routes::agent::read,
        routes::settings::put_settings,
        routes::settings::unfreeze,
        routes::update::update,
        routes::reply::read,
    ),
    tags((name = "learning", description = "Learning events, agent projections and policy updates"))
)]
struct LearningApi;

/// The learning routes and their OpenAPI document.
pub fn service(state: LearningState) -> Service {
    let router = Router::new()
        .route("/v1/events", post(routes::events::post))
        .route("/v1/agents/{id}/learning", get(routes::agent::read))
        .route(
            "/v1/agents/{id}/learning/settings",
            put(routes::settings::put_settings),
        )
        .route(
            "/v1/agents/{id}/learning/unfreeze",
            post(routes::settings::unfreeze),
        )
        .route(
            "/v1/agents/{id}/learning/update",
            post(routes::update::update),
        )
        .route(
            "/v1/agents/{id}/replies/{message_id}",
            get(routes::reply::read),
        )
        .layer(axum::extract::DefaultBodyLimit::max(
            agentrl_http::DEFAULT_BODY_LIMIT,
        ));
    let configs = ConfigApi {
        path: "/v1/config/learning",
        tag: "learning",
        what: "learning settings: event reward weights, decay, high-quality rules, policy \
               bounds, dataset trigger",
        parse: |config: LearningConfig| {
            config.validate()?;
            Ok(config)
        },
        show: LearningConfig::clone,
    }
    .service(state.repo.configs());
    Service {
        router: router.with_state(state),
        openapi: LearningApi::openapi(),
    }
    .merge(configs)
}

#[cfg(test)]
mod tests {
    use agentrl_core::learning::{
        Event, MAX_ID_CHARS, MAX_NAME_CHARS, MAX_TEXT_CHARS, MAX_TIME_MS,
    };
    use serde_json::{Value, json};
    use utoipa::{PartialSchema, ToSchema};

    use super::*;

    /// The document's schemas by name, with the learning configuration's (`service` merges
    /// its route in).
    fn schemas() -> Value {
        let mut doc = serde_json::to_value(LearningApi::openapi()).unwrap();
        let mut config = vec![(
            LearningConfig::name().into_owned(),
            LearningConfig::schema(),
        )];
        LearningConfig::schemas(&mut config);
        for (name, schema) in config {
            doc["components"]["schemas"][name] = serde_json::to_value(schema).unwrap();
        }
        doc["components"]["schemas"].take()
    }

    #[test]
    fn the_events_limits_are_the_checks() {
        let schemas = schemas();
        let event = &schemas["LearningEvent"]["allOf"][1]["properties"];
        assert_eq!(event["occurred_at_ms"]["maximum"], MAX_TIME_MS);
        assert_eq!(
            schemas["FeedbackEvent"]["properties"]["text"]["maxLength"],
            MAX_TEXT_CHARS
        );
        let required = schemas["LearningEvent"]["allOf"][1]["required"]
            .as_array()
            .unwrap();
        assert!(
            !required.contains(&json!("occurred_at_ms")),
            "the receipt time stands in"
        );
        let id = &event["user_id"];
        assert_eq!(id["maxLength"], MAX_ID_CHARS);
        // Every id and name has the rule compared with the check below, with its length.
        let rule = |s: &Value, max: usize| {
            assert_eq!(s["pattern"], id["pattern"], "{s}");
            assert_eq!(
                (&s["minLength"], &s["maxLength"]),
                (&json!(1), &json!(max)),
                "{s}"
            );
        };
        for field in ["event_id", "agent_id"] {
            rule(&event[field], MAX_ID_CHARS);
        }
        for (schema, field, max) in [
            ("FeedbackEvent", "source_id", MAX_ID_CHARS),
            ("FeedbackEvent", "reaction", MAX_NAME_CHARS),
            ("ReplyEvent", "message_id", MAX_ID_CHARS),
            ("ReplyEvent", "session_id", MAX_ID_CHARS),
            ("SessionEndedEvent", "session_id", MAX_ID_CHARS),
            ("ActionEvent", "action", MAX_NAME_CHARS),
        ] {
            rule(&schemas[schema]["properties"][field], max);
        }
        for (schema, map) in [
            ("ReplyEvent", "traits"),
            ("ActionEvent", "traits"),
            ("RewardWeights", "reactions"),
            ("PolicyConfig", "trait_bounds"),
        ] {
            rule(
                &schemas[schema]["properties"][map]["propertyNames"],
                MAX_NAME_CHARS,
            );
        }
        let pattern = regex::Regex::new(id["pattern"].as_str().unwrap()).unwrap();
        let long = |n: usize| "x".repeat(n);
        let samples = ["", "a", "é 名", "a\n", "\t", "\u{7f}", "a\u{9f}", "\u{a0}"]
            .map(String::from)
            .into_iter()
            .chain([long(MAX_ID_CHARS), long(MAX_ID_CHARS + 1)]);
        for user in samples {
            let n = user.chars().count();
            let documented = pattern.is_match(&user) && (1..=MAX_ID_CHARS).contains(&n);
            let event: Event = serde_json::from_value(json!({
                "event_id": "e1", "agent_id": "a1", "user_id": user, "occurred_at_ms": 0,
                "type": "ai.action", "action": "search", "success": true
            }))
            .unwrap();
            assert_eq!(event.validate().is_ok(), documented, "{user:?}");
        }
    }

    /// Each bound the document gives a number of the learning configuration is the one
    /// `validate` applies: the bound passes, a step past it fails.
    #[test]
    fn the_configs_bounds_are_the_checks() {
        let schemas = schemas();
        // The cross-field rules (`epsilon.min` ≤ `epsilon.initial`, a trait's `min` ≤ `max`)
        // hold whichever of the two moves to its edge.
        let mut base = serde_json::to_value(LearningConfig::default()).unwrap();
        base["policy"]["epsilon"]["initial"] = json!(1.0);
        base["policy"]["epsilon"]["min"] = json!(0.0);
        let accepts = |path: &[&str], value: Value| {
            let mut config = base.clone();
            let at = path.iter().fold(&mut config, |at, p| &mut at[*p]);
            *at = value;
            serde_json::from_value::<LearningConfig>(config).is_ok_and(|c| c.validate().is_ok())
        };
        let mut bounds = 0;
        for (schema, prefix) in [
            ("LearningConfig", &[][..]),
            ("RewardWeights", &["rewards"]),
            ("PolicyConfig", &["policy"]),
            ("EpsilonConfig", &["policy", "epsilon"]),
            ("TraitBounds", &["policy", "default_bounds"]),
            ("DatasetTrigger", &["dataset"]),
        ] {
            for (field, s) in schemas[schema]["properties"].as_object().unwrap() {
                let path = [prefix, &[field.as_str()]].concat();
                // A step past `bound` (integers leave u64 as a float past its end).
                let past = |bound: &Value, up: bool| match (bound.as_u64(), up) {
                    (Some(b), true) => b.checked_add(1).map_or(json!(2f64.powi(64)), Value::from),
                    (Some(b), false) => b.checked_sub(1).map_or(json!(-1), Value::from),
                    (None, _) => {
                        let b = bound.as_f64().unwrap();
                        let step = 1e-9 * b.abs().max(1.0);
                        json!(if up { b + step } else { b - step })
                    }
                };
                let at = |bound: &Value| {
                    if s["type"] == "integer" {
                        bound.clone()
                    } else {
                        json!(bound.as_f64().unwrap())
                    }
                };
                if let Some(min) = s.get("minimum") {
                    assert!(accepts(&path, at(min)), "{path:?} = {min}");
                    assert!(!accepts(&path, past(min, false)), "{path:?} below {min}");
                    bounds += 1;
                }
                if let Some(max) = s.get("maximum") {
                    assert!(accepts(&path, at(max)), "{path:?} = {max}");
                    assert!(!accepts(&path, past(max, true)), "{path:?} above {max}");
                    bounds += 1;
                }
                if let Some(min) = s.get("exclusiveMinimum") {
                    assert!(!accepts(&path, at(min)), "{path:?} = {min}");
                    assert!(accepts(&path, past(min, true)), "{path:?} above {min}");
                    bounds += 1;
                }
            }
        }
        // Every bound of the document was found (a walk that found none would pass).
        assert_eq!(bounds, 59);
    }
}
