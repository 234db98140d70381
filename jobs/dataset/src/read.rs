//! Pass one over the turn table: one [`Episode`] per trajectory.

use std::collections::HashMap;

use agentrl_core::dataset::{Episode, MinHash};
use agentrl_store::ports::Objects;
use agentrl_turns::read_turns;
use anyhow::Context;

use crate::progress::Progress;

/// How much of a trajectory's text feeds its near-duplicate signature.
const SIGNATURE_TEXT_BYTES: usize = 16 * 1024;

/// The episodes of `objects` (in path order) and, per trajectory, the index of the object
/// that holds it: a trajectory redelivered in a later batch also sits in a later object, and
/// only its first copy counts.
pub(crate) struct Catalog {
    pub episodes: Vec<Episode>,
    pub owner: HashMap<String, usize>,
}

struct Pending {
    episode: Episode,
    /// The text gathered so far; signed and dropped at the trajectory's last turn, so only
    /// trajectories still open hold text.
    text: Option<String>,
}

/// Reads every object once, keeping a summary per trajectory (never the rows).
pub(crate) async fn catalog(objects: &dyn Objects, paths: &[String]) -> anyhow::Result<Catalog> {
    let mut progress = Progress::start("reading trajectories", paths.len() as u64);
    let mut owner: HashMap<String, usize> = HashMap::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (object, path) in paths.iter().enumerate() {
        let bytes = objects
            .get(path)
            .await?
            .with_context(|| format!("{path} vanished while the job ran"))?;
        for row in read_turns(bytes).with_context(|| format!("reading {path}"))? {
            let row = row.with_context(|| format!("reading {path}"))?;
            if *owner.entry(row.trajectory_id.clone()).or_insert(object) != object {
                continue;
            }
            let slot = *index.entry(row.trajectory_id.clone()).or_insert_with(|| {
                pending.push(Pending {
                    episode: Episode {
                        trajectory_id: row.trajectory_id.clone(),
                        conversation_id: row.conversation_id.clone(),
                        agent_id: row.agent_id.clone(),
                        group_id: row.group_id.clone(),
                        reward: row.episode_reward,
                        success: row.episode_success,
                        ingested_at_ms: row.ingested_at_ms,
                        signature: MinHash::of(""),
                    },
                    text: Some(String::new()),
                });
                pending.len() - 1
            });
            let entry = &mut pending[slot];
            let Some(text) = &mut entry.text else {
                continue;
            };
            if text.len() < SIGNATURE_TEXT_BYTES {
                text.push_str(&row.content);
                text.push('\n');
            }
            if row.turn_index + 1 >= row.turn_count {
                entry.episode.signature = MinHash::of(text);
                entry.text = None;
            }
        }
        progress.advance(1);
    }
    progress.finish();
    let episodes = pending
        .into_iter()
        .map(|p| match p.text {
            Some(text) => Episode {
                signature: MinHash::of(&text),
                ..p.episode
            },
            None => p.episode,
        })
        .collect();
    Ok(Catalog { episodes, owner })
}
