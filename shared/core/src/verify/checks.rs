//! `automated_check`: named pass/fail checks (builds, lints clean, no secrets, …), scored as the
//! share that passed. A failing check named in the tenant's `safety_checks` is a safety
//! violation, which no other evidence can average away.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Outcome, VerifyConfig};

const VERSION: &str = "automated_check@1";

/// Check results by name. Evidence: `{passed, total, failing: [name], safety_failures: [name]}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutomatedCheck {
    /// Whether each check passed.
    pub checks: BTreeMap<String, bool>,
    /// Marks the outcome as a safety violation.
    #[serde(default)]
    pub safety_violation: bool,
}

pub(super) fn verify(r: &AutomatedCheck, config: &VerifyConfig) -> Outcome {
    let failing: Vec<&str> = r
        .checks
        .iter()
        .filter(|(_, passed)| !**passed)
        .map(|(name, _)| name.as_str())
        .collect();
    let safety_failures: Vec<&str> = failing
        .iter()
        .copied()
        .filter(|name| config.safety_checks.iter().any(|s| s == name))
        .collect();
    let total = r.checks.len() as u64;
    let passed = total - failing.len() as u64;
    let evidence = json!({
        "passed": passed,
        "total": total,
        "failing": failing,
        "safety_failures": safety_failures,
    });
    let mut outcome = if total == 0 {
        Outcome::abstain("no checks", evidence, VERSION)
    } else {
        let n = total as f64;
        // n/(n + 1): more checks, more evidence; the same rule as tests.
        Outcome::ok(passed as f64 / n, n / (n + 1.0), evidence, VERSION)
    };
    outcome.safety_violation = !safety_failures.is_empty();
    outcome
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    fn checks(pairs: &[(&str, bool)]) -> AutomatedCheck {
        AutomatedCheck {
            checks: pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            safety_violation: false,
        }
    }

    /// Checks, value, confidence, safety violation.
    type Row = (&'static [(&'static str, bool)], f64, f64, bool);

    #[test]
    fn table() {
        let config = VerifyConfig::default();
        let table: &[Row] = &[
            (&[("builds", true)], 1.0, 0.5, false),
            (&[("builds", true), ("lint", false)], 0.5, 2.0 / 3.0, false),
            (
                &[("builds", true), ("lint", true), ("safety", false)],
                2.0 / 3.0,
                0.75,
                true,
            ),
            (&[("safety", true)], 1.0, 0.5, false),
        ];
        for (pairs, value, confidence, unsafe_) in table {
            let o = verify(&checks(pairs), &config);
            assert_eq!(o.status, Status::Ok);
            assert_eq!(o.value, Some(*value), "{pairs:?}");
            assert_eq!(o.confidence, *confidence);
            assert_eq!(o.safety_violation, *unsafe_);
        }
    }

    #[test]
    fn evidence_lists_failing_checks() {
        let o = verify(
            &checks(&[("safety", false), ("lint", false), ("builds", true)]),
            &VerifyConfig::default(),
        );
        assert_eq!(o.evidence["failing"], json!(["lint", "safety"]));
        assert_eq!(o.evidence["safety_failures"], json!(["safety"]));
    }

    #[test]
    fn tenant_safety_checks_replace_the_default() {
        let config = VerifyConfig {
            safety_checks: vec!["no_secrets".to_owned()],
            ..VerifyConfig::default()
        };
        assert!(verify(&checks(&[("no_secrets", false)]), &config).safety_violation);
        assert!(!verify(&checks(&[("safety", false)]), &config).safety_violation);
    }

    #[test]
    fn no_checks_abstains() {
        let o = verify(&checks(&[]), &VerifyConfig::default());
        assert_eq!((o.status, o.value), (Status::Abstain, None));
    }
}
