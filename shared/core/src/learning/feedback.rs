//! An agent's feedback statistics: counts, ratings, half-life-decayed sums, daily buckets and
//! the high-quality interactions that seed training datasets.
//!
//! Feedback is positive when its reward is > 0, negative when < 0, neutral otherwise.
//! Retention is measured back from the *horizon*: the newest time the projection has seen
//! (an event's time or a prune's `now`). The horizon only grows, so "keep what is within the
//! window of the horizon, and admit nothing older" gives the same result in any order:
//! - `daily` keeps the dates from `date(horizon) − daily_days` to the horizon's date;
//! - `high_quality` keeps entries with `at_ms ≥ horizon − high_quality_days` and, of those,
//!   the `high_quality_cap` most recent by `(at_ms, event_id)`;
//! - `decayed` is anchored at the horizon (see [`stats`](super::stats)).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bounded::insert_sorted;
use super::config::LearningConfig;
use super::event::{Event, Feedback};
use super::stats::{DAY_MS, advance, bayesian_average, weight_at, wilson_lower_bound};
use crate::calendar::utc_date;

/// Counts and averages of an agent's feedback.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FeedbackStats {
    /// Feedback with reward > 0.
    pub positive_count: u64,
    /// Feedback with reward < 0.
    pub negative_count: u64,
    /// Feedback with reward 0.
    pub neutral_count: u64,
    /// Σ reward.
    pub reward_sum: f64,
    /// Mean reward; 0 with no feedback.
    pub avg_score: f64,
    /// Wilson lower bound of positive / (positive + negative).
    pub wilson_lower_bound: f64,
    /// Star ratings.
    pub rating: RatingStats,
    /// Half-life-decayed statistics.
    pub decayed: DecayedStats,
    /// Recent feedback with reward ≥ `high_quality_min_reward`, oldest first.
    pub high_quality: Vec<HighQuality>,
    /// Per UTC date (`YYYY-MM-DD`) buckets of the last `daily_days` days.
    pub daily: BTreeMap<String, Day>,
}

/// Star ratings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RatingStats {
    /// Ratings given.
    pub count: u64,
    /// Σ rating.
    pub sum: f64,
    /// Bayesian average (prior: five ratings of 3).
    pub bayesian_average: f64,
}

impl Default for RatingStats {
    fn default() -> Self {
        Self {
            count: 0,
            sum: 0.0,
            bayesian_average: bayesian_average(0.0, 0.0),
        }
    }
}

/// Feedback statistics where each feedback weighs `2^(−age / half_life)` at `anchor_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DecayedStats {
    /// The time the sums are relative to (the horizon).
    pub anchor_ms: Option<i64>,
    /// Decayed count of positive feedback.
    pub positive: f64,
    /// Decayed count of negative feedback.
    pub negative: f64,
    /// Decayed count of all feedback.
    pub weight: f64,
    /// Decayed Σ reward.
    pub sum: f64,
    /// `sum / weight`; 0 with no weight.
    pub avg_score: f64,
    /// Wilson lower bound on the decayed counts.
    pub wilson_lower_bound: f64,
    /// Decayed count of ratings.
    pub rating_weight: f64,
    /// Decayed Σ rating.
    pub rating_sum: f64,
    /// Bayesian average of the decayed ratings.
    pub bayesian_average: f64,
}

impl Default for DecayedStats {
    fn default() -> Self {
        Self {
            anchor_ms: None,
            positive: 0.0,
            negative: 0.0,
            weight: 0.0,
            sum: 0.0,
            avg_score: 0.0,
            wilson_lower_bound: 0.0,
            rating_weight: 0.0,
            rating_sum: 0.0,
            bayesian_average: bayesian_average(0.0, 0.0),
        }
    }
}

/// One high-quality interaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HighQuality {
    /// The feedback event.
    pub event_id: String,
    /// The reply it rated, if named.
    pub source_id: Option<String>,
    /// Who gave it.
    pub user_id: String,
    /// Its reward.
    pub reward: f64,
    /// When the feedback happened.
    pub at_ms: i64,
}

