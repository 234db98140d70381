//! The policy update loop: plan from the projection, apply (or, in shadow mode, only record),
//! trigger dataset generation, and emit what changed on the event queue (dataset requests also
//! on the dataset queue, for the dataset job).
//!
//! Runs for one agent when its feedback crosses the threshold (from the worker), for every
//! pending agent on a schedule (`learning-policy`), and on demand
//! (`POST /v1/agents/{id}/learning/update`). Emitted events go through the agent item's
//! outbox: written in the same write as the change, sent, then cleared, so a crash between
//! the two sends them on the next run (at least once; consumers deduplicate by `event_id`).

use agentrl_core::{
    TenantId,
    learning::{AgentProjection, LearningConfig, Plan, dataset_due, plan},
};
use agentrl_store::{StoreError, clock::now_ms_i64, retry::optimistic};
use serde::Serialize;
use utoipa::ToSchema;

use crate::Outlets;
use crate::repo::{AgentDoc, LearningRepo, Outbound, PENDING_SHARDS, SHADOW_LOG_LEN, ShadowEntry};

/// The event that asks the dataset job for an agent's dataset.
const DATASET_REQUESTED: &str = "dataset.generation.requested";

/// What one update did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateReport {
    /// The plan computed from the projection.
    #[schema(value_type = Object)]
    pub plan: Plan,
    /// Whether it changed the agent (and bumped its learning version).
    pub applied: bool,
    /// Whether the agent is in shadow mode (the plan was only recorded).
    pub shadow: bool,
    /// Whether the agent is frozen for review.
    pub frozen: bool,
    /// The learning version after the update.
    pub learning_version: u64,
    /// Whether the agent was queued for dataset generation.
    pub dataset_requested: bool,
    /// Mean feedback reward of the last 7 days (`None` without feedback in them).
    pub sentiment_7d: Option<f64>,
}

/// The window of the sentiment the update loop reports (the template alarms when an agent's
/// is below −0.5).
const SENTIMENT_DAYS: u32 = 7;

/// What a scheduled run did.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct PendingRun {
    /// Agents visited.
    pub visited: usize,
    /// Agents whose policy changed.
    pub updated: usize,
    /// Agents that failed (left pending for the next run).
    pub failed: usize,
    /// The visited agent with the lowest 7-day sentiment: tenant, agent and its sentiment.
    pub lowest_sentiment: Option<(String, String, f64)>,
}

/// The update loop's dependencies. Cheap to clone.
#[derive(Clone)]
pub struct Policy {
    repo: LearningRepo,
    outlets: Outlets,
    metrics: agentrl_http::Metrics,
}

fn outbound(
    t: &TenantId,
    agent: &str,
    kind: &str,
    p: &AgentProjection,
    now: i64,
    detail: serde_json::Value,
) -> Outbound {
    Outbound {
        event_id: uuid::Uuid::now_v7().to_string(),
        kind: kind.to_owned(),
        tenant: t.as_str().to_owned(),
        agent_id: agent.to_owned(),
        learning_version: p.learning_version,
        at_ms: now,
        detail,
    }
}

/// Whether the agent still needs the loop: events it has not planned on, or unsent events.
fn still_pending(doc: &AgentDoc) -> bool {
    !doc.outbox.is_empty() || doc.projection.feedback_since_update > 0
}

/// Computes the plan and changes `doc` as the update would: applied, or recorded in the
/// shadow log; dataset trigger; outbox; pending flag.
fn plan_into(
    t: &TenantId,
    agent: &str,
    doc: &mut AgentDoc,
    config: &LearningConfig,
    now: i64,
) -> Result<UpdateReport, StoreError> {
    let projection = &mut doc.projection;
    projection.prune(now, config);
    let plan = plan(projection, &doc.settings, config, now);
    let was_frozen = projection.frozen;
    let due = dataset_due(projection, config, now);
    let applied = if doc.settings.shadow {
        doc.shadow_log.push(ShadowEntry {
            at_ms: now,
            plan: plan.clone(),
            dataset_due: due,
        });
        let excess = doc.shadow_log.len().saturating_sub(SHADOW_LOG_LEN);
        doc.shadow_log.drain(..excess);
        false
    } else {
        projection.apply_plan(&plan, now)
    };
    // The trigger is consumed whatever the outcome: shadow and frozen agents are not
    // re-planned on every batch.
    projection.feedback_since_update = 0;
    let detail = serde_json::to_value(&plan).map_err(|e| StoreError::Backend(e.into()))?;
    if applied {
        doc.outbox.push(outbound(
            t,
            agent,
            "agent.learning.updated",
            projection,
            now,
            detail.clone(),
        ));
    }
    if projection.frozen && !was_frozen {
        doc.outbox.push(outbound(
            t,
            agent,
            "agent.learning.frozen",
            projection,
            now,
            serde_json::json!({ "reason": projection.frozen_reason, "plan": detail }),
        ));
    }
    // In shadow mode the trigger is only recorded, like the plan.
    let dataset_requested = due && !doc.settings.shadow;
    if dataset_requested {
        projection.dataset_requested_ms = Some(now);
        let figures = serde_json::json!({
            "positive_count": projection.feedback.positive_count,
            "high_quality": projection.feedback.high_quality.len(),
        });
        doc.outbox.push(outbound(
            t,
            agent,
            DATASET_REQUESTED,
            projection,
            now,
            figures,
        ));
    }
    let report = UpdateReport {
        plan,
        applied,
        shadow: doc.settings.shadow,
        frozen: projection.frozen,
        learning_version: projection.learning_version,
        dataset_requested,
        sentiment_7d: projection.sentiment_within(now, SENTIMENT_DAYS),
    };
    doc.pending = still_pending(doc);
    Ok(report)
}

