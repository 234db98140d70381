//! Online rollouts: episodes against an environment (a tool, a checker) that answers each
//! turn, sampled with the batched key/value cache ([`crate::model::kv_cache`]) and drawn on the
//! device ([`crate::sampler`]).
//!
//! - **Continuous batching**: at most `max_rows` episodes run at once; when one ends, its row
//!   leaves the cache and the next waiting episode takes its place (feeding its prompt while
//!   the others feed one token), so a long episode does not hold the batch.
//! - **Shared prompts**: the consecutive episodes of a group (the G samples of one prompt)
//!   prefill their prompt once, in one row, which is then copied G times.
//! - **The weights are cast and stacked once per call** ([`Model::sampling_view`]), not per
//!   token; only the drawn ids and their log-probabilities come back to the host.
//!
//! A turn ends at an end id (any of the model's, [`Tok::eos`]), a stop string (matched on the
//! text with special tokens written out, so a stop string may name one) or the per-turn token
//! limit, and the environment then either appends an observation (tokens with loss mask 0) or
//! ends the episode with a reward. The recorded log-probability is the policy's at
//! temperature 1 (what `train logprobs` prints), whatever temperature sampled the token.

use std::collections::VecDeque;

use candle_core::Tensor;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;

use crate::error::Result;
use crate::model::Model;
use crate::model::kv_cache::KvCache;
use crate::sampler::{self, Draw};
use crate::tokenizer::Tok;

/// What the environment says after a model turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The episode goes on: this text is appended (not trained on).
    Continue {
        /// Text of the observation (a tool result).
        observation: String,
        /// Reward of the turn just taken.
        turn_reward: f64,
    },
    /// The episode is over.
    Done {
        /// Episode reward.
        reward: f64,
        /// Whether the task was solved.
        success: bool,
        /// Reward of the last turn.
        turn_reward: f64,
    },
}

/// A task instance that answers an agent's turns.
pub trait Environment: Send {
    /// The prompt text the episode starts from.
    fn prompt(&self) -> String;
    /// Reacts to the text of one model turn (`ended_by_eos`: the model ended the sequence).
    fn step(&mut self, turn: &str, ended_by_eos: bool) -> Step;
}

/// Sampling settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// 0 = greedy.
    pub temperature: f64,
    /// Nucleus mass.
    pub top_p: f64,
    /// Most likely tokens kept (0 = off).
    pub top_k: usize,
    /// Episodes running at once (the rest wait for a row).
    pub max_rows: usize,
    /// Longest model turn.
    pub max_new_tokens: usize,
    /// Strings that end a turn.
    pub stop: Vec<String>,
    /// Most model turns per episode.
    pub max_turns: usize,
    /// The prompt goes through the chat template as a user turn.
    pub chat_template: bool,
    /// Longest episode, prompt included (`max_seq_len`).
    pub max_len: usize,
}

/// One finished episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Everything after the prompt: model tokens and observations.
    pub response: Vec<u32>,
    /// 1 for model tokens, 0 for observation tokens.
    pub mask: Vec<bool>,
    /// Policy log-probability of each model token (0 for observations).
    pub logprobs: Vec<f32>,
    /// The model turn each response token belongs to (observations: the turn they answer).
    pub turn: Vec<usize>,
    /// One reward per model turn.
    pub turn_rewards: Vec<f64>,
    /// Episode reward.
    pub reward: f64,
    /// Solved.
    pub success: bool,
    /// Ended by a limit rather than by the environment.
    pub truncated: bool,
}

struct Live {
    env: Box<dyn Environment>,
    episode: Episode,
    turn_start: usize,
    done: bool,
}

