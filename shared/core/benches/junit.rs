//! JUnit recount benchmark: a generated ~30 MB report (suites of testcases, a fifth failing
//! with a message and stack trace, every one with captured output) through `junit::count`.
//! Prints the median time and throughput over a few runs.
//!
//! `cargo bench -p agentrl-core --bench junit`

use std::fmt::Write as _;
use std::time::Instant;

use agentrl_core::verify::junit;

const TARGET_BYTES: usize = 30 * 1024 * 1024;
const CASES_PER_SUITE: usize = 500;
const RUNS: usize = 7;

/// A report with every kind of testcase; returns it with the counts it must produce.
fn report() -> (String, junit::Counts) {
    let mut xml = String::with_capacity(TARGET_BYTES + 64 * 1024);
    let mut expected = junit::Counts::default();
    xml.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    let mut case = 0usize;
    while xml.len() < TARGET_BYTES {
        expected.suites += 1;
        let _ = writeln!(
            xml,
            r#"  <testsuite name="suite_{}" tests="{CASES_PER_SUITE}" time="1.5">"#,
            expected.suites
        );
        for _ in 0..CASES_PER_SUITE {
            case += 1;
            let _ = write!(
                xml,
                r#"    <testcase classname="pkg.module_{m}" name="test_case_{case}" time="0.00{m}">"#,
                m = case % 10
            );
            match case % 10 {
                0 | 1 => {
                    expected.failed += 1;
                    let _ = write!(
                        xml,
                        "<failure message=\"assert {case} == {} &amp; more\">Traceback (most recent call last):\n  \
                         File &quot;tests/test_module.py&quot;, line {case}, in test_case_{case}\n    \
                         assert compute({case}) == expected\nAssertionError: assert {case} == {}\n</failure>",
                        case + 1,
                        case + 1
                    );
                }
                2 => {
                    expected.errored += 1;
                    xml.push_str("<error message=\"fixture failed\">RuntimeError: database unavailable</error>");
                }
                3 => {
                    expected.skipped += 1;
                    xml.push_str("<skipped message=\"not on this platform\"/>");
                }
                _ => expected.passed += 1,
            }
            let _ = writeln!(
                xml,
                "<system-out><![CDATA[running case {case}\nsetup ok\nteardown ok]]></system-out></testcase>"
            );
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    expected.total = expected.passed + expected.failed + expected.errored + expected.skipped;
    expected.declared = Some(junit::Declared {
        tests: Some(expected.suites * CASES_PER_SUITE as u64),
        ..junit::Declared::default()
    });
    (xml, expected)
}

fn main() {
    let (xml, expected) = report();
    let mb = xml.len() as f64 / (1024.0 * 1024.0);
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        let counts = junit::count(xml.as_bytes()).expect("the generated report is valid");
        times.push(start.elapsed().as_secs_f64());
        assert_eq!(counts, expected);
    }
    times.sort_by(f64::total_cmp);
    let median = times[RUNS / 2];
    println!(
        "junit::count: {mb:.1} MiB, {} testcases in {} suites: median {:.1} ms ({:.0} MiB/s; min {:.1} ms, max {:.1} ms)",
        expected.total,
        expected.suites,
        median * 1e3,
        mb / median,
        times[0] * 1e3,
        times[RUNS - 1] * 1e3,
    );
}
