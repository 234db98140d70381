//! Zhang–Shasha restricted to a diagonal band, for distances known to be small (after Touzet,
//! "A linear tree edit distance algorithm for similar ordered trees", CPM 2005).
//!
//! A valid mapping keeps postorder: every table cell (x, y) the recursion visits for it splits
//! its pairs into those before both x and y and those after both (postorder indices). The
//! nodes up to x and up to y then differ only by deletions and insertions, and so do the nodes
//! after them: a mapping of cost below `k` visits only cells with
//! `|x − y| + |(n − x) − (m − y)| < k`, a diagonal band about `k` wide. Cells outside it stand
//! at "too far", never below their true value, so no cell computed from them falls below its
//! own (the recursion only adds and takes minima), and any distance below `k` comes out
//! exact. One run answers `min(distance, k)` in about `work(a) * k` cells instead of
//! `work(a) * work(b)`: with `k` set to an upper bound, the exact distance of a pair whose
//! bound is close. The same argument on leftmost leaves narrows each keyroot pass: its cells
//! also pay `|li − lj|` for the nodes before the two leaves, so every pass gets its own,
//! narrower band, and passes whose leaves are too far apart are skipped.
//!
//! The sizes are the weakest bound on the two sides of a cell: the pairs before both x and y
//! keep postorder, so they align the two postorder label sequences up to x and y, and cost at
//! least those prefixes' string edit distance; so do the pairs after them for the suffixes.
//! A cell whose prefix and suffix distances add up to `k` or more lies on no mapping of cost
//! below `k`. Both distances are computed over the band first (a cell's optimal alignment
//! passes only through cells whose sum is no larger, so the band holds it), which leaves each
//! row a corridor of columns around the near-optimal alignments: as narrow as `k` exceeds the
//! string distance where the two files agree, as wide as the change where they do not. Every
//! pass computes only its cells inside the corridor. The corridor's ends are widened to run
//! down the rows without turning back (more cells, never fewer), so the rows of a pass that
//! meet its columns are one run, found by binary search; rows before it are never written and
//! read as far, rows after it are never needed, and a pass with no such row is skipped.
//! A pass is there for the tree distances of its keyroots' leftmost paths, and a tree
//! distance is read only by the cell it stands for: a pass whose path cells all lie outside
//! the corridor is skipped, and the others stop at their last such row and column. Leaf
//! keyroots, most of a code tree's, get no pass: a single node's tree distances have a
//! closed form. A row's cells outside what it computed are never written: the next row fills
//! "far" into the few of them it reads, and reads of earlier rows check what they computed.

use std::time::Instant;

use super::zhang_shasha::{Forest, Keyroots, keyroot_span, parents};

/// Passes between two reads of the clock: a pass takes microseconds, a clock read tens of
/// nanoseconds.
const PASSES_PER_CLOCK_READ: usize = 64;

/// "Too far": above any distance, and two of them plus a path's length still fit a `u32`.
const FAR: u32 = u32::MAX / 4;

/// Reusable tables: tree distances, and one pass's forest distances, each row holding the
/// band's cells of that row and a last slot that always reads [`FAR`].
#[derive(Debug, Default)]
pub(super) struct Banded {
    /// Leftmost leaves and keyroots of both forests.
    roots_a: Keyroots,
    roots_b: Keyroots,
    /// The nodes of both forests by leftmost leaf: each keyroot's leftmost path.
    paths_a: Groups,
    paths_b: Groups,
    /// The nodes of b by label, and per label its last position in a so far.
    labels_b: Groups,
    last_at: Vec<Option<u32>>,
    /// Keyroots of a (leftmost leaf, keyroot), by leaf.
    by_leaf: Vec<(u32, u32)>,
    /// Per node of a, the keyroot whose leftmost leaf it is (for leaves), and its parent.
    keyroot_of_leaf: Vec<u32>,
    parent_a: Vec<u32>,
    /// The keyroots of a whose passes against one keyroot of b may meet the corridor.
    candidates: Vec<u32>,
    passes: Vec<Pass>,
    band: Band,
    /// Per row of a, the columns whose cells may lie on a mapping of cost below `k`: the
    /// first and last (none when the first is past the last), both widened to be
    /// nondecreasing down the rows, so a pass's rows that meet its columns are one run.
    corridor: Vec<(isize, isize)>,
    /// The corridor's cells in the rows before each row.
    corridor_cells: Vec<u64>,
    /// Suffix string distances over the band, then tree distances.
    tree: Vec<u32>,
    /// Prefix string distances of two rows, then one pass's forest distances.
    forest: Vec<u32>,
    /// A row of far cells, for base rows a pass skipped.
    far_row: Vec<u32>,
    /// Per row of the running pass, the first and last columns it computed.
    computed: Vec<(isize, isize)>,
    /// What the last plan left to do.
    planned: Planned,
}

