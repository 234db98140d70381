//! The budget ledger: how one consumption report changes a budget.
//!
//! [`Budget::apply`] is the whole rule set. The store only has to guarantee that
//! reports are applied one at a time to the latest version (optimistic
//! concurrency) and that a report id is applied once; given that, `consumed_tokens`
//! is the sum of accepted tokens and never exceeds `max_total_tokens`.

use serde::{Deserialize, Serialize};

use super::{Assessment, BudgetConfig, Complexity, Trigger, loop_limit_reached};

/// Where a budget is in its life.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Reports are accepted.
    Active,
    /// The ceiling is reached; reports are acknowledged with zero tokens.
    Exhausted,
    /// The loop limit was passed; a human takes over, reports are refused.
    HandedToHuman,
    /// The caller completed the budget; reports are refused.
    Completed,
}

/// How the task ended, as reported to `complete`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The task was solved.
    Success,
    /// The task was not solved.
    Failure,
    /// The agent gave up or was stopped.
    Abandoned,
}

/// What the agent should do after a report.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// Keep going within the allocation.
    Continue,
    /// The allocation was raised by a trigger.
    Escalated,
    /// The allocation (or the ceiling) is used up: stop, or escalate.
    Exhausted,
    /// The loop limit is passed: hand the task to a human.
    EscalateToHuman,
}

/// One escalation that was granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    /// The trigger that fired.
    pub trigger: Trigger,
    /// Tokens added to the allocation.
    pub added_tokens: u64,
    /// When, in epoch milliseconds.
    pub at_ms: u64,
}

/// A thinking budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Server-assigned id.
    pub budget_id: String,
    /// The caller's task id.
    pub task_id: String,
    /// How the tier was chosen.
    pub assessment: Assessment,
    /// Current allocation (grows by escalation).
    pub allocated_tokens: u64,
    /// Tokens accepted so far.
    pub consumed_tokens: u64,
    /// The hard ceiling of this budget.
    pub max_total_tokens: u64,
    /// Escalations granted, oldest first.
    pub escalations: Vec<Escalation>,
    /// Orchestration loops completed without solving the task.
    pub loops_completed: u32,
    /// Life-cycle state.
    pub status: Status,
    /// Set by `complete`.
    pub outcome: Option<Outcome>,
    /// Creation time, epoch milliseconds.
    pub created_at_ms: u64,
    /// Last change, epoch milliseconds.
    pub updated_at_ms: u64,
}

/// One consumption report from a running agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Tokens spent since the last report.
    pub tokens: u64,
    /// The agent's confidence in [0, 1], if it reports one.
    pub confidence: Option<f64>,
    /// An explicit escalation trigger.
    pub trigger: Option<Trigger>,
    /// True when this report ends an orchestration loop that did not solve the task.
    pub loop_completed: bool,
}

/// The answer to a report; stored with the report so a retry gets the same answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// What the agent should do.
    pub action: Action,
    /// Tokens of this report that counted.
    pub accepted_tokens: u64,
    /// Budget totals after the report.
    pub consumed_tokens: u64,
    /// Allocation after the report.
    pub allocated_tokens: u64,
    /// The ceiling.
    pub max_total_tokens: u64,
    /// Loops completed after the report.
    pub loops_completed: u32,
    /// Why a requested escalation was not granted, when it was not.
    pub escalation_refused: Option<String>,
}

/// What [`Budget::complete`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The budget is now completed.
    Completed,
    /// It already was, with the same outcome (a retried request): nothing changed.
    Unchanged,
}

/// Why a budget could not be completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CompleteError {
    /// It was completed before with another outcome, which stands.
    #[error("the budget was completed with another outcome")]
    OtherOutcome {
        /// The outcome it was completed with.
        first: Option<Outcome>,
    },
}

/// A report the budget cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// The budget is completed or handed to a human.
    #[error("budget is {0:?} and takes no more reports")]
    Closed(Status),
}

