//! From a request to a stored attribution: the game named by ids becomes a core game over
//! indices, the estimator runs, the credits are shaped into rewards.

use std::collections::{BTreeMap, HashMap, HashSet};

use agentrl_core::{
    FieldError,
    attribution::{
        Additive, AttributeError, Attribution, AttributionConfig, Coalition, CoalitionTable,
        ExactSource, Game, Method, Pairwise, SamplingConfig, TableError, attribute,
        distribution_stats, exact_for_game, shape_rewards,
    },
};
use serde::{Deserialize, Serialize};

use crate::{
    MAX_COALITION_ENTRIES, MAX_SAMPLING_WORK, MIN_PERMUTATIONS,
    model::{MethodName, RewardStats, Strategy},
    wire::{AttributionView, CreateAttributionBody, MethodBody},
};

/// An attribution as stored: vectors in the order of `agents` (compact; the view makes maps).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct AttributionRecord {
    pub task_id: String,
    pub agents: Vec<String>,
    pub contributions: Vec<f64>,
    pub std_errors: Vec<f64>,
    pub method: MethodName,
    pub permutations: Option<u64>,
    pub target_reached: Option<bool>,
    pub efficiency_gap: f64,
    pub banzhaf: Option<Vec<f64>>,
    /// Hoeffding half-widths at 95% from the observed marginal ranges (route 1 sampling).
    #[serde(default)]
    pub hoeffding_95: Option<Vec<f64>>,
    pub additive: bool,
    pub total_reward: f64,
    pub rewards: Vec<f64>,
    pub strategy: Strategy,
    pub reward_stats: RewardStats,
    pub computation_time_ms: u64,
    pub created_at_ms: u64,
}

const ADDITIVE_NOTE: &str = "the game is additive: each agent's Shapley value is its own \
                             stand-alone score v({i}) - v(empty); there is no interaction to share";

impl AttributionRecord {
    pub(crate) fn view(&self) -> AttributionView {
        let map = |values: &[f64]| -> BTreeMap<String, f64> {
            self.agents
                .iter()
                .cloned()
                .zip(values.iter().copied())
                .collect()
        };
        AttributionView {
            task_id: self.task_id.clone(),
            agents: self.agents.clone(),
            contributions: map(&self.contributions),
            std_errors: map(&self.std_errors),
            method: self.method,
            permutations: self.permutations,
            target_reached: self.target_reached,
            efficiency_gap: self.efficiency_gap,
            banzhaf: self.banzhaf.as_deref().map(map),
            hoeffding_95: self.hoeffding_95.as_deref().map(map),
            additive: self.additive,
            note: self.additive.then(|| ADDITIVE_NOTE.to_owned()),
            total_reward: self.total_reward,
            rewards: map(&self.rewards),
            strategy: self.strategy,
            reward_stats: self.reward_stats,
            computation_time_ms: self.computation_time_ms,
            created_at_ms: self.created_at_ms,
        }
    }
}

/// The game of a request, over agent indices.
pub(crate) enum GameInput {
    Table(CoalitionTable),
    Additive(Additive),
    Pairwise(Pairwise),
}

impl GameInput {
    fn game(&self) -> &dyn Game {
        match self {
            Self::Table(g) => g,
            Self::Additive(g) => g,
            Self::Pairwise(g) => g,
        }
    }

    /// Work of one sampled permutation, in units of the sampling cap.
    fn permutation_cost(&self) -> u64 {
        let n = self.game().n() as u64;
        match self {
            Self::Pairwise(_) => n * n,
            Self::Table(_) | Self::Additive(_) => n,
        }
    }
}

/// Everything needed to compute an attribution, checked.
pub(crate) struct Job {
    pub task_id: String,
    pub agents: Vec<String>,
    pub total_reward: f64,
    pub strategy: Strategy,
    pub method: MethodBody,
    pub sampling: SamplingConfig,
    pub game: GameInput,
}

fn members_of(agents: &[String], mask: u32) -> String {
    let ids: Vec<&str> = (0..agents.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| agents[i].as_str())
        .collect();
    serde_json::to_string(&ids).unwrap_or_default()
}

fn table_error(agents: &[String], e: TableError) -> FieldError {
    match e {
        TableError::MissingCoalitions {
            missing,
            total_missing,
        } => {
            let listed: Vec<String> = missing.iter().map(|m| members_of(agents, *m)).collect();
            FieldError::new(
                "coalitions",
                format!(
                    "the table is incomplete: {total_missing} coalitions have no value; the \
                     first {} are {}",
                    listed.len(),
                    listed.join(", ")
                ),
            )
        }
        TableError::RepeatedMember { entry, agent } => FieldError::new(
            format!("coalitions[{entry}].members"),
            format!("agent {:?} is listed twice", agents[agent]),
        ),
        TableError::DuplicateCoalition { entry, mask } => FieldError::new(
            format!("coalitions[{entry}]"),
            format!("coalition {} already has a value", members_of(agents, mask)),
        ),
        other => FieldError::new("coalitions", other.to_string()),
    }
}

