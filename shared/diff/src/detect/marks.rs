//! Marks the after side has more of than its baseline, turned into flags and findings.

use std::collections::HashMap;

use super::facts::{Facts, Mark, Signal};
use super::model::{FileChange, Finding, Findings, Flag, FlagKind};
use super::paths::is_test_path;
use super::run::Snapshot;
use super::text::snippet;

pub(crate) fn check(
    change: &FileChange<'_>,
    baseline: &[&Facts],
    snapshot: &Snapshot<'_, '_>,
    found: &mut Findings,
) {
    let Some(after) = change.after.and_then(|a| a.facts) else {
        return;
    };
    let mut existing: HashMap<(Signal, &str), u32> = HashMap::new();
    for mark in baseline.iter().flat_map(|f| &f.marks) {
        *existing
            .entry((mark.signal, mark.key.as_str()))
            .or_default() += 1;
    }
    let test_file = is_test_path(change.path);
    for mark in &after.marks {
        if let Some(left) = existing.get_mut(&(mark.signal, mark.key.as_str()))
            && *left > 0
        {
            *left -= 1;
            continue;
        }
        let test_code = test_file || mark.in_test;
        match mark.signal {
            Signal::Flag(kind) => {
                if let Some(detail) = flag_detail(kind, mark, test_code, snapshot) {
                    found.flags.push(Flag {
                        kind,
                        file: change.path.to_owned(),
                        line: mark.line,
                        detail,
                    });
                }
            }
            Signal::Scaffold(kind) if !test_code => found.scaffolding.push(Finding {
                kind,
                file: change.path.to_owned(),
                line: mark.line,
                detail: format!("{} added: `{}`", mark.what, snippet(&mark.key)),
                weight: kind.weight(),
            }),
            Signal::Scaffold(_) => {}
        }
    }
}

/// The detail of an added mark's flag, or `None` where the kind does not apply: skips and
/// trivial assertions only matter in test code, the others only outside it, and a swallowed
/// exception anywhere (in a test it can hide a failing assertion).
fn flag_detail(
    kind: FlagKind,
    mark: &Mark,
    test_code: bool,
    snapshot: &Snapshot<'_, '_>,
) -> Option<String> {
    let code = snippet(&mark.key);
    match kind {
        FlagKind::TestSkipped | FlagKind::AssertionRemoved => {
            test_code.then(|| format!("{} added: `{code}`", mark.what))
        }
        FlagKind::ExceptionSwallowed => Some(format!("{}: `{code}`", mark.what)),
        _ if test_code => None,
        FlagKind::TestSpecialCasing => snapshot.test_file_with(&mark.key).map(|file| {
            format!(
                "{} {code:?} added in non-test code; the literal appears in test file {file}",
                mark.what
            )
        }),
        FlagKind::TestEnvSniffing => Some(format!(
            "test-environment check ({}) added in non-test code: `{code}`",
            mark.what
        )),
        _ => Some(format!("{} `{code}` added in non-test code", mark.what)),
    }
}