/// Positions grouped by a key, ascending within a group: a forest's nodes by leftmost leaf
/// (the group of leaf l is the leftmost path from l up to the keyroot whose leaf it is:
/// nodes sharing a leftmost leaf are its ancestors by first children), or by label.
#[derive(Debug, Default)]
struct Groups {
    /// Group k is `positions[start[k]..start[k + 1]]`.
    start: Vec<u32>,
    positions: Vec<u32>,
}

impl Groups {
    /// Groups the positions of `keys` by key, keys below `count` (a counting sort).
    fn of(&mut self, keys: &[u32], count: usize) {
        let Groups { start, positions } = self;
        start.clear();
        start.resize(count + 1, 0);
        for &key in keys {
            start[key as usize + 1] += 1;
        }
        for key in 0..count {
            start[key + 1] += start[key];
        }
        positions.clear();
        positions.resize(keys.len(), 0);
        let mut next = start.clone();
        for (at, &key) in keys.iter().enumerate() {
            positions[next[key as usize] as usize] = at as u32;
            next[key as usize] += 1;
        }
    }

    /// The positions whose key is `key`.
    fn of_key(&self, key: usize) -> &[u32] {
        &self.positions[self.start[key] as usize..self.start[key + 1] as usize]
    }
}

/// What a run will take, from [`Banded::plan`].
#[derive(Debug, Default, Clone, Copy)]
enum Planned {
    /// Nothing to compute: an empty forest, or sizes `k` or more apart; the answer.
    Settled(u64),
    /// The passes and corridor are ready for this `k`.
    Passes(u32),
    #[default]
    Nothing,
}

/// The cells kept: `x − y` (postorder indices) within `low..=high`.
#[derive(Debug, Default, Clone, Copy)]
struct Band {
    low: isize,
    high: isize,
}

impl Band {
    /// The band of a pass over forests of `n` and `m` nodes whose leftmost leaves are `lead`
    /// apart (`li − lj`; 0 for the whole forests), for distances below `k`: a cell (x, y) costs
    /// at least `|lead|` for the nodes before the leaves, `|(x − y) − lead|` between them and
    /// x, y, and `|(n − m) − (x − y)|` after. `None` when that is `k` or more everywhere.
    fn new(n: usize, m: usize, k: u32, lead: isize) -> Option<Band> {
        let d = n as isize - m as isize;
        let spare = k as isize - 1 - lead.abs();
        // Between lead and d the sum is |d − lead|; beyond them it grows by 2 a step.
        let (low, high) = (lead.min(d), lead.max(d));
        let reach = spare - (high - low);
        (reach >= 0).then(|| Band {
            low: low - reach / 2,
            high: high + reach / 2,
        })
    }

    /// Cells per row; slot `width()` is the far slot.
    fn width(self) -> usize {
        (self.high - self.low + 1) as usize
    }

    /// Where column y of row x sits in the row (`x` and `y` may be −1: the empty forests).
    fn slot(self, x: isize, y: isize) -> Option<usize> {
        let slot = self.high - x + y;
        (0..self.width() as isize)
            .contains(&slot)
            .then_some(slot as usize)
    }
}

/// The columns of `columns` (first, last) inside row x's corridor, if any.
fn inside(
    corridor: &[(isize, isize)],
    x: usize,
    (lo, hi): (usize, usize),
) -> Option<(usize, usize)> {
    let (first, last) = corridor[x];
    let (lo, hi) = ((lo as isize).max(first), (hi as isize).min(last));
    (lo <= hi).then_some((lo as usize, hi as usize))
}

/// One keyroot pass: the rows `li..end_i` against the columns `lj..end_j` (postorder indices;
/// a virtual root covers the whole forest), over its band; only its `live` rows meet the
/// corridor.
#[derive(Debug, Clone)]
struct Pass {
    li: usize,
    end_i: usize,
    lj: usize,
    end_j: usize,
    band: Band,
    live: std::ops::Range<usize>,
}