fn lookup(index: &HashMap<&str, usize>, field: String, id: &str) -> Result<usize, FieldError> {
    index
        .get(id)
        .copied()
        .ok_or_else(|| FieldError::new(field, format!("unknown agent id {id:?}")))
}

/// The per-agent values of `map`, every agent required.
fn per_agent(
    field: &str,
    agents: &[String],
    index: &HashMap<&str, usize>,
    map: &BTreeMap<String, f64>,
) -> Result<Vec<f64>, FieldError> {
    let mut values = vec![None; agents.len()];
    for (id, v) in map {
        let i = lookup(index, format!("{field}.{id}"), id)?;
        if !v.is_finite() {
            return Err(FieldError::new(format!("{field}.{id}"), "must be finite"));
        }
        values[i] = Some(*v);
    }
    let missing: Vec<&str> = (0..agents.len())
        .filter(|i| values[*i].is_none())
        .map(|i| agents[i].as_str())
        .collect();
    if !missing.is_empty() {
        return Err(FieldError::new(
            field,
            format!("every agent needs a value; missing: {missing:?}"),
        ));
    }
    Ok(values.into_iter().flatten().collect())
}

/// Coalition member lists as indices, with fields named on error.
pub(crate) fn coalition_members(
    field: &str,
    index: &HashMap<&str, usize>,
    members: &[String],
) -> Result<Vec<usize>, FieldError> {
    members
        .iter()
        .enumerate()
        .map(|(k, id)| lookup(index, format!("{field}.members[{k}]"), id))
        .collect()
}

/// Index-based coalition of `members` (ids already checked).
pub(crate) fn coalition(field: &str, members: &[usize]) -> Result<Coalition, FieldError> {
    Coalition::from_members(members)
        .map_err(|e| FieldError::new(format!("{field}.members"), e.to_string()))
}

fn parse_game(
    body: &CreateAttributionBody,
    index: &HashMap<&str, usize>,
) -> Result<GameInput, FieldError> {
    let agents = &body.agents;
    let n = agents.len();
    let given = [
        body.coalitions.is_some(),
        body.contributions.is_some(),
        body.pairwise.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(FieldError::new(
            "coalitions",
            "give the game as exactly one of coalitions, contributions and pairwise",
        ));
    }
    if let Some(entries) = &body.coalitions {
        if n > 20 {
            return Err(FieldError::new(
                "agents",
                format!(
                    "a coalition table supports at most 20 agents (got {n}); give a pairwise \
                     or additive game, or measure values in an interactive session"
                ),
            ));
        }
        if entries.len() > MAX_COALITION_ENTRIES {
            return Err(FieldError::new(
                "coalitions",
                format!("at most {MAX_COALITION_ENTRIES} entries"),
            ));
        }
        let mut rows = Vec::with_capacity(entries.len());
        for (k, e) in entries.iter().enumerate() {
            let field = format!("coalitions[{k}]");
            if !e.value.is_finite() {
                return Err(FieldError::new(format!("{field}.value"), "must be finite"));
            }
            rows.push((coalition_members(&field, index, &e.members)?, e.value));
        }
        return CoalitionTable::from_members(n, rows)
            .map(GameInput::Table)
            .map_err(|e| table_error(agents, e));
    }
    if let Some(map) = &body.contributions {
        let values = per_agent("contributions", agents, index, map)?;
        return Additive::new(values)
            .map(GameInput::Additive)
            .map_err(|e| FieldError::new("contributions", e.to_string()));
    }
    let Some(p) = &body.pairwise else {
        unreachable!("exactly one game field is present");
    };
    let base = per_agent("pairwise.base", agents, index, &p.base)?;
    let mut seen = HashSet::new();
    let mut pairs = Vec::with_capacity(p.synergy.len());
    for (k, (a, b, w)) in p.synergy.iter().enumerate() {
        let field = format!("pairwise.synergy[{k}]");
        let i = lookup(index, format!("{field}[0]"), a)?;
        let j = lookup(index, format!("{field}[1]"), b)?;
        if i == j {
            return Err(FieldError::new(
                field,
                "an agent cannot interact with itself",
            ));
        }
        if !w.is_finite() {
            return Err(FieldError::new(format!("{field}[2]"), "must be finite"));
        }
        if !seen.insert((i.min(j), i.max(j))) {
            return Err(FieldError::new(
                field,
                format!("the pair ({a:?}, {b:?}) is given twice"),
            ));
        }
        pairs.push((i, j, *w));
    }
    Pairwise::new(base, pairs)
        .map(GameInput::Pairwise)
        .map_err(|e| FieldError::new("pairwise", e.to_string()))
}

