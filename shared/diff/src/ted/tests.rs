//! Tests of the distance: hand-computed cases, a textbook recursion, the bounds and budgets,
//! and random tree pairs, independent or a few edits apart.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::anchored::Engine;
use super::banded::Banded;
use super::bounds::{bit_parallel, edit_distance_capped, landau_vishkin, preorder};
use super::matching::mapping;
use super::side::Side;
use super::zhang_shasha::{Forest, Paths, ZhangShasha};
use super::{Distance, Limits, certify, distance};
use crate::tree::Tree;

fn tree(text: &str) -> Tree {
    Tree::from_bracket(text).unwrap()
}

fn far_limits(region_work: u64, total_work: u64) -> Limits {
    Limits {
        region_work,
        total_work,
        band_work: total_work,
        deadline: Instant::now() + Duration::from_secs(600),
    }
}

/// Both trees as forests, `a`'s labels (`labels`) in `b`'s ids.
fn forests<'t>(labels: &'t [u32], a: &'t Tree, b: &'t Tree) -> (Forest<'t>, Forest<'t>) {
    (
        Forest {
            labels,
            sizes: a.sizes(),
        },
        Forest {
            labels: b.labels(),
            sizes: b.sizes(),
        },
    )
}

fn far_deadline() -> Instant {
    Instant::now() + Duration::from_secs(600)
}

fn zs(a: &Tree, b: &Tree) -> u64 {
    let labels = a.labels_in(b);
    ZhangShasha::default().distance(
        Forest {
            labels: &labels,
            sizes: a.sizes(),
        },
        Forest {
            labels: b.labels(),
            sizes: b.sizes(),
        },
    )
}

/// The textbook forest recursion on the rightmost roots, memoised by postorder ranges: slow,
/// recursive and independent of the keyroot tables under test.
struct Naive<'t> {
    labels_a: &'t [u32],
    sizes_a: &'t [u32],
    labels_b: &'t [u32],
    sizes_b: &'t [u32],
    memo: Vec<u32>,
}

impl<'t> Naive<'t> {
    fn new(la: &'t [u32], sa: &'t [u32], lb: &'t [u32], sb: &'t [u32]) -> Naive<'t> {
        let cells = (la.len() + 1).pow(2) * (lb.len() + 1).pow(2);
        Naive {
            labels_a: la,
            sizes_a: sa,
            labels_b: lb,
            sizes_b: sb,
            memo: vec![u32::MAX; cells],
        }
    }

    fn forest(&mut self, a: (usize, usize), b: (usize, usize)) -> u32 {
        if a.0 == a.1 || b.0 == b.1 {
            return (a.1 - a.0 + b.1 - b.0) as u32;
        }
        let (n1, m1) = (self.labels_a.len() + 1, self.labels_b.len() + 1);
        let key = ((a.0 * n1 + a.1) * m1 + b.0) * m1 + b.1;
        if self.memo[key] != u32::MAX {
            return self.memo[key];
        }
        let (v, w) = (a.1 - 1, b.1 - 1);
        let (lv, lw) = (
            v + 1 - self.sizes_a[v] as usize,
            w + 1 - self.sizes_b[w] as usize,
        );
        let delete = self.forest((a.0, v), b) + 1;
        let insert = self.forest(a, (b.0, w)) + 1;
        let relabel = u32::from(self.labels_a[v] != self.labels_b[w]);
        let matched = self.forest((a.0, lv), (b.0, lw)) + self.forest((lv, v), (lw, w)) + relabel;
        let best = delete.min(insert).min(matched);
        self.memo[key] = best;
        best
    }
}

fn naive(a: &Tree, b: &Tree) -> u64 {
    let labels = a.labels_in(b);
    let mut naive = Naive::new(&labels, a.sizes(), b.labels(), b.sizes());
    u64::from(naive.forest((0, a.len()), (0, b.len())))
}

fn levenshtein(a: &[u32], b: &[u32]) -> u64 {
    let mut row: Vec<u64> = (0..=b.len() as u64).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i as u64 + 1;
        for (j, &y) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + u64::from(x != y));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[test]
