//! Request and response bodies: the wire shapes, separate from the domain types.

use std::collections::{BTreeMap, HashMap};

use agentrl_core::FieldError;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    DEFAULT_BATCH_SIZE, DEFAULT_MAX_PERMUTATIONS, DEFAULT_SEED, DEFAULT_TARGET_ERROR,
    MAX_AGENT_ID_CHARS, MAX_AGENTS, MAX_BATCH_SIZE, MAX_IMPACT_MULTIPLIER, MAX_PERMUTATIONS,
    MAX_TASK_ID_CHARS,
    attributions::NewContribution,
    model::{MethodName, RewardStats, Strategy, StrategyName},
    repo::ContributionEntry,
    sessions::{Measured, NewSession},
};

/// Latest contribution time accepted, in epoch milliseconds: the end of year 9999.
const MAX_TIMESTAMP_MS: u64 = 253_402_300_799_999;

/// Task ids that would collide with a literal route under `/v1/attributions/`.
const RESERVED_TASK_IDS: [&str; 2] = ["stats", "sessions"];

/// `"linear"`, `"exponential"`, `"sigmoid"`, or an object with `kind` and parameters.
#[derive(Debug, Clone, Copy, Serialize, ToSchema, PartialEq)]
#[serde(untagged)]
pub(crate) enum StrategyBody {
    Name(StrategyName),
    Params(Strategy),
}

/// serde reads an internally tagged variant from its index as well as its name, so
/// `{"kind": 0}` would be `linear`; the document says `kind` is a name, and only a name is.
impl<'de> Deserialize<'de> for StrategyBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Name(StrategyName),
            Params(Strategy),
        }
        let value = serde_json::Value::deserialize(d)?;
        if value.get("kind").is_some_and(|kind| !kind.is_string()) {
            return Err(D::Error::custom(
                "kind must be linear, exponential or sigmoid",
            ));
        }
        match Wire::deserialize(value).map_err(D::Error::custom)? {
            Wire::Name(name) => Ok(Self::Name(name)),
            Wire::Params(params) => Ok(Self::Params(params)),
        }
    }
}

impl Default for StrategyBody {
    fn default() -> Self {
        Self::Name(StrategyName::Linear)
    }
}

impl StrategyBody {
    /// The strategy with defaults filled in and parameters checked.
    pub(crate) fn resolve(self) -> Result<Strategy, FieldError> {
        let s = match self {
            Self::Name(StrategyName::Linear) => Strategy::Linear {},
            Self::Name(StrategyName::Exponential) => Strategy::Exponential { temperature: 1.0 },
            Self::Name(StrategyName::Sigmoid) => Strategy::Sigmoid {
                steepness: 1.0,
                midpoint: 0.0,
            },
            Self::Params(s) => s,
        };
        let bad = |f: &str, d: &str| Err(FieldError::new(format!("strategy.{f}"), d));
        match s {
            Strategy::Exponential { temperature: t } if !(t.is_finite() && t > 0.0) => {
                bad("temperature", "must be finite and > 0")
            }
            Strategy::Sigmoid { steepness: k, .. } if !(k.is_finite() && k >= 0.0) => {
                bad("steepness", "must be finite and ≥ 0")
            }
            Strategy::Sigmoid { midpoint: m, .. } if !m.is_finite() => {
                bad("midpoint", "must be finite")
            }
            s => Ok(s),
        }
    }
}

/// Which estimator to use.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MethodBody {
    /// Exact when the game is a table or has a closed form (always, for this route).
    #[default]
    Auto,
    /// Exact: enumeration of a table, or the closed form.
    Exact,
    /// Permutation sampling with error bars.
    MonteCarlo,
}

/// A coalition and its value v(S).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CoalitionValueBody {
    /// Agent ids of the coalition, each once and each one of the `agents` (any order; `[]` is
    /// the empty coalition). Also accepted as `coalition`, the name session proposals use, so
    /// a proposal can be answered as is.
    #[serde(alias = "coalition")]
    #[schema(value_type = BTreeSet<String>)]
    pub members: Vec<String>,
    /// v(S), finite.
    pub value: f64,
}

