//! The reward of one event, in [−1, 1], and the per-tenant weights that shape it.
//!
//! - **Feedback**: the mean of the signals present — `value`, the rating as
//!   `(rating − 3) / 2 × rating_weight`, and the reaction's weight (a reaction missing from
//!   `reactions` is no signal) — times `owner_multiplier` when the owner gave it, clamped to
//!   [−1, 1]. No signal at all gives 0. A safety violation gives −1 whatever else was said.
//! - **Reply**: `reply_placeholder`; the reply's real reward is the mean of its feedback,
//!   filled in retroactively by [`ReplyLedger`](super::ReplyLedger).
//! - **Session end**: an immediate leave (`duration < immediate_leave_seconds` or at most one
//!   message) gives `immediate_leave_reward`; otherwise
//!   `length_weight × min(1, messages / target_messages)`.
//! - **Action**: `action_success` or `action_failure`, plus `suggestion_followed` or
//!   `suggestion_ignored` when the agent made a suggestion, clamped to [−1, 1].
//!
//! Every reward is clamped and a NaN becomes 0, so even unvalidated input stays in range.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::event::{Action, Event, EventBody, EventError, Feedback, SessionEnded, check_name};

/// Most reactions a tenant may weight.
const MAX_REACTIONS: usize = 64;

/// Per-tenant reward weights. Fields left out of a stored configuration take their defaults;
/// a `reactions` map given replaces the default map as a whole.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RewardWeights {
    /// Scales the rating signal `(rating − 3) / 2`; in [0, 1]. Default 1.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub rating_weight: f64,
    /// Reaction name → reward in [−1, 1]; at most 64.
    #[cfg_attr(feature = "openapi", schema(schema_with = reactions_schema))]
    pub reactions: BTreeMap<String, f64>,
    /// Multiplies the owner's feedback; in [0, 10]. Default 1.5.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10))]
    pub owner_multiplier: f64,
    /// A reply's reward until its feedback arrives; in [−1, 1]. Default 0.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub reply_placeholder: f64,
    /// Sessions shorter than this are an immediate leave; in [0, 86 400]. Default 10.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 86_400))]
    pub immediate_leave_seconds: f64,
    /// Reward of an immediate leave; in [−1, 1]. Default −0.5.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub immediate_leave_reward: f64,
    /// Sessions with this many messages earn the full `length_weight`; ≥ 1. Default 10.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 4_294_967_295_u32))]
    pub target_messages: u32,
    /// Reward of a session that reaches `target_messages`; in [−1, 1]. Default 0.5.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub length_weight: f64,
    /// Reward of a successful action; in [−1, 1]. Default 0.2.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub action_success: f64,
    /// Reward of a failed action; in [−1, 1]. Default −0.3.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub action_failure: f64,
    /// Added when the user followed the agent's suggestion; in [−1, 1]. Default 0.3.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub suggestion_followed: f64,
    /// Added when the user ignored it; in [−1, 1]. Default −0.1.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub suggestion_ignored: f64,
}

impl Default for RewardWeights {
    fn default() -> Self {
        let reactions = [
            ("thumbs_up", 0.5),
            ("heart", 0.6),
            ("laugh", 0.3),
            ("thumbs_down", -0.5),
            ("angry", -0.7),
            ("confused", -0.3),
        ];
        Self {
            rating_weight: 1.0,
            reactions: reactions.map(|(k, v)| (k.to_string(), v)).into(),
            owner_multiplier: 1.5,
            reply_placeholder: 0.0,
            immediate_leave_seconds: 10.0,
            immediate_leave_reward: -0.5,
            target_messages: 10,
            length_weight: 0.5,
            action_success: 0.2,
            action_failure: -0.3,
            suggestion_followed: 0.3,
            suggestion_ignored: -0.1,
        }
    }
}