fn hand_computed_distances() {
    let cases = [
        ("{a{b}{c}}", "{a{c}}", 1),
        ("{a}", "{b}", 1),
        ("{a}", "{a}", 0),
        ("{a{b}{c}}", "{a{b}{c}{d}}", 1),
        ("{a{b{c}{d}}}", "{a{c}{d}}", 1),
        ("{a{b}{c}}", "{x{y}{z}}", 3),
        ("{a}", "{b{c}{d}}", 3),
        // Zhang & Shasha (1989): f(d(a, c(b)), e) against f(c(d(a, b)), e).
        ("{f{d{a}{c{b}}}{e}}", "{f{c{d{a}{b}}}{e}}", 2),
    ];
    for (before, after, expected) in cases {
        let (a, b) = (tree(before), tree(after));
        assert_eq!(zs(&a, &b), expected, "{before} -> {after}");
        assert_eq!(
            distance(&a, &b, &Limits::default()),
            Distance {
                value: expected,
                exact: true
            },
            "{before} -> {after}"
        );
        assert_eq!(naive(&a, &b), expected, "{before} -> {after}");
    }
}

#[test]
fn forest_slices_are_measured_as_forests() {
    // Children of the roots: {b}{c{d}} against {c{d}}{e}.
    let (a, b) = (tree("{r{b}{c{d}}}"), tree("{r{c{d}}{e}}"));
    let labels = a.labels_in(&b);
    let n = a.len() - 1;
    let m = b.len() - 1;
    let d = ZhangShasha::default().distance(
        Forest {
            labels: &labels[..n],
            sizes: &a.sizes()[..n],
        },
        Forest {
            labels: &b.labels()[..m],
            sizes: &b.sizes()[..m],
        },
    );
    assert_eq!(d, 2);
    let empty = Forest {
        labels: &[],
        sizes: &[],
    };
    let mut zs = ZhangShasha::default();
    assert_eq!(
        zs.distance(
            empty,
            Forest {
                labels: &labels,
                sizes: a.sizes()
            }
        ),
        4
    );
    assert_eq!(
        zs.distance(
            Forest {
                labels: &labels,
                sizes: a.sizes()
            },
            empty
        ),
        4
    );
    assert_eq!(zs.distance(empty, empty), 0);
    assert_eq!(zs.work(&[], 100), 0);
    assert_eq!(ZhangShasha::work_right(&[], 100), 0);
    assert_eq!(
        zs.plan(&[], a.sizes(), 100).map(|(cells, _)| cells),
        Some(0)
    );
    // Keyroots of {r{b}{c{d}}}: c (size 2) and the virtual root (size 4); b and r share
    // leftmost leaf 0 with the virtual root.
    assert_eq!(zs.work(a.sizes(), u64::MAX), 6);
}

#[test]
fn identical_trees_cost_nothing() {
    let text = format!("{{m{}}}", "{s{x}{y{z}}}".repeat(5_000));
    let (a, b) = (tree(&text), tree(&text));
    assert_eq!(
        distance(&a, &b, &Limits::default()),
        Distance {
            value: 0,
            exact: true
        }
    );
    let small = tree("{a{b}}");
    assert_eq!(
        distance(&small, &small.clone(), &far_limits(0, 0)),
        Distance {
            value: 0,
            exact: true
        }
    );
}

#[test]
fn the_global_matching_is_cut_down_to_an_edit_mapping() {
    // Swapped subtrees match crosswise, which no edit mapping can keep both of; a container
    // that lost a child to its parent, or adopted its sibling, matches a container that holds
    // other nodes: keeping the container would drop more pairs than it is worth.
    for (before, after) in [
        ("{r{x{p}{q}}{y{s}{t}}}", "{r{y{s}{t}}{x{p}{q}}}"),
        ("{r{c{u{v}}{w{z}}}}", "{r{u{v}}{c{w{z}}}}"),
        ("{r{c{u{v}}}{w{z}}}", "{r{c{u{v}}{w{z}}}}"),
    ] {
        let (a, b) = (tree(before), tree(after));
        let labels = a.labels_in(&b);
        let (side_a, side_b) = (
            Side::new(&labels, a.sizes()),
            Side::new(b.labels(), b.sizes()),
        );
        let (_, cost) = mapping(&side_a, &side_b);
        assert_eq!(cost, zs(&a, &b), "{before} -> {after}");
    }
}

fn chain(depth: usize, leaf: &str) -> Tree {
    tree(&format!(
        "{}{{{leaf}}}{}",
        "{a".repeat(depth),
        "}".repeat(depth)
    ))
}

