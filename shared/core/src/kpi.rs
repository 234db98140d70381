//! The loop's KPIs (the source design's): tool adoption, thinking efficiency, reward-hacking
//! incidents, task completion — computed from counts the services add up per tenant and day.

use serde::{Deserialize, Serialize};

/// What happened, counted: each service adds its part when the event happens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct KpiCounts {
    /// Budgets closed (`POST /v1/budgets/{id}/complete`).
    pub budgets_completed: u64,
    /// Of those, closed with `success`.
    pub budgets_succeeded: u64,
    /// Of those, escalated at least once.
    pub budgets_escalated: u64,
    /// Tokens the closed budgets consumed.
    pub tokens_used: u64,
    /// Tokens they were allocated (escalations included).
    pub tokens_allocated: u64,
    /// Changes scored (`POST /v1/diffs/score`, and evaluations of a change).
    pub diffs_scored: u64,
    /// Of those, flagged as reward hacking.
    pub reward_hacking_flagged: u64,
    /// Trajectories accepted (`POST /v1/trajectories`).
    pub trajectories: u64,
    /// Of those, with at least one tool call.
    pub trajectories_with_tools: u64,
    /// Of those, ending in success.
    pub trajectories_succeeded: u64,
}

impl KpiCounts {
    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &Self) {
        self.budgets_completed += other.budgets_completed;
        self.budgets_succeeded += other.budgets_succeeded;
        self.budgets_escalated += other.budgets_escalated;
        self.tokens_used += other.tokens_used;
        self.tokens_allocated += other.tokens_allocated;
        self.diffs_scored += other.diffs_scored;
        self.reward_hacking_flagged += other.reward_hacking_flagged;
        self.trajectories += other.trajectories;
        self.trajectories_with_tools += other.trajectories_with_tools;
        self.trajectories_succeeded += other.trajectories_succeeded;
    }

    /// The counts as (name, value) pairs, for metrics.
    pub fn fields(&self) -> [(&'static str, u64); 10] {
        [
            ("budgets_completed", self.budgets_completed),
            ("budgets_succeeded", self.budgets_succeeded),
            ("budgets_escalated", self.budgets_escalated),
            ("tokens_used", self.tokens_used),
            ("tokens_allocated", self.tokens_allocated),
            ("diffs_scored", self.diffs_scored),
            ("reward_hacking_flagged", self.reward_hacking_flagged),
            ("trajectories", self.trajectories),
            ("trajectories_with_tools", self.trajectories_with_tools),
            ("trajectories_succeeded", self.trajectories_succeeded),
        ]
    }
}

/// The KPIs of a period; a rate is `None` when nothing it divides by happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Kpis {
    /// Trajectories with a tool call / trajectories.
    pub tool_adoption_rate: Option<f64>,
    /// Tokens used / tokens allocated, over closed budgets.
    pub thinking_efficiency: Option<f64>,
    /// Closed budgets that escalated / closed budgets.
    pub escalation_rate: Option<f64>,
    /// Scored changes flagged as reward hacking.
    pub reward_hacking_incidents: u64,
    /// Those / scored changes.
    pub reward_hacking_rate: Option<f64>,
    /// Budgets closed with success / budgets closed.
    pub task_completion_rate: Option<f64>,
    /// Trajectories ending in success / trajectories.
    pub trajectory_success_rate: Option<f64>,
    /// The counts they come from.
    pub counts: KpiCounts,
}

fn rate(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// The KPIs of `counts`.
pub fn kpis(counts: KpiCounts) -> Kpis {
    let c = &counts;
    Kpis {
        tool_adoption_rate: rate(c.trajectories_with_tools, c.trajectories),
        thinking_efficiency: rate(c.tokens_used, c.tokens_allocated),
        escalation_rate: rate(c.budgets_escalated, c.budgets_completed),
        reward_hacking_incidents: c.reward_hacking_flagged,
        reward_hacking_rate: rate(c.reward_hacking_flagged, c.diffs_scored),
        task_completion_rate: rate(c.budgets_succeeded, c.budgets_completed),
        trajectory_success_rate: rate(c.trajectories_succeeded, c.trajectories),
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_divide_what_happened_and_nothing_is_none() {
        let mut c = KpiCounts {
            budgets_completed: 4,
            budgets_succeeded: 3,
            budgets_escalated: 1,
            tokens_used: 3_000,
            tokens_allocated: 4_000,
            ..KpiCounts::default()
        };
        c.add(&KpiCounts {
            diffs_scored: 10,
            reward_hacking_flagged: 2,
            trajectories: 5,
            trajectories_with_tools: 4,
            trajectories_succeeded: 5,
            ..KpiCounts::default()
        });
        let k = kpis(c);
        assert_eq!(k.task_completion_rate, Some(0.75));
        assert_eq!(k.thinking_efficiency, Some(0.75));
        assert_eq!(k.escalation_rate, Some(0.25));
        assert_eq!(
            (k.reward_hacking_incidents, k.reward_hacking_rate),
            (2, Some(0.2))
        );
        assert_eq!(k.tool_adoption_rate, Some(0.8));
        assert_eq!(k.trajectory_success_rate, Some(1.0));
        let none = kpis(KpiCounts::default());
        assert!(none.tool_adoption_rate.is_none() && none.task_completion_rate.is_none());
        assert_eq!(KpiCounts::default().fields().len(), 10);
    }
}
