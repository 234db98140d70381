//! `GET /v1/attributions/stats`: how each shaping strategy has distributed rewards.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Query, State},
};
use serde::Deserialize;

use super::window;
use crate::{
    AttributionState, attributions,
    compute::AttributionRecord,
    model::StrategyName,
    wire::{StatsView, StrategyStatsView},
};

/// Query string of the statistics.
#[derive(Debug, Deserialize)]
pub(crate) struct StatsParams {
    strategy: Option<String>,
    from: Option<String>,
    to: Option<String>,
}

#[derive(Default)]
struct Acc {
    count: u64,
    agents: f64,
    gini_sum: f64,
    gini_max: f64,
    paid: u64,
    max_share: f64,
    min_share: f64,
    total_reward: f64,
}

impl Acc {
    fn add(&mut self, r: &AttributionRecord) {
        self.count += 1;
        self.agents += r.agents.len() as f64;
        self.gini_sum += r.reward_stats.gini;
        self.gini_max = self.gini_max.max(r.reward_stats.gini);
        self.total_reward += r.total_reward;
        if r.total_reward > 0.0 {
            self.paid += 1;
            self.max_share += r.reward_stats.max / r.total_reward;
            self.min_share += r.reward_stats.min / r.total_reward;
        }
    }

    fn view(&self, strategy: StrategyName) -> StrategyStatsView {
        let per = |x: f64| {
            if self.count > 0 {
                x / self.count as f64
            } else {
                0.0
            }
        };
        let per_paid = |x: f64| (self.paid > 0).then(|| x / self.paid as f64);
        StrategyStatsView {
            strategy,
            count: self.count,
            mean_agents: per(self.agents),
            mean_gini: per(self.gini_sum),
            max_gini: self.gini_max,
            mean_max_share: per_paid(self.max_share),
            mean_min_share: per_paid(self.min_share),
            total_reward: self.total_reward,
        }
    }
}

/// Reward distribution statistics per strategy over the tenant's attributions.
///
/// Covers the attributions stored with `created_at_ms` in `[from, to)` (default: all), for
/// one `strategy` or all three. Per strategy: how many, the mean number of agents, the mean
/// and largest Gini coefficient of the rewards, the mean share of the pool paid to the best-
/// and the worst-paid agent (over attributions with a pool > 0; null if none), and the sum of
/// the pools. Reads every attribution in the window.
#[utoipa::path(get, path = "/v1/attributions/stats", tag = "attribution",
    params(
        ("strategy" = Option<StrategyName>, Query, description = "linear, exponential or sigmoid (default: all)"),
        ("from" = Option<u64>, Query, description = "Earliest created_at_ms (inclusive)"),
        ("to" = Option<u64>, Query, description = "Latest created_at_ms (exclusive)"),
    ),
    responses(
        (status = 200, description = "Statistics per strategy", body = StatsView),
        (status = 400, description = "A bad number or strategy", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn stats(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    Query(params): Query<StatsParams>,
) -> Result<Json<StatsView>, ApiError> {
    let (from, to) = window(params.from.as_deref(), params.to.as_deref(), 0)?;
    let all = [
        StrategyName::Linear,
        StrategyName::Exponential,
        StrategyName::Sigmoid,
    ];
    let wanted: Vec<StrategyName> = match params.strategy.as_deref() {
        None => all.to_vec(),
        Some(s) => vec![
            serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(|_| {
                ApiError::invalid("strategy", "must be linear, exponential or sigmoid")
            })?,
        ],
    };
    let mut accs: Vec<Acc> = all.iter().map(|_| Acc::default()).collect();
    attributions::for_each_in(&state.repo, &tenant, (from, to), |r| {
        let k = all
            .iter()
            .position(|s| *s == r.strategy.name())
            .unwrap_or(0);
        accs[k].add(r);
    })
    .await?;
    let strategies = all
        .iter()
        .zip(&accs)
        .filter(|(s, _)| wanted.contains(s))
        .map(|(s, a)| a.view(*s))
        .collect();
    Ok(Json(StatsView {
        from_ms: from,
        to_ms: agentrl_http::query::shown_end(to),
        strategies,
    }))
}
