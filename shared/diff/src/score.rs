//! Scoring a change: per-file trees, distances and line metrics, the detectors, the multiplier.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cache::{ParseCache, ParsedFile};
use crate::detect::{self, FileChange, Finding, Flag, Side};
use crate::lang::Lang;
use crate::lines::{Hunk, LineStats, line_diff};
use crate::parse::reparse;
use crate::ted;
use crate::tree::Tree;
use crate::weights::{Measures, Weights};

/// The explicit limits of one analysis. Past a size, node or time limit a file falls back to
/// line metrics (or an upper-bound distance, `exact: false`); only the file count is an error.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Files in the union of both snapshots.
    pub max_files: usize,
    /// Larger files get line metrics only.
    pub max_file_bytes: usize,
    /// Trees with more normalised nodes get line metrics only.
    pub max_nodes: usize,
    /// Wall-clock budget of one analysis (parsing, distances, detectors).
    pub deadline: Duration,
    /// Zhang–Shasha cells one changed region may use before its fallback.
    pub region_work: u64,
    /// Zhang–Shasha cells per file.
    pub total_work: u64,
    /// Banded Zhang–Shasha cells per file that may certify a distance the rest could not.
    pub band_work: u64,
}

impl Default for Limits {
    fn default() -> Self {
        let distance = ted::Limits::default();
        Self {
            max_files: 500,
            max_file_bytes: 1024 * 1024,
            max_nodes: 250_000,
            deadline: Duration::from_secs(2),
            region_work: distance.region_work,
            total_work: distance.total_work,
            band_work: distance.band_work,
        }
    }
}

/// Input the analysis refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The union of both snapshots has more files than [`Limits::max_files`].
    #[error("{count} files exceed the limit of {limit} per analysis")]
    TooManyFiles {
        /// Files in the union of both snapshots.
        count: usize,
        /// The limit they exceed, [`Limits::max_files`].
        limit: usize,
    },
    /// A path is empty, longer than [`MAX_PATH_CHARS`] characters or contains NUL.
    #[error("file path {path:?}: {reason}")]
    BadPath {
        /// The path, cut to its first 200 characters.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Longest file path, in characters (as JSON Schema counts a `maxLength`).
pub const MAX_PATH_CHARS: usize = 1024;

/// A set of files: path → content.
pub type Snapshot = BTreeMap<String, String>;

/// One side of a change as the API takes it (`/v1/diffs/score`, `/v1/evaluations`).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotBody {
    /// Path → full content (UTF-8). Files only on one side are added or deleted.
    #[cfg_attr(feature = "openapi", schema(schema_with = files_schema))]
    pub files: Snapshot,
}

/// `files` as [`Scorer::check`] takes it under the default [`Limits`], which every service
/// scores with: paths of 1 to [`MAX_PATH_CHARS`] characters without NUL (map keys, so a
/// `propertyNames` schema), at most `max_files` of them. The limit is on the union of both
/// snapshots, which the schema of one cannot state: it says what each side alone must meet.
#[cfg(feature = "openapi")]
fn files_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::{ObjectBuilder, Type};
    let string = || ObjectBuilder::new().schema_type(Type::String);
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(format!(
            "Path → full content (UTF-8). Files only on one side are added or deleted. Paths \
             are 1 to {MAX_PATH_CHARS} characters without NUL; both snapshots together hold at \
             most {} distinct paths.",
            Limits::default().max_files
        )))
        .property_names(Some(
            string()
                .min_length(Some(1))
                .max_length(Some(MAX_PATH_CHARS))
                .pattern(Some(r"^[^\u0000]*$")),
        ))
        .additional_properties(Some(string()))
        .max_properties(Some(Limits::default().max_files))
        .build()
}

/// What the caller says about the change.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Parse every file as this language instead of guessing from its extension.
    pub lang: Option<Lang>,
    /// Whether the solution passed its tests; without it the multiplier is the floor.
    pub tests_passed: bool,
    /// Weights of the multiplier (the tenant's configuration).
    pub weights: Weights,
}

