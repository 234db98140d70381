//! The dataset trigger: when an agent has earned a new training dataset.
//!
//! Due when all of these hold at `now`:
//! - at least `min_positive` positive feedbacks in the `positive_days` UTC days ending today
//!   (counted from the daily buckets);
//! - at least `min_high_quality` live high-quality interactions (within `high_quality_days`);
//! - no request in the last `cooldown_days` (`now − dataset_requested_ms ≥ cooldown`).

use super::config::LearningConfig;
use super::feedback::hq_cutoff;
use super::projection::AgentProjection;
use super::stats::DAY_MS;

/// Whether a training dataset should be requested for this agent now.
pub fn dataset_due(p: &AgentProjection, config: &LearningConfig, now_ms: i64) -> bool {
    let d = &config.dataset;
    let cooled = p
        .dataset_requested_ms
        .is_none_or(|at| now_ms - at >= i64::from(d.cooldown_days) * DAY_MS);
    let live_from = hq_cutoff(now_ms, config);
    let high_quality = p
        .feedback
        .high_quality
        .iter()
        .filter(|h| h.at_ms >= live_from)
        .count();
    cooled
        && high_quality >= d.min_high_quality
        && p.positives_within(now_ms, d.positive_days) >= d.min_positive
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::testkit::feedback_value;

    const NOW: i64 = 1_800_000_000_000;

    fn config() -> LearningConfig {
        let mut c = LearningConfig::default();
        c.dataset.min_positive = 3;
        c.dataset.min_high_quality = 2;
        c
    }

    fn agent(rewards: &[(i64, f64)]) -> AgentProjection {
        let config = config();
        let mut p = AgentProjection::default();
        for (i, &(days_ago, r)) in rewards.iter().enumerate() {
            let e = feedback_value(&format!("f{i}"), NOW - days_ago * DAY_MS, r);
            p.apply(&e, r, &config);
        }
        p
    }

    #[test]
    fn thresholds() {
        let c = config();
        assert!(dataset_due(
            &agent(&[(0, 0.9), (1, 0.9), (2, 0.3)]),
            &c,
            NOW
        ));
        // Too few positives, or too few high-quality ones.
        assert!(!dataset_due(
            &agent(&[(0, 0.9), (1, 0.9), (2, -0.3)]),
            &c,
            NOW
        ));
        assert!(!dataset_due(
            &agent(&[(0, 0.9), (1, 0.3), (2, 0.3)]),
            &c,
            NOW
        ));
        // Positives outside the 30-day window do not count.
        assert!(!dataset_due(
            &agent(&[(0, 0.9), (1, 0.9), (30, 0.3)]),
            &c,
            NOW
        ));
        assert!(dataset_due(
            &agent(&[(0, 0.9), (1, 0.9), (29, 0.3)]),
            &c,
            NOW
        ));
    }

    #[test]
    fn cooldown() {
        let c = config();
        let mut p = agent(&[(0, 0.9), (1, 0.9), (2, 0.9)]);
        p.dataset_requested_ms = Some(NOW - 6 * DAY_MS);
        assert!(!dataset_due(&p, &c, NOW));
        p.dataset_requested_ms = Some(NOW - 7 * DAY_MS);
        assert!(dataset_due(&p, &c, NOW));
    }

    #[test]
    fn expired_high_quality_does_not_count() {
        let c = config();
        let p = agent(&[(0, 0.3), (1, 0.3), (2, 0.9), (89, 0.9)]);
        assert!(dataset_due(&p, &c, NOW));
        assert!(!dataset_due(&p, &c, NOW + 2 * DAY_MS));
    }
}