impl Job {
    /// Checks `body` completely; nothing expensive happens yet.
    pub(crate) fn from_body(body: CreateAttributionBody) -> Result<Self, FieldError> {
        crate::wire::task_id_ok(&body.task_id)?;
        crate::wire::total_reward_ok(body.total_reward)?;
        let strategy = body.strategy.resolve()?;
        let params = body.sampling()?;
        let game = {
            let index = crate::wire::agent_index(&body.agents)?;
            parse_game(&body, &index)?
        };
        if body.method == MethodBody::MonteCarlo {
            let max = MAX_SAMPLING_WORK / game.permutation_cost().max(1);
            if params.max_permutations > max {
                return Err(FieldError::new(
                    "max_permutations",
                    format!("at most {max} for a game of this kind and size"),
                ));
            }
        }
        Ok(Self {
            sampling: SamplingConfig {
                seed: params.seed,
                target_error: params.target_error,
                min_permutations: MIN_PERMUTATIONS.min(params.max_permutations) as usize,
                max_permutations: params.max_permutations as usize,
                antithetic: body.antithetic,
            },
            task_id: body.task_id,
            agents: body.agents,
            total_reward: body.total_reward,
            strategy,
            method: body.method,
            game,
        })
    }

    /// Runs the estimator and the shaping (CPU-bound: call on a blocking thread).
    pub(crate) fn run(self, created_at_ms: u64) -> Result<AttributionRecord, FieldError> {
        let started = std::time::Instant::now();
        let game = self.game.game();
        let config = AttributionConfig {
            method: match self.method {
                MethodBody::Auto => Method::Auto,
                MethodBody::Exact => Method::Exact,
                MethodBody::MonteCarlo => Method::Sampling,
            },
            sampling: self.sampling,
            ..AttributionConfig::default()
        };
        let result = attribute(game, &config).map_err(|e| match e {
            AttributeError::Exact(e) => FieldError::new("method", e.to_string()),
            e => FieldError::new("max_permutations", e.to_string()),
        })?;
        let n = game.n();
        let grand = game.value(&Coalition::full(n)) - game.value(&Coalition::empty());
        let shapley = result.shapley().to_vec();
        let efficiency_gap = shapley.iter().sum::<f64>() - grand;
        let mut hoeffding_95 = None;
        let (method, banzhaf, additive, std_errors, permutations, target_reached) = match result {
            Attribution::Exact(e) => {
                let method = match e.source {
                    ExactSource::Enumeration => MethodName::Exact,
                    ExactSource::ClosedForm => MethodName::ClosedForm,
                };
                (
                    method,
                    Some(e.banzhaf),
                    e.additive,
                    vec![0.0; n],
                    None,
                    None,
                )
            }
            Attribution::Sampled(s) => {
                // Cheap here: closed forms, or one pass over a table of ≤ 20 agents.
                let additive = exact_for_game(game).is_ok_and(|e| e.additive);
                let permutations = s.permutations as u64;
                hoeffding_95 = Some(s.hoeffding_half_widths(0.05));
                (
                    MethodName::MonteCarlo,
                    None,
                    additive,
                    s.std_errors,
                    Some(permutations),
                    Some(s.target_reached),
                )
            }
        };
        let (rewards, reward_stats) = shape(&shapley, self.total_reward, self.strategy)?;
        Ok(AttributionRecord {
            task_id: self.task_id,
            agents: self.agents,
            contributions: shapley,
            std_errors,
            method,
            permutations,
            target_reached,
            efficiency_gap,
            banzhaf,
            hoeffding_95,
            additive,
            total_reward: self.total_reward,
            rewards,
            strategy: self.strategy,
            reward_stats,
            computation_time_ms: started.elapsed().as_millis() as u64,
            created_at_ms,
        })
    }
}

/// Shaped rewards of `credits` and their statistics.
pub(crate) fn shape(
    credits: &[f64],
    total_reward: f64,
    strategy: Strategy,
) -> Result<(Vec<f64>, RewardStats), FieldError> {
    let rewards = shape_rewards(credits, total_reward, strategy.shaping())
        .map_err(|e| FieldError::new("strategy", e.to_string()))?;
    let stats =
        distribution_stats(&rewards).map_err(|e| FieldError::new("total_reward", e.to_string()))?;
    Ok((rewards, stats.into()))
}