/// How a file differs between the snapshots.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// "Status" alone is the budget's in the merged API document.
#[cfg_attr(feature = "openapi", schema(as = FileStatus))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Only in the after snapshot: the file was created.
    Added,
    /// Only in the before snapshot: the file was removed.
    Deleted,
    /// In both snapshots, with different content.
    Modified,
    /// In both snapshots, with identical content; adds nothing to the score.
    Unchanged,
}

/// Syntax-tree measures of one file.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AstStats {
    /// Unit-cost tree edit distance (insert, delete, relabel); an upper bound if `exact` is false.
    pub tree_edit_distance: u64,
    /// Nodes in the normalised before tree; 0 for an added file.
    pub nodes_before: u64,
    /// Nodes in the normalised after tree; 0 for a deleted file.
    pub nodes_after: u64,
    /// `1 − tree_edit_distance / (nodes_before + nodes_after)`, in [0, 1]; 1 if both are empty.
    pub ast_similarity: f64,
    /// True if `tree_edit_distance` is the true distance; false if it is an upper bound.
    pub exact: bool,
    /// ERROR and MISSING nodes: code that does not parse is still scored.
    pub errors_before: u32,
    /// ERROR and MISSING nodes in the after parse; 0 for a deleted file.
    pub errors_after: u32,
}

/// One file of the result.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileReport {
    /// The file's path, as given in the snapshots.
    pub path: String,
    /// How the file differs between the snapshots.
    pub status: Status,
    /// Grammar used, from the request's `language` or the extension; null if none applies.
    pub language: Option<Lang>,
    /// `None` for files scored by line metrics only; `note` says why.
    pub ast: Option<AstStats>,
    /// Why the file got line metrics only; null when it has `ast` or is unchanged.
    pub note: Option<String>,
    /// Lines inserted, by a line diff of the two contents.
    pub lines_added: usize,
    /// Lines deleted, by a line diff of the two contents.
    pub lines_removed: usize,
    /// Changed lines: per diff hunk the larger of its added and removed lines, summed.
    pub lines_changed: usize,
    /// Lines in the before content; 0 for an added file.
    pub lines_before: usize,
    /// Lines in the after content; 0 for a deleted file.
    pub lines_after: usize,
}

/// Whether `ast_similarity` came from syntax trees or, with none available, from lines.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// From the trees of the touched files that have one (any other file is left out).
    Ast,
    /// No touched file has a syntax tree: `1 − line_change_ratio`.
    Lines,
}

/// The score of a change.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `1 − tree_edit_distance / (nodes_before + nodes_after)`, in [0, 1]; on the `lines` basis
    /// `1 − line_change_ratio`.
    pub ast_similarity: f64,
    /// `ast` if any touched file has a syntax tree, else `lines`.
    pub similarity_basis: Basis,
    /// Sum of the files' `ast.tree_edit_distance` over touched files; 0 if none has a tree.
    pub tree_edit_distance: u64,
    /// Sum of the files' `ast.nodes_before` over touched files.
    pub nodes_before: u64,
    /// Sum of the files' `ast.nodes_after` over touched files.
    pub nodes_after: u64,
    /// True if every touched file's distance is exact (or none has a tree); else an upper bound.
    pub exact: bool,
    /// Files added, deleted or modified; unchanged files do not count.
    pub files_touched: usize,
    /// Σ `lines_changed` / Σ max(`lines_before`, `lines_after`, 20) over touched files, capped
    /// at 1 (moved lines count on both sides of their hunk).
    pub line_change_ratio: f64,
    /// `1 − Π(1 − weight)` over `scaffolding`, in [0, 1]; 0 when there is none.
    pub scaffolding_penalty: f64,
    /// Scaffolding found in added non-test code, ordered by file, line and kind.
    pub scaffolding: Vec<Finding>,
    /// Reward-hacking flags, ordered by file, line and kind.
    pub flags: Vec<Flag>,
    /// Whether the tests passed, as sent; false when not sent.
    pub tests_passed: bool,
    /// The formula before the correctness and hard-flag gates.
    pub minimality_score: f64,
    /// `minimality_score` if `tests_passed` and no hard flag fired, else `floor`; in [`floor`, 1].
    pub reward_multiplier: f64,
    /// Every file of either snapshot, unchanged ones included, ordered by path.
    pub files: Vec<FileReport>,
}