impl Pass {
    /// The rows holding a cell of the band, column lj − 1 (the empty forest) included: a
    /// base cell the band reaches may sit there. None: the pass is skipped.
    fn rows(&self) -> std::ops::Range<usize> {
        let first = (self.lj as isize - 1 + self.band.low).max(self.li as isize);
        let end = (self.end_j as isize + self.band.high).min(self.end_i as isize);
        first as usize..end.max(first) as usize
    }

    /// The band's first and last column of row x past the empty forest, if any.
    fn columns(&self, x: usize) -> Option<(usize, usize)> {
        let x = x as isize;
        let low = (x - self.band.high).max(self.lj as isize);
        let high = (x - self.band.low).min(self.end_j as isize - 1);
        (low <= high).then_some((low as usize, high as usize))
    }
}

impl Banded {
    /// `min(distance(a, b), k)` — the exact unit-cost forest distance when it is below `k`,
    /// else `k` — and the table cells it took; `None`, before any work, when it would take
    /// more than `budget` cells, and `None` when `deadline` has passed before the run or
    /// passes during it (read every [`PASSES_PER_CLOCK_READ`] passes).
    pub fn distance_below(
        &mut self,
        a: Forest<'_>,
        b: Forest<'_>,
        k: u32,
        budget: u64,
        deadline: Instant,
    ) -> Option<(u64, u64)> {
        let cells = self.plan(a, b, k, budget)?;
        Some((self.run(a, b, deadline)?, cells))
    }

