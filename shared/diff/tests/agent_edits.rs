//! The reported distance against the exact one on agent-sized edits of real files: this
//! repository's own Rust and Python sources, edited by `infra/bench/make-edit-pairs.py` (moved,
//! swapped, deleted and wrapped statements, inserted guards, renames, method-chain links
//! dropped or added). The exact distance comes from Zhang–Shasha on the whole pair (the same
//! engine given a budget that covers it). BENCHMARKS.md runs the same check on registry
//! releases and on larger files (`--bench exactness`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentrl_diff::lang::Lang;
use agentrl_diff::parse::parse;
use agentrl_diff::ted::{Limits, distance};
use agentrl_diff::tree::Tree;
use agentrl_testkit::venv_python;

// The benches' reader of pair directories; `dirs_from_args` there serves the benches only.
#[allow(dead_code)]
#[path = "../benches/common/mod.rs"]
mod common;

/// Per side: the exact oracle's table grows with the product of both sides.
const MAX_NODES: usize = 1_200;
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

    let (mut checked, mut equal, mut certified, mut worst) = (0, 0, 0, 1.0f64);
    let mut misses = Vec::new();
    let pairs = common::read_pairs(&edited);
    assert!(!pairs.is_empty(), "make-edit-pairs.py wrote no pairs");
    for pair in pairs {
        let (a, b) = (tree(pair.lang, &pair.before), tree(pair.lang, &pair.after));
        // Agents' edits parse; a line edit that broke the syntax is not one.
        if a.len() > MAX_NODES || b.len() > MAX_NODES || b.errors() > a.errors() {
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
        checked += 1;
        equal += usize::from(ours.value == truth.value);
        certified += usize::from(ours.exact);
        let ratio = ours.value as f64 / truth.value.max(1) as f64;
        worst = worst.max(ratio);
        if ours.value != truth.value {
            misses.push(format!("{name}: {} vs exact {}", ours.value, truth.value));
        }
    }
    std::fs::remove_dir_all(&work).unwrap();
    println!(
        "{checked} edits: {equal} equal to the exact distance, {certified} certified, \
         worst {worst:.2}×; misses: {misses:?}"
    );
    assert!(checked >= 60, "only {checked} edits checked");
    assert!(
        equal * 100 >= checked * 97,
        "{equal} of {checked} equal: {misses:?}"
    );
    assert!(
        certified * 100 >= checked * 90,
        "{certified} of {checked} certified"
    );
    assert!(
        worst <= 1.5,
        "an upper bound {worst:.2}× the exact distance: {misses:?}"
    );
}