/// v(S) = Σ_{i∈S} base_i + Σ_{i<j∈S} synergy_ij.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PairwiseBody {
    /// Stand-alone value of every agent: exactly the `agents`, each with a value.
    pub base: BTreeMap<String, f64>,
    /// `[agent, agent, weight]` triples of two different `agents`, each pair at most once;
    /// pairs not listed have weight 0.
    #[serde(default)]
    #[schema(schema_with = synergy_schema)]
    pub synergy: Vec<(String, String, f64)>,
}

/// `synergy`: triples of two strings and a number (utoipa's tuple schema leaves out the length).
fn synergy_schema() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{ArrayBuilder, ArrayItems, ObjectBuilder, Type};
    let triple = ArrayBuilder::new()
        .prefix_items([
            ObjectBuilder::new().schema_type(Type::String),
            ObjectBuilder::new().schema_type(Type::String),
            ObjectBuilder::new().schema_type(Type::Number),
        ])
        .items(ArrayItems::False)
        .min_items(Some(3))
        .max_items(Some(3));
    ArrayBuilder::new()
        .description(Some(
            "`[agent, agent, weight]` triples of two different `agents`, each pair at most \
             once; pairs not listed have weight 0.",
        ))
        .items(triple)
        .into()
}

/// Sampling parameters shared by attributions and sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SamplingParams {
    pub seed: u64,
    pub target_error: f64,
    pub max_permutations: u64,
}

fn sampling_params(
    seed: Option<u64>,
    target_error: Option<f64>,
    max_permutations: Option<u64>,
    min: u64,
) -> Result<SamplingParams, FieldError> {
    let target_error = target_error.unwrap_or(DEFAULT_TARGET_ERROR);
    if !(target_error.is_finite() && target_error >= 0.0) {
        return Err(FieldError::new("target_error", "must be finite and ≥ 0"));
    }
    if seed.is_some_and(|s| i64::try_from(s).is_err()) {
        return Err(FieldError::new("seed", "must be at most 2^63 − 1"));
    }
    let max_permutations = max_permutations.unwrap_or(DEFAULT_MAX_PERMUTATIONS);
    if !(min..=MAX_PERMUTATIONS).contains(&max_permutations) {
        return Err(FieldError::new(
            "max_permutations",
            format!("must be between {min} and {MAX_PERMUTATIONS}"),
        ));
    }
    Ok(SamplingParams {
        seed: seed.unwrap_or(DEFAULT_SEED),
        target_error,
        max_permutations,
    })
}

/// `POST /v1/attributions`. The game is exactly one of `coalitions`, `contributions` and
/// `pairwise`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateAttributionBody {
    /// The caller's task id (1 to 256 characters, not `stats` or `sessions`, which name
    /// routes); re-posting it replaces the attribution.
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^(?:[\s\S]{0,4}|[\s\S]{6,7}|[\s\S]{9,}|[^s][\s\S]{4}|s[^t][\s\S]{3}|st[^a][\s\S]{2}|sta[^t][\s\S]|stat[^s]|[^s][\s\S]{7}|s[^e][\s\S]{6}|se[^s][\s\S]{5}|ses[^s][\s\S]{4}|sess[^i][\s\S]{3}|sessi[^o][\s\S]{2}|sessio[^n][\s\S]|session[^s])$"
    )]
    pub task_id: String,
    /// Agent ids: 1 to 1000, unique, 1 to 128 characters each; at most 20 with `coalitions`.
    #[schema(value_type = BTreeSet<String>, min_items = 1, max_items = 1000, min_length = 1, max_length = 128)]
    pub agents: Vec<String>,
    /// The reward pool to share (finite, ≥ 0).
    #[schema(minimum = 0)]
    pub total_reward: f64,
    /// Reward shaping (default `"linear"`).
    #[serde(default)]
    pub strategy: StrategyBody,
    /// Estimator (default `auto`).
    #[serde(default)]
    pub method: MethodBody,
    /// Seed of the permutation streams: 0 to 2^63 − 1, OpenAPI's `int64` (default 0).
    #[schema(maximum = 9_223_372_036_854_775_807_u64)]
    pub seed: Option<u64>,
    /// Stopping rule: max se ≤ target_error × max |φ̂| (≥ 0, default 0.01).
    #[schema(minimum = 0)]
    pub target_error: Option<f64>,
    /// Cap on sampled permutations: 2 to 1 000 000 (default 10 000), at least 4 with
    /// `antithetic`, and with `monte_carlo` at most 2·10⁹ divided by the cost of one
    /// permutation (the number of agents, squared for a pairwise game).
    #[schema(minimum = 2, maximum = 1_000_000)]
    pub max_permutations: Option<u64>,
    /// Sample permutations with their reverses (default false).
    #[serde(default)]
    pub antithetic: bool,
    /// A full table: one entry per non-empty coalition of the `agents` (at most 20 of them;
    /// at most 2^20 entries). The game is exactly one of `coalitions`, `contributions` and
    /// `pairwise`.
    #[schema(max_items = 1_048_576)]
    pub coalitions: Option<Vec<CoalitionValueBody>>,
    /// An additive game: each agent's own score, exactly the `agents`. The game is exactly
    /// one of `coalitions`, `contributions` and `pairwise`.
    pub contributions: Option<BTreeMap<String, f64>>,
    /// A pairwise game. The game is exactly one of `coalitions`, `contributions` and
    /// `pairwise`.
    pub pairwise: Option<PairwiseBody>,
}

