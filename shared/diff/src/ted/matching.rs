//! A second upper bound, from a global matching in the manner of GumTree (Falleri et al.):
//! identical subtrees matched top down by size wherever they moved, then containers matched
//! bottom up by the share of their matched descendants (Dice ≥ 0.5). Such a matching need not
//! be an edit mapping, so it is filtered into one — sibling order kept (a longest increasing
//! subsequence) and ancestry kept (a pair whose subtree holds a pair outside the partner's is
//! dropped) — and its cost counted. Rewrites spread over a whole file, where the anchored
//! decomposition's gap-local splits go wrong, are where this bound wins.

use std::collections::HashMap;

use super::side::Side;
use super::zhang_shasha::parents;

/// Subtrees smaller than this are matched only through their containers: single tokens
/// reappear everywhere and would match at random.
const MIN_TOP_DOWN: u32 = 2;

/// How far up from a matched descendant's partner a container's candidates are sought.
const ANCESTORS: usize = 16;

/// The bottom-up phase's work budget, per node of both trees.
const WORK_PER_NODE: u64 = 2_000;

/// An edit mapping between `a` and `b` built from a global matching: each node of `a`'s
/// partner in `b`, and the mapping's cost.
pub(super) fn mapping(a: &Side<'_>, b: &Side<'_>) -> (Vec<Option<u32>>, u64) {
    let (n, m) = (a.len(), b.len());
    let mut partner_a: Vec<Option<u32>> = vec![None; n];
    let mut partner_b: Vec<Option<u32>> = vec![None; m];
    top_down(a, b, &mut partner_a, &mut partner_b);
    bottom_up(a, b, &mut partner_a, &mut partner_b);
    let pairs = edit_mapping(a, b, &partner_a);
    let relabels = pairs
        .iter()
        .filter(|&&(x, y)| a.label(x) != b.label(y))
        .count() as u64;
    let mut guide = vec![None; n];
    for &(x, y) in &pairs {
        guide[x] = Some(y as u32);
    }
    (guide, (n + m - 2 * pairs.len()) as u64 + relabels)
}

fn top_down(
    a: &Side<'_>,
    b: &Side<'_>,
    partner_a: &mut [Option<u32>],
    partner_b: &mut [Option<u32>],
) {
    // Each hash's subtrees of b in postorder, and how many at the front are taken.
    let mut by_hash: HashMap<u64, (Vec<usize>, usize)> = HashMap::new();
    for y in 0..b.len() {
        if b.size(y) >= MIN_TOP_DOWN {
            by_hash.entry(b.hash(y)).or_default().0.push(y);
        }
    }
    let mut order: Vec<usize> = (0..a.len())
        .filter(|&x| a.size(x) >= MIN_TOP_DOWN)
        .collect();
    order.sort_by_key(|&x| (std::cmp::Reverse(a.size(x)), x));
    for x in order {
        if partner_a[x].is_some() {
            continue;
        }
        let Some(candidates) = by_hash.get_mut(&a.hash(x)) else {
            continue;
        };
        // Candidates are taken in postorder from a cursor that skips the taken ones, so a
        // file of many identical statements costs linear time, not quadratic.
        let (list, start) = candidates;
        while list.get(*start).is_some_and(|&y| partner_b[y].is_some()) {
            *start += 1;
        }
        let Some(y) = list[*start..]
            .iter()
            .copied()
            .find(|&y| partner_b[y].is_none() && a.same_subtree(x, b, y))
        else {
            continue;
        };
        // Identical subtrees have the same postorder layout: map them node by node.
        let (lx, ly) = (a.left(x), b.left(y));
        for i in 0..=(x - lx) {
            partner_a[lx + i] = Some((ly + i) as u32);
            partner_b[ly + i] = Some((lx + i) as u32);
        }
    }
}

