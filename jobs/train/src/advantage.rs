//! Group-relative advantages and turn-level credit (pure: no tensors, no I/O).
//!
//! A rollout is one episode: its group (same prompt/task), its episode reward, and for each of
//! its model turns a turn reward. Advantages come out per model turn:
//! - `broadcast`: the episode's group-relative advantage on every turn (what most anchors do);
//! - `turn`: discounted returns from each turn (turn rewards, the episode reward added at the
//!   last turn), each compared with the group's mean return at the same turn index, so a turn
//!   is credited for what happened from it onwards;
//! - `precomputed`: the rows' own per-turn values (e.g. Shapley shares), used as they are.

pub use agentrl_core::training::config::{Credit, StdScaling};

/// One episode, as the advantage computation sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollout {
    /// Index of its group in the batch.
    pub group: usize,
    /// The episode reward.
    pub reward: f64,
    /// One reward per model turn (zeros when the data has none).
    pub turn_rewards: Vec<f64>,
    /// Per-turn precomputed credits, when the data carries them.
    pub precomputed: Option<Vec<f64>>,
}

/// What [`advantages`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Advantages {
    /// One advantage per model turn of each rollout.
    pub per_turn: Vec<Vec<f64>>,
    /// Whether the rollout's group carries signal (some advantage is non-zero).
    pub informative: Vec<bool>,
    /// Groups whose advantages are all zero: no gradient, dropped and counted.
    pub zero_variance_groups: usize,
    /// Groups seen.
    pub groups: usize,
}

const EPS: f64 = 1e-6;

