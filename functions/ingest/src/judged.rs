//! Turn rewards judged by the tenant's critic model: each of the first assistant turns of an
//! anonymised trajectory is judged on the information-gain and task-progress rubrics through
//! the shared judges (cache, usage and cost under the `turn_rewards` purpose, the per-tenant
//! concurrency cap); a judgment that is not the model's leaves the heuristic's value, marked.

use std::time::Instant;

use agentrl_core::{
    TenantId,
    judge::{Source, TurnAspect},
    trajectory::{SourcedReward, Trajectory, TurnRewardWeights, turn_subjects},
};
use agentrl_judges::{Ask, Judges};
use agentrl_store::StoreError;

/// Replaces the components of `rewards` (index-aligned with `t.turns`) that the critic model
/// scores, judging every turn and aspect at once (the judges' concurrency cap bounds the
/// calls in flight), none started past `deadline`.
///
/// `t` is the anonymised trajectory: what leaves for the provider is scrubbed, and a
/// redelivery asks about the same text, so the judgment cache answers it.
///
/// # Errors
/// Only when the table fails (the message is retried; judgments made so far are cached).
pub(crate) async fn judge_turns(
    judges: &Judges,
    tenant: &TenantId,
    t: &Trajectory,
    rewards: &mut [SourcedReward],
    weights: &TurnRewardWeights,
    deadline: Instant,
) -> Result<(), StoreError> {
    let config = judges.config(tenant).await?;
    let subjects = turn_subjects(t);
    let asks: Vec<(usize, TurnAspect, Ask<'_>)> = subjects
        .iter()
        .flat_map(|s| {
            TurnAspect::ALL.map(|aspect| {
                let ask = Ask {
                    rubric: aspect.rubric(),
                    subject: s.subject(),
                    diff: None,
                    deadline,
                };
                (s.index, aspect, ask)
            })
        })
        .collect();
    let judgments = futures::future::join_all(
        asks.iter()
            .map(|(_, _, ask)| judges.judge(tenant, &config, ask)),
    )
    .await;
    for ((index, aspect, _), judgment) in asks.iter().zip(judgments) {
        let judgment = judgment?;
        match (judgment.source, judgment.score) {
            (Source::Model, Some(score)) => {
                if let Some(reward) = rewards.get_mut(*index) {
                    reward.judged(*aspect, score, weights);
                }
            }
            _ => tracing::debug!(
                turn = index,
                kind = %judgment.kind,
                reason = judgment.reason.as_deref().unwrap_or(""),
                "the judge abstained; the heuristic's value stays"
            ),
        }
    }
    Ok(())
}