/// Runs every environment to its end with `model`, `sampling.max_rows` episodes at a time;
/// episodes come back in the order of `envs`.
///
/// # Errors
/// Tensor or tokenizer failures, SIGTERM.
pub fn run_episodes(
    model: &Model,
    tok: &Tok,
    envs: Vec<Box<dyn Environment>>,
    sampling: &Sampling,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<Episode>> {
    let view = model.sampling_view()?;
    let limit = sampling.max_len;
    let mut live: Vec<Live> = envs
        .into_iter()
        .map(|env| {
            let text = tok
                .prompt_text(&env.prompt(), sampling.chat_template)
                .map_err(|e| crate::TrainError::Data(format!("chat template: {e}")))?;
            let prompt = tok.encode(&text)?;
            Ok(Live {
                env,
                episode: Episode {
                    prompt,
                    response: Vec::new(),
                    mask: Vec::new(),
                    logprobs: Vec::new(),
                    turn: Vec::new(),
                    turn_rewards: Vec::new(),
                    reward: 0.0,
                    success: false,
                    truncated: false,
                },
                turn_start: 0,
                done: false,
            })
        })
        .collect::<Result<_>>()?;
    // Groups: consecutive episodes with the same prompt prefill it once.
    let mut waiting: VecDeque<Vec<usize>> = VecDeque::new();
    for i in 0..live.len() {
        match waiting.back_mut() {
            Some(group) if live[group[0]].episode.prompt == live[i].episode.prompt => group.push(i),
            _ => waiting.push_back(vec![i]),
        }
    }
    let slots = sampling.max_rows.max(1);
    let draw = Draw {
        temperature: sampling.temperature,
        top_p: sampling.top_p,
        top_k: sampling.top_k,
    };
    // Row r of the cache is episode rows[r].
    let mut cache = KvCache::new(0);
    let mut rows: Vec<usize> = Vec::new();
    loop {
        if crate::process::terminating() {
            return Err(crate::TrainError::Terminated);
        }
        // Admit whole groups while they fit (at least one when the batch is empty): each
        // feeds its prompt in one row, copied to its members after this step's forward.
        let mut forks = Vec::new();
        while let Some(group) = waiting.front() {
            if !rows.is_empty() && rows.len() + forks.len() + group.len() > slots {
                break;
            }
            let group = waiting.pop_front().unwrap_or_default();
            forks.push((rows.len() + forks.len(), group));
        }
        if rows.is_empty() && forks.is_empty() {
            break;
        }
        cache.push_rows(forks.len())?;
        rows.extend(forks.iter().map(|(_, g)| g[0]));
        let new: Vec<Vec<u32>> = rows
            .iter()
            .enumerate()
            .map(|(r, &i)| unfed(&live[i].episode, cache.fed(r)))
            .collect();
        let mut logits = view.decode(&mut cache, &new)?;
        if forks.iter().any(|(_, g)| g.len() > 1) {
            let mut order: Vec<usize> = (0..rows.len()).collect();
            for (row, group) in &forks {
                order.extend(std::iter::repeat_n(*row, group.len() - 1));
                rows.extend(&group[1..]);
            }
            cache.retain(&order)?;
            let index: Vec<u32> = order.iter().map(|&r| r as u32).collect();
            let n = index.len();
            logits = logits.index_select(&Tensor::from_vec(index, n, logits.device())?, 0)?;
        }
        let (tokens, logprobs) = sampler::draw(&logits, draw, &uniform(&logits, rng)?)?;
        for (k, &i) in rows.iter().enumerate() {
            advance(&mut live[i], tok, sampling, limit, tokens[k], logprobs[k])?;
        }
        let keep: Vec<usize> = (0..rows.len()).filter(|&r| !live[rows[r]].done).collect();
        cache.retain(&keep)?;
        rows = keep.iter().map(|&r| rows[r]).collect();
        cache.compact()?;
    }
    Ok(live.into_iter().map(|l| l.episode).collect())
}

/// The draw's randomness, `[rows, V]` uniform in (0, 1) on the logits' device: from the host
/// generator on the CPU, from the device's generator seeded by it elsewhere.
pub(crate) fn uniform(logits: &Tensor, rng: &mut ChaCha8Rng) -> Result<Tensor> {
    let device = logits.device();
    let shape = logits.shape();
    if device.is_cpu() {
        let u: Vec<f32> = (0..shape.elem_count())
            .map(|_| rng.random_range(f32::MIN_POSITIVE..1.0))
            .collect();
        return Ok(Tensor::from_vec(u, shape, device)?);
    }
    device.set_seed(rng.next_u64())?;
    // Away from 0 and 1, where −ln(−ln u) is not finite.
    Ok(Tensor::rand(0f32, 1f32, shape, device)?.clamp(f32::MIN_POSITIVE, 1.0 - f32::EPSILON)?)
}

/// One drawn token for an episode: appended, and the turn ended when it says so.
fn advance(
    l: &mut Live,
    tok: &Tok,
    sampling: &Sampling,
    limit: usize,
    token: u32,
    logprob: f32,
) -> Result<()> {
    let turn = l.episode.turn_rewards.len();
    l.episode.response.push(token);
    l.episode.mask.push(true);
    l.episode.logprobs.push(logprob);
    l.episode.turn.push(turn);
    let eos = tok.eos().contains(&token);
    let turn_ids = &l.episode.response[l.turn_start..];
    let stop = if sampling.stop.is_empty() || eos {
        None
    } else {
        let raw = tok.decode_raw(turn_ids)?;
        sampling
            .stop
            .iter()
            .find(|s| raw.contains(s.as_str()))
            .cloned()
    };
    let stopped = eos || stop.is_some();
    let turn_len = turn_ids.len();
    let len = l.episode.prompt.len() + l.episode.response.len();
    let too_long = len >= limit;
    if !(stopped || turn_len >= sampling.max_new_tokens || too_long) {
        return Ok(());
    }
    // The turn's text ends with the stop string that ended it (a special token's is not in
    // the text at all), as the environment strips it.
    let mut text = tok.decode(turn_ids)?;
    if let Some(at) = stop.and_then(|s| text.find(&s).map(|at| at + s.len())) {
        text.truncate(at);
    }
    l.episode.truncated |= !stopped;
    match l.env.step(&text, eos) {
        Step::Done {
            reward,
            success,
            turn_reward,
        } => {
            l.episode.turn_rewards.push(turn_reward);
            l.episode.reward = reward;
            l.episode.success = success;
            l.done = true;
        }
        Step::Continue {
            observation,
            turn_reward,
        } => {
            l.episode.turn_rewards.push(turn_reward);
            let obs = tok.encode(&observation)?;
            let over = len + obs.len() >= limit;
            if over || l.episode.turn_rewards.len() >= sampling.max_turns || eos {
                l.episode.truncated = true;
                l.done = true;
                return Ok(());
            }
            l.episode.mask.extend(std::iter::repeat_n(false, obs.len()));
            l.episode
                .logprobs
                .extend(std::iter::repeat_n(0.0, obs.len()));
            l.episode.turn.extend(std::iter::repeat_n(turn, obs.len()));
            l.episode.response.extend(obs);
            l.turn_start = l.episode.response.len();
        }
    }
    Ok(())
}

/// The tokens of `episode` after its first `fed`.
fn unfed(episode: &Episode, fed: usize) -> Vec<u32> {
    match fed.checked_sub(episode.prompt.len()) {
        None => [&episode.prompt[fed..], episode.response.as_slice()].concat(),
        Some(at) => episode.response[at..].to_vec(),
    }
}
