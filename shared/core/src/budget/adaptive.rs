//! Adaptive allocation: allocate a high quantile of what successful tasks of the same tier consumed.
//!
//! Static tiers over-allocate: most tasks finish well under their base. Learning
//! the base from the tenant's own successful budgets removes that waste, while the
//! escalation triggers still cover the tail that needs more.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::AdaptiveConfig;

/// Tokens consumed by recent successful budgets of one tenant and tier, newest last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageHistory {
    samples: VecDeque<u64>,
}

impl UsageHistory {
    /// Remembers one successful budget's consumption, forgetting the oldest past `window`.
    pub fn record(&mut self, consumed_tokens: u64, window: usize) {
        self.samples.push_back(consumed_tokens);
        while self.samples.len() > window {
            self.samples.pop_front();
        }
    }

    /// How many samples are held.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The base allocation to use: the static `base_tokens` until `min_samples` are known,
    /// then the configured quantile plus headroom, within `[floor_tokens, ceiling]`.
    pub fn allocation(&self, base_tokens: u64, ceiling: u64, cfg: &AdaptiveConfig) -> u64 {
        if !cfg.enabled || self.samples.len() < cfg.min_samples {
            return base_tokens.min(ceiling);
        }
        let mut sorted: Vec<u64> = self.samples.iter().copied().collect();
        sorted.sort_unstable();
        // Nearest-rank quantile: the smallest sample with at least q of the mass at or below it.
        let rank = (cfg.quantile * sorted.len() as f64).ceil() as usize;
        let q = sorted[rank.clamp(1, sorted.len()) - 1] as f64;
        let learned = (q * (1.0 + cfg.headroom)).round() as u64;
        learned.clamp(cfg.floor_tokens.min(ceiling), ceiling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled() -> AdaptiveConfig {
        AdaptiveConfig {
            enabled: true,
            min_samples: 10,
            ..AdaptiveConfig::default()
        }
    }

    #[test]
    fn static_until_enough_samples_or_when_disabled() {
        let mut h = UsageHistory::default();
        for _ in 0..9 {
            h.record(100, 200);
        }
        assert_eq!(h.allocation(2_000, 4_000, &enabled()), 2_000);
        h.record(100, 200);
        assert_eq!(h.allocation(2_000, 4_000, &enabled()), 110);
        assert_eq!(
            h.allocation(2_000, 4_000, &AdaptiveConfig::default()),
            2_000
        );
    }

    #[test]
    fn quantile_headroom_floor_and_ceiling() {
        let mut h = UsageHistory::default();
        for t in 1..=100 {
            h.record(t * 10, 1_000);
        }
        // p90 of 10..=1000 is 900; +10% is 990.
        assert_eq!(h.allocation(2_000, 4_000, &enabled()), 990);
        assert_eq!(h.allocation(2_000, 500, &enabled()), 500);
        let mut tiny = UsageHistory::default();
        for _ in 0..10 {
            tiny.record(1, 1_000);
        }
        assert_eq!(tiny.allocation(2_000, 4_000, &enabled()), 100);
    }

    #[test]
    fn the_window_forgets_the_oldest() {
        let mut h = UsageHistory::default();
        for t in 0..50 {
            h.record(t, 20);
        }
        assert_eq!(h.len(), 20);
        assert_eq!(h.samples.front(), Some(&30));
    }
}
