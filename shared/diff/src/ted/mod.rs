//! Unit-cost tree edit distance (insert, delete, relabel each cost 1) between normalised trees.
//!
//! Pairs within the region budget are solved exactly by Zhang–Shasha. Larger pairs get an
//! anchored decomposition: identical subtrees are matched top down by hash, and only the gaps
//! between them are solved exactly, within a work budget. That yields a valid edit mapping,
//! hence an upper bound; it is reported exact when a lower bound (string edit distance of the
//! postorder or preorder label sequences) meets it. When it does not, the bound is settled
//! exactly when a budget allows: Zhang–Shasha on the whole pair if what is left of the file's
//! budget holds it, else Zhang–Shasha restricted to the diagonal band a distance below the
//! bound can reach (`banded.rs`), which makes large pairs with small distances cheap. Failing
//! that, a global matching (GumTree-style, in `matching.rs`) gives a second mapping and guides
//! a second decomposition; the cheapest of the three is the bound, settled again when it is
//! lower than the first.

mod anchored;
mod banded;
mod bounds;
mod matching;
mod side;
mod zhang_shasha;

#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use crate::tree::Tree;
use zhang_shasha::{Forest, Mirrored, Paths, ZhangShasha};

/// Budgets, in Zhang–Shasha table cells (`work(a) * work(b)` per region).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest single region solved exactly; bigger regions are split further instead.
    pub region_work: u64,
    /// All exact regions together; past it, remaining gaps are split without exact runs.
    pub total_work: u64,
    /// Banded Zhang–Shasha cells that may settle a bound the rest left uncertified.
    pub band_work: u64,
    /// Checked between steps; past it, whatever is left is deleted and inserted wholesale.
    pub deadline: Instant,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            region_work: 1_000_000,
            total_work: 8_000_000,
            band_work: 64_000_000,
            deadline: Instant::now() + Duration::from_secs(2),
        }
    }
}

/// An uncertified bound at most `1 + 1/CLOSE_ENOUGH` times the lower bound is reported as it
/// is, without the global matching's second bound.
const CLOSE_ENOUGH: u64 = 50;

/// A tree edit distance, and whether it is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Distance {
    /// Edit operations (insert, delete, relabel), each costing 1.
    pub value: u64,
    /// When false, `value` is an upper bound: never below the true distance.
    pub exact: bool,
}

/// Unit-cost tree edit distance (insert, delete, relabel each cost 1) between two normalised trees.
/// `exact == true` => value equals the true TED. `exact == false` => value is an upper bound (never lower than the true TED).
pub fn distance(before: &Tree, after: &Tree, limits: &Limits) -> Distance {
    let labels_a = before.labels_in(after);
    let (labels_b, sizes_a, sizes_b) = (after.labels(), before.sizes(), after.sizes());
    let (n1, n2) = (labels_a.len() as u64, labels_b.len() as u64);
    if n1 == 0 || n2 == 0 {
        return Distance {
            value: n1 + n2,
            exact: true,
        };
    }
    if labels_a == labels_b && sizes_a == sizes_b {
        return Distance {
            value: 0,
            exact: true,
        };
    }
    let a = side::Side::new(&labels_a, sizes_a);
    let b = side::Side::new(labels_b, sizes_b);
    let mut first = anchored::Engine::new(&a, &b, limits);
    let (mut value, proven) = first.decompose();
    if proven {
        return Distance { value, exact: true };
    }
    let whole_a = Forest {
        labels: &labels_a,
        sizes: sizes_a,
    };
    let whole_b = Forest {
        labels: labels_b,
        sizes: sizes_b,
    };
    // Capped at the first bound: a smaller value is the lower bound itself, which certifies
    // whichever bound meets it.
    let lower = bounds::lower_bound(whole_a, whole_b, value, limits.deadline);
    let mut spent = first.spent();
    // The bound settled exactly where a budget allows (`certify`). Failing that, a global
    // matching guides a second decomposition on what is left of the file's budget: all three
    // are valid mappings, so the cheapest is the best bound, and one below the first is worth
    // a second try. The matching comes second because the first bound mostly settles, and
    // then it would have been computed for nothing.
    let settle = |upper: u64, spent: u64| {
        if lower >= upper || Instant::now() >= limits.deadline {
            return None;
        }
        let left = limits.total_work.saturating_sub(spent);
        certify(
            whole_a,
            whole_b,
            lower,
            upper,
            (left, limits.band_work, limits.deadline),
        )
    };
    let certified = |value| Distance { value, exact: true };
    if let Some(distance) = settle(value, spent) {
        return certified(distance);
    }
    // A bound within `CLOSE_ENOUGH` of the lower bound is within that of the distance: the
    // matching could improve it by no more, and on a large file costs milliseconds.
    let close_enough = value <= lower + lower / CLOSE_ENOUGH;
    if lower < value && !close_enough && Instant::now() < limits.deadline {
        let (guide, matched) = matching::mapping(&a, &b);
        let remaining = Limits {
            total_work: limits.total_work.saturating_sub(spent),
            ..*limits
        };
        let mut second = anchored::Engine::new(&a, &b, &remaining).guided_by(&guide);
        let (guided, _) = second.decompose();
        spent += second.spent();
        if guided.min(matched) < value {
            value = guided.min(matched);
            if let Some(distance) = settle(value, spent) {
                return certified(distance);
            }
        }
    }
    let exact = lower == value;
    Distance { value, exact }
}

/// The exact distance of a pair the decompositions left between `lower` and `upper`: whole by
/// Zhang–Shasha when what is left of the file's budget (`left`) holds it (a small pair whose
/// regions split badly), else by the band below `upper` within `band_budget` cells (a large
/// pair whose distance is small). `None` when neither fits.
fn certify(
    a: Forest<'_>,
    b: Forest<'_>,
    lower: u64,
    upper: u64,
    (left, band_budget, deadline): (u64, u64, Instant),
) -> Option<u64> {
    let mut zs = ZhangShasha::default();
    let (cells, paths) = zs.plan(a.sizes, b.sizes, u64::MAX)?;
    if cells <= left {
        return Some(zs.distance_along(a, b, paths));
    }
    // The band along the paths that make the whole table cheaper: its passes are the
    // table's, cut down.
    let mirrored = (paths == Paths::Rightmost).then(|| {
        let (mut ma, mut mb) = (Mirrored::default(), Mirrored::default());
        ma.of(a);
        mb.of(b);
        (ma, mb)
    });
    let (a, b) = mirrored
        .as_ref()
        .map_or((a, b), |(ma, mb)| (ma.forest(), mb.forest()));
    let mut band = banded::Banded::default();
    let mut budget = band_budget;
    // First a width a little above the lower bound, where most distances sit; then, while
    // the distance is not below the width, twice the slack above the lower bound, up to the
    // upper bound, which always settles it (the distance is below it or equal to it). The
    // corridor's width, and so a run's cost, grows with that slack: a run that does not
    // settle it costs about half the next.
    let mut slack = lower / 8 + 2;
    loop {
        let k = (lower + slack).min(upper);
        let width = u32::try_from(k).ok()?;
        let (below, cells) = band.distance_below(a, b, width, budget, deadline)?;
        if below < k || k == upper {
            return Some(below);
        }
        budget -= cells;
        slack *= 2;
    }
}
