//! Canary rollout: which version serves a request while a new one goes out to a share of an
//! agent's traffic.
//!
//! A request key falls in one of 10 000 buckets, from a hash of (tenant, agent, key); the
//! candidate serves the buckets below `percent × 100`. The bucket never changes, so a key that
//! reached the candidate stays on it as the percentage grows (sticky), and two services that
//! route the same key agree without sharing state.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::FieldError;

/// Buckets a key can fall in: a percentage has two decimals of resolution.
const BUCKETS: u32 = 10_000;

/// Which side of a canary serves a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// The deployed version.
    Deployed,
    /// The version being rolled out.
    Candidate,
}

/// A version going out to `percent` of an agent's traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Canary {
    /// The candidate model version.
    pub version: String,
    /// Share of the traffic it serves, 0 to 100.
    pub percent: f64,
}

impl Canary {
    /// Checks the percentage.
    ///
    /// # Errors
    /// `percent` outside 0..=100 or not finite.
    pub fn validate(&self) -> Result<(), FieldError> {
        if !(self.percent.is_finite() && (0.0..=100.0).contains(&self.percent)) {
            return Err(FieldError::new("percent", "must be between 0 and 100"));
        }
        Ok(())
    }

    /// The arm that serves a key in `bucket` (from [`bucket`]).
    pub fn arm(&self, bucket: u32) -> Arm {
        if rolled_out(self.percent, bucket) {
            Arm::Candidate
        } else {
            Arm::Deployed
        }
    }
}

/// Whether `bucket` is inside a rollout to `percent` (0–100) of the buckets: the rule of model
/// canaries and of the service's own per-tenant feature flags (adaptive budgets).
pub fn rolled_out(percent: f64, bucket: u32) -> bool {
    // Two decimals: 12.5% takes buckets 0..1250.
    bucket < (percent * 100.0).round() as u32
}

/// The bucket (0..10 000) of `key` for `agent` of `tenant`.
pub fn bucket(tenant: &str, agent: &str, key: &str) -> u32 {
    let mut hash = Sha256::new();
    for part in [tenant, agent, key] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let head = u64::from_be_bytes(digest[..8].try_into().expect("a SHA-256 has 32 bytes"));
    (head % u64::from(BUCKETS)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canary(percent: f64) -> Canary {
        Canary {
            version: "v2".into(),
            percent,
        }
    }

    #[test]
    fn the_share_follows_the_percentage() {
        let keys: Vec<u32> = (0..20_000)
            .map(|i| bucket("acme", "a", &format!("k{i}")))
            .collect();
        for percent in [0.0, 5.0, 25.0, 50.0, 100.0] {
            let c = canary(percent);
            let share = keys.iter().filter(|&&b| c.arm(b) == Arm::Candidate).count() as f64
                / keys.len() as f64;
            assert!(
                (share * 100.0 - percent).abs() < 1.0,
                "{percent}% → {share}"
            );
        }
    }

    #[test]
    fn sticky_as_the_percentage_grows() {
        for i in 0..5_000 {
            let b = bucket("acme", "a", &format!("user-{i}"));
            if canary(10.0).arm(b) == Arm::Candidate {
                assert_eq!(canary(30.0).arm(b), Arm::Candidate);
                assert_eq!(canary(100.0).arm(b), Arm::Candidate);
            }
        }
    }

    #[test]
    fn tenants_and_agents_hash_apart() {
        let differs = (0..100)
            .filter(|i| {
                let k = format!("k{i}");
                bucket("acme", "a", &k) != bucket("globex", "a", &k)
                    && bucket("acme", "a", &k) != bucket("acme", "b", &k)
            })
            .count();
        assert!(differs > 95);
        assert_ne!(bucket("ab", "c", "k"), bucket("a", "bc", "k"));
    }

    #[test]
    fn percent_is_checked() {
        assert!(canary(100.0).validate().is_ok());
        assert_eq!(canary(100.5).validate().unwrap_err().field, "percent");
        assert!(canary(f64::NAN).validate().is_err());
        assert!(canary(-1.0).validate().is_err());
    }
}
