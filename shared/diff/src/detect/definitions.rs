//! Added definitions and files: equality that always holds, placeholder bodies, and code that
//! nothing uses or that only forwards a call.

use std::collections::HashSet;
use std::mem::discriminant;

use crate::lang::Lang;

use super::facts::{DefKind, Facts, Shape, TestKind};
use super::model::{FileChange, Finding, Findings, Flag, FlagKind, ScaffoldKind};
use super::paths::{is_test_path, module_stem};
use super::run::Snapshot;
use super::syntax::EQUALITY_METHODS;
use super::text::snippet;

/// Reports the added definitions of one file; `counted` is false when the whole file is
/// already reported as unreferenced, so references within it say nothing.
pub(crate) fn check(
    change: &FileChange<'_>,
    baseline: &[&Facts],
    snapshot: &Snapshot<'_, '_>,
    counted: bool,
    found: &mut Findings,
) {
    let Some(after) = change.after.and_then(|a| a.facts) else {
        return;
    };
    let path = change.path;
    if is_test_path(path) {
        return;
    }
    let old = baseline.iter().flat_map(|f| &f.definitions);
    let keys: HashSet<&str> = old.clone().map(|d| d.key.as_str()).collect();
    let shapes: HashSet<_> = old
        .map(|d| (d.key.as_str(), discriminant(&d.shape)))
        .collect();
    // A `.pyi` file declares: `...` is its body syntax, not a placeholder.
    let declares = path.ends_with(".pyi");
    for def in &after.definitions {
        if def.in_test || def.test != TestKind::No {
            continue;
        }
        let already = shapes.contains(&(def.key.as_str(), discriminant(&def.shape)));
        let finding = |kind: ScaffoldKind, detail: String| Finding {
            kind,
            file: path.to_owned(),
            line: def.line,
            detail,
            weight: kind.weight(),
        };
        match &def.shape {
            Shape::ReturnsTrue if EQUALITY_METHODS.contains(&def.name.as_str()) && !already => {
                found.flags.push(Flag {
                    kind: FlagKind::AlwaysTrueEquality,
                    file: path.to_owned(),
                    line: def.line,
                    detail: format!("`{}` always returns true", def.key),
                });
            }
            Shape::Stub(body) if !declares && !already => {
                let detail = format!("`{}` has a placeholder body: `{}`", def.key, snippet(body));
                found
                    .scaffolding
                    .push(finding(ScaffoldKind::StubBody, detail));
            }
            _ => {}
        }
        if !counted || keys.contains(def.key.as_str()) || def.exempt {
            continue;
        }
        let what = match def.kind {
            DefKind::Function => "function",
            DefKind::Type => "type",
        };
        match (snapshot.references(&def.name), &def.shape) {
            (0, _) => {
                let detail = format!("new {what} `{}` is not referenced anywhere", def.key);
                found
                    .scaffolding
                    .push(finding(ScaffoldKind::UnreferencedDefinition, detail));
            }
            (1, Shape::Forward(callee)) if def.kind == DefKind::Function => {
                let detail = format!(
                    "new function `{}` is used once and only calls `{callee}`",
                    def.key
                );
                found
                    .scaffolding
                    .push(finding(ScaffoldKind::SingleUseWrapper, detail));
            }
            _ => {}
        }
    }
}

/// A new source file that no other file mentions by its module name.
pub(crate) fn unreferenced_file(
    change: &FileChange<'_>,
    snapshot: &Snapshot<'_, '_>,
) -> Option<Finding> {
    let (None, Some(after)) = (change.before, change.after) else {
        return None;
    };
    let path = change.path;
    let source = after.facts.is_some() || Lang::from_path(path).is_some();
    let entry = after
        .facts
        .is_some_and(|f| f.definitions.iter().any(|d| d.name == "main"));
    if !source || entry || is_test_path(path) {
        return None;
    }
    let stem = module_stem(path)?;
    (!snapshot.mentioned_elsewhere(path, stem)).then(|| Finding {
        kind: ScaffoldKind::UnreferencedFile,
        file: path.to_owned(),
        line: 1,
        detail: format!("new file is not imported or mentioned anywhere (looked for `{stem}`)"),
        weight: ScaffoldKind::UnreferencedFile.weight(),
    })
}