/// A file's parses before and after, where it has them.
type Sides = (Option<Arc<ParsedFile>>, Option<Arc<ParsedFile>>);

/// Scores changes; holds the parse cache, so keep one per process.
#[derive(Debug)]
pub struct Scorer {
    limits: Limits,
    cache: ParseCache,
}

/// Why a file has no tree.
enum NoTree {
    TooLarge,
    TooManyNodes,
    Deadline,
}

impl NoTree {
    fn note(&self, limits: &Limits) -> String {
        match self {
            NoTree::TooLarge => format!(
                "larger than the {} byte per-file limit",
                limits.max_file_bytes
            ),
            NoTree::TooManyNodes => format!("more than {} syntax nodes", limits.max_nodes),
            NoTree::Deadline => "the analysis deadline passed before this file was parsed".into(),
        }
    }
}

impl Scorer {
    /// A scorer with these limits and an empty parse cache.
    pub fn new(limits: Limits) -> Self {
        // Room for a few of the largest trees allowed, or a few hundred typical ones.
        let cache = ParseCache::new(256, 4 * limits.max_nodes);
        Self { limits, cache }
    }

    /// The limits every analysis runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Parses and normalises `source` (or returns the cached parse of the same content),
    /// incrementally from `previous` (a file's text and parse, and the hunks from that text
    /// to `source`) when given.
    fn parsed(
        &self,
        lang: Lang,
        source: &str,
        previous: Option<(&str, &ParsedFile, &[Hunk])>,
        deadline: Instant,
    ) -> Result<Arc<ParsedFile>, NoTree> {
        if source.len() > self.limits.max_file_bytes {
            return Err(NoTree::TooLarge);
        }
        let key = ParseCache::key(lang, source);
        if let Some(hit) = self.cache.get(&key) {
            return Ok(hit);
        }
        let previous = previous.map(|(text, file, hunks)| (text, &file.syntax, hunks));
        let syntax = reparse(lang, source, previous, deadline).map_err(|_| NoTree::Deadline)?;
        let file = ParsedFile::read(lang, source, syntax, self.limits.max_nodes)
            .map_err(|_| NoTree::TooManyNodes)?;
        let file = Arc::new(file);
        self.cache.insert(key, file.clone());
        Ok(file)
    }

    /// The normalised tree of `source`, as the distance sees it (for `--emit-trees`).
    pub fn tree(&self, lang: Lang, source: &str) -> Option<Arc<ParsedFile>> {
        self.parsed(lang, source, None, Instant::now() + self.limits.deadline)
            .ok()
    }

