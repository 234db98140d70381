//! An upper bound for trees too large for one Zhang–Shasha run: build a valid edit mapping top
//! down. Matched nodes align their children on subtree hashes; identical children cost nothing,
//! and each gap between them is solved exactly when it fits the budget, else split further by
//! the rules of [`Engine::gap`] (a tree nested in the other, a wrapper gained or lost, a root
//! adopting the other side's roots, the pairs a global matching proposes, roots paired by
//! position or by similarity), their children aligned again. A deletion and an insertion a
//! few gaps apart are tried together as one window (a moved statement). A large gap that fits
//! the budget is split first anyway, and solved exactly afterwards only if a lower bound shows
//! the split missed the optimum, so the result is the same as solving it at once.
//! Every step maps roots to roots in order inside already matched parents, so the pieces
//! compose into one valid mapping and the summed cost never undercuts the true distance.

use std::collections::HashMap;
use std::time::Instant;

use similar::{Algorithm, DiffOp, capture_diff_slices_deadline};

use super::Limits;
use super::bounds;
use super::side::{Side, Span, descendants, leaf_counts, shared_leaves, shared_mass};
use super::zhang_shasha::ZhangShasha;

/// How often (in tasks) the deadline is read: a clock read costs more than a small task.
const DEADLINE_STRIDE: u32 = 64;

/// Gaps that would take more than this fraction of `region_work` are split first, and solved
/// exactly only when a lower bound shows the split was not optimal. Most edits are local, so the
/// split usually finds the same cost far sooner.
const DEFER: u64 = 64;

/// How deep under a node a look-alike of the other side's node is searched for.
const WRAPPER_DEPTH: u32 = 3;

/// Gaps with at most this many root pairs choose which roots to map by similarity.
const SIMILARITY_PAIRS: usize = 256;

/// How many gaps ahead a deletion looks for the insertion it may pair with (a moved statement).
const WINDOW_GAPS: usize = 8;

#[derive(Debug, Clone, Copy)]
enum Task {
    /// Children of a matched pair: anchor identical subtrees, the rest become gaps.
    Align(Span, Span),
    /// Two non-empty forests with no anchors between them.
    Gap(Span, Span),
    /// Runs once every task a gap split into is done (the stack is LIFO): the gap's forests and
    /// the total cost before it. Replaces the split's cost with the exact one unless a lower
    /// bound shows the split already optimal.
    Settle(Span, Span, u64),
}

/// What [`Engine::try_exact`] did with a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exact {
    Solved,
    /// Within budget, but splitting first is likely much cheaper and can be checked.
    Deferred,
    OverBudget,
}

/// Builds a valid mapping between two non-empty trees.
pub(super) struct Engine<'s, 'a> {
    a: &'s Side<'a>,
    b: &'s Side<'a>,
    limits: &'s Limits,
    zs: ZhangShasha,
    /// Zhang–Shasha cells used so far, against `limits.total_work`.
    zs_spent: u64,
    timed_out: bool,
    tasks: Vec<Task>,
    roots_a: Vec<usize>,
    roots_b: Vec<usize>,
    keys_a: Vec<u64>,
    keys_b: Vec<u64>,
    gaps: Vec<[usize; 4]>,
    guide: Option<&'s [Option<u32>]>,
    cost: u64,
    exact: bool,
}

impl<'s, 'a> Engine<'s, 'a> {
    pub fn new(a: &'s Side<'a>, b: &'s Side<'a>, limits: &'s Limits) -> Engine<'s, 'a> {
        Engine {
            a,
            b,
            limits,
            zs: ZhangShasha::default(),
            zs_spent: 0,
            timed_out: false,
            tasks: Vec::new(),
            roots_a: Vec::new(),
            roots_b: Vec::new(),
            keys_a: Vec::new(),
            keys_b: Vec::new(),
            gaps: Vec::new(),
            guide: None,
            cost: 0,
            exact: false,
        }
    }

    /// Splits gaps too large for Zhang–Shasha where `guide` (a's node → its partner in b, an
    /// edit mapping) pairs their roots, before any local rule.
    pub fn guided_by(mut self, guide: &'s [Option<u32>]) -> Self {
        self.guide = Some(guide);
        self
    }

    /// Zhang–Shasha cells spent so far, against `limits.total_work`.
    pub fn spent(&self) -> u64 {
        self.zs_spent
    }

