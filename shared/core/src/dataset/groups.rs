//! GRPO groups (episodes of the same prompt/task) and the preference pairs drawn from them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Episode;

/// The rewarded episodes of one `group_id`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The group key.
    pub group_id: String,
    /// Its episodes, in input order.
    pub trajectory_ids: Vec<String>,
    /// Mean reward.
    pub mean: f64,
    /// Population standard deviation of the rewards.
    pub std: f64,
    /// All rewards equal: the group carries no GRPO signal (the "loss = 0" trap).
    pub zero_variance: bool,
}

/// Groups of at least `min_size` rewarded episodes, by group id.
pub fn groups(episodes: &[&Episode], min_size: usize) -> Vec<Group> {
    let mut by_id: BTreeMap<&str, Vec<&Episode>> = BTreeMap::new();
    for e in episodes {
        if let (Some(g), Some(_)) = (&e.group_id, e.reward) {
            by_id.entry(g).or_default().push(e);
        }
    }
    by_id
        .into_iter()
        .filter(|(_, members)| members.len() >= min_size)
        .map(|(id, members)| {
            let rewards: Vec<f64> = members.iter().filter_map(|e| e.reward).collect();
            let n = rewards.len() as f64;
            let mean = rewards.iter().sum::<f64>() / n;
            let std = (rewards.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / n).sqrt();
            Group {
                group_id: id.to_owned(),
                trajectory_ids: members.iter().map(|e| e.trajectory_id.clone()).collect(),
                mean,
                std,
                zero_variance: std == 0.0,
            }
        })
        .collect()
}

/// A chosen/rejected pair of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreferencePair {
    /// The group both come from (same prompt/task).
    pub group_id: String,
    /// The best-rewarded episode.
    pub chosen: String,
    /// The worst-rewarded episode.
    pub rejected: String,
    /// Their rewards.
    pub chosen_reward: f64,
    /// Their rewards.
    pub rejected_reward: f64,
}

/// One pair per group: its best against its worst episode, when they differ by at least
/// `margin` (ties broken by input order, so the pairs are deterministic).
pub fn preference_pairs(
    episodes: &[&Episode],
    groups: &[Group],
    margin: f64,
) -> Vec<PreferencePair> {
    let rewards: BTreeMap<&str, f64> = episodes
        .iter()
        .filter_map(|e| Some((e.trajectory_id.as_str(), e.reward?)))
        .collect();
    groups
        .iter()
        .filter_map(|g| {
            let scored: Vec<(&String, f64)> = g
                .trajectory_ids
                .iter()
                .filter_map(|t| Some((t, *rewards.get(t.as_str())?)))
                .collect();
            let best = scored
                .iter()
                .copied()
                .reduce(|a, b| if b.1 > a.1 { b } else { a })?;
            let worst = scored
                .iter()
                .copied()
                .reduce(|a, b| if b.1 < a.1 { b } else { a })?;
            (best.1 - worst.1 >= margin && best.0 != worst.0).then(|| PreferencePair {
                group_id: g.group_id.clone(),
                chosen: best.0.clone(),
                rejected: worst.0.clone(),
                chosen_reward: best.1,
                rejected_reward: worst.1,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::MinHash;

    fn episode(id: &str, group: Option<&str>, reward: Option<f64>) -> Episode {
        Episode {
            trajectory_id: id.into(),
            conversation_id: id.into(),
            agent_id: "a".into(),
            group_id: group.map(Into::into),
            reward,
            success: None,
            ingested_at_ms: 0,
            signature: MinHash::of(""),
        }
    }

    #[test]
    fn groups_flag_zero_variance_and_pairs_take_best_against_worst() {
        let episodes = [
            episode("t1", Some("g1"), Some(1.0)),
            episode("t2", Some("g1"), Some(0.0)),
            episode("t3", Some("g1"), Some(0.5)),
            episode("t4", Some("g2"), Some(0.7)),
            episode("t5", Some("g2"), Some(0.7)),
            episode("t6", Some("g3"), Some(0.2)),
            episode("t7", None, Some(0.9)),
            episode("t8", Some("g1"), None),
        ];
        let refs: Vec<&Episode> = episodes.iter().collect();
        let gs = groups(&refs, 2);
        assert_eq!(gs.len(), 2, "g3 has one member");
        assert_eq!(gs[0].trajectory_ids, ["t1", "t2", "t3"]);
        assert!((gs[0].mean - 0.5).abs() < 1e-12 && !gs[0].zero_variance);
        assert!(gs[1].zero_variance);
        let pairs = preference_pairs(&refs, &gs, 0.1);
        assert_eq!(pairs.len(), 1, "a zero-variance group has no pair");
        assert_eq!(
            (pairs[0].chosen.as_str(), pairs[0].rejected.as_str()),
            ("t1", "t2")
        );
    }
}