    /// The paths of a change, checked as [`Scorer::score`] checks them: callers that score
    /// later (a queued evaluation) refuse bad input up front with the same rules.
    ///
    /// # Errors
    /// More files than [`Limits::max_files`], or an unusable path.
    pub fn check<'a>(
        &self,
        before: &'a Snapshot,
        after: &'a Snapshot,
    ) -> Result<BTreeSet<&'a String>, InputError> {
        let paths: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        if paths.len() > self.limits.max_files {
            return Err(InputError::TooManyFiles {
                count: paths.len(),
                limit: self.limits.max_files,
            });
        }
        for path in &paths {
            check_path(path)?;
        }
        Ok(paths)
    }

    /// Scores the change from `before` to `after`.
    ///
    /// # Errors
    /// More files than [`Limits::max_files`], or an unusable path.
    pub fn score(
        &self,
        before: &Snapshot,
        after: &Snapshot,
        request: &Request,
    ) -> Result<Report, InputError> {
        let deadline = Instant::now() + self.limits.deadline;
        let paths = self.check(before, after)?;

        let mut files = Vec::with_capacity(paths.len());
        let mut parsed: Vec<Sides> = Vec::with_capacity(paths.len());
        for path in &paths {
            let (report, sides) =
                self.file(path, before.get(*path), after.get(*path), request, deadline);
            files.push(report);
            parsed.push(sides);
        }

        let changes: Vec<FileChange<'_>> = paths
            .iter()
            .zip(&parsed)
            .map(|(path, (fb, fa))| FileChange {
                path,
                before: before.get(*path).map(|text| Side {
                    text,
                    facts: fb.as_deref().map(|f| &f.facts),
                }),
                after: after.get(*path).map(|text| Side {
                    text,
                    facts: fa.as_deref().map(|f| &f.facts),
                }),
            })
            .collect();
        let findings = detect::detect(&changes);
        Ok(self.assemble(files, findings, request))
    }

    /// One file's report, and its parses (for the detectors).
    fn file(
        &self,
        path: &str,
        old: Option<&String>,
        new: Option<&String>,
        request: &Request,
        deadline: Instant,
    ) -> (FileReport, Sides) {
        let status = match (old, new) {
            (None, _) => Status::Added,
            (_, None) => Status::Deleted,
            (Some(a), Some(b)) if a == b => Status::Unchanged,
            _ => Status::Modified,
        };
        let lang = request.lang.or_else(|| Lang::from_path(path));
        // Unchanged files cost nothing to the score; only test files among them are
        // parsed, for the literals the special-casing detector compares against.
        let wanted = status != Status::Unchanged || detect::is_test_path(path);
        let (lines, hunks) = match status {
            Status::Unchanged => {
                let n = old.map_or(0, |text| text.lines().count());
                let lines = LineStats {
                    before: n,
                    after: n,
                    ..LineStats::default()
                };
                (lines, Vec::new())
            }
            _ => line_diff(
                old.map_or("", String::as_str),
                new.map_or("", String::as_str),
                deadline,
            ),
        };
        let (mut tree_before, mut tree_after, mut no_tree) = (None, None, None);
        if let (Some(lang), true) = (lang, wanted) {
            if let Some(text) = old {
                match self.parsed(lang, text, None, deadline) {
                    Ok(file) => tree_before = Some(file),
                    Err(why) => no_tree = Some(why),
                }
            }
            if let Some(text) = new {
                // "After" is "before" edited: re-parse only what changed.
                let previous = old
                    .zip(tree_before.as_deref())
                    .map(|(text, file)| (text.as_str(), file, &hunks[..]));
                match self.parsed(lang, text, previous, deadline) {
                    Ok(file) => tree_after = Some(file),
                    Err(why) => no_tree = Some(why),
                }
            }
        }
        let ast = match (&no_tree, lang, status) {
            (None, Some(_), Status::Added | Status::Deleted | Status::Modified) => {
                Some(self.ast_stats(
                    tree_before.as_deref().map(|f| &f.tree),
                    tree_after.as_deref().map(|f| &f.tree),
                    deadline,
                ))
            }
            _ => None,
        };
        let note = match (lang, &no_tree, status) {
            (_, _, Status::Unchanged) => None,
            (None, _, _) => {
                Some("no grammar for this file type: scored by line metrics only".into())
            }
            (Some(_), Some(why), _) => Some(format!(
                "{}: scored by line metrics only",
                why.note(&self.limits)
            )),
            (Some(_), None, _) => None,
        };
        let report = FileReport {
            path: path.to_owned(),
            status,
            language: lang,
            ast,
            note,
            lines_added: lines.added,
            lines_removed: lines.removed,
            lines_changed: lines.changed,
            lines_before: lines.before,
            lines_after: lines.after,
        };
        (report, (tree_before, tree_after))
    }

    fn ast_stats(
        &self,
        before: Option<&Tree>,
        after: Option<&Tree>,
        deadline: Instant,
    ) -> AstStats {
        let nodes = |t: Option<&Tree>| t.map_or(0, |t| t.len() as u64);
        let errors = |t: Option<&Tree>| t.map_or(0, Tree::errors);
        let distance = match (before, after) {
            (Some(a), Some(b)) => ted::distance(
                a,
                b,
                &ted::Limits {
                    region_work: self.limits.region_work,
                    total_work: self.limits.total_work,
                    band_work: self.limits.band_work,
                    deadline,
                },
            ),
            // A whole file added or deleted is exactly that many inserts or deletes.
            (a, b) => ted::Distance {
                value: nodes(a) + nodes(b),
                exact: true,
            },
        };
        let (nb, na) = (nodes(before), nodes(after));
        AstStats {
            tree_edit_distance: distance.value,
            nodes_before: nb,
            nodes_after: na,
            ast_similarity: similarity(distance.value, nb + na),
            exact: distance.exact,
            errors_before: errors(before),
            errors_after: errors(after),
        }
    }

    fn assemble(
        &self,
        files: Vec<FileReport>,
        findings: detect::Findings,
        request: &Request,
    ) -> Report {
        let touched: Vec<&FileReport> = files
            .iter()
            .filter(|f| f.status != Status::Unchanged)
            .collect();
        let with_ast: Vec<&AstStats> = touched.iter().filter_map(|f| f.ast.as_ref()).collect();
        let ted: u64 = with_ast.iter().map(|a| a.tree_edit_distance).sum();
        let nodes_before: u64 = with_ast.iter().map(|a| a.nodes_before).sum();
        let nodes_after: u64 = with_ast.iter().map(|a| a.nodes_after).sum();
        let changed: usize = touched.iter().map(|f| f.lines_changed).sum();
        let total: usize = touched
            .iter()
            .map(|f| f.lines_before.max(f.lines_after).max(MIN_FILE_LINES))
            .sum();
        // Moved lines count on both sides of a hunk, so the raw share can pass 1: cap it.
        let line_change_ratio = if total == 0 {
            0.0
        } else {
            (changed as f64 / total as f64).min(1.0)
        };
        let (ast_similarity, similarity_basis) = if with_ast.is_empty() {
            (1.0 - line_change_ratio, Basis::Lines)
        } else {
            (similarity(ted, nodes_before + nodes_after), Basis::Ast)
        };
        let scaffolding_penalty = detect::scaffolding_penalty(&findings.scaffolding);
        let measures = Measures {
            similarity: ast_similarity,
            files_touched: touched.len(),
            line_change_ratio,
            scaffolding_penalty,
        };
        let kinds: Vec<_> = findings.flags.iter().map(|f| f.kind).collect();
        Report {
            ast_similarity,
            similarity_basis,
            tree_edit_distance: ted,
            nodes_before,
            nodes_after,
            exact: with_ast.iter().all(|a| a.exact),
            files_touched: touched.len(),
            line_change_ratio,
            scaffolding_penalty,
            scaffolding: findings.scaffolding,
            flags: findings.flags,
            tests_passed: request.tests_passed,
            minimality_score: request.weights.minimality(&measures),
            reward_multiplier: request
                .weights
                .multiplier(&measures, request.tests_passed, &kinds),
            files,
        }
    }
}