impl HighQuality {
    /// Recency order: by time, ties broken by event id.
    fn recency(&self, other: &Self) -> Ordering {
        (self.at_ms, &self.event_id).cmp(&(other.at_ms, &other.event_id))
    }
}

/// Feedback of one UTC day.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Day {
    /// Positive feedback.
    pub positive: u64,
    /// Negative feedback.
    pub negative: u64,
    /// Σ reward.
    pub sum: f64,
    /// All feedback.
    pub count: u64,
}

impl Day {
    /// Mean reward, when the day had feedback.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }
}

impl FeedbackStats {
    /// Records one feedback; `horizon_ms` already includes the event's time.
    pub(crate) fn record(
        &mut self,
        event: &Event,
        feedback: &Feedback,
        reward: f64,
        horizon_ms: i64,
        config: &LearningConfig,
    ) {
        let at = event.occurred_at_ms;
        let (positive, negative) = (u64::from(reward > 0.0), u64::from(reward < 0.0));
        self.positive_count += positive;
        self.negative_count += negative;
        self.neutral_count += 1 - positive - negative;
        self.reward_sum += reward;
        if let Some(r) = feedback.rating {
            self.rating.count += 1;
            self.rating.sum += f64::from(r);
        }

        self.advance(horizon_ms, config);
        let d = &mut self.decayed;
        let w = weight_at(horizon_ms, at, config.half_life_days);
        d.positive += w * positive as f64;
        d.negative += w * negative as f64;
        d.weight += w;
        d.sum += w * reward;
        if let Some(r) = feedback.rating {
            d.rating_weight += w;
            d.rating_sum += w * f64::from(r);
        }

        let date = utc_date(at);
        if date >= daily_cutoff(horizon_ms, config) {
            let day = self.daily.entry(date).or_default();
            day.positive += positive;
            day.negative += negative;
            day.sum += reward;
            day.count += 1;
        }

        if reward >= config.high_quality_min_reward && at >= hq_cutoff(horizon_ms, config) {
            let entry = HighQuality {
                event_id: event.event_id.clone(),
                source_id: feedback.source_id.clone(),
                user_id: event.user_id.clone(),
                reward,
                at_ms: at,
            };
            insert_sorted(
                &mut self.high_quality,
                entry,
                config.high_quality_cap,
                HighQuality::recency,
            );
        }
        self.refresh();
    }

    /// Moves the horizon to `horizon_ms`: rescales the decayed sums and drops expired
    /// high-quality entries and daily buckets.
    pub(crate) fn advance(&mut self, horizon_ms: i64, config: &LearningConfig) {
        let d = &mut self.decayed;
        let factor = advance(&mut d.anchor_ms, horizon_ms, config.half_life_days);
        if factor != 1.0 {
            for sum in [
                &mut d.positive,
                &mut d.negative,
                &mut d.weight,
                &mut d.sum,
                &mut d.rating_weight,
                &mut d.rating_sum,
            ] {
                *sum *= factor;
            }
        }
        let hq = hq_cutoff(horizon_ms, config);
        self.high_quality.retain(|h| h.at_ms >= hq);
        let daily = daily_cutoff(horizon_ms, config);
        self.daily.retain(|date, _| *date >= daily);
        self.refresh();
    }

    /// Recomputes the derived averages and bounds from the counters.
    fn refresh(&mut self) {
        let n = self.positive_count + self.negative_count + self.neutral_count;
        self.avg_score = if n > 0 {
            self.reward_sum / n as f64
        } else {
            0.0
        };
        self.wilson_lower_bound =
            wilson_lower_bound(self.positive_count as f64, self.negative_count as f64);
        self.rating.bayesian_average = bayesian_average(self.rating.sum, self.rating.count as f64);
        let d = &mut self.decayed;
        d.avg_score = if d.weight > 0.0 {
            d.sum / d.weight
        } else {
            0.0
        };
        d.wilson_lower_bound = wilson_lower_bound(d.positive, d.negative);
        d.bayesian_average = bayesian_average(d.rating_sum, d.rating_weight);
    }

