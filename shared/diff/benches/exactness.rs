//! How close the reported tree edit distance is to the exact one, on directories of file
//! pairs (`infra/bench/fetch-diff-pairs.py` for real releases, `commit-pairs.py` for single
//! commits of real git histories, `make-edit-pairs.py` for agent-sized edits of real files;
//! a directory's name says which: "edit", "commit", else releases). The exact distance comes
//! from the same engine with a Zhang–Shasha budget large enough to solve the whole pair (up to
//! `--oracle-cells`, default 6e9 table cells), which is exact by construction; pairs past that
//! budget are counted apart. `--band-cells` sets our banded certificate's budget (default: the
//! library's). The oracle takes minutes per large pair, so `--oracle-cache FILE` keeps its
//! exact distances across runs, keyed by a hash of both normalised trees: a change to the
//! normalisation gives new keys, never a stale distance.
//!
//! `cargo bench -p agentrl-diff --bench exactness -- [--max-nodes N] [--oracle-cells C]
//! [--band-cells C] [--oracle-cache FILE] DIR...`

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentrl_diff::{parse::parse, ted, tree::Tree};

mod common;

/// The value after `name` on the command line.
fn value(name: &str) -> Option<String> {
    let mut args = std::env::args().skip_while(|a| a != name);
    args.next()?;
    args.next()
}

fn flag(name: &str, default: u64) -> u64 {
    value(name).map_or(default, |v| v.parse::<f64>().expect("a number") as u64)
}

/// FNV-1a over both trees in bracket notation: stable across runs and toolchains.
fn trees_key(a: &Tree, b: &Tree) -> u64 {
    let text = format!("{}\n{}", a.to_bracket(), b.to_bracket());
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, byte| {
        (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What the oracle found in earlier runs, one `key distance` line each (`key -`: past its
/// budget).
struct OracleCache {
    path: Option<PathBuf>,
    known: HashMap<u64, Option<u64>>,
}

impl OracleCache {
    fn open() -> Self {
        let path = value("--oracle-cache").map(PathBuf::from);
        let known = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let (key, value) = line.split_once(' ')?;
                Some((key.parse().ok()?, value.parse().ok()))
            })
            .collect();
        Self { path, known }
    }

    fn remember(&mut self, key: u64, distance: Option<u64>) {
        self.known.insert(key, distance);
        if let Some(path) = &self.path {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let distance = distance.map_or("-".to_owned(), |d| d.to_string());
            writeln!(file, "{key} {distance}").expect("the oracle cache is writable");
        }
    }
}

#[derive(Default)]
struct Tally {
    pairs: usize,
    equal: usize,
    certified: usize,
    worst: f64,
}

fn main() {
    let max_nodes = flag("--max-nodes", 5_000) as usize;
    let oracle_cells = flag("--oracle-cells", 6e9 as u64);
    let limits = || ted::Limits {
        band_work: flag("--band-cells", ted::Limits::default().band_work),
        ..ted::Limits::default()
    };
    let mut by_kind: BTreeMap<String, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    let (mut skipped_size, mut no_oracle) = (0, 0);
    let mut times = Vec::new();
    let mut cache = OracleCache::open();
    for dir in common::dirs_from_args() {
        for pair in common::read_pairs(&dir) {
            let deadline = Instant::now() + Duration::from_secs(10);
            let tree = |source: &str| {
                let syntax = parse(pair.lang, source, deadline).unwrap();
                Tree::from_syntax(pair.lang, &syntax, source, 1_000_000).unwrap()
            };
            let (a, b) = (tree(&pair.before), tree(&pair.after));
            if a.len() > max_nodes || b.len() > max_nodes {
                skipped_size += 1;
                continue;
            }
            let t = Instant::now();
            let ours = ted::distance(&a, &b, &limits());
            times.push(t.elapsed());
            let key = trees_key(&a, &b);
            let known = cache.known.get(&key).copied();
            let truth = known.unwrap_or_else(|| {
                let truth = ted::distance(
                    &a,
                    &b,
                    &ted::Limits {
                        region_work: oracle_cells,
                        total_work: oracle_cells.saturating_mul(2),
                        // Zhang–Shasha on the whole pair, nothing cleverer.
                        band_work: 0,
                        deadline: Instant::now() + Duration::from_secs(3_600),
                    },
                );
                let truth = truth.exact.then_some(truth.value);
                cache.remember(key, truth);
                truth
            });
            let Some(truth) = truth else {
                no_oracle += 1;
                continue;
            };
            assert!(
                ours.value >= truth,
                "{}: below the exact distance",
                pair.name
            );
            assert!(
                !ours.exact || ours.value == truth,
                "{}: certified but wrong",
                pair.name
            );
            // Directories name their corpus: edits (by edit kind), commits or releases.
            let corpus = dir.to_string_lossy();
            let mut kind = match pair.name.rsplit_once('-') {
                Some((_, edit)) if corpus.contains("edit") => edit.to_owned(),
                _ if corpus.contains("commit") => format!("commit {}", pair.lang.name()),
                _ => format!("release {}", pair.lang.name()),
            };
            // A line-based edit can leave code that no longer parses (a guard inside an
            // interface, a swap across a docstring's end): counted apart, agents' edits parse.
            if b.errors() > a.errors() {
                kind.push_str(", new parse errors");
            }
            let ratio = ours.value as f64 / truth.max(1) as f64;
            let tally = by_kind.entry(kind).or_default();
            tally.pairs += 1;
            tally.equal += usize::from(ours.value == truth);
            tally.certified += usize::from(ours.exact);
            tally.worst = tally.worst.max(ratio);
            if ours.value != truth {
                misses.push((ratio, pair.name, a.len(), b.len(), ours.value, truth));
            }
        }
    }
    let total = by_kind.values().fold(Tally::default(), |mut t, k| {
        t.pairs += k.pairs;
        t.equal += k.equal;
        t.certified += k.certified;
        t.worst = t.worst.max(k.worst);
        t
    });
    println!("| pairs | n | equal to exact | certified exact | worst upper bound / exact |");
    println!("|---|---|---|---|---|");
    for (kind, t) in by_kind.iter().chain([(&"all".to_owned(), &total)]) {
        println!(
            "| {kind} | {} | {} ({:.1}%) | {} ({:.1}%) | {:.2}× |",
            t.pairs,
            t.equal,
            100.0 * t.equal as f64 / t.pairs.max(1) as f64,
            t.certified,
            100.0 * t.certified as f64 / t.pairs.max(1) as f64,
            t.worst
        );
    }
    times.sort();
    let p95 = times
        .get((times.len() * 95 / 100).min(times.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default();
    println!(
        "skipped: {skipped_size} over {max_nodes} nodes a side, {no_oracle} past the oracle's budget; \
         distance P95 {:.2} ms",
        p95.as_secs_f64() * 1e3
    );
    misses.sort_by(|x, y| y.0.total_cmp(&x.0));
    for (ratio, name, n1, n2, ours, truth) in misses.iter().take(30) {
        println!("  {ratio:.2}× {name} ({n1}/{n2} nodes): {ours} vs exact {truth}");
    }
}