    /// Prepares a run on `a` and `b` for distances below `k` and gives the cells it will
    /// take: the string distances' and the passes' cells (an upper bound), the keyroot pairs
    /// examined and the tables' entries, each counted as a cell, so that `budget` bounds its
    /// time and memory before the passes start. `None` when that is over `budget`. Memory:
    /// two tables of `(|a| + 1) * (2k + 1)` entries at most.
    fn plan(&mut self, a: Forest<'_>, b: Forest<'_>, k: u32, budget: u64) -> Option<u64> {
        self.planned = Planned::Nothing;
        let (n, m) = (a.labels.len(), b.labels.len());
        let Some(band) = Band::new(n, m, k, 0).filter(|_| n > 0 && m > 0) else {
            // An empty forest costs the other's size; sizes k apart cost at least k.
            self.planned = Planned::Settled(((n + m) as u64).min(u64::from(k)));
            return Some(0);
        };
        self.band = band;
        let width = band.width() as u64;
        // `fixed` counts what a run certainly costs: the tables and the string distances over
        // the band (three of n × width), the keyroot pairs examined and a step per live row;
        // `estimate`, at most what the corridors' cells cost. When the tables alone take half
        // the budget, what is left is too little to be worth computing the corridor for.
        let mut fixed = 3 * (n as u64 + 1) * (width + 1);
        if 2 * fixed > budget {
            return None;
        }
        let mut estimate = 0;
        self.corridor(a.labels, b.labels, k);
        self.roots_a.of(a.sizes);
        self.roots_b.of(b.sizes);
        self.paths_a.of(&self.roots_a.left, n);
        self.paths_b.of(&self.roots_b.left, m);
        let k_wide = k as usize;
        // Keyroots of a by leftmost leaf (each leaf has one; leaf 0: the virtual root).
        self.by_leaf.clear();
        self.by_leaf.extend(
            self.roots_a
                .roots
                .iter()
                .map(|&i| (keyroot_span(&self.roots_a.left, i).0 as u32, i)),
        );
        self.by_leaf.sort_unstable();
        // Each leaf's keyroot, and each node's parent (the virtual root, n, above the trees).
        self.keyroot_of_leaf.clear();
        self.keyroot_of_leaf.resize(n, n as u32);
        for &(leaf, i) in &self.by_leaf {
            self.keyroot_of_leaf[leaf as usize] = i;
        }
        parents(a.sizes, &mut self.parent_a);
        self.passes.clear();
        // The tree distances of single nodes, one per corridor cell at most.
        fixed += self.corridor_cells[n];
        self.labels_b.of(b.labels, a.label_bound(b));
        // Keyroots of b outermost, as in `ZhangShasha`, and of a by descending leftmost leaf:
        // a pass reads the tree distances of its keyroots' descendants off their leftmost
        // paths, whose own keyroots have larger leftmost leaves (or are b's earlier ones), so
        // every tree distance a pass reads was written by an earlier one.
        for jx in 0..self.roots_b.roots.len() {
            let j = self.roots_b.roots[jx];
            let (lj, end_j) = keyroot_span(&self.roots_b.left, j);
            // A single node's tree distances are known outright (`leaf_distances`).
            if end_j - lj == 1 && (j as usize) < m {
                continue;
            }
            // The rows whose corridor meets b's columns lj − 1..end_j (the empty forest's
            // column included: its cells are read by the next row and as a base).
            let live = self.corridor_rows(lj, end_j);
            if live.is_empty() {
                continue;
            }
            // A pass yields the tree distances of nodes whose leftmost leaves are li and lj;
            // a mapping of cost below k maps no two nodes whose leftmost leaves are k apart
            // (the nodes before those leaves differ by deletions and insertions alone), and
            // each pass's band narrows with |li − lj|. A pass's rows li..end_i must meet the
            // live ones.
            let leaves = (lj + 1).saturating_sub(k_wide)..(lj + k_wide).min(live.end);
            self.candidates(leaves, live.start);
            let candidates = std::mem::take(&mut self.candidates);
            fixed += candidates.len() as u64;
            for &i in &candidates {
                let (li, end_i) = keyroot_span(&self.roots_a.left, i);
                let Some(band) = Band::new(n, m, k, li as isize - lj as isize) else {
                    continue;
                };
                let mut pass = Pass {
                    li,
                    end_i,
                    lj,
                    end_j,
                    band,
                    live: 0..0,
                };
                let rows = pass.rows();
                pass.live = rows.start.max(live.start)..rows.end.min(live.end);
                // The virtual roots' pass yields the answer; any other, only tree distances.
                if !pass.live.is_empty() && (i as usize, j as usize) != (n, m) {
                    fixed += self.paths_a.of_key(li).len() as u64;
                    let Some((x, y)) = self.last_outputs(&pass) else {
                        continue;
                    };
                    pass.end_j = y + 1;
                    pass.live.end = x + 1;
                }
                // A row costs one step for its set-up and the few far cells it writes into
                // the row above, and its corridor's cells: at most the corridor's width, and
                // at most the pass's columns. A pass whose rows do not meet the corridor within its columns
                // would leave every cell far, as the tree distances it writes already stand.
                if !pass.live.is_empty() {
                    let cells =
                        self.corridor_cells[pass.live.end] - self.corridor_cells[pass.live.start];
                    let columns = (pass.end_j - lj).min(band.width()) as u64;
                    let rows = pass.live.len() as u64;
                    fixed += rows;
                    estimate += cells.min(rows * columns);
                    self.passes.push(pass);
                }
            }
            self.candidates = candidates;
            if fixed > budget {
                return None;
            }
        }
        // The estimate takes each live row's whole corridor, up to the pass's width, where
        // only its part within the pass's columns is computed: when it says over, count.
        let mut total = fixed + estimate;
        if total > budget {
            total = fixed;
            for pass in &self.passes {
                for x in pass.live.clone() {
                    let columns = pass.columns(x);
                    if let Some((lo, hi)) = columns.and_then(|c| inside(&self.corridor, x, c)) {
                        total += (hi - lo + 1) as u64;
                    }
                }
                if total > budget {
                    return None;
                }
            }
        }
        self.planned = Planned::Passes(k);
        Some(total)
    }

    /// The keyroots of a whose leftmost leaves lie in `leaves` and whose rows reach row
    /// `first` or later, by descending leaf (the order their passes run in): those whose
    /// leaves are `first` or later, then the keyroots above row `first` (its ancestors'),
    /// found by climbing from it instead of scanning every leaf before it.
    fn candidates(&mut self, leaves: std::ops::Range<usize>, first: usize) {
        self.candidates.clear();
        let from = self
            .by_leaf
            .partition_point(|&(leaf, _)| (leaf as usize) < leaves.start.max(first));
        let to = self
            .by_leaf
            .partition_point(|&(leaf, _)| (leaf as usize) < leaves.end);
        let inside = self.by_leaf[from..to.max(from)].iter().rev();
        // A leaf keyroot's pass is not run (`leaf_distances`); the virtual root's always is.
        let n = self.roots_a.left.len();
        let not_leaf = |&&(leaf, i): &&(u32, u32)| i as usize == n || leaf != i;
        self.candidates
            .extend(inside.filter(not_leaf).map(|&(_, i)| i));
        let mut node = first;
        while node < n {
            let leaf = self.roots_a.left[node] as usize;
            let root = self.keyroot_of_leaf[leaf];
            if leaf < first && leaves.contains(&leaf) {
                self.candidates.push(root);
            }
            node = if root as usize == n {
                n
            } else {
                self.parent_a[root as usize] as usize
            };
        }
        // Above every tree: the virtual root, whose leaf is 0.
        if node == n
            && first > 0
            && leaves.contains(&0)
            && self.candidates.last() != Some(&(n as u32))
        {
            self.candidates.push(n as u32);
        }
    }