#[test]
fn deep_chains_do_not_overflow_the_stack() {
    let depth = 100_000;
    let (b, c) = (chain(depth, "b"), chain(depth, "c"));
    let longer = chain(depth + 1, "b");
    // Default budgets, but no deadline: unoptimised test builds walk 100k levels slowly.
    let budgets = Limits::default();
    for limits in [
        far_limits(budgets.region_work, budgets.total_work),
        far_limits(64, 1_000),
    ] {
        assert_eq!(
            distance(&b, &c, &limits),
            Distance {
                value: 1,
                exact: true
            }
        );
        assert_eq!(
            distance(&b, &longer, &limits),
            Distance {
                value: 1,
                exact: true
            }
        );
        assert_eq!(
            distance(&b, &b.clone(), &limits),
            Distance {
                value: 0,
                exact: true
            }
        );
    }
    // Without exact regions: the shorter chain is a subtree of the longer one, which costs
    // exactly the difference in size; chains of the same size pair level by level.
    let limits = far_limits(0, 0);
    assert_eq!(
        distance(&b, &c, &limits),
        Distance {
            value: 1,
            exact: true
        }
    );
    assert_eq!(
        distance(&b, &longer, &limits),
        Distance {
            value: 1,
            exact: true
        }
    );
}

#[test]
fn lower_bounds_certify_a_decomposed_result() {
    // Too big for one region: the statement lists are aligned on hashes and only the changed
    // statement is solved exactly; both label orders then confirm the sum.
    let body = "{s{x}{y{z}}}".repeat(200);
    let (a, b) = (
        tree(&format!("{{m{body}{{s{{q}}}}{body}}}")),
        tree(&format!("{{m{body}{{s{{w}}}}{body}}}")),
    );
    let limits = far_limits(10_000, 100_000);
    assert_eq!(
        distance(&a, &b, &limits),
        Distance {
            value: 1,
            exact: true
        }
    );
}

#[test]
fn past_deadline_still_returns_an_upper_bound() {
    let body = "{s{x}{y{z}}}".repeat(300);
    let (a, b) = (
        tree(&format!("{{m{body}{{k}}}}")),
        tree(&format!("{{m{{k}}{body}}}")),
    );
    let limits = Limits {
        region_work: 0,
        total_work: 0,
        band_work: 0,
        deadline: Instant::now(),
    };
    let result = distance(&a, &b, &limits);
    assert!(result.value >= 2, "{result:?}");
    assert!(result.value <= (a.len() + b.len()) as u64);
}

#[test]
fn preorder_follows_children_left_to_right() {
    let t = tree("{a{b{c}{d}}{e{f}}}");
    let name = |id: u32| t.label(t.labels().iter().position(|&l| l == id).unwrap());
    let post: Vec<&str> = t.labels().iter().map(|&l| name(l)).collect();
    assert_eq!(post, ["c", "d", "b", "f", "e", "a"]);
    let pre: Vec<&str> = preorder(t.labels(), t.sizes())
        .into_iter()
        .map(name)
        .collect();
    assert_eq!(pre, ["a", "b", "c", "d", "e", "f"]);
}

#[test]
fn capped_string_distance() {
    let far = Instant::now() + Duration::from_secs(60);
    let (kitten, sitting) = ([1, 2, 3, 3, 4, 5], [6, 2, 3, 3, 2, 5, 7]);
    assert_eq!(levenshtein(&kitten, &sitting), 3);
    for cap in 0..6 {
        assert_eq!(
            edit_distance_capped(&kitten, &sitting, cap, far),
            cap.min(3),
            "cap {cap}"
        );
    }
    assert_eq!(edit_distance_capped(&[], &[1, 2], 5, far), 2);
    assert_eq!(edit_distance_capped(&[], &[], 5, far), 0);
    assert_eq!(bit_parallel(&[], &[1, 2], far), Some(2));
    // Past the deadline only what is already proven comes back.
    assert_eq!(
        edit_distance_capped(&[1; 500], &[2; 600], 550, Instant::now()),
        100
    );
}

