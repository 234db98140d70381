//! Streaming recount of a JUnit XML report from its `<testcase>` elements.
//!
//! The totals a runner writes on `<testsuite>`/`<testsuites>` (`tests`, `failures`, `errors`,
//! `skipped`, `disabled`) are never trusted: the report is what a policy under training can most
//! easily forge or a runner can get wrong (libtest, for one, counts `#[ignore]`d tests in
//! `tests`/`skipped` but writes no `<testcase>` for them). They are only reported back as
//! [`Declared`], with [`Counts::declared_mismatch`] when they disagree with the recount.
//!
//! Key properties:
//! - one pass over the bytes with quick-xml's borrowing slice reader: no DOM, and no allocation
//!   per element beyond quick-xml's own stack of open tag names (end-tag names are checked);
//! - a testcase's verdict comes from its direct children, in this order of precedence:
//!   `<failure>` (failed), `<error>` (errored), `<skipped>` (skipped), none of them (passed).
//!   Anything else (`<system-out>`, Surefire's `<flakyFailure>`/`<rerunFailure>`, …) is ignored;
//! - suites may nest; `<testcase>` may sit anywhere under the root but not inside another
//!   `<testcase>`;
//! - malformed XML, a missing or foreign root element, a second root element and unclosed
//!   elements are errors carrying the byte offset where the problem was found.
//!
//! Format reference: <https://github.com/testmoapp/junitxml>.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use serde::{Deserialize, Serialize};

/// What a report contains, recounted from its `<testcase>` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Testcases with none of `<failure>`, `<error>`, `<skipped>`.
    pub passed: u64,
    /// Testcases with a `<failure>` child.
    pub failed: u64,
    /// Testcases with an `<error>` child and no `<failure>`.
    pub errored: u64,
    /// Testcases with a `<skipped>` child and neither `<failure>` nor `<error>`.
    pub skipped: u64,
    /// All testcases: `passed + failed + errored + skipped`.
    pub total: u64,
    /// `<testsuite>` elements, nested ones included.
    pub suites: u64,
    /// The totals the report claims, when it claims any.
    pub declared: Option<Declared>,
    /// `declared` disagrees with the recount, or one of its attributes is not a number.
    pub declared_mismatch: bool,
    /// `<error>` elements directly under a `<testsuite>` (outside any testcase): runner-level
    /// errors such as a module that failed to load.
    pub suite_errors: u64,
}

impl Counts {
    /// Testcases that ran: `total − skipped`.
    #[must_use]
    pub fn executed(&self) -> u64 {
        self.total - self.skipped
    }
}

/// The totals a report declares in its attributes: from `<testsuites>` when that root carries
/// any, else summed over the top-level `<testsuite>` elements. `skipped` adds up `skipped` and
/// `disabled`. A field is `None` when no summed element carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Declared {
    /// The `tests` attribute.
    pub tests: Option<u64>,
    /// The `failures` attribute.
    pub failures: Option<u64>,
    /// The `errors` attribute.
    pub errors: Option<u64>,
    /// The `skipped` plus `disabled` attributes.
    pub skipped: Option<u64>,
}

impl Declared {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    fn add(&mut self, other: &Self) {
        fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                (a, b) => a.or(b),
            }
        }
        self.tests = sum(self.tests, other.tests);
        self.failures = sum(self.failures, other.failures);
        self.errors = sum(self.errors, other.errors);
        self.skipped = sum(self.skipped, other.skipped);
    }

    fn disagrees_with(&self, c: &Counts) -> bool {
        let differs = |declared: Option<u64>, counted: u64| declared.is_some_and(|d| d != counted);
        differs(self.tests, c.total)
            || differs(self.failures, c.failed)
            || differs(self.errors, c.errored)
            || differs(self.skipped, c.skipped)
    }
}