    /// The cost of a valid mapping, and whether it is proven to be the exact distance (the
    /// whole pair was solved by Zhang–Shasha or certified by a lower bound).
    pub fn decompose(&mut self) -> (u64, bool) {
        let whole_a = Span {
            start: 0,
            end: self.a.labels.len() as u32,
        };
        let whole_b = Span {
            start: 0,
            end: self.b.labels.len() as u32,
        };
        self.tasks.push(Task::Gap(whole_a, whole_b));
        self.run();
        (self.cost, self.exact)
    }

    fn run(&mut self) {
        let mut count = 0u32;
        while let Some(task) = self.tasks.pop() {
            count = count.wrapping_add(1);
            if count.is_multiple_of(DEADLINE_STRIDE) && !self.timed_out {
                self.timed_out = Instant::now() >= self.limits.deadline;
            }
            match task {
                // Out of time: deleting one side and inserting the other is always valid, and
                // a split's cost stands as it is.
                Task::Align(a, b) | Task::Gap(a, b) if self.timed_out => {
                    self.cost += a.len() + b.len();
                }
                Task::Settle(..) if self.timed_out => {}
                Task::Align(a, b) => self.align(a, b),
                Task::Gap(a, b) => self.gap(a, b),
                Task::Settle(a, b, before) => self.settle(a, b, before),
            }
        }
    }

    fn deadline(&self) -> Option<Instant> {
        Some(self.limits.deadline)
    }

    /// A gap's forests, or its cost right away when one side is empty.
    fn push_gap(&mut self, a: Span, b: Span) {
        if a.is_empty() || b.is_empty() {
            self.cost += a.len() + b.len();
        } else {
            self.tasks.push(Task::Gap(a, b));
        }
    }