/// The length a touched file counts for at least in `line_change_ratio`: the share of a file's
/// lines a change touched says little about a file of a few lines (a one-line fix of a
/// two-line file is half of it, and as minimal as a fix gets).
const MIN_FILE_LINES: usize = 20;

/// `1 − distance / nodes`; two empty trees are identical.
fn similarity(distance: u64, nodes: u64) -> f64 {
    if nodes == 0 {
        1.0
    } else {
        1.0 - distance as f64 / nodes as f64
    }
}

fn check_path(path: &str) -> Result<(), InputError> {
    let bad = |reason| {
        Err(InputError::BadPath {
            path: path.chars().take(200).collect(),
            reason,
        })
    };
    if path.is_empty() {
        return bad("must not be empty");
    }
    if path.chars().count() > MAX_PATH_CHARS {
        return bad("must be at most 1024 characters");
    }
    if path.contains('\0') {
        return bad("must not contain NUL");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> Snapshot {
        pairs
            .iter()
            .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
            .collect()
    }

    #[test]
    fn a_one_line_fix_of_a_tiny_file_is_minimal() {
        let before = files(&[("pager.py", "def last(n, k):\n    return n // k\n")]);
        let after = files(&[("pager.py", "def last(n, k):\n    return (n + k - 1) // k\n")]);
        let request = Request {
            lang: None,
            tests_passed: true,
            weights: Weights::default(),
        };
        let report = Scorer::new(Limits::default())
            .score(&before, &after, &request)
            .unwrap();
        assert_eq!(report.line_change_ratio, 1.0 / 20.0);
        // Within the allowance, the line share costs nothing: the score is the AST's.
        assert_eq!(report.minimality_score, report.ast_similarity, "{report:?}");
    }
}