/// Why a report could not be counted. Every variant knows the byte offset it refers to.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JunitError {
    /// The bytes are not well-formed XML.
    #[error("malformed XML at byte {position}")]
    Xml {
        /// Where the parser gave up.
        position: u64,
        /// The parser's diagnosis.
        #[source]
        source: quick_xml::Error,
    },
    /// There is no element at all.
    #[error("no root element (report ends at byte {position})")]
    NoRoot {
        /// The length of the input.
        position: u64,
    },
    /// The root element is not `<testsuites>` or `<testsuite>`.
    #[error("root element <{found}> at byte {position} is not <testsuites> or <testsuite>")]
    NotJunit {
        /// Where the root element starts.
        position: u64,
        /// Its name, lossily decoded.
        found: String,
    },
    /// A `<testcase>` or `<testsuite>` inside a `<testcase>`.
    #[error("<{element}> at byte {position} is inside a <testcase>")]
    Misplaced {
        /// Where the element starts.
        position: u64,
        /// Its name.
        element: &'static str,
    },
    /// An element after the root element was closed.
    #[error("second root element at byte {position}")]
    SecondRoot {
        /// Where the element starts.
        position: u64,
    },
    /// The input ends inside the root element (e.g. a truncated report).
    #[error("report ends at byte {position} with {open} element(s) still open")]
    Unclosed {
        /// The length of the input.
        position: u64,
        /// How many elements are unclosed.
        open: u32,
    },
}

impl JunitError {
    /// The byte offset the error refers to.
    #[must_use]
    pub fn position(&self) -> u64 {
        match self {
            Self::Xml { position, .. }
            | Self::NoRoot { position }
            | Self::NotJunit { position, .. }
            | Self::Misplaced { position, .. }
            | Self::SecondRoot { position }
            | Self::Unclosed { position, .. } => *position,
        }
    }
}

/// Counts the testcases of a JUnit XML report (see the module docs for the rules).
///
/// # Errors
/// A [`JunitError`] when the report is not well-formed XML or not shaped like JUnit.
pub fn count(xml: &[u8]) -> Result<Counts, JunitError> {
    let mut reader = Reader::from_reader(xml);
    let config = reader.config_mut();
    config.trim_text(false);
    config.check_end_names = true;
    let mut counter = Counter::default();
    loop {
        let position = reader.buffer_position();
        let event = reader.read_event().map_err(|source| JunitError::Xml {
            position: reader.error_position(),
            source,
        })?;
        match event {
            Event::Start(e) => counter.open(&e, position, false)?,
            Event::Empty(e) => counter.open(&e, position, true)?,
            Event::End(_) => counter.close(),
            Event::Eof => return counter.finish(position),
            _ => {}
        }
    }
}

/// A testcase's children seen so far; the first matching flag in this order decides.
#[derive(Debug, Default, Clone, Copy)]
struct Verdict {
    failure: bool,
    error: bool,
    skipped: bool,
}

#[derive(Debug, Default)]
struct Counter {
    counts: Counts,
    /// Open elements.
    depth: u32,
    /// Whether the root element has been opened (it may be closed again).
    rooted: bool,
    /// The root is `<testsuites>` and declares totals itself.
    root_declares: bool,
    /// Depth of the open `<testcase>` and what its children said so far.
    case: Option<(u32, Verdict)>,
    /// Depths of the open `<testsuite>` elements, innermost last.
    suites: Vec<u32>,
    declared: Declared,
    declared_unreadable: bool,
}