#[test]
fn large_string_distances_use_the_bit_vectors() {
    let far = Instant::now() + Duration::from_secs(60);
    let a: Vec<u32> = (0..3000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % 5)
        .collect();
    let b: Vec<u32> = (0..2500u32).map(|i| i.wrapping_mul(40_503) % 5).collect();
    let expected = levenshtein(&a, &b);
    assert_eq!(bit_parallel(&a, &b, far), Some(expected));
    assert_eq!(bit_parallel(&b, &a, far), Some(expected));
    // Far too many diagonal steps for the budget: the search stops early with a partial bound.
    let partial = landau_vishkin(&a, &b, expected + 1, 10_000, far).unwrap_err();
    assert!(partial < expected);
    assert_eq!(edit_distance_capped(&a, &b, expected + 1, far), expected);
    assert_eq!(edit_distance_capped(&a, &b, expected, far), expected);
    assert_eq!(
        edit_distance_capped(&a, &b, expected - 1, far),
        expected - 1
    );
}

/// A tree as preorder (label, depth) entries: any sequence starting at depth 0 whose depths
/// rise by at most one per step, with no other depth-0 entry, is a valid tree.
type Shape = Vec<(u8, u32)>;

const ALPHABET: [&str; 4] = ["a", "b", "c", "d"];

fn shape(nodes: &[(u8, u8)]) -> Shape {
    let mut out: Shape = Vec::with_capacity(nodes.len());
    for &(label, choice) in nodes {
        let depth = match out.last() {
            None => 0,
            Some(&(_, previous)) => 1 + u32::from(choice) % (previous + 1),
        };
        out.push((label % ALPHABET.len() as u8, depth));
    }
    out
}

/// Applies one unit edit: relabel, delete (children move up) or insert (adopting siblings).
fn edit(shape: &mut Shape, (kind, pos, x, y): (u8, u16, u8, u8)) {
    let len = shape.len();
    let pos = usize::from(pos);
    match kind % 3 {
        0 => shape[pos % len].0 = x % ALPHABET.len() as u8,
        1 if len > 1 => {
            let i = 1 + pos % (len - 1);
            let depth = shape[i].1;
            for entry in shape[i + 1..].iter_mut().take_while(|e| e.1 > depth) {
                entry.1 -= 1;
            }
            shape.remove(i);
        }
        _ => {
            let i = 1 + pos % len;
            let next = shape.get(i).map_or(1, |e| e.1.max(1));
            let depth = next + u32::from(x) % (shape[i - 1].1 + 2 - next);
            let mut j = i;
            if depth == next {
                for _ in 0..y % 3 {
                    if shape.get(j).is_none_or(|e| e.1 != depth) {
                        break;
                    }
                    shape[j].1 += 1;
                    j += 1;
                    while shape.get(j).is_some_and(|e| e.1 > depth) {
                        shape[j].1 += 1;
                        j += 1;
                    }
                }
            }
            shape.insert(i, (y % ALPHABET.len() as u8, depth));
        }
    }
}

fn bracket(shape: &Shape) -> String {
    let mut out = String::new();
    let mut open = 0;
    for &(label, depth) in shape {
        while open > depth {
            out.push('}');
            open -= 1;
        }
        out.push('{');
        out.push_str(ALPHABET[usize::from(label)]);
        open += 1;
    }
    out.push_str(&"}".repeat(open as usize));
    out
}

fn tree_pair() -> impl Strategy<Value = (Tree, Tree)> {
    tree_pair_of(40, 6)
}

/// Trees of up to `max_nodes` nodes, the second one independent (30%) or up to `max_edits`
/// unit edits away from the first.
fn tree_pair_of(max_nodes: usize, max_edits: usize) -> impl Strategy<Value = (Tree, Tree)> {
    let nodes = move || prop::collection::vec((any::<u8>(), any::<u8>()), 1..=max_nodes);
    let edits = prop::collection::vec(
        (any::<u8>(), any::<u16>(), any::<u8>(), any::<u8>()),
        0..max_edits,
    );
    (nodes(), prop::option::weighted(0.3, nodes()), edits).prop_map(|(first, second, edits)| {
        let before = shape(&first);
        let after = match second {
            Some(nodes) => shape(&nodes),
            None => edits.into_iter().fold(before.clone(), |mut s, e| {
                edit(&mut s, e);
                s
            }),
        };
        (tree(&bracket(&before)), tree(&bracket(&after)))
    })
}