impl CreateAttributionBody {
    pub(crate) fn sampling(&self) -> Result<SamplingParams, FieldError> {
        let min = if self.antithetic { 4 } else { 2 };
        sampling_params(self.seed, self.target_error, self.max_permutations, min)
    }
}

/// Checks a task id.
pub(crate) fn task_id_ok(v: &str) -> Result<(), FieldError> {
    if v.is_empty() || v.chars().count() > MAX_TASK_ID_CHARS {
        return Err(FieldError::new(
            "task_id",
            format!("must be 1 to {MAX_TASK_ID_CHARS} characters"),
        ));
    }
    if RESERVED_TASK_IDS.contains(&v) {
        return Err(FieldError::new(
            "task_id",
            format!("{v:?} is reserved (it names a route under /v1/attributions/)"),
        ));
    }
    Ok(())
}

/// Checks the agent list; returns the index of each id.
pub(crate) fn agent_index(agents: &[String]) -> Result<HashMap<&str, usize>, FieldError> {
    if agents.is_empty() || agents.len() > MAX_AGENTS {
        return Err(FieldError::new(
            "agents",
            format!("must list 1 to {MAX_AGENTS} agents"),
        ));
    }
    let mut index = HashMap::with_capacity(agents.len());
    for (i, id) in agents.iter().enumerate() {
        if id.is_empty() || id.chars().count() > MAX_AGENT_ID_CHARS {
            return Err(FieldError::new(
                format!("agents[{i}]"),
                format!("agent ids must be 1 to {MAX_AGENT_ID_CHARS} characters"),
            ));
        }
        if let Some(first) = index.insert(id.as_str(), i) {
            return Err(FieldError::new(
                format!("agents[{i}]"),
                format!("duplicate agent id {id:?} (also agents[{first}])"),
            ));
        }
    }
    Ok(index)
}

/// Checks the reward pool.
pub(crate) fn total_reward_ok(v: f64) -> Result<(), FieldError> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(FieldError::new("total_reward", "must be finite and ≥ 0"));
    }
    Ok(())
}

/// A stored attribution.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AttributionView {
    pub task_id: String,
    /// Agent ids in the order given.
    pub agents: Vec<String>,
    /// Shapley value (or its estimate) per agent.
    pub contributions: BTreeMap<String, f64>,
    /// Standard error per agent (0 when exact).
    pub std_errors: BTreeMap<String, f64>,
    pub method: MethodName,
    /// Permutations sampled (monte_carlo only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permutations: Option<u64>,
    /// Whether the stopping rule was met before the cap (monte_carlo only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_reached: Option<bool>,
    /// Σφ − (v(N) − v(∅)): 0 up to rounding.
    pub efficiency_gap: f64,
    /// Banzhaf value per agent (exact and closed_form only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub banzhaf: Option<BTreeMap<String, f64>>,
    /// Conservative 95% half-widths (Hoeffding, from each agent's observed marginal range;
    /// monte_carlo only). Normal intervals ±1.96·se under-cover on sparse games.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hoeffding_95: Option<BTreeMap<String, f64>>,
    /// The game is additive: each agent's Shapley value is its own stand-alone score.
    pub additive: bool,
    /// A plain-language remark (set for additive games).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The pool shared.
    pub total_reward: f64,
    /// Shaped reward per agent; they sum to `total_reward`.
    pub rewards: BTreeMap<String, f64>,
    pub strategy: Strategy,
    pub reward_stats: RewardStats,
    pub computation_time_ms: u64,
    pub created_at_ms: u64,
}