impl RewardWeights {
    /// Checks every weight against the range documented on its field.
    ///
    /// # Errors
    /// The first field out of range (`reactions.<name>` for a reaction).
    pub fn validate(&self) -> Result<(), EventError> {
        in_range("rating_weight", self.rating_weight, 0.0, 1.0)?;
        in_range("owner_multiplier", self.owner_multiplier, 0.0, 10.0)?;
        in_range(
            "immediate_leave_seconds",
            self.immediate_leave_seconds,
            0.0,
            86_400.0,
        )?;
        if self.target_messages == 0 {
            return Err(EventError::new("target_messages", "must be >= 1"));
        }
        for (field, value) in [
            ("reply_placeholder", self.reply_placeholder),
            ("immediate_leave_reward", self.immediate_leave_reward),
            ("length_weight", self.length_weight),
            ("action_success", self.action_success),
            ("action_failure", self.action_failure),
            ("suggestion_followed", self.suggestion_followed),
            ("suggestion_ignored", self.suggestion_ignored),
        ] {
            in_range(field, value, -1.0, 1.0)?;
        }
        if self.reactions.len() > MAX_REACTIONS {
            return Err(EventError::new(
                "reactions",
                format!("at most {MAX_REACTIONS} reactions"),
            ));
        }
        for (name, weight) in &self.reactions {
            check_name("reactions", name)?;
            in_range(&format!("reactions.{name}"), *weight, -1.0, 1.0)?;
        }
        Ok(())
    }
}

/// `reactions` as [`RewardWeights::validate`] takes it.
#[cfg(feature = "openapi")]
fn reactions_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::{ObjectBuilder, Type};
    let weight = ObjectBuilder::new()
        .schema_type(Type::Number)
        .minimum(Some(-1))
        .maximum(Some(1));
    super::event::name_map_schema(
        &format!(
            "Reaction name → reward in [−1, 1]; at most {MAX_REACTIONS}. Given, it replaces \
             the default map as a whole."
        ),
        MAX_REACTIONS,
        weight,
    )
}

/// Fails unless `value` is finite and in `[min, max]`.
pub(crate) fn in_range(field: &str, value: f64, min: f64, max: f64) -> Result<(), EventError> {
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(EventError::new(field, format!("must be in [{min}, {max}]")))
    }
}

/// The reward of one event, in [−1, 1] (see the module docs for each kind).
pub fn reward(event: &Event, w: &RewardWeights) -> f64 {
    clamp_reward(match &event.body {
        EventBody::Feedback(f) => feedback_reward(f, w),
        EventBody::Reply(_) => w.reply_placeholder,
        EventBody::SessionEnded(s) => session_reward(s, w),
        EventBody::Action(a) => action_reward(a, w),
    })
}

/// Clamps to [−1, 1]; NaN (only reachable from unvalidated input) becomes 0.
pub(crate) fn clamp_reward(r: f64) -> f64 {
    if r.is_nan() { 0.0 } else { r.clamp(-1.0, 1.0) }
}

