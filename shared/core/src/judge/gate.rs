//! Critic gates: a stage's output passes when the critic scores it at or above the stage's
//! mark; below it the agent refines, until the refinements reach the same loop limit the
//! budget service enforces, and then a human takes over.

use serde::{Deserialize, Serialize};

use crate::budget::loop_limit_reached;

/// What the pipeline does next.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// "GateDecision" is the promotion gate's in the merged API document.
#[cfg_attr(feature = "openapi", schema(as = CriticDecision))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateDecision {
    /// Good enough: go on to the next stage.
    Pass,
    /// Not yet: revise with the critic's reasons and check again.
    Refine,
    /// The refinements are used up, or the critic cannot judge: a human decides.
    EscalateToHuman,
}

/// The decision on a critic's `score` (`None`: the critic abstained) after `refinements`
/// rounds, with pass mark `threshold` and at most `max_refinements` rounds. A critic that
/// cannot judge never lets work through unchecked: it escalates.
#[must_use]
pub fn decide(
    score: Option<f64>,
    threshold: f64,
    refinements: u32,
    max_refinements: u32,
) -> GateDecision {
    match score {
        Some(s) if s >= threshold => GateDecision::Pass,
        Some(_) if !loop_limit_reached(refinements, max_refinements) => GateDecision::Refine,
        _ => GateDecision::EscalateToHuman,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{BudgetConfig, DEFAULT_MAX_LOOPS};

    #[test]
    fn a_score_at_the_mark_passes_below_it_refines_until_the_loop_limit() {
        assert_eq!(decide(Some(7.0), 7.0, 0, 3), GateDecision::Pass);
        assert_eq!(decide(Some(9.0), 7.0, 3, 3), GateDecision::Pass);
        assert_eq!(decide(Some(6.9), 7.0, 0, 3), GateDecision::Refine);
        assert_eq!(decide(Some(6.9), 7.0, 2, 3), GateDecision::Refine);
        assert_eq!(decide(Some(6.9), 7.0, 3, 3), GateDecision::EscalateToHuman);
        assert_eq!(decide(None, 7.0, 0, 3), GateDecision::EscalateToHuman);
    }

    #[test]
    fn the_gate_escalates_exactly_where_the_budget_ledger_hands_over() {
        assert_eq!(BudgetConfig::default().max_loops, DEFAULT_MAX_LOOPS);
        for max in 1..6 {
            for done in 0..8 {
                let escalates = decide(Some(1.0), 5.0, done, max) == GateDecision::EscalateToHuman;
                assert_eq!(escalates, loop_limit_reached(done, max), "{done}/{max}");
            }
        }
    }
}
