//! Exact Zhang–Shasha edit distance between two forests stored in postorder.
//!
//! A forest is a postorder slice holding one or more consecutive sibling trees, so every node's
//! subtree `i + 1 - sizes[i] ..= i` lies inside the slice. The whole forest gets a virtual root:
//! its pass covers every node, and the last table cell is the forest distance.
//!
//! Zhang–Shasha decomposes along leftmost paths; run on both forests mirrored (every sibling
//! order reversed) it decomposes along the rightmost ones. Mirroring keeps a mapping valid and
//! its cost unchanged, so the distance is the same, but the work differs: a code tree's largest
//! child is usually its last (a function's body after its name and parameters, a block's
//! statements after its opening brace), and each such child is a keyroot of its own on the
//! left but lies on its parent's path on the right. [`ZhangShasha::plan`] picks the cheaper.

/// A postorder forest: labels (already in a shared id space) and subtree sizes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Forest<'a> {
    pub labels: &'a [u32],
    pub sizes: &'a [u32],
}

impl Forest<'_> {
    /// One past the largest label of this forest and `other`: labels index tables below it.
    pub fn label_bound(self, other: Forest<'_>) -> usize {
        let labels = self.labels.iter().chain(other.labels);
        labels.max().map_or(0, |&l| l as usize + 1)
    }
}

/// The paths a run decomposes along.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Paths {
    Leftmost,
    /// Leftmost paths of both forests mirrored.
    Rightmost,
}

/// Reusable tables, so repeated regions allocate only when they outgrow the previous one.
#[derive(Debug, Default)]
pub(super) struct ZhangShasha {
    /// Both forests mirrored, for runs along rightmost paths.
    mirrored: [Mirrored; 2],
    seen: Vec<bool>,
    /// Leftmost leaves and keyroots of both forests.
    roots_a: Keyroots,
    roots_b: Keyroots,
    tree: Vec<u32>,
    forest: Vec<u32>,
    /// Per label, its last position in a so far; b's leaves.
    last_at: Vec<Option<u32>>,
    leaves: Vec<usize>,
}

impl ZhangShasha {
    /// Σ over keyroots (the virtual root included) of subtree size: one run on forests `a` and
    /// `b` fills `work(a) * work(b)` cells. Stops counting once past `cap`.
    pub fn work(&mut self, sizes: &[u32], cap: u64) -> u64 {
        let n = sizes.len();
        if n == 0 {
            return 0;
        }
        self.seen.clear();
        self.seen.resize(n, false);
        // Leftmost leaf 0 belongs to the virtual root, which covers all n nodes.
        self.seen[0] = true;
        let mut total = n as u64;
        // Scanning downwards, the first node met for a leftmost leaf is the highest one: a keyroot.
        for i in (0..n).rev() {
            let left = i + 1 - sizes[i] as usize;
            if !self.seen[left] {
                self.seen[left] = true;
                total += u64::from(sizes[i]);
                if total > cap {
                    break;
                }
            }
        }
        total
    }

    /// [`ZhangShasha::work`] along rightmost paths: a node is a keyroot there unless it is
    /// its parent's last child, and in postorder node `i` is the last child of `i + 1`
    /// exactly when `i + 1` has children.
    pub fn work_right(sizes: &[u32], cap: u64) -> u64 {
        let mut total = sizes.len() as u64;
        for pair in sizes.windows(2) {
            if pair[1] == 1 {
                total += u64::from(pair[0]);
                if total > cap {
                    break;
                }
            }
        }
        total
    }

    /// The cells of the cheaper run on `a` and `b` and its paths, or `None` when both take
    /// more than `budget`.
    pub fn plan(&mut self, a: &[u32], b: &[u32], budget: u64) -> Option<(u64, Paths)> {
        let cheapest = |work_a: u64, work_b: &mut dyn FnMut(u64) -> u64| {
            let cap_b = budget / work_a.max(1);
            let cells = work_a.saturating_mul(work_b(cap_b));
            (work_a <= budget && cells <= budget).then_some(cells)
        };
        let per_side = budget / (b.len().max(1) as u64);
        let left = cheapest(self.work(a, per_side), &mut |cap| self.work(b, cap));
        let right = cheapest(Self::work_right(a, per_side), &mut |cap| {
            Self::work_right(b, cap)
        });
        match (left, right) {
            (Some(l), Some(r)) if r < l => Some((r, Paths::Rightmost)),
            (Some(l), _) => Some((l, Paths::Leftmost)),
            (None, Some(r)) => Some((r, Paths::Rightmost)),
            (None, None) => None,
        }
    }