    fn align(&mut self, a: Span, b: Span) {
        let (mut ra, mut rb) = (
            std::mem::take(&mut self.roots_a),
            std::mem::take(&mut self.roots_b),
        );
        self.a.roots(a, &mut ra);
        self.b.roots(b, &mut rb);
        let same = |x: usize, y: usize| self.a.same_subtree(ra[x], self.b, rb[y]);
        let (mut lo_a, mut lo_b, mut hi_a, mut hi_b) = (0, 0, ra.len(), rb.len());
        while lo_a < hi_a && lo_b < hi_b && same(lo_a, lo_b) {
            lo_a += 1;
            lo_b += 1;
        }
        while lo_a < hi_a && lo_b < hi_b && same(hi_a - 1, hi_b - 1) {
            hi_a -= 1;
            hi_b -= 1;
        }
        let mut gaps = std::mem::take(&mut self.gaps);
        gaps.clear();
        let (mut gap_a, mut gap_b) = (lo_a, lo_b);
        // One root or none per side leaves nothing to anchor: skip the sequence diff.
        if hi_a - lo_a > 1 || hi_b - lo_b > 1 {
            self.keys_a.clear();
            self.keys_a
                .extend(ra[lo_a..hi_a].iter().map(|&r| self.a.hashes[r]));
            self.keys_b.clear();
            self.keys_b
                .extend(rb[lo_b..hi_b].iter().map(|&r| self.b.hashes[r]));
            let ops = capture_diff_slices_deadline(
                Algorithm::Myers,
                &self.keys_a,
                &self.keys_b,
                self.deadline(),
            );
            for op in ops {
                if let DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                } = op
                {
                    for t in 0..len {
                        let (x, y) = (lo_a + old_index + t, lo_b + new_index + t);
                        // A hash collision is no anchor: the pair stays inside the gap.
                        if self.a.same_subtree(ra[x], self.b, rb[y]) {
                            gaps.push([gap_a, x, gap_b, y]);
                            (gap_a, gap_b) = (x + 1, y + 1);
                        }
                    }
                }
            }
        }
        gaps.push([gap_a, hi_a, gap_b, hi_b]);
        self.solve_gaps(&ra, &rb, &gaps);
        self.gaps = gaps;
        (self.roots_a, self.roots_b) = (ra, rb);
    }

    /// Queues the gaps between anchors (root index ranges `[from_a, to_a, from_b, to_b]`). A
    /// gap with one empty side is a deletion or an insertion; when a later gap has the other
    /// side, the window from one to the other (anchors between included) is solved exactly if
    /// it fits: that finds a moved or swapped statement relabelled instead of deleted and
    /// re-inserted, and never costs more than the anchors, which are one mapping of the window.
    fn solve_gaps(&mut self, ra: &[usize], rb: &[usize], gaps: &[[usize; 4]]) {
        let mut j = 0;
        while j < gaps.len() {
            let [from_a, to_a, from_b, to_b] = gaps[j];
            let (empty_a, empty_b) = (from_a == to_a, from_b == to_b);
            if empty_a != empty_b {
                let partner = (j + 1..gaps.len().min(j + 1 + WINDOW_GAPS)).find(|&l| {
                    let [fa, ta, fb, tb] = gaps[l];
                    if empty_b { fb < tb } else { fa < ta }
                });
                if let Some(l) = partner {
                    let window = (
                        self.a.span_of(ra, from_a, gaps[l][1]),
                        self.b.span_of(rb, from_b, gaps[l][3]),
                    );
                    if self.try_exact(window.0, window.1, 1) == Exact::Solved {
                        j = l + 1;
                        continue;
                    }
                }
            }
            self.push_gap(
                self.a.span_of(ra, from_a, to_a),
                self.b.span_of(rb, from_b, to_b),
            );
            j += 1;
        }
    }

    /// A gap: Zhang–Shasha when it fits, else the first rule that applies splits it.
    fn gap(&mut self, a: Span, b: Span) {
        match self.try_exact(a, b, DEFER) {
            Exact::Solved => {
                self.exact |= self.is_whole(a, b);
                return;
            }
            Exact::Deferred => self.tasks.push(Task::Settle(a, b, self.cost)),
            Exact::OverBudget => {}
        }
        let (mut ra, mut rb) = (
            std::mem::take(&mut self.roots_a),
            std::mem::take(&mut self.roots_b),
        );
        self.a.roots(a, &mut ra);
        self.b.roots(b, &mut rb);
        if let ([x], [y]) = (ra.as_slice(), rb.as_slice())
            && let Some(cost) = self.nested(*x, *y)
        {
            self.cost += cost;
        } else if let ([x], [y]) = (ra.as_slice(), rb.as_slice())
            && let Some((outer, inner)) = self.wrapped(*x, *y)
        {
            self.cost += outer;
            self.tasks.push(Task::Gap(inner.0, inner.1));
        } else if rb.len() == 1 && ra.len() > 1 && self.adopts(self.b, rb[0], self.a, &ra) {
            // `rb[0]` is new and holds the old roots: insert it, align them with its children.
            self.cost += 1;
            self.tasks.push(Task::Align(a, self.b.children(rb[0])));
        } else if ra.len() == 1 && rb.len() > 1 && self.adopts(self.a, ra[0], self.b, &rb) {
            self.cost += 1;
            self.tasks.push(Task::Align(self.a.children(ra[0]), b));
        } else if let Some(pairs) = self.guided(&ra, &rb) {
            self.map_pairs(&ra, &rb, pairs);
        } else if ra.len() == rb.len() {
            self.pair(&ra, &rb);
        } else {
            self.pair_by_label(&ra, &rb);
        }
        (self.roots_a, self.roots_b) = (ra, rb);
    }

    /// When one tree equals a subtree of the other, the cost of deleting everything else
    /// around it (`|x| - |y|`). That is the exact distance: no mapping costs less than the
    /// difference in size. Chains and wrappers take this path: a link dropped from a method
    /// chain, a statement wrapped in a guard.
    fn nested(&self, x: usize, y: usize) -> Option<u64> {
        let (big, small, x_is_big) = match self.a.sizes[x].cmp(&self.b.sizes[y]) {
            std::cmp::Ordering::Greater => (self.a, self.b, true),
            std::cmp::Ordering::Less => (self.b, self.a, false),
            std::cmp::Ordering::Equal => return None,
        };
        let (outer, inner) = if x_is_big { (x, y) } else { (y, x) };
        (big.left(outer)..outer)
            .any(|d| big.same_subtree(d, small, inner))
            .then(|| u64::from(big.sizes[outer] - small.sizes[inner]))
    }

    /// When `x` and `y` differ in kind and one holds, a few levels down, a node of the other's
    /// kind sharing at least half of its leaf tokens: a statement that gained or lost a
    /// wrapper (`if`, a decorator, a block) while it changed. The wrapper's other nodes cost
    /// one each and the pair of look-alikes is solved as its own gap.
    fn wrapped(&self, x: usize, y: usize) -> Option<(u64, (Span, Span))> {
        if self.a.labels[x] == self.b.labels[y] {
            return None;
        }
        let inside = |outer: &Side<'_>, o: usize, inner: &Side<'_>, i: usize| {
            let mut found = Vec::new();
            descendants(outer, o, WRAPPER_DEPTH, &mut found);
            let leaves = leaf_counts(inner, i);
            let total: u32 = leaves.values().sum();
            found
                .into_iter()
                .filter(|&d| outer.labels[d] == inner.labels[i])
                .map(|d| (shared_leaves(&leaf_counts(outer, d), &leaves), d))
                .filter(|&(shared, _)| 2 * shared >= u64::from(total))
                .max()
                .map(|(_, d)| d)
        };
        if let Some(d) = inside(self.b, y, self.a, x) {
            let outer = u64::from(self.b.sizes[y] - self.b.sizes[d]);
            return Some((outer, (self.a.tree(x), self.b.tree(d))));
        }
        inside(self.a, x, self.b, y).map(|d| {
            let outer = u64::from(self.a.sizes[x] - self.a.sizes[d]);
            (outer, (self.a.tree(d), self.b.tree(y)))
        })
    }

    /// Whether the single root `y` (of side `ys`) is better inserted around `roots` (of side
    /// `xs`) than mapped to one of them: more of `roots` reappear whole among `y`'s children
    /// than among the children of any root `y` could be paired with (same label). Parsers do
    /// this when a statement is wrapped, or when an error node swallows the rest of a file.
    fn adopts(&self, ys: &Side<'_>, y: usize, xs: &Side<'_>, roots: &[usize]) -> bool {
        let mut children = Vec::new();
        ys.roots(ys.children(y), &mut children);
        let adopted = shared_mass(xs, roots, ys, &children);
        if adopted == 0 {
            return false;
        }
        let mut inner = Vec::new();
        roots
            .iter()
            .filter(|&&x| xs.labels[x] == ys.labels[y])
            .all(|&x| {
                xs.roots(xs.children(x), &mut inner);
                shared_mass(xs, &inner, ys, &children) < adopted
            })
    }

    fn settle(&mut self, a: Span, b: Span, before: u64) {
        let split = self.cost - before;
        let (fa, fb) = (self.a.forest(a), self.b.forest(b));
        let lower = bounds::lower_bound(fa, fb, split, self.limits.deadline);
        let exact = lower == split || {
            let cost = self.cost;
            self.cost = before;
            let solved = self.try_exact(a, b, 1) == Exact::Solved;
            if !solved {
                // The budget ran out meanwhile: the split stands.
                self.cost = cost;
            }
            solved
        };
        self.exact |= exact && self.is_whole(a, b);
    }

    fn is_whole(&self, a: Span, b: Span) -> bool {
        a.len() == self.a.labels.len() as u64 && b.len() == self.b.labels.len() as u64
    }

    /// Maps roots to roots in order and descends into their children.
    fn pair(&mut self, ra: &[usize], rb: &[usize]) {
        for (&x, &y) in ra.iter().zip(rb) {
            self.cost += u64::from(self.a.labels[x] != self.b.labels[y]);
            self.tasks
                .push(Task::Align(self.a.children(x), self.b.children(y)));
        }
    }

    /// Maps equal-labelled roots in order — the most similar ones when the gap is small enough
    /// to compare every pair, else the longest run by label; the roots between two mapped
    /// pairs form smaller gaps.
    fn pair_by_label(&mut self, ra: &[usize], rb: &[usize]) {
        let pairs = if ra.len() * rb.len() <= SIMILARITY_PAIRS {
            self.most_similar_pairs(ra, rb)
        } else {
            self.longest_label_run(ra, rb)
        };
        if pairs.is_empty() {
            // No label in common: pair from the left, which never costs more than deleting
            // and inserting whole subtrees.
            let common = ra.len().min(rb.len());
            self.pair(&ra[..common], &rb[..common]);
            let rest = (
                self.a.span_of(ra, common, ra.len()),
                self.b.span_of(rb, common, rb.len()),
            );
            self.cost += rest.0.len() + rest.1.len();
            return;
        }
        self.map_pairs(ra, rb, pairs);
    }

    /// Maps the roots paired by index (in order on both sides); the roots between two pairs
    /// form smaller gaps.
    fn map_pairs(&mut self, ra: &[usize], rb: &[usize], pairs: Vec<(usize, usize)>) {
        let (mut from_a, mut from_b) = (0, 0);
        for (i, j) in pairs {
            self.push_gap(self.a.span_of(ra, from_a, i), self.b.span_of(rb, from_b, j));
            self.pair(&ra[i..=i], &rb[j..=j]);
            (from_a, from_b) = (i + 1, j + 1);
        }
        self.push_gap(
            self.a.span_of(ra, from_a, ra.len()),
            self.b.span_of(rb, from_b, rb.len()),
        );
    }

    /// The roots the global matching (when there is one) maps to each other, in order.
    fn guided(&self, ra: &[usize], rb: &[usize]) -> Option<Vec<(usize, usize)>> {
        let guide = self.guide?;
        let mut pairs = Vec::new();
        for (i, &x) in ra.iter().enumerate() {
            let Some(y) = guide[x] else { continue };
            if let Ok(j) = rb.binary_search(&(y as usize))
                && pairs.last().is_none_or(|&(_, last)| last < j)
            {
                pairs.push((i, j));
            }
        }
        (!pairs.is_empty()).then_some(pairs)
    }

    /// Index pairs of equal-labelled roots in order, from a sequence diff of the labels.
    fn longest_label_run(&mut self, ra: &[usize], rb: &[usize]) -> Vec<(usize, usize)> {
        self.keys_a.clear();
        self.keys_a
            .extend(ra.iter().map(|&r| u64::from(self.a.labels[r])));
        self.keys_b.clear();
        self.keys_b
            .extend(rb.iter().map(|&r| u64::from(self.b.labels[r])));
        capture_diff_slices_deadline(
            Algorithm::Myers,
            &self.keys_a,
            &self.keys_b,
            self.deadline(),
        )
        .into_iter()
        .filter(|op| matches!(op, DiffOp::Equal { .. }))
        .flat_map(|op| op.old_range().zip(op.new_range()))
        .collect()
    }

    /// Index pairs of equal-labelled roots in order that share the most leaf tokens
    /// (Needleman–Wunsch over every pair): of two `export` statements, the one holding the
    /// same function, not the first one.
    fn most_similar_pairs(&self, ra: &[usize], rb: &[usize]) -> Vec<(usize, usize)> {
        let leaves_a: Vec<HashMap<u32, u32>> = ra.iter().map(|&x| leaf_counts(self.a, x)).collect();
        let leaves_b: Vec<HashMap<u32, u32>> = rb.iter().map(|&y| leaf_counts(self.b, y)).collect();
        let (k, m) = (ra.len(), rb.len());
        let score = |i: usize, j: usize| -> Option<u64> {
            let (x, y) = (ra[i], rb[j]);
            (self.a.labels[x] == self.b.labels[y])
                .then(|| 1 + shared_leaves(&leaves_a[i], &leaves_b[j]))
        };
        // best[i][j]: the best total over the first i roots of a and j of b.
        let mut best = vec![0u64; (k + 1) * (m + 1)];
        for i in 1..=k {
            for j in 1..=m {
                let diagonal =
                    score(i - 1, j - 1).map_or(0, |s| best[(i - 1) * (m + 1) + j - 1] + s);
                best[i * (m + 1) + j] = diagonal
                    .max(best[(i - 1) * (m + 1) + j])
                    .max(best[i * (m + 1) + j - 1]);
            }
        }
        let mut pairs = Vec::new();
        let (mut i, mut j) = (k, m);
        while i > 0 && j > 0 {
            let here = best[i * (m + 1) + j];
            if here == best[(i - 1) * (m + 1) + j] {
                i -= 1;
            } else if here == best[i * (m + 1) + j - 1] {
                j -= 1;
            } else {
                pairs.push((i - 1, j - 1));
                i -= 1;
                j -= 1;
            }
        }
        pairs.reverse();
        pairs
    }

    /// Runs Zhang–Shasha on the pair when it fits the region and the remaining total budget,
    /// adding the exact cost; defers instead when it would take more than `1 / defer` of the
    /// region.
    fn try_exact(&mut self, a: Span, b: Span, defer: u64) -> Exact {
        let budget = self
            .limits
            .region_work
            .min(self.limits.total_work.saturating_sub(self.zs_spent));
        // Table values must fit u32; work is at least the node count, so sizes reject early.
        if a.len() + b.len() >= u64::from(u32::MAX) || a.len().saturating_mul(b.len()) > budget {
            return Exact::OverBudget;
        }
        let (fa, fb) = (self.a.forest(a), self.b.forest(b));
        let Some((cells, paths)) = self.zs.plan(fa.sizes, fb.sizes, budget) else {
            return Exact::OverBudget;
        };
        if cells > self.limits.region_work / defer {
            return Exact::Deferred;
        }
        self.zs_spent += cells;
        self.cost += self.zs.distance_along(fa, fb, paths);
        Exact::Solved
    }
}