/// `POST /v1/attributions/sessions`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateSessionBody {
    /// The task the final attribution is stored under (1 to 256 characters, not `stats` or
    /// `sessions`, which name routes).
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^(?:[\s\S]{0,4}|[\s\S]{6,7}|[\s\S]{9,}|[^s][\s\S]{4}|s[^t][\s\S]{3}|st[^a][\s\S]{2}|sta[^t][\s\S]|stat[^s]|[^s][\s\S]{7}|s[^e][\s\S]{6}|se[^s][\s\S]{5}|ses[^s][\s\S]{4}|sess[^i][\s\S]{3}|sessi[^o][\s\S]{2}|sessio[^n][\s\S]|session[^s])$"
    )]
    pub task_id: String,
    /// Agent ids: 1 to 1000, unique, 1 to 128 characters each.
    #[schema(value_type = BTreeSet<String>, min_items = 1, max_items = 1000, min_length = 1, max_length = 128)]
    pub agents: Vec<String>,
    /// The reward pool to share when done (finite, ≥ 0).
    #[schema(minimum = 0)]
    pub total_reward: f64,
    /// Reward shaping (default `"linear"`).
    #[serde(default)]
    pub strategy: StrategyBody,
    /// Seed of the permutation streams: 0 to 2^63 − 1, OpenAPI's `int64` (default 0).
    #[schema(maximum = 9_223_372_036_854_775_807_u64)]
    pub seed: Option<u64>,
    /// Stopping rule (≥ 0, default 0.01).
    #[schema(minimum = 0)]
    pub target_error: Option<f64>,
    /// Cap on permutations: 2 to 1 000 000 (default 10 000).
    #[schema(minimum = 2, maximum = 1_000_000)]
    pub max_permutations: Option<u64>,
    /// Coalitions per batch: 1 to 1000 (default 32; a batch always holds one whole
    /// permutation, so it can be larger for big teams).
    #[schema(minimum = 1, maximum = 1000)]
    pub batch_size: Option<usize>,
}

impl CreateSessionBody {
    pub(crate) fn sampling(&self) -> Result<(SamplingParams, usize), FieldError> {
        let params = sampling_params(self.seed, self.target_error, self.max_permutations, 2)?;
        let batch = self.batch_size.unwrap_or(DEFAULT_BATCH_SIZE);
        if !(1..=MAX_BATCH_SIZE).contains(&batch) {
            return Err(FieldError::new(
                "batch_size",
                format!("must be between 1 and {MAX_BATCH_SIZE}"),
            ));
        }
        Ok((params, batch))
    }
}

/// `POST /v1/attributions/sessions/{id}/values`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionValuesBody {
    /// Measured values of proposed coalitions: each one the session proposed, and a
    /// coalition already on record only with the value recorded.
    pub values: Vec<CoalitionValueBody>,
}

/// A coalition to evaluate.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ProposalView {
    /// Agent ids, in the order of the session's `agents`.
    pub coalition: Vec<String>,
}

/// The estimates of a session so far.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SessionProgress)]
pub(crate) struct ProgressView {
    /// Permutations whose marginals are folded in.
    pub permutations: u64,
    /// Permutations proposed so far.
    pub permutations_proposed: u64,
    /// Coalitions proposed and not yet measured.
    pub awaiting: usize,
    /// Whether the stopping rule was met.
    pub target_reached: bool,
    /// Whether the session is finished (target reached or cap reached).
    pub done: bool,
    /// Estimated Shapley value per agent.
    pub estimates: BTreeMap<String, f64>,
    /// Standard errors (null before two permutations are complete).
    pub std_errors: Option<BTreeMap<String, f64>>,
}

/// An interactive session.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SessionView {
    pub session_id: String,
    pub task_id: String,
    /// Every coalition still to measure (empty when done).
    pub proposals: Vec<ProposalView>,
    pub progress: ProgressView,
}

