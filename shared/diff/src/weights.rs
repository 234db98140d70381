//! The reward multiplier: the source design's formula, with every weight configurable per tenant.

use serde::{Deserialize, Serialize};

use crate::detect::FlagKind;

/// Name of the tenant configuration that holds the weights (`/v1/config/diffs`): every
/// service that scores changes reads the same document.
pub const WEIGHTS_CONFIG: &str = "diffs";

/// Weights of the reward multiplier. The defaults are the source design's:
/// `max(floor, ast_similarity − 0.1 × (files_touched − 1) − 2 × max(0, line_change_ratio − 0.1)
/// − 0.3 × scaffolding_penalty)`, and `floor` when the tests did not pass or a hard flag fired.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    /// The lowest multiplier, and the one given to incorrect or gaming solutions; in [0, 1].
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub floor: f64,
    /// Subtracted per touched file beyond the first; ≥ 0.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub per_extra_file: f64,
    /// The share of changed lines that is free; in [0, 1].
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub line_ratio_allowance: f64,
    /// Subtracted per unit of changed-line share beyond the allowance; ≥ 0.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub line_ratio_weight: f64,
    /// Multiplies the scaffolding penalty; ≥ 0.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub scaffolding_weight: f64,
    /// Reward-hacking kinds that force the floor.
    pub hard_flags: Vec<FlagKind>,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            floor: 0.1,
            per_extra_file: 0.1,
            line_ratio_allowance: 0.1,
            line_ratio_weight: 2.0,
            scaffolding_weight: 0.3,
            // Editing a test can be honest (fixing a wrong expectation) and a swallowed
            // exception is also priced as scaffolding, so neither forces the floor by default.
            hard_flags: vec![
                FlagKind::TestDeleted,
                FlagKind::AssertionRemoved,
                FlagKind::TestSkipped,
                FlagKind::ForcedExit,
                FlagKind::AlwaysTrueEquality,
                FlagKind::TestEnvSniffing,
                FlagKind::TestSpecialCasing,
            ],
        }
    }
}

/// A weight out of range; `field` names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct WeightsError {
    /// The weight's field name, as in the JSON body.
    pub field: &'static str,
    /// The range it must be in.
    pub reason: &'static str,
}

/// The measurements the multiplier is computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measures {
    /// The report's `ast_similarity`.
    pub similarity: f64,
    /// Files added, deleted or modified.
    pub files_touched: usize,
    /// Changed lines over total lines of the touched files.
    pub line_change_ratio: f64,
    /// `1 − Π(1 − weight)` over the scaffolding findings, in [0, 1].
    pub scaffolding_penalty: f64,
}

impl Weights {
    /// Checks every weight is finite and in its range.
    ///
    /// # Errors
    /// The first weight out of range.
    pub fn validate(&self) -> Result<(), WeightsError> {
        let check = |ok: bool, field, reason| {
            if ok {
                Ok(())
            } else {
                Err(WeightsError { field, reason })
            }
        };
        check(
            (0.0..=1.0).contains(&self.floor),
            "floor",
            "must be in [0, 1]",
        )?;
        for (value, field) in [
            (self.per_extra_file, "per_extra_file"),
            (self.line_ratio_weight, "line_ratio_weight"),
            (self.scaffolding_weight, "scaffolding_weight"),
        ] {
            check(
                value.is_finite() && value >= 0.0,
                field,
                "must be a finite number ≥ 0",
            )?;
        }
        check(
            (0.0..=1.0).contains(&self.line_ratio_allowance),
            "line_ratio_allowance",
            "must be in [0, 1]",
        )
    }

    /// The formula without the correctness and hard-flag gates, in [floor, 1].
    pub fn minimality(&self, m: &Measures) -> f64 {
        let extra_files = m.files_touched.saturating_sub(1) as f64;
        let score = m.similarity
            - self.per_extra_file * extra_files
            - self.line_ratio_weight * (m.line_change_ratio - self.line_ratio_allowance).max(0.0)
            - self.scaffolding_weight * m.scaffolding_penalty;
        score.clamp(self.floor, 1.0f64.max(self.floor))
    }

    /// The multiplier: the floor unless the tests passed and no hard flag fired.
    pub fn multiplier(&self, m: &Measures, tests_passed: bool, flags: &[FlagKind]) -> f64 {
        let gamed = flags.iter().any(|f| self.hard_flags.contains(f));
        if tests_passed && !gamed {
            self.minimality(m)
        } else {
            self.floor
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measures(similarity: f64, files: usize, ratio: f64, scaffolding: f64) -> Measures {
        Measures {
            similarity,
            files_touched: files,
            line_change_ratio: ratio,
            scaffolding_penalty: scaffolding,
        }
    }

    #[test]
    fn source_design_formula() {
        let w = Weights::default();
        let m = measures(0.95, 2, 0.15, 0.5);
        // 0.95 − 0.1 − 2 × 0.05 − 0.3 × 0.5 = 0.6
        assert!((w.multiplier(&m, true, &[]) - 0.6).abs() < 1e-12);
        assert_eq!(w.multiplier(&m, false, &[]), 0.1);
        assert_eq!(w.multiplier(&measures(0.2, 9, 0.9, 1.0), true, &[]), 0.1);
    }

    #[test]
    fn hard_flags_force_the_floor_and_soft_ones_do_not() {
        let w = Weights::default();
        let m = measures(0.99, 1, 0.01, 0.0);
        assert_eq!(w.multiplier(&m, true, &[FlagKind::TestSkipped]), 0.1);
        assert!((w.multiplier(&m, true, &[FlagKind::TestModified]) - 0.99).abs() < 1e-12);
    }

    #[test]
    fn validation_names_the_field() {
        let w = Weights {
            line_ratio_weight: f64::NAN,
            ..Weights::default()
        };
        assert_eq!(w.validate().unwrap_err().field, "line_ratio_weight");
        let w = Weights {
            floor: 1.5,
            ..Weights::default()
        };
        assert_eq!(w.validate().unwrap_err().field, "floor");
        assert!(Weights::default().validate().is_ok());
    }
}
