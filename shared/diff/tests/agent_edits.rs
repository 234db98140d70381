//! The reported distance against the exact one on real edits: agent-sized edits of this
//! repository's own Rust and Python sources by `infra/bench/make-edit-pairs.py` (moved,
//! swapped, deleted and wrapped statements, inserted guards, renames, method-chain links
//! dropped or added), and the real single commits of its own history by
//! `infra/bench/commit-pairs.py`. The exact distance comes from Zhang–Shasha on the whole pair
//! (the same engine given a budget that covers it), itself held to the `apted` package on the
//! commits small enough for it. The goals are the issue's: equal on ≥ 98%, certified on
//! ≥ 95%, never above 1.5×. BENCHMARKS.md runs the same check on registry releases and on the
//! commits of 17 other projects (`--bench exactness`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentrl_diff::lang::Lang;
use agentrl_diff::lines::line_diff;
use agentrl_diff::parse::{parse, reparse};
use agentrl_diff::ted::{Limits, distance};
use agentrl_diff::tree::Tree;
use agentrl_testkit::venv_python;

// The benches' reader of pair directories; `dirs_from_args` there serves the benches only.
#[allow(dead_code)]
#[path = "../benches/common/mod.rs"]
mod common;

mod apted;

/// Per side: the exact oracle's table grows with the product of both sides.
const MAX_NODES: usize = 1_200;
/// Per side, for the commits: the corpus goes up to 5,000 nodes.
const MAX_COMMIT_NODES: usize = 5_000;
/// Per side, for the `apted` check: its Python takes seconds past a few hundred nodes.
const MAX_APTED_NODES: usize = 300;
const MAX_BYTES: u64 = 24 * 1024;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sources(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext)
            && entry.metadata().unwrap().len() <= MAX_BYTES
        {
            out.push(path);
        }
    }
}

fn tree(lang: Lang, source: &str) -> Tree {
    let syntax = parse(lang, source, Instant::now() + Duration::from_secs(10)).unwrap();
    Tree::from_syntax(lang, &syntax, source, 1_000_000).unwrap()
}

