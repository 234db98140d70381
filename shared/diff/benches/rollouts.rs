//! Diff scoring in the RL loop: one "before" scored against several agent-edited "after"
//! versions of it, as a GRPO group's rollouts are. The scorer's parse cache holds the
//! "before" (warmed first, as the group's first rollout would), so each rollout pays for its
//! "after" — re-parsed incrementally from the cached "before" — the distance and the detectors.
//! Pairs from `infra/bench/make-edit-pairs.py DIR OUT 8` (up to 8 edits per file).
//!
//! `cargo bench -p agentrl-diff --bench rollouts -- DIR`

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agentrl_diff::score::{Limits, Request, Scorer, Snapshot};

mod common;

fn main() {
    let dirs = common::dirs_from_args();
    assert!(!dirs.is_empty(), "usage: rollouts DIR (edited pairs)");
    // The edits of one file share its name up to the edit kind.
    let mut groups: BTreeMap<String, Vec<common::Pair>> = BTreeMap::new();
    for pair in dirs.iter().flat_map(|d| common::read_pairs(d)) {
        let base = pair
            .name
            .rsplit_once('-')
            .map_or(&*pair.name, |(b, _)| b)
            .to_owned();
        groups.entry(base).or_default().push(pair);
    }
    let scorer = Scorer::new(Limits::default());
    let mut times: Vec<Duration> = Vec::new();
    for (base, pairs) in &groups {
        let request = Request {
            lang: Some(pairs[0].lang),
            tests_passed: true,
            ..Request::default()
        };
        let snapshot = |text: &str| Snapshot::from([(base.clone(), text.to_owned())]);
        let before = snapshot(&pairs[0].before);
        // The group's first rollout parses "before" once; every rollout after it hits the cache.
        scorer.tree(pairs[0].lang, &pairs[0].before);
        for pair in pairs {
            let after = snapshot(&pair.after);
            let t = Instant::now();
            let report = scorer.score(&before, &after, &request).expect("scores");
            times.push(t.elapsed());
            std::hint::black_box(report);
        }
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    println!(
        "{} rollouts of {} files: per rollout P50 {:.2} ms, P95 {:.2} ms, max {:.2} ms",
        times.len(),
        groups.len(),
        at(0.5),
        at(0.95),
        at(1.0)
    );
}
