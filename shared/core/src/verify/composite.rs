//! The reward of an execution from all its outcomes, and the example type of a reward.
//!
//! The reward is the confidence-weighted mean of the ok outcomes, Σ cᵢvᵢ / Σ cᵢ: the source
//! design, and the practical form of inverse-variance weighting when verifiers report a
//! confidence rather than a variance. Abstentions and errors carry no information about the
//! execution and are left out, never counted as 0. A safety violation on any outcome, whatever
//! its status, sets the reward to the minimum, 0: it is never averaged away.
//!
//! The composite confidence is 1 − Π(1 − cᵢ) over the ok outcomes, the chance that at least one
//! of them is right if they err independently: it grows with every agreeing verifier and is 0
//! without any. A safety override is a rule, not an estimate, so its confidence is 1.
//!
//! The terms are sorted before summing, so the result does not depend on outcome order.

use serde::{Deserialize, Serialize};

use super::{ExampleThresholds, Outcome, Status};

/// The combined verdict on one execution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Composite {
    /// In [0, 1]; `None` when no ok outcome has a positive confidence (and nothing is unsafe).
    pub reward: Option<f64>,
    /// In [0, 1] (see the module docs).
    pub confidence: f64,
    /// Outcomes with [`Status::Ok`].
    pub ok: usize,
    /// Outcomes with [`Status::Abstain`].
    pub abstained: usize,
    /// Outcomes with [`Status::Error`].
    pub errored: usize,
    /// A safety violation set the reward to 0.
    pub safety_override: bool,
}

/// Combines the outcomes of one execution (see the module docs).
///
/// Ok outcomes whose value or confidence is not in [0, 1] (possible only for outcomes not made
/// by [`super::run`], e.g. edited in storage) are counted but not weighed.
#[must_use]
pub fn composite(outcomes: &[Outcome]) -> Composite {
    let unit = |x: f64| (0.0..=1.0).contains(&x);
    let mut terms: Vec<(f64, f64)> = outcomes
        .iter()
        .filter(|o| o.status == Status::Ok && unit(o.confidence) && o.confidence > 0.0)
        .filter_map(|o| o.value.filter(|v| unit(*v)).map(|v| (o.confidence, v)))
        .collect();
    terms.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let count = |status| outcomes.iter().filter(|o| o.status == status).count();
    let safety_override = outcomes.iter().any(|o| o.safety_violation);
    let (reward, confidence) = if safety_override {
        (Some(0.0), 1.0)
    } else if terms.is_empty() {
        (None, 0.0)
    } else {
        let weights: f64 = terms.iter().map(|(c, _)| c).sum();
        let weighted: f64 = terms.iter().map(|(c, v)| c * v).sum();
        let doubt: f64 = terms.iter().map(|(c, _)| 1.0 - c).product();
        (
            Some((weighted / weights).clamp(0.0, 1.0)),
            (1.0 - doubt).clamp(0.0, 1.0),
        )
    };
    Composite {
        reward,
        confidence,
        ok: count(Status::Ok),
        abstained: count(Status::Abstain),
        errored: count(Status::Error),
        safety_override,
    }
}

/// What a reward makes an execution as a training example.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ExampleType {
    /// `reward >= positive`.
    Positive,
    /// `reward <= negative`.
    Negative,
    /// In between (or not a number).
    Neutral,
}

impl ExampleType {
    /// The wire name, e.g. `positive`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Positive => "positive",
            Self::Negative => "negative",
            Self::Neutral => "neutral",
        }
    }

    /// The type of a wire name; `None` for anything else.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Positive, Self::Negative, Self::Neutral]
            .into_iter()
            .find(|t| t.as_str() == name)
    }
}

