//! Where the time of a diff score goes, per phase, on a directory of real file pairs
//! (`infra/bench/fetch-diff-pairs.py` makes one): parse, normalise, detector facts, tree
//! edit distance.
//!
//! `cargo bench -p agentrl-diff --bench phases -- DIR`

use std::time::{Duration, Instant};

use agentrl_diff::{Lang, detect, parse::parse, ted, tree::Tree};

fn main() {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .expect("usage: phases DIR (a directory of pair subdirectories)");
    let mut totals = [Duration::ZERO; 4];
    let mut rows = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let files: Vec<_> = std::fs::read_dir(entry.path())
            .unwrap()
            .flatten()
            .map(|f| f.path())
            .collect();
        let find = |prefix: &str| {
            files
                .iter()
                .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
                .cloned()
        };
        let (Some(before), Some(after)) = (find("before."), find("after.")) else {
            continue;
        };
        let Some(lang) = Lang::from_path(&after.to_string_lossy()) else {
            continue;
        };
        let (a, b) = (
            std::fs::read_to_string(before).unwrap(),
            std::fs::read_to_string(after).unwrap(),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut phase = [Duration::ZERO; 4];
        let mut trees = Vec::new();
        for source in [&a, &b] {
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
        rows.push((
            entry.file_name().to_string_lossy().into_owned(),
            phase,
            trees[0].len() + trees[1].len(),
            distance,
        ));
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
