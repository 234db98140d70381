//! Trajectory ingest. `POST /v1/trajectories` validates a trajectory and enqueues it (202);
//! the queue worker turns batches of them into turn rows — rewarded per turn (by rules, or in
//! part by the tenant's critic model: `judged`), anonymised,
//! optionally with differentially private episode rewards — and writes one Parquet object per
//! (tenant, date) of the batch under `trajectories/tenant=…/date=…/`, then indexes each
//! trajectory in the table (`repo`), which `GET /v1/trajectories` lists and
//! `GET /v1/trajectories/{id}` reads back with its turn rows.
//!
//! The same worker runs as the SQS-triggered Lambda (`bin/ingest.rs`) and in-process under
//! `agentrl serve` over the embedded queue.

mod config;
mod judged;
mod ledger;
mod paths;
mod repo;
mod routes;
mod rows;
mod trajectories;
mod wire;
mod worker;

use std::sync::Arc;

use agentrl_http::{Service, config::ConfigApi};
use agentrl_store::{
    ports::{Objects, Queue, Table},
    tenant_config::TenantConfig,
};
use axum::{
    Router,
    routing::{get, post},
};
use utoipa::OpenApi;

pub use agentrl_core::envelope::Envelope;
pub use config::IngestConfig;
pub use paths::object_path;
pub use worker::Ingest;

/// Largest trajectory request: Lambda's synchronous payload limit. A trajectory larger than a
/// queue message (256 KiB) travels as a claim check on an object.
pub const MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

/// What the HTTP handlers need.
#[derive(Clone)]
pub struct TrajectoryState {
    queue: Arc<dyn Queue>,
    objects: Arc<dyn Objects>,
    table: Arc<dyn Table>,
    configs: TenantConfig<IngestConfig>,
    federation: TenantConfig<agentrl_core::federation::FederationOptIn>,
    kpis: agentrl_http::kpis::KpiLedger,
}

impl TrajectoryState {
    /// State over the queue trajectories are sent to (the objects store those too large for
    /// it) and the table of tenant settings.
    pub fn new(queue: Arc<dyn Queue>, objects: Arc<dyn Objects>, table: Arc<dyn Table>) -> Self {
        Self {
            queue,
            objects,
            configs: TenantConfig::new(table.clone(), config::CONFIG_NAME),
            federation: TenantConfig::new(table.clone(), agentrl_store::federation::OPT_IN),
            kpis: agentrl_http::kpis::KpiLedger::new(table.clone()),
            table,
        }
    }

    /// The same state, emitting its KPI counts (accepted trajectories) in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: agentrl_http::Metrics) -> Self {
        self.kpis = self.kpis.with_metrics(metrics);
        self
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::post::post,
        routes::list::list,
        routes::read::read,
        routes::privacy::budget,
    ),
    // A query parameter's schema is referenced, not collected: name it here.
    components(schemas(repo::Outcome)),
    tags((name = "trajectories", description = "Trajectory collection for training"))
)]
struct TrajectoryApi;

/// The trajectory routes and their OpenAPI document.
pub fn service(state: TrajectoryState) -> Service {
    let router = Router::new()
        .route(
            "/v1/trajectories",
            post(routes::post::post).get(routes::list::list),
        )
        .route("/v1/trajectories/{id}", get(routes::read::read))
        .route("/v1/privacy/budget", get(routes::privacy::budget))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES));
    let configs = ConfigApi {
        path: "/v1/config/trajectories",
        tag: "trajectories",
        what: "ingest settings: turn-reward weights, turn rewards judged by the critic model, and differential privacy",
        parse: |config: IngestConfig| {
            config.validate()?;
            Ok(config)
        },
        show: IngestConfig::clone,
    }
    .service(state.configs.clone());
    Service {
        router: router.with_state(state),
        openapi: TrajectoryApi::openapi(),
    }
    .merge(configs)
}

#[cfg(test)]
mod tests {
    use agentrl_core::trajectory::Limits;
    use serde_json::{Value, json};
    use utoipa::OpenApi;

    /// The limits the request schema repeats as literals are the validator's.
    #[test]
    fn the_trajectory_schema_states_the_validated_limits() {
        let doc = serde_json::to_value(super::TrajectoryApi::openapi()).unwrap();
        let properties =
            |name: &str| -> Value { doc["components"]["schemas"][name]["properties"].clone() };
        let trajectory = properties("Trajectory");
        let (turn, tool) = (properties("Turn"), properties("ToolSpec"));
        let (call, outcome) = (properties("ToolCall"), properties("FinalOutcome"));
        let id = json!(format!("^[A-Za-z0-9_.:@/-]{{1,{}}}$", Limits::MAX_ID_CHARS));
        for field in [
            &trajectory["trajectory_id"],
            &trajectory["agent_id"],
            &trajectory["conversation_id"],
            &trajectory["user_id"],
            &trajectory["group_id"],
            &trajectory["policy_version"],
            &tool["name"],
            &call["name"],
        ] {
            assert_eq!(field["pattern"], id, "{field}");
        }
        assert_eq!(trajectory["tools"]["maxItems"], Limits::MAX_TOOLS);
        assert_eq!(trajectory["turns"]["maxItems"], Limits::MAX_TURNS);
        for text in [
            &turn["content"],
            &turn["tool_result"],
            &turn["error"],
            &tool["description"],
        ] {
            assert_eq!(text["maxLength"], Limits::MAX_TEXT_CHARS, "{text}");
        }
        for label in [&turn["tokenizer"], &outcome["termination_reason"]] {
            assert_eq!(label["maxLength"], Limits::MAX_LABEL_CHARS, "{label}");
        }
        for list in [
            "prompt_token_ids",
            "response_token_ids",
            "loss_mask",
            "behavior_logprobs",
        ] {
            assert_eq!(
                turn[list]["maxItems"],
                Limits::MAX_TOKENS_PER_LIST,
                "{list}"
            );
        }
        for ids in ["prompt_token_ids", "response_token_ids"] {
            assert_eq!(turn[ids]["items"]["maximum"], Limits::MAX_TOKEN_ID, "{ids}");
        }
        // Past it, an f64 rounds to −∞ as an f32 (the core's validation tests show where).
        assert_eq!(
            turn["behavior_logprobs"]["items"]["exclusiveMinimum"],
            -(2f64.powi(128) - 2f64.powi(103))
        );
    }
}