impl Counter {
    fn open(&mut self, e: &BytesStart<'_>, position: u64, empty: bool) -> Result<(), JunitError> {
        let name = e.local_name();
        let name = name.as_ref();
        // The depth this element sits at: 1 for the root.
        let depth = self.depth + 1;
        if !self.rooted {
            self.rooted = true;
            match name {
                b"testsuites" => {
                    let declared = self.declared_of(e, position)?;
                    self.root_declares = !declared.is_empty();
                    self.declared = declared;
                }
                b"testsuite" => {}
                _ => {
                    return Err(JunitError::NotJunit {
                        position,
                        found: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
                    });
                }
            }
        } else if self.depth == 0 {
            return Err(JunitError::SecondRoot { position });
        }
        let parent = depth - 1;
        match name {
            b"testcase" | b"testsuite" if self.case.is_some() => {
                let element = if name == b"testcase" {
                    "testcase"
                } else {
                    "testsuite"
                };
                return Err(JunitError::Misplaced { position, element });
            }
            b"testcase" if empty => self.tally(Verdict::default()),
            b"testcase" => self.case = Some((depth, Verdict::default())),
            b"testsuite" => {
                self.counts.suites += 1;
                let top_level = depth == 1 || (depth == 2 && !self.root_declares);
                if top_level {
                    let declared = self.declared_of(e, position)?;
                    self.declared.add(&declared);
                }
                if !empty {
                    self.suites.push(depth);
                }
            }
            b"failure" | b"error" | b"skipped" => match &mut self.case {
                Some((case_depth, verdict)) if *case_depth == parent => match name {
                    b"failure" => verdict.failure = true,
                    b"error" => verdict.error = true,
                    _ => verdict.skipped = true,
                },
                None if name == b"error" && self.suites.last() == Some(&parent) => {
                    self.counts.suite_errors += 1;
                }
                _ => {}
            },
            _ => {}
        }
        if !empty {
            self.depth = depth;
        }
        Ok(())
    }

    fn close(&mut self) {
        // quick-xml rejects an end tag that does not match the open element, so depth > 0 here.
        let depth = self.depth;
        self.depth = depth.saturating_sub(1);
        if let Some((case_depth, verdict)) = self.case
            && case_depth == depth
        {
            self.case = None;
            self.tally(verdict);
        }
        if self.suites.last() == Some(&depth) {
            self.suites.pop();
        }
    }

    fn tally(&mut self, verdict: Verdict) {
        let c = &mut self.counts;
        if verdict.failure {
            c.failed += 1;
        } else if verdict.error {
            c.errored += 1;
        } else if verdict.skipped {
            c.skipped += 1;
        } else {
            c.passed += 1;
        }
        c.total += 1;
    }

    /// Reads the count attributes of a suite element; an unreadable number only flags a mismatch.
    fn declared_of(&mut self, e: &BytesStart<'_>, position: u64) -> Result<Declared, JunitError> {
        let mut declared = Declared::default();
        for attr in e.attributes() {
            let attr = attr.map_err(|source| JunitError::Xml {
                position,
                source: source.into(),
            })?;
            let slot = match attr.key.local_name().as_ref() {
                b"tests" => &mut declared.tests,
                b"failures" => &mut declared.failures,
                b"errors" => &mut declared.errors,
                b"skipped" | b"disabled" => &mut declared.skipped,
                _ => continue,
            };
            match std::str::from_utf8(&attr.value)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
            {
                Some(n) => *slot = Some(slot.unwrap_or(0).saturating_add(n)),
                None => self.declared_unreadable = true,
            }
        }
        Ok(declared)
    }