impl Budget {
    /// A new active budget of tier `assessment.complexity`, allocated `base_tokens`.
    pub fn open(
        budget_id: String,
        task_id: String,
        assessment: Assessment,
        base_tokens: u64,
        config: &BudgetConfig,
        now_ms: u64,
    ) -> Self {
        let max_total_tokens = config.ceiling(assessment.complexity);
        Self {
            budget_id,
            task_id,
            allocated_tokens: base_tokens.min(max_total_tokens),
            consumed_tokens: 0,
            max_total_tokens,
            escalations: Vec::new(),
            loops_completed: 0,
            status: Status::Active,
            outcome: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            assessment,
        }
    }

    /// The tier.
    pub fn complexity(&self) -> Complexity {
        self.assessment.complexity
    }

    /// Applies one report. Tokens past the ceiling are not accepted.
    ///
    /// # Errors
    /// [`ReportError::Closed`] when the budget is completed or handed to a human.
    pub fn apply(
        &mut self,
        report: Report,
        config: &BudgetConfig,
        now_ms: u64,
    ) -> Result<Decision, ReportError> {
        if matches!(self.status, Status::Completed | Status::HandedToHuman) {
            return Err(ReportError::Closed(self.status));
        }
        let accepted = report
            .tokens
            .min(self.max_total_tokens - self.consumed_tokens);
        self.consumed_tokens += accepted;
        self.updated_at_ms = now_ms;
        if report.loop_completed {
            self.loops_completed += 1;
        }

        let requested = report.trigger.or_else(|| {
            report
                .confidence
                .filter(|c| *c < config.low_confidence_threshold)
                .map(|_| Trigger::LowConfidence)
        });
        let mut escalated = false;
        let mut escalation_refused = None;
        if let Some(trigger) = requested {
            match self.escalation_refusal(trigger, config, now_ms) {
                Some(reason) => escalation_refused = Some(reason),
                None => {
                    let added = config
                        .trigger(trigger)
                        .additional_tokens
                        .min(self.max_total_tokens - self.allocated_tokens);
                    self.allocated_tokens += added;
                    self.escalations.push(Escalation {
                        trigger,
                        added_tokens: added,
                        at_ms: now_ms,
                    });
                    escalated = true;
                }
            }
        }

        let action = if loop_limit_reached(self.loops_completed, config.max_loops) {
            self.status = Status::HandedToHuman;
            Action::EscalateToHuman
        } else if self.consumed_tokens >= self.max_total_tokens {
            self.status = Status::Exhausted;
            Action::Exhausted
        } else if escalated {
            Action::Escalated
        } else if self.consumed_tokens >= self.allocated_tokens {
            Action::Exhausted
        } else {
            Action::Continue
        };
        Ok(Decision {
            action,
            accepted_tokens: accepted,
            consumed_tokens: self.consumed_tokens,
            allocated_tokens: self.allocated_tokens,
            max_total_tokens: self.max_total_tokens,
            loops_completed: self.loops_completed,
            escalation_refused,
        })
    }

    fn escalation_refusal(
        &self,
        trigger: Trigger,
        config: &BudgetConfig,
        now_ms: u64,
    ) -> Option<String> {
        let tier = config.tier(self.complexity());
        if !tier.allowed_triggers.contains(&trigger) {
            return Some(format!(
                "{} is not allowed for {} budgets",
                trigger.as_str(),
                self.complexity().as_str()
            ));
        }
        if self.escalations.len() >= config.max_escalations as usize {
            return Some(format!(
                "the limit of {} escalations is reached",
                config.max_escalations
            ));
        }
        if self.allocated_tokens >= self.max_total_tokens {
            return Some("the allocation is already at the ceiling".to_owned());
        }
        let cooldown_ms = config.trigger(trigger).cooldown_seconds * 1_000;
        let last = self.escalations.iter().rev().find(|e| e.trigger == trigger);
        match last {
            Some(e) if now_ms < e.at_ms + cooldown_ms => Some(format!(
                "{} is cooling down for another {} ms",
                trigger.as_str(),
                e.at_ms + cooldown_ms - now_ms
            )),
            _ => None,
        }
    }