    /// The last row and the last column of `pass`'s tree distances inside the corridor: the
    /// nodes on the leftmost paths of its keyroots (leftmost leaves li and lj), in its live
    /// rows. Its cells past either feed none of them, and the distances outside the corridor
    /// are never read (a pass reads the tree distance of the very cell it computes), so it
    /// stops there; `None`: it yields nothing.
    fn last_outputs(&self, pass: &Pass) -> Option<(usize, usize)> {
        let columns = self.paths_b.of_key(pass.lj);
        let mut last = None;
        for &x in self.paths_a.of_key(pass.li) {
            let x = x as usize;
            if !pass.live.contains(&x) {
                continue;
            }
            let Some((lo, hi)) = pass.columns(x).and_then(|c| inside(&self.corridor, x, c)) else {
                continue;
            };
            // The path's last node within lo..=hi, if any.
            let below = columns.partition_point(|&y| y as usize <= hi);
            if below > 0 && columns[below - 1] as usize >= lo {
                let y = columns[below - 1] as usize;
                last = Some((
                    x,
                    last.map_or(y, |(_, before): (usize, usize)| before.max(y)),
                ));
            }
        }
        last
    }

    /// The tree distances with a single node on either side, over the corridor. They have a
    /// closed form — the other subtree's size, less one when its labels hold the single
    /// node's (map the two, insert or delete the rest) — so the passes of leaf keyroots, nine
    /// in ten of a code tree's passes, are not run. A subtree is a run of postorder, from its
    /// leftmost leaf to itself.
    fn leaf_distances(&mut self, a: Forest<'_>, b: Forest<'_>) {
        let (left_a, left_b) = (&self.roots_a.left, &self.roots_b.left);
        let last_at = &mut self.last_at;
        last_at.clear();
        last_at.resize(a.label_bound(b), None);
        for (x, &(first, last)) in self.corridor.iter().enumerate() {
            last_at[a.labels[x] as usize] = Some(x as u32);
            // Slot of column y: at + y (column −1, the empty forest, holds none).
            let at = self.corridor_cells[x] as isize - first;
            let columns = first.max(0) as usize..(last + 1).max(0) as usize;
            if a.sizes[x] == 1 {
                let label = a.labels[x];
                // The label's last position in b before the columns, then as they go.
                let seen = self.labels_b.of_key(label as usize);
                let before = seen.partition_point(|&p| (p as usize) < columns.start);
                let mut last_seen = before.checked_sub(1).map_or(-1, |i| seen[i] as isize);
                for y in columns {
                    if b.labels[y] == label {
                        last_seen = y as isize;
                    }
                    let holds = last_seen >= left_b[y] as isize;
                    self.tree[(at + y as isize) as usize] = b.sizes[y] - u32::from(holds);
                }
            } else {
                for y in columns.filter(|&y| b.sizes[y] == 1) {
                    let holds = last_at[b.labels[y] as usize] >= Some(left_a[x]);
                    self.tree[(at + y as isize) as usize] = a.sizes[x] - u32::from(holds);
                }
            }
        }
    }

    /// The rows whose corridor meets columns `first − 1..end` (one run: the corridor's ends
    /// are nondecreasing).
    fn corridor_rows(&self, first: usize, end: usize) -> std::ops::Range<usize> {
        let start = self
            .corridor
            .partition_point(|&(_, last)| last < first as isize - 1);
        let end = self
            .corridor
            .partition_point(|&(first, _)| first < end as isize);
        start..end.max(start)
    }