fn bottom_up(
    a: &Side<'_>,
    b: &Side<'_>,
    partner_a: &mut [Option<u32>],
    partner_b: &mut [Option<u32>],
) {
    let mut parent_b = Vec::new();
    parents(b.sizes, &mut parent_b);
    let mut votes: HashMap<usize, u32> = HashMap::new();
    // Steps left: each container looks at its descendants and their partners' ancestors,
    // which on deep trees grows with the square of the depth. Past the budget the remaining
    // containers stay unmatched, which keeps the mapping valid, only less tight.
    let mut steps = WORK_PER_NODE * (a.len() + b.len()) as u64;
    for x in 0..a.len() {
        if partner_a[x].is_some() || a.size(x) == 1 {
            continue;
        }
        steps = steps.saturating_sub(u64::from(a.size(x)) * ANCESTORS as u64);
        if steps == 0 {
            return;
        }
        // Candidates: unmatched ancestors with x's label of the partners of x's descendants,
        // each counted once per descendant whose partner it contains.
        votes.clear();
        let mut matched = 0u32;
        for &p in partner_a[a.left(x)..x].iter().flatten() {
            matched += 1;
            // Up to the top nodes, whose parent is b.len() (the virtual root).
            let mut y = parent_b[p as usize] as usize;
            for _ in 0..ANCESTORS {
                if y == b.len() {
                    break;
                }
                if partner_b[y].is_none() && b.label(y) == a.label(x) {
                    *votes.entry(y).or_default() += 1;
                }
                y = parent_b[y] as usize;
            }
        }
        let best = votes
            .iter()
            .map(|(&y, &common)| {
                let dice = 2.0 * f64::from(common) / f64::from(a.size(x) - 1 + b.size(y) - 1);
                (dice, std::cmp::Reverse(y), common)
            })
            .max_by(|p, q| p.0.total_cmp(&q.0).then(p.1.cmp(&q.1)));
        let root = x + 1 == a.len();
        match best {
            Some((dice, std::cmp::Reverse(y), _)) if dice >= 0.5 || (root && matched > 0) => {
                partner_a[x] = Some(y as u32);
                partner_b[y] = Some(x as u32);
            }
            _ if root && partner_b[b.len() - 1].is_none() => {
                partner_a[x] = Some((b.len() - 1) as u32);
                partner_b[b.len() - 1] = Some(x as u32);
            }
            _ => {}
        }
    }
}

/// The largest part of the matching that is an edit mapping: pairs in `a`'s postorder whose
/// partners rise (a longest increasing subsequence keeps sibling order and excludes nothing
/// twice), then every pair whose subtree's pairs do not land inside its partner's subtree
/// dropped, descendants before ancestors, so one container is lost and not what it holds.
fn edit_mapping(a: &Side<'_>, b: &Side<'_>, partner_a: &[Option<u32>]) -> Vec<(usize, usize)> {
    let pairs: Vec<(usize, usize)> = partner_a
        .iter()
        .enumerate()
        .filter_map(|(x, p)| p.map(|y| (x, y as usize)))
        .collect();
    let mut kept = longest_increasing(&pairs);
    let mut alive = vec![true; kept.len()];
    for k in 0..kept.len() {
        let (x, y) = kept[k];
        let (lx, ly) = (a.left(x), b.left(y));
        // First pair inside x's subtree, then the nearest live pairs on either side of it.
        let first = kept.partition_point(|&(px, _)| px < lx);
        let inside = (first..k).find(|&i| alive[i]);
        let before = (0..first).rev().find(|&i| alive[i]);
        let contained = inside.is_none_or(|i| kept[i].1 >= ly);
        let separate = before.is_none_or(|i| kept[i].1 < ly);
        alive[k] = contained && separate;
    }
    let mut i = 0;
    kept.retain(|_| {
        i += 1;
        alive[i - 1]
    });
    kept
}

/// The longest subsequence of `pairs` (sorted by their first element) whose second elements
/// increase.
fn longest_increasing(pairs: &[(usize, usize)]) -> Vec<(usize, usize)> {
    // tails[k]: index of the pair ending the best run of length k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut previous: Vec<Option<usize>> = vec![None; pairs.len()];
    for (i, &(_, y)) in pairs.iter().enumerate() {
        let k = tails.partition_point(|&t| pairs[t].1 < y);
        previous[i] = k.checked_sub(1).map(|k| tails[k]);
        if k == tails.len() {
            tails.push(i);
        } else {
            tails[k] = i;
        }
    }
    let mut run = Vec::with_capacity(tails.len());
    let mut next = tails.last().copied();
    while let Some(i) = next {
        run.push(pairs[i]);
        next = previous[i];
    }
    run.reverse();
    run
}