fn feedback_reward(f: &Feedback, w: &RewardWeights) -> f64 {
    if f.contains_safety_violation {
        return -1.0;
    }
    let signals: Vec<f64> = [
        f.value,
        f.rating
            .map(|r| (f64::from(r) - 3.0) / 2.0 * w.rating_weight),
        f.reaction
            .as_ref()
            .and_then(|name| w.reactions.get(name).copied()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if signals.is_empty() {
        return 0.0;
    }
    let mean = signals.iter().sum::<f64>() / signals.len() as f64;
    let owner = if f.is_owner { w.owner_multiplier } else { 1.0 };
    clamp_reward(mean * owner)
}

fn session_reward(s: &SessionEnded, w: &RewardWeights) -> f64 {
    if s.duration_seconds < w.immediate_leave_seconds || s.message_count <= 1 {
        return w.immediate_leave_reward;
    }
    let reached = f64::from(s.message_count) / f64::from(w.target_messages.max(1));
    w.length_weight * reached.min(1.0)
}

fn action_reward(a: &Action, w: &RewardWeights) -> f64 {
    let outcome = if a.success {
        w.action_success
    } else {
        w.action_failure
    };
    let suggestion = match a.suggestion_followed {
        Some(true) => w.suggestion_followed,
        Some(false) => w.suggestion_ignored,
        None => 0.0,
    };
    outcome + suggestion
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::testkit::{action, feedback, session};
    use proptest::prelude::*;

    fn fb(value: Option<f64>, rating: Option<u8>, reaction: Option<&str>) -> Feedback {
        Feedback {
            value,
            rating,
            reaction: reaction.map(str::to_string),
            ..Feedback::default()
        }
    }

    #[test]
    fn feedback_rewards() {
        let w = RewardWeights::default();
        let owner = |f: Feedback| Feedback {
            is_owner: true,
            ..f
        };
        let unsafe_ = |f: Feedback| Feedback {
            contains_safety_violation: true,
            ..f
        };
        let cases = [
            ("value only", fb(Some(0.4), None, None), 0.4),
            ("rating only 5", fb(None, Some(5), None), 1.0),
            ("rating only 1", fb(None, Some(1), None), -1.0),
            ("rating only 4", fb(None, Some(4), None), 0.5),
            ("reaction only", fb(None, None, Some("heart")), 0.6),
            ("unknown reaction", fb(None, None, Some("shrug")), 0.0),
            (
                "mean of signals",
                fb(Some(0.2), Some(4), Some("thumbs_up")),
                0.4,
            ),
            (
                "unknown reaction ignored",
                fb(Some(0.2), None, Some("shrug")),
                0.2,
            ),
            ("owner 1.5x", owner(fb(Some(0.4), None, None)), 0.6),
            ("owner clamped", owner(fb(Some(0.8), None, None)), 1.0),
            (
                "owner negative clamped",
                owner(fb(None, Some(1), None)),
                -1.0,
            ),
            (
                "safety overrides",
                unsafe_(fb(Some(1.0), Some(5), Some("heart"))),
                -1.0,
            ),
            (
                "safety beats owner",
                owner(unsafe_(fb(Some(1.0), None, None))),
                -1.0,
            ),
        ];
        for (name, f, want) in cases {
            let got = reward(&feedback("e", 0, f), &w);
            assert!((got - want).abs() < 1e-12, "{name}: {got} != {want}");
        }
    }

    #[test]
    fn session_rewards() {
        let w = RewardWeights::default();
        let cases = [
            ("immediate leave by time", 5.0, 8, -0.5),
            ("immediate leave by messages", 600.0, 1, -0.5),
            ("half target", 600.0, 5, 0.25),
            ("target reached", 600.0, 10, 0.5),
            ("beyond target", 600.0, 40, 0.5),
        ];
        for (name, seconds, messages, want) in cases {
            let got = reward(&session("e", 0, seconds, messages), &w);
            assert!((got - want).abs() < 1e-12, "{name}: {got} != {want}");
        }
    }

    #[test]
    fn action_and_reply_rewards() {
        let w = RewardWeights::default();
        let cases = [
            (true, None, 0.2),
            (false, None, -0.3),
            (true, Some(true), 0.5),
            (false, Some(false), -0.4),
        ];
        for (success, followed, want) in cases {
            let got = reward(&action("e", 0, "search", success, followed), &w);
            assert!((got - want).abs() < 1e-12, "{success} {followed:?}: {got}");
        }
        let reply = crate::learning::testkit::reply("e", 0, "m", &[]);
        let w = RewardWeights {
            reply_placeholder: 0.1,
            ..w
        };
        assert_eq!(reward(&reply, &w), 0.1);
    }

    #[test]
    fn weights_validate_and_deserialize_with_defaults() {
        assert!(RewardWeights::default().validate().is_ok());
        let w: RewardWeights = serde_json::from_str(r#"{"owner_multiplier": 2}"#).unwrap();
        assert_eq!(w.owner_multiplier, 2.0);
        assert_eq!(w.reactions, RewardWeights::default().reactions);
        assert!(serde_json::from_str::<RewardWeights>(r#"{"owner": 2}"#).is_err());
        let bad = RewardWeights {
            reactions: [("heart".to_string(), 2.0)].into(),
            ..RewardWeights::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "reactions.heart");
        let bad = RewardWeights {
            length_weight: f64::NAN,
            ..RewardWeights::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "length_weight");
    }

    proptest! {
        #[test]
        fn reward_is_always_in_range(
            value in proptest::option::of(prop_oneof![-5.0..5.0, Just(f64::NAN), Just(f64::INFINITY)]),
            rating in proptest::option::of(any::<u8>()),
            reaction in proptest::option::of(prop_oneof![Just("heart"), Just("angry"), Just("x")]),
            is_owner: bool,
            safety: bool,
            multiplier in 0.0..10.0f64,
            seconds in -10.0..1e4f64,
            messages: u32,
            success: bool,
            followed in proptest::option::of(any::<bool>()),
        ) {
            let w = RewardWeights { owner_multiplier: multiplier, ..RewardWeights::default() };
            let f = Feedback {
                is_owner,
                contains_safety_violation: safety,
                ..fb(value, rating, reaction)
            };
            for e in [
                feedback("e", 0, f),
                session("e", 0, seconds, messages),
                action("e", 0, "a", success, followed),
            ] {
                let r = reward(&e, &w);
                prop_assert!((-1.0..=1.0).contains(&r), "{r} for {e:?}");
            }
        }
    }
}