/// The example type of `reward` under the tenant's thresholds.
#[must_use]
pub fn classify(reward: f64, t: &ExampleThresholds) -> ExampleType {
    if reward >= t.positive {
        ExampleType::Positive
    } else if reward <= t.negative {
        ExampleType::Negative
    } else {
        ExampleType::Neutral
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn outcome(status: Status, value: Option<f64>, confidence: f64, unsafe_: bool) -> Outcome {
        Outcome {
            value,
            raw_value: None,
            confidence,
            status,
            reason: None,
            evidence: json!({}),
            verifier_version: "test@1".to_owned(),
            safety_violation: unsafe_,
        }
    }

    fn ok(value: f64, confidence: f64) -> Outcome {
        outcome(Status::Ok, Some(value), confidence, false)
    }

    fn abstain() -> Outcome {
        outcome(Status::Abstain, None, 0.0, false)
    }

    #[test]
    fn weighted_mean_of_ok_outcomes() {
        let c = composite(&[
            ok(1.0, 0.9),
            ok(0.0, 0.3),
            abstain(),
            outcome(Status::Error, None, 0.0, false),
        ]);
        assert_eq!(c.reward, Some(0.75));
        assert!((c.confidence - 0.93).abs() < 1e-12, "1 − 0.1·0.7");
        assert_eq!(
            (c.ok, c.abstained, c.errored, c.safety_override),
            (2, 1, 1, false)
        );
    }

    #[test]
    fn no_usable_outcome_means_no_reward() {
        for outcomes in [
            vec![],
            vec![abstain()],
            vec![ok(1.0, 0.0)],
            vec![ok(f64::NAN, 0.5)],
        ] {
            let c = composite(&outcomes);
            assert_eq!((c.reward, c.confidence), (None, 0.0), "{outcomes:?}");
        }
    }

    #[test]
    fn safety_overrides_even_from_an_abstention() {
        let c = composite(&[ok(1.0, 1.0), outcome(Status::Abstain, None, 0.0, true)]);
        assert_eq!(
            (c.reward, c.confidence, c.safety_override),
            (Some(0.0), 1.0, true)
        );
    }

    #[test]
    fn classify_table() {
        let t = ExampleThresholds::default();
        let table = [
            (1.0, ExampleType::Positive),
            (0.7, ExampleType::Positive),
            (0.69, ExampleType::Neutral),
            (0.31, ExampleType::Neutral),
            (0.3, ExampleType::Negative),
            (0.0, ExampleType::Negative),
            (f64::NAN, ExampleType::Neutral),
        ];
        for (reward, kind) in table {
            assert_eq!(classify(reward, &t), kind, "{reward}");
        }
        assert_eq!(
            serde_json::to_value(ExampleType::Neutral).expect("serializes"),
            "neutral"
        );
        assert_eq!(ExampleType::Negative.as_str(), "negative");
    }

    fn any_outcome() -> impl Strategy<Value = Outcome> {
        let status = prop_oneof![Just(Status::Ok), Just(Status::Abstain), Just(Status::Error)];
        (
            status,
            0.0..=1.0f64,
            0.0..=1.0f64,
            prop::bool::weighted(0.1),
        )
            .prop_map(|(status, value, confidence, unsafe_)| match status {
                Status::Ok => outcome(status, Some(value), confidence, unsafe_),
                _ => outcome(status, None, 0.0, unsafe_),
            })
    }

    proptest! {
        #[test]
        fn reward_is_a_unit_value_or_none(outcomes in prop::collection::vec(any_outcome(), 0..12)) {
            let c = composite(&outcomes);
            prop_assert!(c.reward.is_none_or(|r| (0.0..=1.0).contains(&r)));
            prop_assert!((0.0..=1.0).contains(&c.confidence));
            prop_assert_eq!(c.ok + c.abstained + c.errored, outcomes.len());
        }

        #[test]
        fn order_does_not_matter(
            (outcomes, shuffled) in prop::collection::vec(any_outcome(), 0..12)
                .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle()))
        ) {
            prop_assert_eq!(composite(&outcomes), composite(&shuffled));
        }

        #[test]
        fn abstentions_and_errors_are_ignored(
            outcomes in prop::collection::vec(any_outcome(), 0..12),
            extra in prop::collection::vec(any_outcome(), 0..6),
        ) {
            let mut with = outcomes.clone();
            with.extend(extra.into_iter().filter(|o| o.status != Status::Ok && !o.safety_violation));
            let (a, b) = (composite(&outcomes), composite(&with));
            prop_assert_eq!((a.reward, a.confidence, a.safety_override), (b.reward, b.confidence, b.safety_override));
        }

        #[test]
        fn any_safety_violation_forces_zero(outcomes in prop::collection::vec(any_outcome(), 1..12)) {
            let c = composite(&outcomes);
            if outcomes.iter().any(|o| o.safety_violation) {
                prop_assert_eq!(c.reward, Some(0.0));
                prop_assert!(c.safety_override);
            } else {
                prop_assert!(!c.safety_override);
            }
        }
    }
}