fn mean_std(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    // Unbiased, as torch.std in TRL and verl.
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

/// Discounted returns of one rollout: turn rewards, the episode reward added at the last turn.
fn returns(r: &Rollout, gamma: f64) -> Vec<f64> {
    let n = r.turn_rewards.len().max(1);
    let mut rewards: Vec<f64> = (0..n)
        .map(|t| r.turn_rewards.get(t).copied().unwrap_or(0.0))
        .collect();
    rewards[n - 1] += r.reward;
    let mut out = vec![0.0; n];
    let mut acc = 0.0;
    for t in (0..n).rev() {
        acc = rewards[t] + gamma * acc;
        out[t] = acc;
    }
    out
}

/// Advantages of every turn of every rollout.
#[must_use]
pub fn advantages(
    rollouts: &[Rollout],
    credit: Credit,
    scaling: StdScaling,
    gamma: f64,
) -> Advantages {
    let groups = rollouts.iter().map(|r| r.group + 1).max().unwrap_or(0);
    let members: Vec<Vec<usize>> = (0..groups)
        .map(|g| {
            (0..rollouts.len())
                .filter(|&i| rollouts[i].group == g)
                .collect()
        })
        .collect();
    let turns = |r: &Rollout| r.turn_rewards.len().max(1);
    let per_turn: Vec<Vec<f64>> = match credit {
        Credit::Precomputed => rollouts
            .iter()
            .map(|r| {
                let values = r.precomputed.clone().unwrap_or_default();
                (0..turns(r))
                    .map(|t| values.get(t).copied().unwrap_or(0.0))
                    .collect()
            })
            .collect(),
        Credit::Broadcast => {
            let rewards: Vec<f64> = rollouts.iter().map(|r| r.reward).collect();
            let batch_std = mean_std(&rewards).1;
            let mut out = vec![Vec::new(); rollouts.len()];
            for m in &members {
                let (mean, std) = mean_std(&m.iter().map(|&i| rewards[i]).collect::<Vec<_>>());
                for &i in m {
                    let a = scale(rewards[i] - mean, std, batch_std, scaling);
                    out[i] = vec![a; turns(&rollouts[i])];
                }
            }
            out
        }
        Credit::Turn => {
            let g: Vec<Vec<f64>> = rollouts.iter().map(|r| returns(r, gamma)).collect();
            let firsts: Vec<f64> = g.iter().map(|x| x[0]).collect();
            let batch_std = mean_std(&firsts).1;
            let mut out = vec![Vec::new(); rollouts.len()];
            for m in &members {
                let std = mean_std(&m.iter().map(|&i| firsts[i]).collect::<Vec<_>>()).1;
                for &i in m {
                    out[i] = (0..g[i].len())
                        .map(|t| {
                            let peers: Vec<f64> =
                                m.iter().filter_map(|&j| g[j].get(t).copied()).collect();
                            scale(g[i][t] - mean_std(&peers).0, std, batch_std, scaling)
                        })
                        .collect();
                }
            }
            out
        }
    };
    let mut informative = vec![false; rollouts.len()];
    let mut zero_variance_groups = 0;
    for m in members.iter().filter(|m| !m.is_empty()) {
        let signal = m
            .iter()
            .any(|&i| per_turn[i].iter().any(|a| a.abs() > 1e-9));
        zero_variance_groups += usize::from(!signal);
        for &i in m {
            informative[i] = signal;
        }
    }
    Advantages {
        per_turn,
        informative,
        zero_variance_groups,
        groups: members.iter().filter(|m| !m.is_empty()).count(),
    }
}

fn scale(centred: f64, group_std: f64, batch_std: f64, scaling: StdScaling) -> f64 {
    match scaling {
        StdScaling::Group => centred / (group_std + EPS),
        StdScaling::Batch => centred / (batch_std + EPS),
        StdScaling::None => centred,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(group: usize, reward: f64, turn_rewards: Vec<f64>) -> Rollout {
        Rollout {
            group,
            reward,
            turn_rewards,
            precomputed: None,
        }
    }

    #[test]
    fn broadcast_is_group_relative_and_scaled_by_the_unbiased_std() {
        let rs = [
            rollout(0, 1.0, vec![0.0; 2]),
            rollout(0, 0.0, vec![0.0]),
            rollout(1, 0.5, vec![0.0]),
        ];
        let a = advantages(&rs, Credit::Broadcast, StdScaling::Group, 1.0);
        let std = (0.5f64).sqrt();
        assert!((a.per_turn[0][0] - 0.5 / (std + EPS)).abs() < 1e-12);
        assert_eq!(a.per_turn[0].len(), 2);
        assert_eq!(a.per_turn[0][0], a.per_turn[0][1]);
        assert!((a.per_turn[1][0] + 0.5 / (std + EPS)).abs() < 1e-12);
        assert_eq!(a.zero_variance_groups, 1);
        assert_eq!(a.informative, [true, true, false]);
    }

    #[test]
    fn turn_credit_separates_the_turn_where_an_episode_went_wrong() {
        // Both took a right first step; only the first took a right second step.
        let rs = [
            rollout(0, 1.0, vec![0.5, 0.5]),
            rollout(0, 0.0, vec![0.5, 0.0]),
        ];
        let a = advantages(&rs, Credit::Turn, StdScaling::None, 1.0);
        // Returns: [2.0, 1.5] and [0.5, 0.0]; per-turn means [1.25, 0.75].
        assert_eq!(a.per_turn[0], [0.75, 0.75]);
        assert_eq!(a.per_turn[1], [-0.75, -0.75]);
        let rs = [
            rollout(0, 1.0, vec![0.0, 0.5]),
            rollout(0, 1.0, vec![0.0, 0.0]),
        ];
        let a = advantages(&rs, Credit::Turn, StdScaling::None, 1.0);
        assert_eq!(a.per_turn[0], [0.25, 0.25]);
        // With broadcast the same episodes carry no signal at all.
        let b = advantages(&rs, Credit::Broadcast, StdScaling::None, 1.0);
        assert_eq!(b.zero_variance_groups, 1);
        assert_eq!(a.zero_variance_groups, 0);
    }

    #[test]
    fn precomputed_credits_pass_through() {
        let mut r = rollout(0, 0.0, vec![0.0, 0.0]);
        r.precomputed = Some(vec![0.3, -0.1]);
        let a = advantages(&[r], Credit::Precomputed, StdScaling::Group, 1.0);
        assert_eq!(a.per_turn[0], [0.3, -0.1]);
    }
}
