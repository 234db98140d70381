//! One tree of a pair as the upper-bound searches see it: labels in the shared id space,
//! postorder subtree sizes and subtree hashes, with the queries the gap rules ask of it.

use std::collections::HashMap;

use super::zhang_shasha::Forest;

/// One tree: labels in the shared id space, subtree sizes, and subtree hashes.
#[derive(Debug)]
pub(super) struct Side<'a> {
    pub labels: &'a [u32],
    pub sizes: &'a [u32],
    pub hashes: Vec<u64>,
}

impl<'a> Side<'a> {
    pub fn new(labels: &'a [u32], sizes: &'a [u32]) -> Side<'a> {
        let mut hashes = vec![0; labels.len()];
        // Finished subtrees not yet claimed by a parent, in ascending postorder.
        let mut frontier: Vec<usize> = Vec::new();
        for i in 0..labels.len() {
            let first = frontier.partition_point(|&r| r < left(sizes, i));
            let mut hash = (u64::from(labels[i]) + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93);
            for &child in &frontier[first..] {
                hash = (hash.rotate_left(23) ^ hashes[child]).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            }
            frontier.truncate(first);
            frontier.push(i);
            hashes[i] = finish(hash ^ (u64::from(sizes[i]) << 32));
        }
        Side {
            labels,
            sizes,
            hashes,
        }
    }

    pub fn left(&self, node: usize) -> usize {
        left(self.sizes, node)
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn label(&self, node: usize) -> u32 {
        self.labels[node]
    }

    pub fn size(&self, node: usize) -> u32 {
        self.sizes[node]
    }

    pub fn hash(&self, node: usize) -> u64 {
        self.hashes[node]
    }

    pub fn forest(&self, span: Span) -> Forest<'a> {
        let range = span.start as usize..span.end as usize;
        Forest {
            labels: &self.labels[range.clone()],
            sizes: &self.sizes[range],
        }
    }

    /// The roots of a forest, left to right.
    pub fn roots(&self, span: Span, out: &mut Vec<usize>) {
        out.clear();
        let mut next = span.end as usize;
        while next > span.start as usize {
            out.push(next - 1);
            next = self.left(next - 1);
        }
        out.reverse();
    }

    /// The subtree of `node` as a one-tree forest.
    pub fn tree(&self, node: usize) -> Span {
        Span {
            start: self.left(node) as u32,
            end: node as u32 + 1,
        }
    }

    pub fn children(&self, node: usize) -> Span {
        Span {
            start: self.left(node) as u32,
            end: node as u32,
        }
    }

    /// The forest made of consecutive roots (indices into `roots`) `from..to`.
    pub fn span_of(&self, roots: &[usize], from: usize, to: usize) -> Span {
        if from == to {
            return Span { start: 0, end: 0 };
        }
        Span {
            start: self.left(roots[from]) as u32,
            end: roots[to - 1] as u32 + 1,
        }
    }

    /// Whether subtree `x` here equals subtree `y` of `other`; the hash alone may collide.
    pub fn same_subtree(&self, x: usize, other: &Side<'_>, y: usize) -> bool {
        if self.hashes[x] != other.hashes[y] || self.sizes[x] != other.sizes[y] {
            return false;
        }
        let (lx, ly) = (self.left(x), other.left(y));
        self.labels[lx..=x] == other.labels[ly..=y] && self.sizes[lx..=x] == other.sizes[ly..=y]
    }
}

/// The proper descendants of `node` down to `depth` levels below it.
pub fn descendants(side: &Side<'_>, node: usize, depth: u32, out: &mut Vec<usize>) {
    if depth == 0 {
        return;
    }
    let mut children = Vec::new();
    side.roots(side.children(node), &mut children);
    for child in children {
        out.push(child);
        descendants(side, child, depth - 1, out);
    }
}

/// How often each leaf label occurs under `node`.
pub fn leaf_counts(side: &Side<'_>, node: usize) -> HashMap<u32, u32> {
    let mut counts = HashMap::new();
    for d in side.left(node)..=node {
        if side.sizes[d] == 1 {
            *counts.entry(side.labels[d]).or_default() += 1;
        }
    }
    counts
}

/// How many leaf tokens two leaf multisets share.
pub fn shared_leaves(a: &HashMap<u32, u32>, b: &HashMap<u32, u32>) -> u64 {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small
        .iter()
        .map(|(label, &n)| u64::from(n.min(large.get(label).copied().unwrap_or(0))))
        .sum()
}

/// The total size of the trees of `a` that reappear whole (same hash) among the trees of `b`,
/// each tree of `b` used once.
pub fn shared_mass(sa: &Side<'_>, a: &[usize], sb: &Side<'_>, b: &[usize]) -> u64 {
    let mut available: HashMap<u64, u32> = HashMap::with_capacity(b.len());
    for &y in b {
        *available.entry(sb.hashes[y]).or_default() += 1;
    }
    a.iter()
        .filter(|&&x| {
            available.get_mut(&sa.hashes[x]).is_some_and(|n| {
                let free = *n > 0;
                *n = n.saturating_sub(1);
                free
            })
        })
        .map(|&x| u64::from(sa.sizes[x]))
        .sum()
}

fn left(sizes: &[u32], node: usize) -> usize {
    node + 1 - sizes[node] as usize
}

/// The splitmix64 finaliser: spreads the bits so sibling sequences hash apart.
fn finish(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// A forest as a half-open postorder range.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn len(self) -> u64 {
        u64::from(self.end - self.start)
    }

    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
}
