//! `test_execution`: the share of tests that passed, from caller-supplied counts or recounted
//! from a JUnit XML report.
//!
//! Confidence grows with the number of tests that reached a verdict, n/(n + 1): one test is a
//! coin flip's worth of evidence, a hundred are nearly conclusive. Skips do not count; nor do
//! errored tests, which say more about the environment than about the code.

use std::error::Error as _;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::junit::{self, Counts};
use super::{InvalidInput, Outcome};

const COUNTS_VERSION: &str = "test_execution/counts@1";
const JUNIT_VERSION: &str = "test_execution/junit@1";

/// Test results: `tests_passed` with `tests_total`, or `junit_xml`.
///
/// Evidence for counts: `{passed, total}`. For a report: `{passed, failed, errored, skipped,
/// total, suites, suite_errors, declared, declared_mismatch}` where `declared` holds the
/// report's own (untrusted) totals.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestExecution {
    /// Tests that passed: at most `tests_total`, and given with it (the two counts, or
    /// `junit_xml`, not both).
    #[cfg_attr(feature = "openapi", schema(maximum = 9_223_372_036_854_775_807_u64))]
    pub tests_passed: Option<u64>,
    /// Tests that ran, at most 2^63 − 1 (OpenAPI's `int64`): given with `tests_passed` (the
    /// two counts, or `junit_xml`, not both).
    #[cfg_attr(feature = "openapi", schema(maximum = 9_223_372_036_854_775_807_u64))]
    pub tests_total: Option<u64>,
    /// A JUnit XML report that parses (a 400 gives the position where it does not); instead
    /// of `tests_passed` and `tests_total`.
    pub junit_xml: Option<String>,
    /// Marks the outcome as a safety violation.
    #[serde(default)]
    pub safety_violation: bool,
}

pub(super) fn verify(r: &TestExecution) -> Result<Outcome, InvalidInput> {
    match (r.tests_passed, r.tests_total, &r.junit_xml) {
        (Some(passed), Some(total), None) => Ok(from_counts(passed, total)?),
        (None, None, Some(xml)) => from_junit(xml),
        (None, None, None) => Err(InvalidInput::new(
            "junit_xml",
            "give tests_passed and tests_total, or junit_xml",
        )),
        (Some(_), Some(_), Some(_)) => Err(InvalidInput::new(
            "junit_xml",
            "give tests_passed and tests_total, or junit_xml, not both",
        )),
        (Some(_), None, _) => Err(InvalidInput::new(
            "tests_total",
            "required with tests_passed",
        )),
        (None, Some(_), _) => Err(InvalidInput::new(
            "tests_passed",
            "required with tests_total",
        )),
    }
}

fn from_counts(passed: u64, total: u64) -> Result<Outcome, InvalidInput> {
    if i64::try_from(total).is_err() {
        return Err(InvalidInput::new("tests_total", "must be at most 2^63 − 1"));
    }
    if passed > total {
        return Err(InvalidInput::new(
            "tests_passed",
            "must not exceed tests_total",
        ));
    }
    let evidence = json!({ "passed": passed, "total": total });
    if total == 0 {
        return Ok(Outcome::abstain("no tests ran", evidence, COUNTS_VERSION));
    }
    Ok(Outcome::ok(
        ratio(passed, total),
        confidence(total),
        evidence,
        COUNTS_VERSION,
    ))
}

fn from_junit(xml: &str) -> Result<Outcome, InvalidInput> {
    let counts = junit::count(xml.as_bytes()).map_err(|err| {
        let reason = match err.source() {
            Some(source) => format!("{err}: {source}"),
            None => err.to_string(),
        };
        InvalidInput::new("junit_xml", reason)
    })?;
    let evidence = evidence(&counts);
    let executed = counts.executed();
    if executed == 0 {
        return Ok(Outcome::abstain(
            "no test was executed",
            evidence,
            JUNIT_VERSION,
        ));
    }
    if counts.errored == executed {
        return Ok(Outcome::abstain(
            "every executed test errored: an infrastructure error, not a verdict",
            evidence,
            JUNIT_VERSION,
        ));
    }
    let mut confidence = confidence(executed - counts.errored);
    if counts.suite_errors > 0 {
        // The runner itself reported an error: some tests may not have run at all.
        confidence /= 2.0;
    }
    Ok(Outcome::ok(
        ratio(counts.passed, executed),
        confidence,
        evidence,
        JUNIT_VERSION,
    ))
}