    /// The completion tokens calls under this budget may still produce (the gateway's clamp):
    /// what the hard ceiling leaves. The allocation is advice the agent gets back with each
    /// decision; the ceiling is enforced.
    ///
    /// # Errors
    /// The status that allows no more: `Exhausted` at the ceiling, `HandedToHuman` past the
    /// loop limit, `Completed`.
    pub fn allowance(&self) -> Result<u64, Status> {
        match self.status {
            Status::Completed | Status::HandedToHuman => Err(self.status),
            _ if self.consumed_tokens >= self.max_total_tokens => Err(Status::Exhausted),
            _ => Ok(self.max_total_tokens - self.consumed_tokens),
        }
    }

    /// Marks the budget completed with `outcome`.
    ///
    /// Completing again with the same outcome is a retry: nothing changes
    /// ([`Completion::Unchanged`]). Another outcome is refused: the first one stands.
    ///
    /// # Errors
    /// [`CompleteError::OtherOutcome`] when the budget was completed with another outcome.
    pub fn complete(&mut self, outcome: Outcome, now_ms: u64) -> Result<Completion, CompleteError> {
        if self.status == Status::Completed {
            return match self.outcome {
                Some(first) if first == outcome => Ok(Completion::Unchanged),
                first => Err(CompleteError::OtherOutcome { first }),
            };
        }
        self.status = Status::Completed;
        self.outcome = Some(outcome);
        self.updated_at_ms = now_ms;
        Ok(Completion::Completed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::assess;
    use super::*;
    use crate::budget::TaskDescription;
    use proptest::prelude::*;

    fn budget(c: Complexity) -> (Budget, BudgetConfig) {
        let config = BudgetConfig::default();
        let a = assess(&TaskDescription::default(), Some(c));
        let base = config.tier(c).base_tokens;
        (
            Budget::open("b".into(), "t".into(), a, base, &config, 0),
            config,
        )
    }

    fn report(tokens: u64) -> Report {
        Report {
            tokens,
            confidence: None,
            trigger: None,
            loop_completed: false,
        }
    }

    #[test]
    fn continue_then_exhausted_at_the_allocation() {
        let (mut b, cfg) = budget(Complexity::Standard);
        assert_eq!(
            b.apply(report(1_500), &cfg, 1).unwrap().action,
            Action::Continue
        );
        let d = b.apply(report(600), &cfg, 2).unwrap();
        assert_eq!(d.action, Action::Exhausted);
        assert_eq!(d.accepted_tokens, 600);
        assert_eq!(
            b.status,
            Status::Active,
            "over the allocation is not the ceiling"
        );
    }

    #[test]
    fn a_report_past_the_ceiling_is_accepted_up_to_it() {
        let (mut b, cfg) = budget(Complexity::Trivial);
        let d = b.apply(report(5_000), &cfg, 1).unwrap();
        assert_eq!(d.accepted_tokens, 1_000);
        assert_eq!(d.consumed_tokens, 1_000);
        assert_eq!(d.action, Action::Exhausted);
        assert_eq!(b.status, Status::Exhausted);
        let again = b.apply(report(10), &cfg, 2).unwrap();
        assert_eq!(again.accepted_tokens, 0);
    }

    #[test]
    fn the_allowance_is_what_the_ceiling_leaves_and_none_once_closed() {
        let (mut b, cfg) = budget(Complexity::Trivial);
        assert_eq!(b.allowance(), Ok(1_000));
        b.apply(report(700), &cfg, 1).unwrap();
        assert_eq!(
            b.allowance(),
            Ok(300),
            "past the allocation, up to the ceiling"
        );
        b.apply(report(300), &cfg, 2).unwrap();
        assert_eq!(b.allowance(), Err(Status::Exhausted));
        let (mut b, _) = budget(Complexity::Trivial);
        b.status = Status::HandedToHuman;
        assert_eq!(b.allowance(), Err(Status::HandedToHuman));
        b.complete(Outcome::Failure, 3).unwrap();
        assert_eq!(b.allowance(), Err(Status::Completed));
    }

    #[test]
    fn triggers_follow_the_tier_and_cooldown() {
        let (mut b, cfg) = budget(Complexity::Trivial);
        let mut r = report(10);
        r.trigger = Some(Trigger::PartialSuccess);
        let d = b.apply(r, &cfg, 1).unwrap();
        assert_eq!(d.action, Action::Continue);
        assert!(d.escalation_refused.unwrap().contains("not allowed"));

        r.trigger = None;
        r.confidence = Some(0.2);
        let d = b.apply(r, &cfg, 2).unwrap();
        assert_eq!(d.action, Action::Escalated);
        assert_eq!(d.allocated_tokens, 1_000);

        let (mut b, cfg) = budget(Complexity::Complex);
        r.confidence = None;
        r.trigger = Some(Trigger::VerifierRejection);
        assert_eq!(b.apply(r, &cfg, 1_000).unwrap().action, Action::Escalated);
        let d = b.apply(r, &cfg, 2_000).unwrap();
        assert!(d.escalation_refused.unwrap().contains("cooling down"));
        assert_eq!(b.apply(r, &cfg, 61_000).unwrap().action, Action::Escalated);
    }

    #[test]
    fn the_escalation_count_is_capped() {
        let (mut b, mut cfg) = budget(Complexity::Complex);
        cfg.max_escalations = 1;
        let mut r = report(1);
        r.trigger = Some(Trigger::LowConfidence);
        assert_eq!(b.apply(r, &cfg, 0).unwrap().action, Action::Escalated);
        r.trigger = Some(Trigger::PartialSuccess);
        let d = b.apply(r, &cfg, 1).unwrap();
        assert!(d.escalation_refused.unwrap().contains("limit of 1"));
    }

    #[test]
    fn the_loop_limit_hands_over_to_a_human() {
        let (mut b, cfg) = budget(Complexity::Standard);
        let mut r = report(10);
        r.loop_completed = true;
        assert_eq!(b.apply(r, &cfg, 1).unwrap().action, Action::Continue);
        assert_eq!(b.apply(r, &cfg, 2).unwrap().action, Action::Continue);
        assert_eq!(b.apply(r, &cfg, 3).unwrap().action, Action::EscalateToHuman);
        assert_eq!(
            b.apply(r, &cfg, 4),
            Err(ReportError::Closed(Status::HandedToHuman))
        );
    }

    #[test]
    fn completed_budgets_refuse_reports_and_keep_their_first_outcome() {
        let (mut b, cfg) = budget(Complexity::Standard);
        assert_eq!(b.complete(Outcome::Success, 5), Ok(Completion::Completed));
        assert_eq!(b.complete(Outcome::Success, 6), Ok(Completion::Unchanged));
        assert_eq!(
            b.complete(Outcome::Failure, 6),
            Err(CompleteError::OtherOutcome {
                first: Some(Outcome::Success)
            })
        );
        assert_eq!((b.outcome, b.updated_at_ms), (Some(Outcome::Success), 5));
        assert_eq!(
            b.apply(report(1), &cfg, 7),
            Err(ReportError::Closed(Status::Completed))
        );
    }

    proptest! {
        #[test]
        fn consumed_is_the_sum_of_accepted_and_never_passes_the_ceiling(
            reports in prop::collection::vec((0u64..5_000, prop::option::of(0.0f64..1.0), 0u8..4), 0..40),
            tier in 0usize..3,
        ) {
            let (mut b, cfg) = budget(Complexity::ALL[tier]);
            let mut sum = 0;
            for (i, (tokens, confidence, t)) in reports.into_iter().enumerate() {
                let trigger = [None, Some(Trigger::LowConfidence), Some(Trigger::PartialSuccess), Some(Trigger::VerifierRejection)][t as usize];
                let r = Report { tokens, confidence, trigger, loop_completed: false };
                let d = b.apply(r, &cfg, i as u64 * 100_000).unwrap();
                sum += d.accepted_tokens;
                prop_assert_eq!(d.consumed_tokens, sum);
                prop_assert!(d.consumed_tokens <= d.max_total_tokens);
                prop_assert!(d.allocated_tokens <= d.max_total_tokens);
                prop_assert!(b.escalations.len() <= cfg.max_escalations as usize);
            }
        }
    }
}