    /// Runs the last plan on the same forests: `min(distance(a, b), k)`, or `None` past
    /// `deadline`.
    fn run(&mut self, a: Forest<'_>, b: Forest<'_>, deadline: Instant) -> Option<u64> {
        let k = match self.planned {
            Planned::Settled(answer) => return Some(answer),
            Planned::Passes(k) => k,
            Planned::Nothing => unreachable!("a run follows a plan within budget"),
        };
        if Instant::now() >= deadline {
            return None;
        }
        let (n, m) = (a.labels.len(), b.labels.len());
        let w = self.band.width() + 1;
        // Tree distances are read and written only at cells a pass computes, all inside the
        // corridor: row x keeps its corridor's columns, after the rows before it.
        self.tree.clear();
        self.tree.resize(self.corridor_cells[n] as usize, FAR);
        self.leaf_distances(a, b);
        // A pass writes every cell it reads before reading it (its live rows' band slots and
        // far slot, row 0, the row before its live ones), so stale or zero contents are
        // harmless, and a zeroed allocation leaves untouched pages unmapped.
        if self.forest.len() < (n + 1) * w {
            self.forest = vec![0; (n + 1) * w];
        }
        let passes = std::mem::take(&mut self.passes);
        for (done, pass) in passes.iter().enumerate() {
            if done % PASSES_PER_CLOCK_READ == PASSES_PER_CLOCK_READ - 1
                && Instant::now() >= deadline
            {
                self.passes = passes;
                return None;
            }
            self.pass(a, b, pass);
        }
        // The virtual roots' pass comes last; planned away, its cells were all far. It ends
        // on the whole forests, row n and column m − 1, which it computed only if that cell
        // lies in the corridor; else the distance is k or more.
        let finished = passes.last().is_some_and(|p| p.li == 0 && p.lj == 0)
            && self
                .computed
                .get(n)
                .is_some_and(|&(lo, hi)| lo <= hi && hi == m as isize - 1);
        self.passes = passes;
        if !finished {
            return Some(u64::from(k));
        }
        let slot = self.band.slot(n as isize - 1, m as isize - 1);
        let last = slot.map_or(FAR, |c| self.forest[n * w + c]);
        Some(u64::from(last.min(k)))
    }

    /// Each row's corridor: the columns y whose prefix string distance (labels up to x and
    /// up to y) plus suffix string distance (labels after them) is below `k`. Both are
    /// computed over the band only; outside it the sum is at least `k`, and a cell whose sum
    /// is below `k` is reached by an alignment through cells whose sums are no larger, so
    /// reading the band's outside as far changes no value that matters.
    fn corridor(&mut self, a: &[u32], b: &[u32], k: u32) {
        let (n, m, band) = (a.len(), b.len(), self.band);
        let w = band.width();
        // Rows of the band's slots between two far ones: slot c of row x is column
        // x − band.high + c, at index 1 + c. Then (x ± 1, y ± 1) is the same slot of the
        // next or previous row, (x ± 1, y) one slot left or right of it, (x, y ± 1) the next
        // slot; no neighbour needs a bounds check.
        let stride = w + 2;
        // Row x's slot range for columns first..=last (clipped to the band).
        let slots = |x: usize, first: isize, last: isize| {
            let x = x as isize;
            let low = (first - x + band.high).max(0);
            let high = (last - x + band.high).min(w as isize - 1);
            (low as usize + 1)..(high + 2).max(low + 1) as usize
        };
        // Suffix distances after (x, y), rows from the last; in the last row and the last
        // column one of the suffixes is empty. Column −1 (all of b after it) included.
        let suffix = &mut self.tree;
        suffix.clear();
        suffix.resize(n * stride, FAR);
        let column = |x: usize, index: usize| x as isize - band.high + index as isize - 1;
        for index in slots(n - 1, -1, m as isize - 1) {
            suffix[(n - 1) * stride + index] = (m as isize - 1 - column(n - 1, index)) as u32;
        }
        for x in (0..n - 1).rev() {
            let (row, below) = suffix[x * stride..(x + 2) * stride].split_at_mut(stride);
            for index in slots(x, -1, m as isize - 1).rev() {
                let next = (column(x, index) + 1) as usize;
                row[index] = if next == m {
                    (n - 1 - x) as u32
                } else {
                    (below[index] + u32::from(a[x + 1] != b[next]))
                        .min(below[index - 1] + 1)
                        .min(row[index + 1] + 1)
                };
            }
        }
        // Prefix distances up to (x, y), from the virtual row −1 (the empty prefix of a) and
        // with the virtual column −1 (the empty prefix of b), in two rows; each row's
        // corridor as it is finished. A cell outside the corridor is set far: a corridor
        // cell's optimal prefix alignment runs through corridor cells only (each of them is
        // on an alignment of the whole through that cell, of no larger cost), so its value
        // stays exact, and a row is computed only where the corridor of the row above, or
        // its own cells to the left, can reach.
        let rows = &mut self.forest;
        rows.clear();
        rows.resize(2 * stride, FAR);
        self.corridor.clear();
        self.corridor_cells.clear();
        self.corridor_cells.push(0);
        // Row −1, read by row 0 (even rows are written to the first half): P(−1, y) = y + 1.
        for (index, value) in rows[stride..].iter_mut().enumerate().take(w + 1).skip(1) {
            let y = -1 - band.high + index as isize - 1;
            if (-1..m as isize).contains(&y) {
                *value = (y + 1) as u32;
            }
        }
        // The corridor of the row above: all of row −1.
        let mut above = (-1, m as isize - 1);
        for (x, &label) in a.iter().enumerate() {
            let (first, second) = rows.split_at_mut(stride);
            let (prev, cur) = if x % 2 == 0 {
                (&*second, first)
            } else {
                (&*first, second)
            };
            cur.fill(FAR);
            let range = slots(x, -1, m as isize - 1);
            let mut corridor = (m as isize, -2);
            let suffix_row = &suffix[x * stride..(x + 1) * stride];
            let mut index = range.start;
            while index < range.end {
                let y = column(x, index);
                // Cell (x, y) reads columns y − 1 and y of the row above, far outside its
                // corridor, and the cell to its left.
                let left_far = cur[index - 1] == FAR;
                if left_far && y > above.1 + 1 {
                    break;
                }
                if left_far && y >= 0 && y < above.0 {
                    index = (above.0 - x as isize + band.high + 1) as usize;
                    continue;
                }
                let value = if y < 0 {
                    x as u32 + 1
                } else {
                    (prev[index] + u32::from(label != b[y as usize]))
                        .min(prev[index + 1] + 1)
                        .min(cur[index - 1] + 1)
                };
                if value + suffix_row[index] < k {
                    cur[index] = value;
                    corridor.0 = corridor.0.min(y);
                    corridor.1 = y;
                }
                index += 1;
            }
            above = corridor;
            self.corridor.push(corridor);
        }
        // Widened to nondecreasing ends: the last columns as a running maximum down the
        // rows, the first as a running minimum up them. More cells, never fewer.
        let mut last = -2;
        for row in &mut self.corridor {
            last = last.max(row.1);
            row.1 = last;
        }
        let mut first = m as isize;
        for row in self.corridor.iter_mut().rev() {
            first = first.min(row.0);
            row.0 = first;
        }
        for (x, &(first, last)) in self.corridor.iter().enumerate() {
            let cells = (last - first + 1).max(0) as u64;
            self.corridor_cells.push(self.corridor_cells[x] + cells);
        }
    }