impl Policy {
    /// The loop over `repo`, emitting on `outlets`.
    pub(crate) fn new(repo: LearningRepo, outlets: Outlets) -> Self {
        Self {
            repo,
            outlets,
            metrics: agentrl_http::Metrics::Off,
        }
    }

    /// The same loop, reporting the lowest 7-day sentiment of each run in `metrics`
    /// (`lowest_agent_sentiment_7d`; the template alarms below −0.5).
    #[must_use]
    pub fn with_metrics(mut self, metrics: agentrl_http::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Plans and applies one agent's update now; `None` when the agent has no learning state.
    ///
    /// # Errors
    /// When a store fails or the agent stays contended.
    #[tracing::instrument(skip(self), fields(tenant = %t))]
    pub async fn update(
        &self,
        t: &TenantId,
        agent: &str,
    ) -> Result<Option<UpdateReport>, StoreError> {
        let config = self.repo.config(t).await?;
        let config = &config;
        let planned = optimistic::<_, StoreError, _>(move || async move {
            let now = now_ms_i64();
            let (mut doc, Some(version)) = self.repo.agent(t, agent).await? else {
                return Ok(None);
            };
            let report = plan_into(t, agent, &mut doc, config, now)?;
            self.repo.save_agent(t, agent, &doc, version).await?;
            Ok(Some((report, doc.outbox)))
        })
        .await?;
        let Some((report, outbox)) = planned else {
            return Ok(None);
        };
        self.publish(t, agent, &outbox).await?;
        Ok(Some(report))
    }

    /// Sends `outbox` (the agent's, as just written) on the event queue, then clears what was
    /// sent from the stored item.
    async fn publish(
        &self,
        t: &TenantId,
        agent: &str,
        outbox: &[Outbound],
    ) -> Result<(), StoreError> {
        if outbox.is_empty() {
            return Ok(());
        }
        let bodies = outbox
            .iter()
            .map(|e| serde_json::to_string(e).map_err(|e| StoreError::Backend(e.into())))
            .collect::<Result<Vec<_>, _>>()?;
        self.outlets.events.send_batch(&bodies).await?;
        // The dataset job's copy: the event queue's consumers are not ours to take from.
        let requests: Vec<String> = outbox
            .iter()
            .zip(&bodies)
            .filter(|(e, _)| e.kind == DATASET_REQUESTED)
            .map(|(_, body)| body.clone())
            .collect();
        if !requests.is_empty() {
            self.outlets.datasets.send_batch(&requests).await?;
        }
        let sent = &outbox
            .iter()
            .map(|e| e.event_id.as_str())
            .collect::<Vec<_>>();
        optimistic(move || async move {
            let (mut doc, Some(version)) = self.repo.agent(t, agent).await? else {
                return Ok(());
            };
            doc.outbox.retain(|e| !sent.contains(&e.event_id.as_str()));
            doc.pending = still_pending(&doc);
            self.repo.save_agent(t, agent, &doc, version).await
        })
        .await
    }

    /// The scheduled run: updates every agent on the pending list.
    ///
    /// # Errors
    /// When the pending list cannot be read (a failing agent is counted and left pending).
    pub async fn run_pending(&self) -> Result<PendingRun, StoreError> {
        let mut run = PendingRun::default();
        for shard in 0..PENDING_SHARDS {
            let mut cursor = None;
            loop {
                let (agents, next) = self.repo.pending(shard, cursor).await?;
                for a in agents {
                    run.visited += 1;
                    match self.update(&a.tenant, &a.agent_id).await {
                        Ok(Some(report)) => {
                            run.updated += usize::from(report.applied);
                            if let Some(s) = report.sentiment_7d
                                && run
                                    .lowest_sentiment
                                    .as_ref()
                                    .is_none_or(|(_, _, low)| s < *low)
                            {
                                run.lowest_sentiment =
                                    Some((a.tenant.to_string(), a.agent_id.clone(), s));
                            }
                        }
                        Ok(None) => {}
                        Err(e) => {
                            run.failed += 1;
                            tracing::warn!(tenant = %a.tenant, agent_id = %a.agent_id, error = %format!("{e:#}"), "update failed; left pending");
                        }
                    }
                }
                match next {
                    Some(n) => cursor = Some(n),
                    None => break,
                }
            }
        }
        if let Some((tenant, agent, sentiment)) = &run.lowest_sentiment {
            tracing::info!(%tenant, %agent, sentiment, "lowest 7-day sentiment of the run");
            self.metrics
                .record("lowest_agent_sentiment_7d", *sentiment, "None");
        }
        Ok(run)
    }
}