    /// The distance by a run along `paths`, at the cost [`ZhangShasha::plan`] gave.
    pub fn distance_along(&mut self, a: Forest<'_>, b: Forest<'_>, paths: Paths) -> u64 {
        if paths == Paths::Leftmost {
            return self.distance(a, b);
        }
        let [mut ma, mut mb] = std::mem::take(&mut self.mirrored);
        ma.of(a);
        mb.of(b);
        let distance = self.distance(ma.forest(), mb.forest());
        self.mirrored = [ma, mb];
        distance
    }

    /// The unit-cost forest edit distance. Cost: `work(a) * work(b)` cells and `|a| * |b|`
    /// table entries; callers check both against their budgets first.
    pub fn distance(&mut self, a: Forest<'_>, b: Forest<'_>) -> u64 {
        let (n, m) = (a.labels.len(), b.labels.len());
        if n == 0 || m == 0 {
            return (n + m) as u64;
        }
        self.roots_a.of(a.sizes);
        self.roots_b.of(b.sizes);
        // Every tree-distance entry is written by an earlier pass before any pass reads it, so
        // stale contents from a previous run are harmless and growing need not zero-fill twice.
        if self.tree.len() < n * m {
            self.tree = vec![0; n * m];
        }
        if self.forest.len() < (n + 1) * (m + 1) {
            self.forest = vec![0; (n + 1) * (m + 1)];
        }
        self.single_nodes(a, b);
        let (left_a, left_b) = (&self.roots_a.left[..], &self.roots_b.left[..]);
        let tree = &mut self.tree[..n * m];
        let forest = &mut self.forest[..];
        let mut width = 0;
        // A leaf keyroot's pass would only yield tree distances `single_nodes` wrote; the
        // virtual roots' (n and m) always run.
        let leaf = |sizes: &[u32], root: u32| sizes.get(root as usize) == Some(&1);
        // Keyroots of b outermost: the passes for one of them read tree distances from the
        // same few columns of every row, which then stay in cache across the inner loop.
        for &j in self.roots_b.roots.iter().filter(|&&j| !leaf(b.sizes, j)) {
            let (lj, end_j) = keyroot_span(left_b, j);
            width = end_j - lj + 1;
            for &i in self.roots_a.roots.iter().filter(|&&i| !leaf(a.sizes, i)) {
                let (li, end_i) = keyroot_span(left_a, i);
                for (dy, cell) in forest[..width].iter_mut().enumerate() {
                    *cell = dy as u32;
                }
                let (lefts, labels_b) = (&left_b[lj..end_j], &b.labels[lj..end_j]);
                for x in li..end_i {
                    let dx = x - li + 1;
                    let (done, rest) = forest.split_at_mut(dx * width);
                    let prev = &done[(dx - 1) * width..];
                    let cur = &mut rest[..width];
                    // The forest left of x's subtree: an earlier row of this pass.
                    let lx = left_a[x] as usize;
                    let base = &done[(lx - li) * width..(lx - li + 1) * width];
                    let tree_row = &mut tree[x * m + lj..x * m + end_j];
                    let mut last = dx as u32;
                    cur[0] = last;
                    // Iterators rather than indices: this is the hot loop, and zipped slices
                    // carry no bounds checks.
                    let cells = cur[1..].iter_mut().zip(prev.windows(2)).zip(lefts);
                    if lx == li {
                        let label = a.labels[x];
                        for (((cell, up), &ly), (&label_y, t)) in
                            cells.zip(labels_b.iter().zip(tree_row.iter_mut()))
                        {
                            // Both on their keyroots' leftmost paths: a tree distance.
                            let trees = ly as usize == lj;
                            let other = if trees {
                                (up[1] + 1).min(up[0] + u32::from(label != label_y))
                            } else {
                                (up[1] + 1).min(base[ly as usize - lj] + *t)
                            };
                            last = other.min(last + 1);
                            if trees {
                                *t = last;
                            }
                            *cell = last;
                        }
                    } else {
                        for (((cell, up), &ly), &t) in cells.zip(tree_row.iter()) {
                            // Only the insertion term depends on the previous cell: keeping it
                            // last shortens the chain each cell waits on.
                            let other = (up[1] + 1).min(base[ly as usize - lj] + t);
                            last = other.min(last + 1);
                            *cell = last;
                        }
                    }
                }
            }
        }
        // The last pass pairs the two virtual roots; its last cell is the answer.
        u64::from(forest[n * width + m])
    }

