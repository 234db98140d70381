//! Where the time of a diff score goes, per phase, on a directory of real file pairs
//! (`infra/bench/fetch-diff-pairs.py` makes one): parse, normalise, detector facts, tree
//! edit distance.
//!
//! `cargo bench -p agentrl-diff --bench phases -- DIR...`

use std::time::{Duration, Instant};

use agentrl_diff::{detect, parse::parse, ted, tree::Tree};

mod common;

fn main() {
    let dirs = common::dirs_from_args();
    assert!(
        !dirs.is_empty(),
        "usage: phases DIR... (directories of pair subdirectories)"
    );
    let mut totals = [Duration::ZERO; 4];
    let mut rows = Vec::new();
    for pair in dirs.iter().flat_map(|d| common::read_pairs(d)) {
        let (lang, a, b) = (pair.lang, &pair.before, &pair.after);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut phase = [Duration::ZERO; 4];
        let mut trees = Vec::new();
        for source in [a, b] {
            let t = Instant::now();
            let syntax = parse(lang, source, deadline).unwrap();
            phase[0] += t.elapsed();
            let t = Instant::now();
            trees.push(Tree::from_syntax(lang, &syntax, source, 1_000_000).unwrap());
            phase[1] += t.elapsed();
            let t = Instant::now();
            std::hint::black_box(detect::facts(lang, "", &syntax, source));
            phase[2] += t.elapsed();
        }
        let t = Instant::now();
        let distance = ted::distance(&trees[0], &trees[1], &ted::Limits::default());
        phase[3] += t.elapsed();
        for (total, p) in totals.iter_mut().zip(phase) {
            *total += p;
        }
        rows.push((pair.name, phase, trees[0].len() + trees[1].len(), distance));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    rows.sort_by_key(|row| std::cmp::Reverse(row.1.iter().sum::<Duration>()));
    println!(
        "{:<60} {:>8} {:>8} {:>8} {:>8} {:>7} {:>6}",
        "pair (slowest first)", "parse", "tree", "facts", "ted", "nodes", "exact"
    );
    for (name, p, nodes, d) in rows.iter().take(12) {
        println!(
            "{:<60} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>7} {:>6}",
            &name[..name.len().min(60)],
            ms(p[0]),
            ms(p[1]),
            ms(p[2]),
            ms(p[3]),
            nodes,
            d.exact
        );
    }
    let exact = rows.iter().filter(|r| r.3.exact).count();
    println!(
        "totals over {} pairs ({exact} exact), ms: parse {:.1}, tree {:.1}, facts {:.1}, ted {:.1}",
        rows.len(),
        ms(totals[0]),
        ms(totals[1]),
        ms(totals[2]),
        ms(totals[3])
    );
}