    fn finish(mut self, position: u64) -> Result<Counts, JunitError> {
        if !self.rooted {
            return Err(JunitError::NoRoot { position });
        }
        if self.depth > 0 {
            return Err(JunitError::Unclosed {
                position,
                open: self.depth,
            });
        }
        if !self.declared.is_empty() {
            self.counts.declared_mismatch =
                self.declared_unreadable || self.declared.disagrees_with(&self.counts);
            self.counts.declared = Some(self.declared);
        } else {
            self.counts.declared_mismatch = self.declared_unreadable;
        }
        Ok(self.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(xml: &str) -> Counts {
        count(xml.as_bytes()).unwrap_or_else(|e| panic!("{e}: {xml}"))
    }

    #[test]
    fn verdicts_come_from_testcase_children() {
        let c = ok(r#"<?xml version="1.0"?>
            <testsuite name="s">
              <testcase name="pass"/>
              <testcase name="pass2"><system-out>ok &amp; fine</system-out></testcase>
              <testcase name="fail"><failure message="x">trace</failure></testcase>
              <testcase name="err"><error/></testcase>
              <testcase name="skip"><skipped/></testcase>
              <testcase name="both"><failure/><error/></testcase>
              <testcase name="flaky"><flakyFailure/></testcase>
            </testsuite>"#);
        assert_eq!(
            (c.passed, c.failed, c.errored, c.skipped, c.total, c.suites),
            (3, 2, 1, 1, 7, 1)
        );
        assert_eq!(c.declared, None);
        assert!(!c.declared_mismatch);
        assert_eq!(c.executed(), 6);
    }

    #[test]
    fn nested_suites_and_declared_totals() {
        let xml = r#"<testsuites>
              <testsuite tests="2" failures="1">
                <testsuite tests="1"><testcase/></testsuite>
                <testcase><failure/></testcase>
                <error message="module failed to load"/>
              </testsuite>
              <testsuite tests="1" skipped="1" disabled="1"><testcase><skipped/></testcase></testsuite>
            </testsuites>"#;
        let c = ok(xml);
        assert_eq!(
            (c.passed, c.failed, c.skipped, c.total, c.suites),
            (1, 1, 1, 3, 3)
        );
        assert_eq!(c.suite_errors, 1);
        let declared = c.declared.expect("declared");
        assert_eq!(declared.tests, Some(3));
        assert_eq!(declared.failures, Some(1));
        assert_eq!(declared.errors, None);
        assert_eq!(declared.skipped, Some(2));
        assert!(c.declared_mismatch, "skipped 2 declared, 1 counted");
    }

    #[test]
    fn testsuites_totals_win_over_suite_totals() {
        let c = ok(
            r#"<testsuites tests="1"><testsuite tests="9"><testcase/></testsuite></testsuites>"#,
        );
        assert_eq!(c.declared.and_then(|d| d.tests), Some(1));
        assert!(!c.declared_mismatch);
    }

    #[test]
    fn unreadable_declared_numbers_flag_a_mismatch() {
        let c = ok(r#"<testsuite tests="lots"><testcase/></testsuite>"#);
        assert!(c.declared_mismatch);
        assert_eq!(c.total, 1);
    }

    #[test]
    fn empty_roots_count_zero() {
        assert_eq!(ok("<testsuites/>").total, 0);
        let c = ok("<testsuite></testsuite>");
        assert_eq!((c.total, c.suites), (0, 1));
    }

    #[test]
    fn errors_carry_positions() {
        let cases: &[(&str, u64)] = &[
            ("", 0),
            ("  <!-- nothing -->", 18),
            ("<html><body/></html>", 0),
            ("<testsuite><testcase></testsuite>", 21),
            ("<testsuite><testcase>", 21),
            ("<testsuite/><testsuite/>", 12),
            (
                "<testsuite><testcase><testcase/></testcase></testsuite>",
                21,
            ),
            ("<testsuite a='1' a='2'/>", 0),
            ("<testsuites><testsuite a='1' a='2'/></testsuites>", 12),
        ];
        for &(xml, position) in cases {
            let err = count(xml.as_bytes()).expect_err(xml);
            assert_eq!(err.position(), position, "{xml}: {err}");
        }
    }

    #[test]
    fn error_kinds() {
        assert!(matches!(count(b""), Err(JunitError::NoRoot { .. })));
        assert!(matches!(count(b"<a/>"), Err(JunitError::NotJunit { found, .. }) if found == "a"));
        assert!(matches!(
            count(b"<testsuite><x>"),
            Err(JunitError::Unclosed { open: 2, .. })
        ));
        assert!(matches!(
            count(b"<testsuite></x>"),
            Err(JunitError::Xml { .. })
        ));
        assert!(matches!(
            count(b"</testsuite>"),
            Err(JunitError::Xml { .. })
        ));
    }

    #[test]
    fn prefixed_names_count_by_local_name() {
        let c = ok(
            r#"<j:testsuite xmlns:j="urn:x"><j:testcase><j:failure/></j:testcase></j:testsuite>"#,
        );
        assert_eq!(c.failed, 1);
    }
}
