//! Running per-agent mean, variance and range of sampled marginals, and the stopping rule.
//!
//! Welford updates, one sample (a vector of marginals, one per agent) at a time, in sample
//! order: the estimates depend only on the sequence of samples, never on how the samples were
//! computed. Because every sample's marginals sum to v(N) − v(∅), so do the means.

use serde::{Deserialize, Serialize};

/// Per-agent running statistics of the marginal samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Moments {
    count: u64,
    mean: Vec<f64>,
    m2: Vec<f64>,
    /// Empty until the first sample (keeps the state free of infinities for serialisation).
    min: Vec<f64>,
    max: Vec<f64>,
}

impl Moments {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            count: 0,
            mean: vec![0.0; n],
            m2: vec![0.0; n],
            min: Vec::new(),
            max: Vec::new(),
        }
    }

    /// Adds one sample of marginals.
    pub(crate) fn push(&mut self, sample: &[f64]) {
        self.count += 1;
        let c = self.count as f64;
        for ((mean, m2), x) in self.mean.iter_mut().zip(&mut self.m2).zip(sample) {
            let d = x - *mean;
            *mean += d / c;
            *m2 += d * (x - *mean);
        }
        if self.min.is_empty() {
            self.min = sample.to_vec();
            self.max = sample.to_vec();
        } else {
            for ((lo, hi), x) in self.min.iter_mut().zip(&mut self.max).zip(sample) {
                *lo = lo.min(*x);
                *hi = hi.max(*x);
            }
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    pub(crate) fn means(&self) -> &[f64] {
        &self.mean
    }

    /// Standard errors of the means, `None` before two samples.
    pub(crate) fn std_errors(&self) -> Option<Vec<f64>> {
        (self.count >= 2).then(|| {
            let c = self.count as f64;
            self.m2
                .iter()
                .map(|m2| (m2.max(0.0) / (c - 1.0) / c).sqrt())
                .collect()
        })
    }

    /// Smallest and largest marginal seen per agent (empty before the first sample).
    pub(crate) fn ranges(&self) -> (&[f64], &[f64]) {
        (&self.min, &self.max)
    }

    /// The scale the stopping rule is relative to: max_i |φ̂_i|.
    pub(crate) fn spread(&self) -> f64 {
        self.mean.iter().fold(0.0, |m, x| m.max(x.abs()))
    }

    /// The stopping rule: at least two samples and max_i se_i ≤ `target_error` × spread.
    pub(crate) fn target_met(&self, target_error: f64) -> bool {
        if self.count < 2 {
            return false;
        }
        let c = self.count as f64;
        let worst_variance = self.m2.iter().fold(0.0f64, |m, x| m.max(*x)) / (c - 1.0) / c;
        let bound = target_error * self.spread();
        worst_variance <= bound * bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welford_matches_the_two_pass_formulas() {
        let samples = [[1.0, 4.0], [2.0, -1.0], [6.0, 0.5], [3.0, 2.0]];
        let mut m = Moments::new(2);
        assert_eq!(m.std_errors(), None);
        for s in &samples {
            m.push(s);
        }
        for i in 0..2 {
            let xs: Vec<f64> = samples.iter().map(|s| s[i]).collect();
            let mean = xs.iter().sum::<f64>() / 4.0;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 3.0;
            assert!((m.means()[i] - mean).abs() < 1e-12);
            assert!((m.std_errors().unwrap()[i] - (var / 4.0).sqrt()).abs() < 1e-12);
        }
        assert_eq!(m.ranges(), (&[1.0, -1.0][..], &[6.0, 4.0][..]));
        assert_eq!(m.spread(), 3.0);
        assert!(m.target_met(1.0) && !m.target_met(0.1));
    }

    #[test]
    fn constant_samples_meet_any_target() {
        let mut m = Moments::new(2);
        m.push(&[0.0, 0.0]);
        assert!(!m.target_met(0.0));
        m.push(&[0.0, 0.0]);
        assert!(m.target_met(0.0));
    }
}