/// `tree` with every node's children in reverse order, written out from its labels: built
/// apart from the library's own mirroring.
fn mirrored(tree: &Tree) -> Tree {
    fn write(tree: &Tree, node: usize, out: &mut String) {
        out.push('{');
        for c in tree.label(node).chars() {
            if matches!(c, '\\' | '{' | '}') {
                out.push('\\');
            }
            out.push(c);
        }
        let children: Vec<usize> = tree.children(node).collect();
        for &child in children.iter().rev() {
            write(tree, child, out);
        }
        out.push('}');
    }
    let mut text = String::new();
    write(tree, tree.len() - 1, &mut text);
    Tree::from_bracket(&text).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn runs_along_rightmost_paths_give_the_same_distance_for_the_mirrored_work((a, b) in tree_pair()) {
        let exact = naive(&a, &b);
        let labels = a.labels_in(&b);
        let (fa, fb) = forests(&labels, &a, &b);
        let mut zs = ZhangShasha::default();
        prop_assert_eq!(zs.distance_along(fa, fb, Paths::Rightmost), exact);
        prop_assert_eq!(zs.distance_along(fa, fb, Paths::Leftmost), exact);
        // Rightmost paths cost what leftmost ones cost on the mirrored trees.
        let (ma, mb) = (mirrored(&a), mirrored(&b));
        prop_assert_eq!(naive(&ma, &mb), exact);
        for (tree, mirror) in [(&a, &ma), (&b, &mb)] {
            prop_assert_eq!(
                ZhangShasha::work_right(tree.sizes(), u64::MAX),
                zs.work(mirror.sizes(), u64::MAX)
            );
        }
        // The plan takes the cheaper way, and nothing over its budget.
        let (left, right) = (
            zs.work(a.sizes(), u64::MAX) * zs.work(b.sizes(), u64::MAX),
            ZhangShasha::work_right(a.sizes(), u64::MAX) * ZhangShasha::work_right(b.sizes(), u64::MAX),
        );
        let (cells, paths) = zs.plan(a.sizes(), b.sizes(), u64::MAX).unwrap();
        prop_assert_eq!(cells, left.min(right));
        prop_assert_eq!(paths == Paths::Rightmost, right < left);
        prop_assert!(zs.plan(a.sizes(), b.sizes(), left.min(right) - 1).is_none());
    }

    #[test]
    fn zhang_shasha_matches_the_textbook_recursion((a, b) in tree_pair()) {
        let exact = naive(&a, &b);
        prop_assert_eq!(zs(&a, &b), exact);
        prop_assert_eq!(distance(&a, &b, &Limits::default()), Distance { value: exact, exact: true });
    }

    #[test]
    fn decomposition_is_an_upper_bound(
        (a, b) in tree_pair(),
        region_work in prop::sample::select(vec![0u64, 4, 40, 400]),
        total_work in prop::sample::select(vec![0u64, 300, u64::MAX]),
    ) {
        let exact = naive(&a, &b);
        let result = distance(&a, &b, &far_limits(region_work, total_work));
        prop_assert!(result.value >= exact, "{:?} < {}", result, exact);
        if result.exact {
            prop_assert_eq!(result.value, exact);
        }
        // Each decomposition alone, before certification, is never below either.
        let labels = a.labels_in(&b);
        let (side_a, side_b) = (Side::new(&labels, a.sizes()), Side::new(b.labels(), b.sizes()));
        let limits = far_limits(region_work, total_work);
        let (value, proven) = Engine::new(&side_a, &side_b, &limits).decompose();
        prop_assert!(value >= exact && (!proven || value == exact));
        // So are the global matching's mapping and the decomposition it guides.
        let (guide, matched) = mapping(&side_a, &side_b);
        prop_assert!(matched >= exact, "matching {} < {}", matched, exact);
        let (guided, proven) = Engine::new(&side_a, &side_b, &limits).guided_by(&guide).decompose();
        prop_assert!(guided >= exact && (!proven || guided == exact), "guided {} < {}", guided, exact);
    }

    #[test]
    fn a_pair_the_file_budget_holds_whole_is_solved_exactly((a, b) in tree_pair()) {
        // No region may be solved on its own, but the file's budget holds the whole pair.
        let result = distance(&a, &b, &far_limits(0, u64::MAX));
        prop_assert_eq!(result, Distance { value: naive(&a, &b), exact: true });
    }

    #[test]
    fn the_band_answers_every_distance_below_its_width((a, b) in tree_pair()) {
        let exact = naive(&a, &b);
        let labels = a.labels_in(&b);
        let (fa, fb) = forests(&labels, &a, &b);
        let mut banded = Banded::default();
        for k in [1, 2, 3, exact.saturating_sub(1), exact, exact + 1, exact + 7, 200] {
            let k = u32::try_from(k.max(1)).unwrap();
            let (below, cells) = banded.distance_below(fa, fb, k, u64::MAX, far_deadline()).unwrap();
            prop_assert_eq!(below, exact.min(u64::from(k)), "k {}", k);
            if cells > 0 {
                // A smaller budget is refused before any work, or met by counting exactly
                // the cells the estimate overstated; the answer stays.
                if let Some((again, fewer)) = banded.distance_below(fa, fb, k, cells - 1, far_deadline()) {
                    prop_assert_eq!(again, below);
                    prop_assert!(fewer < cells);
                }
                prop_assert_eq!(banded.distance_below(fa, fb, k, 0, far_deadline()), None);
                // Past its deadline a run gives up.
                prop_assert_eq!(banded.distance_below(fa, fb, k, cells, Instant::now()), None);
            }
        }
    }

    #[test]
    fn the_corridor_keeps_every_distance_below_the_width_on_larger_trees(
        (a, b) in tree_pair_of(300, 16)
    ) {
        // Trees of hundreds of nodes a few edits apart: the prefix and suffix string
        // distances leave narrow corridors, checked against the whole table.
        let exact = zs(&a, &b);
        let labels = a.labels_in(&b);
        let (fa, fb) = forests(&labels, &a, &b);
        let mut banded = Banded::default();
        for k in [exact.saturating_sub(1), exact, exact + 1, exact + 4, 2 * exact + 3] {
            let k = u32::try_from(k.max(1)).unwrap();
            let (below, _) = banded.distance_below(fa, fb, k, u64::MAX, far_deadline()).unwrap();
            prop_assert_eq!(below, exact.min(u64::from(k)), "k {}", k);
        }
    }

    #[test]
    fn an_uncertified_bound_is_settled_exactly(
        (a, b) in tree_pair(),
        lower_share in 0u64..=4,
        slack in prop::sample::select(vec![0u64, 1, 3, 20]),
    ) {
        let exact = naive(&a, &b);
        let labels = a.labels_in(&b);
        let (fa, fb) = forests(&labels, &a, &b);
        let (lower, upper) = (exact * lower_share / 4, exact + slack);
        // Nothing left for the whole pair: the band settles it, from its guess or the bound.
        prop_assert_eq!(certify(fa, fb, lower, upper, (0, u64::MAX, far_deadline())), Some(exact));
        // The whole pair fits what is left: Zhang–Shasha settles it, the band unused.
        prop_assert_eq!(certify(fa, fb, lower, upper, (u64::MAX, 0, far_deadline())), Some(exact));
        // Neither fits: nothing, unless the sizes alone settle it.
        let none = certify(fa, fb, lower, upper, (0, 0, far_deadline()));
        prop_assert!(none.is_none() || none == Some(exact), "{:?}", none);
    }

    #[test]
    fn label_sequence_distances_are_lower_bounds((a, b) in tree_pair()) {
        let exact = naive(&a, &b);
        let far = Instant::now() + Duration::from_secs(60);
        let labels = a.labels_in(&b);
        let post = levenshtein(&labels, b.labels());
        let pre_a = preorder(&labels, a.sizes());
        let pre_b = preorder(b.labels(), b.sizes());
        let pre = levenshtein(&pre_a, &pre_b);
        prop_assert!(post <= exact && pre <= exact, "post {} pre {} ted {}", post, pre, exact);
        prop_assert_eq!(edit_distance_capped(&labels, b.labels(), exact + 1, far), post);
        prop_assert_eq!(edit_distance_capped(&pre_a, &pre_b, exact + 1, far), pre);
    }

    #[test]
    fn capped_distance_agrees_with_the_table(
        a in prop::collection::vec(0u32..3, 0..200),
        b in prop::collection::vec(0u32..3, 0..200),
    ) {
        let far = Instant::now() + Duration::from_secs(60);
        let d = levenshtein(&a, &b);
        prop_assert_eq!(bit_parallel(&a, &b, far), Some(d));
        for cap in [0, 1, d / 2, d.saturating_sub(1), d, d + 1, d + 5] {
            prop_assert_eq!(edit_distance_capped(&a, &b, cap, far), d.min(cap), "cap {}", cap);
            prop_assert_eq!(landau_vishkin(&a, &b, cap, u64::MAX, far), Ok(d.min(cap)));
        }
    }
}
