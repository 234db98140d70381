//! Online rollouts: a seeded sampler that returns token ids with their log-probabilities, and
//! multi-turn episodes against an environment (a tool, a checker) that answers each turn.
//!
//! Every active episode of a batch advances one token per forward pass, which feeds each only
//! the tokens it has not fed yet (a batched key/value cache, [`crate::model::kv_cache`]). A
//! turn ends at an end id (any of the model's, [`Tok::eos`]), a stop string (matched on the
//! text with special tokens written out, so a stop string may name one) or the per-turn token
//! limit, and the environment then either appends an observation (tokens with loss mask 0) or
//! ends the episode with a reward.
//! The recorded log-probability is the policy's at temperature 1 (what `train logprobs`
//! prints), whatever temperature sampled the token.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::error::Result;
use crate::model::Model;
use crate::model::kv_cache::KvCache;
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

/// Runs every environment to its end with `model` (a frozen view), advancing all live
/// episodes together.
///
/// # Errors
/// Tensor or tokenizer failures.
pub fn run_episodes(
    model: &Model,
    tok: &Tok,
    envs: Vec<Box<dyn Environment>>,
    sampling: &Sampling,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<Episode>> {
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
    // Row r of the cache is episode rows[r]; finished episodes leave the batch.
    let mut cache = KvCache::new(live.len());
    let mut rows: Vec<usize> = (0..live.len()).collect();
    loop {
        if crate::process::terminating() {
            return Err(crate::TrainError::Terminated);
        }
        let keep: Vec<usize> = (0..rows.len()).filter(|&r| !live[rows[r]].done).collect();
        if keep.is_empty() {
            break;
        }
        cache.retain(&keep)?;
        rows = keep.iter().map(|&r| rows[r]).collect();
        let new: Vec<Vec<u32>> = rows
            .iter()
            .enumerate()
            .map(|(r, &i)| unfed(&live[i].episode, cache.fed(r)))
            .collect();
        let next = model.decode(&mut cache, &new)?.to_vec2::<f32>()?;
        for (k, &i) in rows.iter().enumerate() {
            let (token, logprob) = sample(&next[k], sampling, rng);
            let l = &mut live[i];
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
                continue;
            }
            // The turn's text ends with the stop string that ended it (a special token's is
            // not in the text at all), as the environment strips it.
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
                        continue;
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
        }
    }
    Ok(live.into_iter().map(|l| l.episode).collect())
}

/// The tokens of `episode` after its first `fed`.
fn unfed(episode: &Episode, fed: usize) -> Vec<u32> {
    match fed.checked_sub(episode.prompt.len()) {
        None => [&episode.prompt[fed..], episode.response.as_slice()].concat(),
        Some(at) => episode.response[at..].to_vec(),
    }
}

/// Draws a token; returns it with its log-probability under the untempered distribution.
fn sample(logits: &[f32], s: &Sampling, rng: &mut ChaCha8Rng) -> (u32, f32) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_z = max + logits.iter().map(|&x| (x - max).exp()).sum::<f32>().ln();
    let token = if s.temperature <= 0.0 {
        argmax(logits)
    } else {
        let t = s.temperature as f32;
        let mut probs: Vec<(usize, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &x)| (i, ((x - max) / t).exp()))
            .collect();
        let total: f32 = probs.iter().map(|p| p.1).sum();
        probs.iter_mut().for_each(|p| p.1 /= total);
        if s.top_p < 1.0 {
            probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let mut mass = 0.0;
            let keep = probs
                .iter()
                .position(|p| {
                    mass += p.1;
                    f64::from(mass) >= s.top_p
                })
                .map_or(probs.len(), |k| k + 1);
            probs.truncate(keep);
            let kept: f32 = probs.iter().map(|p| p.1).sum();
            probs.iter_mut().for_each(|p| p.1 /= kept);
        }
        let mut u: f32 = rng.random();
        let mut chosen = probs.last().map_or(0, |p| p.0);
        for &(i, p) in &probs {
            if u < p {
                chosen = i;
                break;
            }
            u -= p;
        }
        chosen
    };
    (token as u32, logits[token] - log_z)
}

fn argmax(xs: &[f32]) -> usize {
    xs.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
        .map_or(0, |(i, _)| i)
}