    /// One keyroot pass over its band. Row `r` is node `x = li + r − 1` (row 0: the empty
    /// forest before li), and column lj − 1 is the empty forest before lj. The pass's rows use
    /// its own band; the tree distances, read across passes, use the whole forests' band.
    fn pass(&mut self, a: Forest<'_>, b: Forest<'_>, pass: &Pass) {
        let Pass {
            li,
            lj,
            end_j,
            band,
            ..
        } = *pass;
        let w = band.width() + 1;
        let far = w - 1;
        // Row 0 against lj..y costs the insertions; only the band's columns of it.
        let row0 = &mut self.forest[..w];
        row0[far] = FAR;
        let x0 = li as isize - 1;
        let row0_last = (end_j as isize - 1).min(x0 - band.low);
        for y in (lj as isize - 1).max(x0 - band.high)..=row0_last {
            row0[(band.high - x0 + y) as usize] = (y + 1 - lj as isize) as u32;
        }
        let rows = pass.live.clone();
        // Per row of the pass, the columns it computed (beyond its column lj − 1, which row
        // 0 and every live row write): cells outside them are stale, so the next row fills
        // the few of them it reads, and base reads outside them stand far. Row 0 is whole.
        self.computed.clear();
        self.computed.resize(rows.end - li + 1, (1, 0));
        self.computed[0] = (lj as isize, row0_last);
        // The row before the first live one reads far, unless it is row 0.
        let filled = (rows.start > li).then(|| rows.start - li);
        if let Some(r) = filled {
            self.forest[r * w..(r + 1) * w].fill(FAR);
            let x = (rows.start - 1) as isize;
            self.computed[r] = (x - band.high, x - band.low);
        }
        if self.far_row.len() < w {
            self.far_row.resize(w, FAR);
        }
        let (left_a, left_b) = (&self.roots_a.left[..], &self.roots_b.left[..]);
        for x in rows.clone() {
            let r = x - li + 1;
            let (done, rest) = self.forest.split_at_mut(r * w);
            let cur = &mut rest[..w];
            cur[far] = FAR;
            // The forest li..x against the empty one costs its r deletions.
            let column0 = match band.slot(x as isize, lj as isize - 1) {
                Some(c) => {
                    cur[c] = r as u32;
                    r as u32
                }
                None => FAR,
            };
            let Some((band_lo, band_hi)) = pass.columns(x) else {
                continue;
            };
            let slot = |y: usize| (band.high - x as isize + y as isize) as usize;
            let Some((lo, hi)) = inside(&self.corridor, x, (band_lo, band_hi)) else {
                continue;
            };
            self.computed[r] = (lo as isize, hi as isize);
            let (c_lo, c_hi) = (slot(lo), slot(hi));
            // This row reads the row above at columns lo − 1..=hi (its slots c_lo..=c_hi + 1):
            // those the row above did not compute, bar column lj − 1, must read far. The
            // columns computed only move right down the rows, so those are at most column
            // lo − 1 and the columns past the row above's last.
            let (above_lo, above_hi) = self.computed[r - 1];
            if filled != Some(r - 1) {
                let prev = &mut done[(r - 1) * w..r * w];
                let empty = above_lo > above_hi;
                if lo > lj && (empty || (lo as isize) <= above_lo) {
                    prev[c_lo] = FAR;
                }
                let from = if empty {
                    lo as isize
                } else {
                    (above_hi + 1).max(lo as isize)
                };
                if from <= hi as isize {
                    prev[(band.high - x as isize + from) as usize + 1..=c_hi + 1].fill(FAR);
                }
            }
            let prev = &done[(r - 1) * w..];
            let mut last = if lo == lj { column0 } else { FAR };
            let lx = left_a[x] as usize;
            // Rows before the live ones were never written: their cells stand far.
            let (base, (base_lo, base_hi), base_column0) = if lx == li || lx >= rows.start {
                let r = lx - li;
                let in_band = band.slot(lx as isize - 1, lj as isize - 1).is_some();
                let column0 = if in_band && filled != Some(r) {
                    r as u32
                } else {
                    FAR
                };
                (&done[r * w..(r + 1) * w], self.computed[r], column0)
            } else {
                (&self.far_row[..w], (1, 0), FAR)
            };
            // The corridor may start at column −1 (the empty forest), which holds no tree
            // distance but has its slot.
            let at = self.corridor_cells[x] as isize + lo as isize - self.corridor[x].0;
            let tree_row = &mut self.tree[at as usize..][..=hi - lo];
            // Cell (x, y) reads (lx − 1, ly − 1) in the base row: column lj − 1 (ly = lj) is
            // the deletions of li..lx − 1; others stand where the base row computed them,
            // else far (the far slot).
            let shift = band.high - lx as isize;
            let (first, span) = (base_lo + shift + 1, base_hi - base_lo);
            let base_cell = |ly: u32| {
                if ly as usize == lj {
                    return base_column0;
                }
                let at = ly as isize + shift;
                let inside = span >= 0 && (at - first) as usize <= span as usize;
                base[if inside { at as usize } else { far }]
            };
            // Cell (x, y) reads (x − 1, y − 1) and (x − 1, y) at the same slot and the next
            // one of the row above; the row's far slot stands for (x − 1, x − band.low).
            let cells = cur[c_lo..=c_hi]
                .iter_mut()
                .zip(prev[c_lo..=c_hi + 1].windows(2))
                .zip(&left_b[lo..=hi]);
            if lx == li {
                let label = a.labels[x];
                for (((cell, up), &ly), (&label_y, t)) in
                    cells.zip(b.labels[lo..=hi].iter().zip(tree_row))
                {
                    let trees = ly as usize == lj;
                    let other = if trees {
                        (up[1] + 1).min(up[0] + u32::from(label != label_y))
                    } else {
                        (up[1] + 1).min(base_cell(ly) + *t)
                    };
                    last = other.min(last + 1);
                    if trees {
                        *t = last;
                    }
                    *cell = last;
                }
            } else {
                for (((cell, up), &ly), &t) in cells.zip(&*tree_row) {
                    let other = (up[1] + 1).min(base_cell(ly) + t);
                    last = other.min(last + 1);
                    *cell = last;
                }
            }
        }
    }
}