fn evidence(c: &Counts) -> serde_json::Value {
    json!({
        "passed": c.passed,
        "failed": c.failed,
        "errored": c.errored,
        "skipped": c.skipped,
        "total": c.total,
        "suites": c.suites,
        "suite_errors": c.suite_errors,
        "declared": c.declared,
        "declared_mismatch": c.declared_mismatch,
    })
}

fn ratio(part: u64, whole: u64) -> f64 {
    part as f64 / whole as f64
}

/// n/(n + 1) for n tests with a verdict.
fn confidence(n: u64) -> f64 {
    let n = n as f64;
    n / (n + 1.0)
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    fn counts(passed: Option<u64>, total: Option<u64>) -> TestExecution {
        TestExecution {
            tests_passed: passed,
            tests_total: total,
            ..TestExecution::default()
        }
    }

    fn junit(xml: &str) -> TestExecution {
        TestExecution {
            junit_xml: Some(xml.to_owned()),
            ..TestExecution::default()
        }
    }

    #[test]
    fn counts_table() {
        let o = verify(&counts(Some(3), Some(4))).expect("valid");
        assert_eq!(
            (o.status, o.value, o.confidence),
            (Status::Ok, Some(0.75), 0.8)
        );
        assert_eq!(o.verifier_version, COUNTS_VERSION);
        let o = verify(&counts(Some(0), Some(0))).expect("valid");
        assert_eq!((o.status, o.value), (Status::Abstain, None));
        assert_eq!(
            verify(&counts(Some(5), Some(4)))
                .expect_err("invalid")
                .field,
            "tests_passed"
        );
        let over_int64 = 1 << 63;
        assert_eq!(
            verify(&counts(Some(0), Some(over_int64)))
                .expect_err("past int64")
                .field,
            "tests_total"
        );
        assert!(verify(&counts(Some(1), Some(over_int64 - 1))).is_ok());
    }

    #[test]
    fn exactly_one_source() {
        let mut both = junit("<testsuite/>");
        both.tests_passed = Some(1);
        both.tests_total = Some(1);
        let cases = [
            (counts(None, None), "junit_xml"),
            (both, "junit_xml"),
            (counts(Some(1), None), "tests_total"),
            (counts(None, Some(1)), "tests_passed"),
        ];
        for (r, field) in cases {
            assert_eq!(verify(&r).expect_err("invalid").field, field, "{r:?}");
        }
    }

    #[test]
    fn junit_value_excludes_skips_and_counts_errors_against() {
        let xml = "<testsuite tests='5'>
            <testcase/><testcase/><testcase><failure/></testcase>
            <testcase><error/></testcase><testcase><skipped/></testcase></testsuite>";
        let o = verify(&junit(xml)).expect("valid");
        assert_eq!(o.status, Status::Ok);
        assert_eq!(o.value, Some(0.5));
        assert_eq!(o.confidence, 0.75, "3 tests with a verdict");
        assert_eq!(o.evidence["errored"], 1);
        assert_eq!(o.evidence["declared"]["tests"], 5);
        assert_eq!(o.evidence["declared_mismatch"], false);
        assert_eq!(o.verifier_version, JUNIT_VERSION);
    }

    #[test]
    fn junit_abstains_without_a_verdict() {
        for xml in [
            "<testsuites/>",
            "<testsuite><testcase><skipped/></testcase></testsuite>",
            "<testsuite><testcase><error/></testcase><testcase><skipped/></testcase></testsuite>",
        ] {
            let o = verify(&junit(xml)).expect("valid");
            assert_eq!((o.status, o.value), (Status::Abstain, None), "{xml}");
        }
    }

    #[test]
    fn suite_errors_halve_confidence() {
        let o = verify(&junit("<testsuite><testcase/><error/></testsuite>")).expect("valid");
        assert_eq!((o.value, o.confidence), (Some(1.0), 0.25));
    }

    #[test]
    fn malformed_reports_are_invalid_with_a_position() {
        let err = verify(&junit("<testsuite><testcase>")).expect_err("invalid");
        assert_eq!(err.field, "junit_xml");
        assert!(err.reason.contains("byte 21"), "{}", err.reason);
        let err = verify(&junit("<testsuite></testcase>")).expect_err("invalid");
        assert!(err.reason.contains("byte"), "{}", err.reason);
        assert!(
            err.reason.contains("testcase"),
            "the parser's diagnosis: {}",
            err.reason
        );
    }
}
