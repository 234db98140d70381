//! `user_feedback`: one user's thumbs and/or 1–5 rating of one execution.
//!
//! A single judgement is noisy, so confidences stay moderate; aggregating many (Wilson lower
//! bound, Bayesian average) is the job of the reward store, not of this verifier.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{InvalidInput, Outcome};

const VERSION: &str = "user_feedback@1";
const THUMBS_CONFIDENCE: f64 = 0.6;
const RATING_CONFIDENCE: f64 = 0.7;
const AGREEING_CONFIDENCE: f64 = 0.8;
const DISAGREEING_CONFIDENCE: f64 = 0.4;
/// Thumbs and rating further apart than this (a thumbs down with a 4 or 5) contradict each other.
const AGREEMENT: f64 = 0.5;

/// Feedback from the user. Evidence: `{thumbs_up, rating, has_text}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserFeedback {
    /// Thumbs up (true) or down (false).
    pub thumbs_up: Option<bool>,
    /// A rating from 1 to 5.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 5))]
    pub rating: Option<u8>,
    /// Free text; kept by the caller, not scored.
    pub text: Option<String>,
    /// Marks the outcome as a safety violation.
    #[serde(default)]
    pub safety_violation: bool,
}

pub(super) fn verify(r: &UserFeedback) -> Result<Outcome, InvalidInput> {
    if r.rating.is_some_and(|rating| !(1..=5).contains(&rating)) {
        return Err(InvalidInput::new(
            "rating",
            "must be an integer from 1 to 5",
        ));
    }
    let evidence = json!({
        "thumbs_up": r.thumbs_up,
        "rating": r.rating,
        "has_text": r.text.as_deref().is_some_and(|t| !t.trim().is_empty()),
    });
    let thumbs = r.thumbs_up.map(|up| if up { 1.0 } else { 0.0 });
    let rating = r.rating.map(|rating| (f64::from(rating) - 1.0) / 4.0);
    let outcome = match (thumbs, rating) {
        (None, None) => return Ok(Outcome::abstain("no thumbs or rating", evidence, VERSION)),
        (Some(t), None) => Outcome::ok(t, THUMBS_CONFIDENCE, evidence, VERSION),
        (None, Some(v)) => Outcome::ok(v, RATING_CONFIDENCE, evidence, VERSION),
        (Some(t), Some(v)) => {
            let confidence = if (t - v).abs() <= AGREEMENT {
                AGREEING_CONFIDENCE
            } else {
                DISAGREEING_CONFIDENCE
            };
            Outcome::ok((t + v) / 2.0, confidence, evidence, VERSION)
        }
    };
    Ok(match r.rating {
        Some(rating) => outcome.with_raw(f64::from(rating)),
        None => outcome,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    fn feedback(thumbs_up: Option<bool>, rating: Option<u8>) -> UserFeedback {
        UserFeedback {
            thumbs_up,
            rating,
            ..UserFeedback::default()
        }
    }

    #[test]
    fn table() {
        let table = [
            (Some(true), None, 1.0, None, THUMBS_CONFIDENCE),
            (Some(false), None, 0.0, None, THUMBS_CONFIDENCE),
            (None, Some(1), 0.0, Some(1.0), RATING_CONFIDENCE),
            (None, Some(4), 0.75, Some(4.0), RATING_CONFIDENCE),
            (None, Some(5), 1.0, Some(5.0), RATING_CONFIDENCE),
            (Some(true), Some(4), 0.875, Some(4.0), AGREEING_CONFIDENCE),
            (Some(false), Some(3), 0.25, Some(3.0), AGREEING_CONFIDENCE),
            (Some(false), Some(5), 0.5, Some(5.0), DISAGREEING_CONFIDENCE),
        ];
        for (thumbs, rating, value, raw, confidence) in table {
            let o = verify(&feedback(thumbs, rating)).expect("valid");
            assert_eq!(o.status, Status::Ok);
            assert_eq!(o.value, Some(value), "{thumbs:?} {rating:?}");
            assert_eq!(o.raw_value, raw);
            assert_eq!(o.confidence, confidence);
        }
    }

    #[test]
    fn text_only_or_empty_abstains() {
        let text_only = UserFeedback {
            text: Some("great job".to_owned()),
            ..UserFeedback::default()
        };
        for r in [text_only, UserFeedback::default()] {
            let o = verify(&r).expect("valid");
            assert_eq!(o.status, Status::Abstain);
            assert_eq!(o.value, None);
            assert_eq!(o.reason.as_deref(), Some("no thumbs or rating"));
        }
    }

    #[test]
    fn ratings_outside_one_to_five_are_invalid() {
        for rating in [0, 6, 255] {
            let err = verify(&feedback(Some(true), Some(rating))).expect_err("invalid");
            assert_eq!(err.field, "rating");
        }
    }
}
