//! `junit::count` against reports written by real runners: pytest (from the project venv) and
//! libtest (the harness behind `cargo test`), generated in a temporary directory by each test.
//!
//! Needs the project venv with pytest: `infra/scripts/python-env.sh` builds it (or set
//! `AGENTRL_VENV`), and `rustc` on `PATH` (or `RUSTC`).

use agentrl_testkit::venv_python;
use std::path::Path;
use std::process::Command;

use agentrl_core::verify::{self, Context, Request, Status, VerifyConfig, junit};

/// Exercises every pytest outcome; the expected counts are in `pytest_counts_every_outcome`.
const PYTEST_SUITE: &str = r#"
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown exploded")

def test_pass_one():
    assert 1 + 1 == 2

def test_pass_two():
    assert "a" in "abc"

def test_fail():
    assert 1 == 2, "one is not two & <xml>"

def test_error(broken):
    pass

def test_fail_then_teardown_error(bad_teardown):
    assert False

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False

@pytest.mark.xfail(reason="fixed by accident")
def test_xpass():
    pass

@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n < 3
"#;

const LIBTEST_SUITE: &str = r#"
#[test]
fn passes() {
    assert_eq!(1 + 1, 2);
}

#[test]
fn prints() {
    println!("captured <output> & more");
}

#[test]
#[should_panic(expected = "boom")]
fn panics_as_expected() {
    panic!("boom");
}

#[test]
fn fails() {
    assert_eq!(1, 2, "one is not two");
}

#[test]
#[ignore]
fn ignored() {}
"#;

/// Runs the pytest suite and returns its JUnit report.
fn pytest_report(dir: &Path) -> String {
    std::fs::write(dir.join("test_sample.py"), PYTEST_SUITE).expect("write test file");
    // An ini file of our own stops pytest from picking up configuration from parent directories.
    std::fs::write(dir.join("pytest.ini"), "[pytest]\n").expect("write pytest.ini");
    let out = Command::new(venv_python())
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--junitxml=report.xml",
        ])
        .arg("test_sample.py")
        .current_dir(dir)
        .env_remove("PYTEST_ADDOPTS")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python");
    let report = dir.join("report.xml");
    assert!(
        report.is_file(),
        "pytest wrote no report (is pytest installed? run infra/scripts/python-env.sh)\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Exit code 1 is pytest's "some tests failed"; anything else means the run itself broke.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::read_to_string(report).expect("read report")
}

fn test_execution(xml: &str) -> Request {
    serde_json::from_value(serde_json::json!({ "method": "test_execution", "junit_xml": xml }))
        .expect("valid request")
}

fn run(request: &Request) -> Result<verify::Outcome, verify::InvalidInput> {
    let config = VerifyConfig::default();
    verify::run(
        request,
        &Context {
            output: "",
            config: &config,
        },
    )
}

#[test]
fn pytest_counts_every_outcome() {
    let dir = tempfile::tempdir().expect("tempdir");
    let xml = pytest_report(dir.path());
    let c = junit::count(xml.as_bytes()).expect("pytest writes valid JUnit");
    // pytest writes a second <testcase> for a teardown error after a failure, so the failing
    // test_fail_then_teardown_error counts once as failed and once as errored; xfail is a
    // skip and xpass (not strict) a pass.
    assert_eq!(
        c.passed, 5,
        "pass_one, pass_two, xpass, param[1], param[2]\n{xml}"
    );
    assert_eq!(c.failed, 3, "fail, fail_then_teardown_error, param[3]");
    assert_eq!(
        c.errored, 2,
        "error (setup), fail_then_teardown_error (teardown)"
    );
    assert_eq!(c.skipped, 2, "skipped, xfail");
    assert_eq!((c.total, c.suites, c.suite_errors), (12, 1, 0));
    let declared = c.declared.expect("pytest declares totals");
    assert_eq!(declared.tests, Some(12));
    assert!(!c.declared_mismatch, "{declared:?}");

    let outcome = run(&test_execution(&xml)).expect("valid");
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(outcome.value, Some(0.5), "5 passed of 10 executed");
    assert_eq!(
        outcome.confidence,
        8.0 / 9.0,
        "8 executed tests reached a verdict"
    );
    assert_eq!(outcome.evidence["failed"], 3);
}