/// `POST /v1/contributions`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContributionBody {
    /// The agent (1 to 128 characters).
    #[schema(min_length = 1, max_length = 128)]
    pub agent_id: String,
    /// The task (1 to 256 characters).
    #[schema(min_length = 1, max_length = 256)]
    pub task_id: String,
    /// Quality before, in [0, 1].
    #[schema(minimum = 0, maximum = 1)]
    pub quality_before: f64,
    /// Quality after, in [0, 1].
    #[schema(minimum = 0, maximum = 1)]
    pub quality_after: f64,
    /// Effort relative to the expected effort (> 0).
    #[schema(exclusive_minimum = 0)]
    pub effort_ratio: f64,
    /// How much the change matters (0 to 1 000 000, default 1).
    #[schema(minimum = 0, maximum = 1_000_000)]
    pub impact_multiplier: Option<f64>,
    /// When, in epoch milliseconds (default now; at most 253402300799999, the end of 9999).
    #[schema(maximum = 253_402_300_799_999_u64)]
    pub timestamp_ms: Option<u64>,
}

/// Ids, qualities, effort and impact are checked here; the score is the domain's.
impl TryFrom<ContributionBody> for NewContribution {
    type Error = FieldError;

    fn try_from(body: ContributionBody) -> Result<Self, FieldError> {
        if body.agent_id.is_empty() || body.agent_id.chars().count() > MAX_AGENT_ID_CHARS {
            return Err(FieldError::new(
                "agent_id",
                format!("must be 1 to {MAX_AGENT_ID_CHARS} characters"),
            ));
        }
        if body.task_id.is_empty() || body.task_id.chars().count() > MAX_TASK_ID_CHARS {
            return Err(FieldError::new(
                "task_id",
                format!("must be 1 to {MAX_TASK_ID_CHARS} characters"),
            ));
        }
        for (field, v) in [
            ("quality_before", body.quality_before),
            ("quality_after", body.quality_after),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(FieldError::new(field, "must be between 0 and 1"));
            }
        }
        if !(body.effort_ratio.is_finite() && body.effort_ratio > 0.0) {
            return Err(FieldError::new("effort_ratio", "must be finite and > 0"));
        }
        if body.timestamp_ms.is_some_and(|t| t > MAX_TIMESTAMP_MS) {
            return Err(FieldError::new(
                "timestamp_ms",
                format!("must be at most {MAX_TIMESTAMP_MS} (the end of year 9999)"),
            ));
        }
        if let Some(m) = body.impact_multiplier
            && !(0.0..=MAX_IMPACT_MULTIPLIER).contains(&m)
        {
            return Err(FieldError::new(
                "impact_multiplier",
                format!("must be between 0 and {MAX_IMPACT_MULTIPLIER}"),
            ));
        }
        Ok(Self {
            agent_id: body.agent_id,
            task_id: body.task_id,
            quality_before: body.quality_before,
            quality_after: body.quality_after,
            effort_ratio: body.effort_ratio,
            impact_multiplier: body.impact_multiplier.unwrap_or(1.0),
            timestamp_ms: body.timestamp_ms,
        })
    }
}

/// A recorded contribution.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub(crate) struct ContributionEntryView {
    /// Unique id of the entry.
    pub id: String,
    pub agent_id: String,
    pub task_id: String,
    pub quality_before: f64,
    pub quality_after: f64,
    pub effort_ratio: f64,
    pub impact_multiplier: f64,
    pub timestamp_ms: u64,
    /// (quality_after − quality_before) × impact_multiplier / max(effort_ratio, 1e-6).
    pub score: f64,
}

/// The answer to `POST /v1/contributions`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ContributionView {
    pub score: f64,
    pub entry: ContributionEntryView,
    /// Oldest entries deleted because the tenant's history was over its cap.
    pub evicted: u64,
}

/// One agent in a ranking.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RankView {
    /// 1-based position.
    pub rank: usize,
    pub agent_id: String,
    /// Sum of the agent's scores in the window.
    pub score: f64,
    /// Contributions in the window.
    pub count: usize,
    /// Mean score per contribution.
    pub mean: f64,
}