    /// The tree distances with a single node on either side. They have a closed form — the
    /// other subtree's size, less one when its labels hold the single node's (map the two,
    /// insert or delete the rest) — so the passes of leaf keyroots, most of a code tree's,
    /// need not run. A subtree is a run of postorder from its leftmost leaf to itself:
    /// whether it holds a label is whether the label's last position so far reaches back
    /// to that leaf.
    fn single_nodes(&mut self, a: Forest<'_>, b: Forest<'_>) {
        let m = b.labels.len();
        let (left_a, left_b) = (&self.roots_a.left, &self.roots_b.left);
        let last_at = &mut self.last_at;
        last_at.clear();
        last_at.resize(a.label_bound(b), None);
        let leaves_b = &mut self.leaves;
        leaves_b.clear();
        leaves_b.extend((0..m).filter(|&y| b.sizes[y] == 1));
        for (x, row) in self
            .tree
            .chunks_exact_mut(m)
            .take(a.labels.len())
            .enumerate()
        {
            let label = a.labels[x];
            last_at[label as usize] = Some(x as u32);
            if a.sizes[x] == 1 {
                let mut seen = None;
                for (y, cell) in row.iter_mut().enumerate() {
                    if b.labels[y] == label {
                        seen = Some(y as u32);
                    }
                    *cell = b.sizes[y] - u32::from(seen >= Some(left_b[y]));
                }
            } else {
                for &y in leaves_b.iter() {
                    let holds = last_at[b.labels[y] as usize] >= Some(left_a[x]);
                    row[y] = a.sizes[x] - u32::from(holds);
                }
            }
        }
    }
}

/// A forest with every sibling order reversed, in postorder.
#[derive(Debug, Default)]
pub(super) struct Mirrored {
    labels: Vec<u32>,
    sizes: Vec<u32>,
    stack: Vec<usize>,
}

impl Mirrored {
    /// Mirrors `forest` into these buffers. The mirror's postorder is the original's preorder
    /// backwards, which a stack walk gives: roots and children are found from the right in
    /// postorder, so they are pushed last to first and come off first to last.
    pub fn of(&mut self, forest: Forest<'_>) {
        let Mirrored {
            labels,
            sizes,
            stack,
        } = self;
        labels.clear();
        sizes.clear();
        let push_children = |stack: &mut Vec<usize>, from: usize, end: usize| {
            let mut node = end;
            while node > from {
                stack.push(node - 1);
                node -= forest.sizes[node - 1] as usize;
            }
        };
        push_children(stack, 0, forest.sizes.len());
        while let Some(node) = stack.pop() {
            labels.push(forest.labels[node]);
            sizes.push(forest.sizes[node]);
            push_children(stack, node + 1 - forest.sizes[node] as usize, node);
        }
        labels.reverse();
        sizes.reverse();
    }

    pub fn forest(&self) -> Forest<'_> {
        Forest {
            labels: &self.labels,
            sizes: &self.sizes,
        }
    }
}

/// The postorder range `first..end` a keyroot's pass covers, given the forest's leftmost
/// leaves: its subtree, or the whole forest for the virtual root (`root == left.len()`).
pub(super) fn keyroot_span(left: &[u32], root: u32) -> (usize, usize) {
    let root = root as usize;
    if root == left.len() {
        (0, root)
    } else {
        (left[root] as usize, root + 1)
    }
}

/// Each node's parent in the postorder forest of subtree `sizes`, into `out`; the forest's
/// top nodes get `sizes.len()`, the virtual root above them.
pub(super) fn parents(sizes: &[u32], out: &mut Vec<u32>) {
    let n = sizes.len();
    out.clear();
    out.resize(n, n as u32);
    for x in 0..n {
        // x's children, last to first: each ends just before the next one's subtree.
        let mut end = x;
        while end > x + 1 - sizes[x] as usize {
            let child = end - 1;
            out[child] = x as u32;
            end = child + 1 - sizes[child] as usize;
        }
    }
}

/// A forest's leftmost leaves and keyroots (ascending, the virtual root `n` last).
#[derive(Debug, Default)]
pub(super) struct Keyroots {
    pub left: Vec<u32>,
    pub roots: Vec<u32>,
    seen: Vec<bool>,
}

impl Keyroots {
    /// Those of the forest with subtree sizes `sizes`.
    pub fn of(&mut self, sizes: &[u32]) {
        let Keyroots { left, roots, seen } = self;
        let n = sizes.len();
        left.clear();
        left.extend(
            sizes
                .iter()
                .enumerate()
                .map(|(i, &size)| i as u32 + 1 - size),
        );
        seen.clear();
        seen.resize(n, false);
        seen[0] = true;
        roots.clear();
        for i in (0..n).rev() {
            let l = left[i] as usize;
            if !seen[l] {
                seen[l] = true;
                roots.push(i as u32);
            }
        }
        roots.reverse();
        roots.push(n as u32);
    }
}