#[test]
fn libtest_counts_and_its_declared_totals_include_unlisted_ignored_tests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("suite.rs");
    let binary = dir.path().join("suite");
    std::fs::write(&source, LIBTEST_SUITE).expect("write test file");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let status = Command::new(rustc)
        .args(["--test", "--edition", "2021", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("run rustc");
    assert!(status.success(), "rustc failed to build the libtest suite");
    // `--format junit` is unstable; RUSTC_BOOTSTRAP lets a stable toolchain's harness use it.
    let out = Command::new(&binary)
        .args([
            "-Z",
            "unstable-options",
            "--format",
            "junit",
            "--test-threads",
            "1",
        ])
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run the libtest suite");
    assert_eq!(
        out.status.code(),
        Some(101),
        "a failing test makes libtest exit 101"
    );
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
    let start = stdout
        .find("<?xml")
        .unwrap_or_else(|| panic!("no XML on stdout:\n{stdout}"));
    let xml = &stdout[start..];

    let c = junit::count(xml.as_bytes()).expect("libtest writes valid JUnit");
    assert_eq!((c.passed, c.failed, c.errored), (3, 1, 0), "{xml}");
    let declared = c.declared.expect("libtest declares totals");
    assert_eq!((declared.tests, declared.skipped), (Some(5), Some(1)));
    // libtest counts the #[ignore]d test in tests= and skipped= but (as of Rust 1.95) writes
    // no <testcase> for it, so its own totals disagree with its testcases.
    if c.skipped == 0 {
        assert_eq!(c.total, 4);
        assert!(c.declared_mismatch);
    } else {
        assert_eq!((c.skipped, c.total), (1, 5));
        assert!(!c.declared_mismatch);
    }
}

#[test]
fn lying_summary_attributes_are_not_trusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let honest = pytest_report(dir.path());
    let tests = regex::Regex::new(r#"(<testsuite [^>]*?)tests="\d+""#).expect("regex");
    let failures = regex::Regex::new(r#"(<testsuite [^>]*?)failures="\d+""#).expect("regex");
    let lying = tests.replace(&honest, r#"${1}tests="40""#);
    let lying = failures.replace(&lying, r#"${1}failures="0""#).into_owned();
    assert_ne!(lying, honest);

    let truth = junit::count(honest.as_bytes()).expect("valid");
    let c = junit::count(lying.as_bytes()).expect("valid");
    assert_eq!(
        (c.passed, c.failed, c.errored, c.skipped, c.total),
        (5, 3, 2, 2, 12)
    );
    let declared = c.declared.expect("declared");
    assert_eq!((declared.tests, declared.failures), (Some(40), Some(0)));
    assert!(c.declared_mismatch);
    assert_eq!(
        (c.passed, c.failed, c.errored, c.skipped, c.total),
        (
            truth.passed,
            truth.failed,
            truth.errored,
            truth.skipped,
            truth.total
        )
    );

    let outcome = run(&test_execution(&lying)).expect("valid");
    assert_eq!(
        outcome.value,
        Some(0.5),
        "the reward ignores the forged totals"
    );
    assert_eq!(outcome.evidence["declared_mismatch"], true);
}

#[test]
fn truncated_reports_fail_with_a_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let xml = pytest_report(dir.path());
    for cut in [xml.len() / 3, xml.len() / 2, xml.len() - 1] {
        let truncated = &xml.as_bytes()[..cut];
        let err = junit::count(truncated).expect_err("a truncated report is malformed");
        let position = usize::try_from(err.position()).expect("fits");
        assert!(position <= cut, "{err} (cut at {cut})");
        assert!(err.to_string().contains("byte"), "{err}");
    }
    let truncated = String::from_utf8_lossy(&xml.as_bytes()[..xml.len() / 2]).into_owned();
    let err = run(&test_execution(&truncated)).expect_err("invalid input");
    assert_eq!(err.field, "junit_xml");
    assert!(err.reason.contains("byte"), "{}", err.reason);
}

#[test]
fn an_empty_testsuites_root_has_zero_tests_and_abstains() {
    let c = junit::count(b"<testsuites/>").expect("valid");
    assert_eq!((c.total, c.suites, c.declared), (0, 0, None));
    let outcome = run(&test_execution("<testsuites/>")).expect("valid");
    assert_eq!((outcome.status, outcome.value), (Status::Abstain, None));
}