/// Reward distribution statistics of one strategy.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StrategyStatsView {
    pub strategy: StrategyName,
    /// Attributions in the window with this strategy.
    pub count: u64,
    /// Mean number of agents.
    pub mean_agents: f64,
    /// Mean Gini coefficient of the rewards.
    pub mean_gini: f64,
    /// Largest Gini coefficient.
    pub max_gini: f64,
    /// Mean share of the pool paid to the best-paid agent (attributions with a pool > 0).
    pub mean_max_share: Option<f64>,
    /// Mean share of the pool paid to the worst-paid agent (attributions with a pool > 0).
    pub mean_min_share: Option<f64>,
    /// Sum of the pools.
    pub total_reward: f64,
}

/// `GET /v1/attributions/stats`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StatsView {
    pub from_ms: u64,
    /// `null` when the window is open-ended.
    pub to_ms: Option<u64>,
    /// One entry per strategy asked for (all three by default), also when count is 0.
    pub strategies: Vec<StrategyStatsView>,
}

/// Ids, the reward, the strategy and the sampling settings are checked here.
impl TryFrom<CreateSessionBody> for NewSession {
    type Error = FieldError;

    fn try_from(body: CreateSessionBody) -> Result<Self, FieldError> {
        task_id_ok(&body.task_id)?;
        total_reward_ok(body.total_reward)?;
        agent_index(&body.agents)?;
        let (sampling, batch_size) = body.sampling()?;
        Ok(Self {
            strategy: body.strategy.resolve()?,
            task_id: body.task_id,
            agents: body.agents,
            total_reward: body.total_reward,
            sampling,
            batch_size,
        })
    }
}

impl From<SessionValuesBody> for Vec<Measured> {
    fn from(body: SessionValuesBody) -> Self {
        body.values
            .into_iter()
            .map(|v| Measured {
                members: v.members,
                value: v.value,
            })
            .collect()
    }
}

impl From<ContributionEntry> for ContributionEntryView {
    fn from(e: ContributionEntry) -> Self {
        Self {
            id: e.id,
            agent_id: e.agent_id,
            task_id: e.task_id,
            quality_before: e.quality_before,
            quality_after: e.quality_after,
            effort_ratio: e.effort_ratio,
            impact_multiplier: e.impact_multiplier,
            timestamp_ms: e.timestamp_ms,
            score: e.score,
        }
    }
}

#[cfg(test)]
mod tests {
    use regex::Regex;
    use serde_json::{Value, json};

    use super::*;
    use crate::{MAX_COALITION_ENTRIES, compute::Job};
    use agentrl_testkit::schema::bounds_hold;

    fn schema<T: utoipa::PartialSchema>() -> Value {
        serde_json::to_value(T::schema()).expect("serializes")
    }

    /// With `field` set to `value`, `base` passes `check`.
    fn with<T: serde::de::DeserializeOwned>(
        base: &Value,
        field: &str,
        value: Value,
        check: impl Fn(T) -> bool,
    ) -> bool {
        let mut body = base.clone();
        body[field] = value;
        serde_json::from_value(body).is_ok_and(check)
    }