    /// All feedback recorded.
    pub fn total(&self) -> u64 {
        self.positive_count + self.negative_count + self.neutral_count
    }
}

/// The oldest date kept in `daily`.
fn daily_cutoff(horizon_ms: i64, config: &LearningConfig) -> String {
    utc_date(horizon_ms - i64::from(config.daily_days()) * DAY_MS)
}

/// The oldest time kept in `high_quality`.
pub(crate) fn hq_cutoff(horizon_ms: i64, config: &LearningConfig) -> i64 {
    horizon_ms - i64::from(config.high_quality_days) * DAY_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::testkit::feedback;

    fn record(
        stats: &mut FeedbackStats,
        horizon: &mut i64,
        id: &str,
        at: i64,
        f: Feedback,
        r: f64,
    ) {
        let config = LearningConfig::default();
        *horizon = (*horizon).max(at);
        let e = feedback(id, at, f.clone());
        stats.record(&e, &f, r, *horizon, &config);
    }

    #[test]
    fn counts_ratings_and_averages() {
        let (mut s, mut h) = (FeedbackStats::default(), 0);
        let rated = |r| Feedback {
            rating: Some(r),
            ..Feedback::default()
        };
        record(&mut s, &mut h, "a", DAY_MS, rated(5), 1.0);
        record(&mut s, &mut h, "b", DAY_MS, rated(1), -1.0);
        record(&mut s, &mut h, "c", DAY_MS, Feedback::default(), 0.0);
        assert_eq!(
            (s.positive_count, s.negative_count, s.neutral_count),
            (1, 1, 1)
        );
        assert_eq!(s.avg_score, 0.0);
        assert_eq!(s.rating.count, 2);
        assert_eq!(s.rating.bayesian_average, 3.0);
        assert_eq!(s.daily["1970-01-02"].count, 3);
        assert_eq!(s.high_quality.len(), 1);
        assert_eq!(s.high_quality[0].reward, 1.0);
    }

    #[test]
    fn decayed_sums_halve_per_half_life() {
        let (mut s, mut h) = (FeedbackStats::default(), 0);
        record(&mut s, &mut h, "a", 0, Feedback::default(), 1.0);
        record(&mut s, &mut h, "b", 14 * DAY_MS, Feedback::default(), -1.0);
        assert!((s.decayed.positive - 0.5).abs() < 1e-12);
        assert_eq!(s.decayed.negative, 1.0);
        assert!((s.decayed.avg_score - (-0.5 / 1.5)).abs() < 1e-12);
        assert_eq!(s.decayed.anchor_ms, Some(14 * DAY_MS));
    }

    #[test]
    fn high_quality_older_than_90_days_is_dropped() {
        let config = LearningConfig::default();
        let (mut s, mut h) = (FeedbackStats::default(), 0);
        record(&mut s, &mut h, "old", DAY_MS, Feedback::default(), 0.9);
        record(&mut s, &mut h, "new", 80 * DAY_MS, Feedback::default(), 0.9);
        assert_eq!(s.high_quality.len(), 2);
        s.advance(91 * DAY_MS + 1, &config);
        let ids: Vec<_> = s.high_quality.iter().map(|h| h.event_id.as_str()).collect();
        assert_eq!(ids, ["new"]);
        // An event older than the window is not admitted after the horizon moved on.
        let mut h = 91 * DAY_MS + 1;
        record(&mut s, &mut h, "late", DAY_MS / 2, Feedback::default(), 0.9);
        assert_eq!(s.high_quality.len(), 1);
        assert!(s.daily.keys().all(|d| d.as_str() >= "1970-02-01"));
    }
}