#[test]
fn agent_edits_of_real_files_get_the_exact_distance() {
    let root = repo();
    let mut files = Vec::new();
    sources(&root.join("shared/core/src"), "rs", &mut files);
    sources(&root.join("infra"), "py", &mut files);
    let work = std::env::temp_dir().join(format!("agentrl-agent-edits-{}", std::process::id()));
    let (originals, edited) = (work.join("originals"), work.join("edited"));
    for (k, file) in files.iter().enumerate() {
        let dir = originals.join(format!("file{k:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        let ext = file.extension().unwrap().to_string_lossy();
        std::fs::copy(file, dir.join(format!("before.{ext}"))).unwrap();
    }
    let status = Command::new(venv_python())
        .arg(root.join("infra/bench/make-edit-pairs.py"))
        .args([&originals, &edited])
        .arg("4")
        .status()
        .unwrap();
    assert!(status.success(), "make-edit-pairs.py failed");

    let pairs = common::read_pairs(&edited);
    assert!(!pairs.is_empty(), "make-edit-pairs.py wrote no pairs");
    let outcome = against_the_exact(pairs, MAX_NODES);
    std::fs::remove_dir_all(&work).unwrap();
    outcome.holds_the_goals("edits", 60);
}

#[test]
fn real_commits_of_this_repository_get_the_exact_distance() {
    let root = repo();
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    // A source archive or a shallow clone has no history to take commits from.
    if git(&["rev-parse", "--is-shallow-repository"]).as_deref() != Some("false") {
        println!("skipped: {} has no full git history", root.display());
        return;
    }
    let git_dir = git(&["rev-parse", "--absolute-git-dir"]).unwrap();
    let work = std::env::temp_dir().join(format!("agentrl-commits-{}", std::process::id()));
    let status = Command::new(venv_python())
        .arg(root.join("infra/bench/commit-pairs.py"))
        .arg(&work)
        .arg(git_dir)
        .args(["--per-repo", "60"])
        .status()
        .unwrap();
    assert!(status.success(), "commit-pairs.py failed");
    let pairs = common::read_pairs(&work);
    std::fs::remove_dir_all(&work).unwrap();
    // The scorer re-parses an "after" from its "before", one edit per line hunk: the tree
    // must be the one a fresh parse gives, on real multi-hunk commits.
    let deadline = Instant::now() + Duration::from_secs(60);
    for pair in &pairs {
        let before = parse(pair.lang, &pair.before, deadline).unwrap();
        let (_, hunks) = line_diff(&pair.before, &pair.after, deadline);
        let previous = Some((pair.before.as_str(), &before, &hunks[..]));
        let reparsed = reparse(pair.lang, &pair.after, previous, deadline).unwrap();
        let fresh = parse(pair.lang, &pair.after, deadline).unwrap();
        assert_eq!(
            reparsed.root_node().to_sexp(),
            fresh.root_node().to_sexp(),
            "{}: {} hunks re-parsed",
            pair.name,
            hunks.len()
        );
    }
    let outcome = against_the_exact(pairs, MAX_COMMIT_NODES);
    // The oracle itself against an independent implementation, where that one is quick.
    let small: Vec<_> = outcome
        .pairs
        .iter()
        .filter(|p| p.trees.0.len().max(p.trees.1.len()) <= MAX_APTED_NODES)
        .collect();
    let trees: Vec<(Tree, Tree)> = small.iter().map(|p| p.trees.clone()).collect();
    let apted = apted::oracle(&apted::oracle_inputs(&trees));
    for (pair, apted) in small.iter().zip(apted) {
        assert_eq!(pair.exact, apted, "{}: Zhang–Shasha vs apted", pair.name);
    }
    println!("{} commits checked against apted", small.len());
    outcome.holds_the_goals("commits", 20);
}

/// A pair checked against the exact distance.
struct Checked {
    name: String,
    trees: (Tree, Tree),
    exact: u64,
}

/// How close the reported distances came to the exact ones.
struct Outcome {
    pairs: Vec<Checked>,
    equal: usize,
    certified: usize,
    worst: f64,
    misses: Vec<String>,
}

/// Every pair up to `max_nodes` a side whose "after" parses as well as its "before" (agents'
/// edits parse; a line edit that broke the syntax is not one), scored with the default limits
/// and by the oracle: never below it, and equal to it whenever certified.
fn against_the_exact(pairs: Vec<common::Pair>, max_nodes: usize) -> Outcome {
    let mut outcome = Outcome {
        pairs: Vec::new(),
        equal: 0,
        certified: 0,
        worst: 1.0,
        misses: Vec::new(),
    };
    for pair in pairs {
        let (a, b) = (tree(pair.lang, &pair.before), tree(pair.lang, &pair.after));
        if a.len() > max_nodes || b.len() > max_nodes || b.errors() > a.errors() {
            continue;
        }
        let ours = distance(&a, &b, &Limits::default());
        let truth = distance(
            &a,
            &b,
            &Limits {
                region_work: u64::MAX / 4,
                total_work: u64::MAX / 2,
                // The oracle is Zhang–Shasha on the whole pair, nothing cleverer.
                band_work: 0,
                deadline: Instant::now() + Duration::from_secs(600),
            },
        );
        let name = pair.name;
        assert!(truth.exact, "{name}: the oracle must solve the whole pair");
        assert!(
            ours.value >= truth.value,
            "{name}: {ours:?} below {truth:?}"
        );
        assert!(
            !ours.exact || ours.value == truth.value,
            "{name}: certified {ours:?}, exact is {truth:?}"
        );
        outcome.equal += usize::from(ours.value == truth.value);
        outcome.certified += usize::from(ours.exact);
        let ratio = ours.value as f64 / truth.value.max(1) as f64;
        outcome.worst = outcome.worst.max(ratio);
        if ours.value != truth.value {
            outcome
                .misses
                .push(format!("{name}: {} vs exact {}", ours.value, truth.value));
        }
        outcome.pairs.push(Checked {
            name,
            trees: (a, b),
            exact: truth.value,
        });
    }
    outcome
}

impl Outcome {
    fn holds_the_goals(&self, what: &str, at_least: usize) {
        let Outcome {
            pairs,
            equal,
            certified,
            worst,
            misses,
        } = self;
        let checked = pairs.len();
        println!(
            "{checked} {what}: {equal} equal to the exact distance, {certified} certified, \
             worst {worst:.2}×; misses: {misses:?}"
        );
        assert!(checked >= at_least, "only {checked} {what} checked");
        assert!(
            equal * 100 >= checked * 98,
            "{equal} of {checked} equal: {misses:?}"
        );
        assert!(
            certified * 100 >= checked * 95,
            "{certified} of {checked} certified"
        );
        assert!(
            *worst <= 1.5,
            "an upper bound {worst:.2}× the exact distance: {misses:?}"
        );
    }
}