    /// The literals of the schema attributes are the constants, and the declared bounds are
    /// where the checks draw the line.
    #[test]
    fn schemas_state_the_checks() {
        let attribution = schema::<CreateAttributionBody>();
        let session = schema::<CreateSessionBody>();
        for body in [&attribution, &session] {
            let p = &body["properties"];
            assert_eq!(p["task_id"]["maxLength"], MAX_TASK_ID_CHARS);
            assert_eq!(p["agents"]["maxItems"], MAX_AGENTS);
            assert_eq!(p["agents"]["uniqueItems"], true);
            assert_eq!(p["agents"]["items"]["maxLength"], MAX_AGENT_ID_CHARS);
            assert_eq!(p["max_permutations"]["maximum"], MAX_PERMUTATIONS);
            let task_id =
                Regex::new(p["task_id"]["pattern"].as_str().expect("a pattern")).expect("compiles");
            for reserved in RESERVED_TASK_IDS {
                let mut ids = vec![reserved.to_owned(), format!("{reserved}s")];
                for (i, c) in reserved.char_indices() {
                    ids.push(reserved[..i].to_owned());
                    ids.push(format!("{}{}", &reserved[..i], &reserved[i + 1..]));
                    for other in [c.to_ascii_uppercase(), 'x', 'é'] {
                        ids.push(format!("{}{other}{}", &reserved[..i], &reserved[i + 1..]));
                    }
                }
                for id in ids.iter().filter(|id| !id.is_empty()) {
                    assert_eq!(task_id.is_match(id), task_id_ok(id).is_ok(), "{id:?}");
                }
            }
        }
        assert_eq!(
            session["properties"]["batch_size"]["maximum"],
            MAX_BATCH_SIZE
        );
        let coalitions = &attribution["properties"]["coalitions"]["maxItems"];
        assert_eq!(*coalitions, MAX_COALITION_ENTRIES);

        let base = json!({"task_id": "t", "agents": ["a", "b"], "total_reward": 1,
                          "contributions": {"a": 1, "b": 2}});
        for field in ["total_reward", "target_error", "max_permutations", "seed"] {
            bounds_hold(&attribution, field, |v| {
                with(&base, field, v, |b| Job::from_body(b).is_ok())
            });
        }
        let base = json!({"task_id": "t", "agents": ["a", "b"], "total_reward": 1});
        for field in [
            "total_reward",
            "target_error",
            "max_permutations",
            "batch_size",
            "seed",
        ] {
            bounds_hold(&session, field, |v| {
                with(&base, field, v, |b: CreateSessionBody| {
                    NewSession::try_from(b).is_ok()
                })
            });
        }
        let base = json!({"agent_id": "a", "task_id": "t", "quality_before": 0.5,
                          "quality_after": 0.5, "effort_ratio": 1});
        let contribution = schema::<ContributionBody>();
        let impact = &contribution["properties"]["impact_multiplier"]["maximum"];
        assert_eq!(*impact, MAX_IMPACT_MULTIPLIER);
        for field in [
            "quality_before",
            "quality_after",
            "effort_ratio",
            "impact_multiplier",
        ] {
            bounds_hold(&contribution, field, |v| {
                with(&base, field, v, |b: ContributionBody| {
                    NewContribution::try_from(b).is_ok()
                })
            });
        }
        let strategy = schema::<Strategy>();
        for (variant, kind, field) in [
            (1, "exponential", "temperature"),
            (2, "sigmoid", "steepness"),
        ] {
            bounds_hold(&strategy["oneOf"][variant], field, |v| {
                with(&json!({"kind": kind}), field, v, |s: StrategyBody| {
                    s.resolve().is_ok()
                })
            });
        }
    }

    #[test]
    fn strategies_accept_names_and_objects() {
        let parse = |s: &str| serde_json::from_str::<StrategyBody>(s).unwrap().resolve();
        assert_eq!(parse(r#""linear""#).unwrap(), Strategy::Linear {});
        assert_eq!(
            parse(r#""exponential""#).unwrap(),
            Strategy::Exponential { temperature: 1.0 }
        );
        assert_eq!(
            parse(r#"{"kind":"exponential","temperature":0.5}"#).unwrap(),
            Strategy::Exponential { temperature: 0.5 }
        );
        assert_eq!(
            parse(r#"{"kind":"sigmoid","steepness":2}"#).unwrap(),
            Strategy::Sigmoid {
                steepness: 2.0,
                midpoint: 0.0
            }
        );
        let e = parse(r#"{"kind":"exponential","temperature":0}"#).unwrap_err();
        assert_eq!(e.field, "strategy.temperature");
        assert!(serde_json::from_str::<StrategyBody>(r#""cubic""#).is_err());
        assert!(serde_json::from_str::<StrategyBody>(r#"{"kind":"linear","x":1}"#).is_err());
        assert!(serde_json::from_str::<StrategyBody>(r#"{"kind":0}"#).is_err());
        let out = serde_json::to_value(Strategy::Sigmoid {
            steepness: 1.0,
            midpoint: 0.0,
        })
        .unwrap();
        assert_eq!(out["kind"], "sigmoid");
    }

    #[test]
    fn agent_lists_are_checked() {
        let ids = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(agent_index(&ids(&["a", "b"])).unwrap()["b"], 1);
        let e = agent_index(&ids(&["a", "b", "a"])).unwrap_err();
        assert_eq!(e.field, "agents[2]");
        assert!(agent_index(&[]).is_err());
        assert!(agent_index(&ids(&[""])).is_err());
        assert!(task_id_ok("stats").is_err() && task_id_ok("t-1").is_ok());
    }
}
