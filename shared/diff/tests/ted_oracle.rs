//! `ted::distance` against the Python `apted` package (APTED, unit costs) as an oracle, on
//! random tree pairs and on parsed code snippets, with the default limits and with budgets so
//! small that the anchored decomposition does the work.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use agentrl_diff::lang::Lang;
use agentrl_diff::parse::parse;
use agentrl_diff::ted::{Limits, distance};
use agentrl_diff::tree::Tree;

mod apted;
use apted::{oracle, oracle_inputs};

/// splitmix64: a fixed seed gives the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Preorder (label, depth) entries; depths rise by at most one per step.
type Shape = Vec<(u64, u64)>;

fn random_shape(rng: &mut Rng, nodes: u64, alphabet: u64) -> Shape {
    let mut shape: Shape = vec![(rng.below(alphabet), 0)];
    for _ in 1..nodes {
        let previous = shape.last().unwrap().1;
        shape.push((rng.below(alphabet), 1 + rng.below(previous + 1)));
    }
    shape
}

/// One unit edit: relabel, delete (children move up) or insert (adopting following siblings).
fn random_edit(rng: &mut Rng, shape: &mut Shape, alphabet: u64) {
    let len = shape.len();
    match rng.below(3) {
        0 => shape[rng.below(len as u64) as usize].0 = rng.below(alphabet),
        1 if len > 1 => {
            let i = 1 + rng.below(len as u64 - 1) as usize;
            let depth = shape[i].1;
            for entry in shape[i + 1..].iter_mut().take_while(|e| e.1 > depth) {
                entry.1 -= 1;
            }
            shape.remove(i);
        }
        _ => {
            let i = 1 + rng.below(len as u64) as usize;
            let next = shape.get(i).map_or(1, |e| e.1);
            let depth = next + rng.below(shape[i - 1].1 + 2 - next);
            let mut j = i;
            if depth == next {
                for _ in 0..rng.below(3) {
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
            shape.insert(i, (rng.below(alphabet), depth));
        }
    }
}

fn shape_tree(shape: &Shape) -> Tree {
    let mut text = String::new();
    let mut open = 0;
    for &(label, depth) in shape {
        while open > depth {
            text.push('}');
            open -= 1;
        }
        write!(text, "{{n{label}").unwrap();
        open += 1;
    }
    text.push_str(&"}".repeat(open as usize));
    Tree::from_bracket(&text).unwrap()
}

fn random_pairs() -> Vec<(Tree, Tree)> {
    let mut rng = Rng(0x7ED5_2024);
    let mut pairs = Vec::new();
    for _ in 0..100 {
        let alphabet = 2 + rng.below(5);
        let (n1, n2) = (1 + rng.below(60), 1 + rng.below(60));
        pairs.push((
            shape_tree(&random_shape(&mut rng, n1, alphabet)),
            shape_tree(&random_shape(&mut rng, n2, alphabet)),
        ));
    }
    for _ in 0..200 {
        let alphabet = 2 + rng.below(5);
        let nodes = 1 + rng.below(55);
        let before = random_shape(&mut rng, nodes, alphabet);
        let mut after = before.clone();
        for _ in 0..1 + rng.below(8) {
            random_edit(&mut rng, &mut after, alphabet);
        }
        pairs.push((shape_tree(&before), shape_tree(&after)));
    }
    pairs
}

const SNIPPETS: &[(Lang, &str, &str)] = &[
    (
        Lang::Python,
        "def add(a, b):\n    return a + b\n",
        "def add(a, b):\n    total = a + b\n    return total\n",
    ),
    (
        Lang::Python,
        "xs = [1, 2, 3]\nfor i in xs:\n    print(i)\n",
        "xs = [1, 2, 3, 4]\nfor i in xs:\n    if i % 2:\n        print(i)\n",
    ),
    (Lang::Python, "a()\nb()\nc()\n", "c()\na()\nb()\n"),
    (Lang::Python, "x = (1, 2\n", "x = (1, 2)\n"),
    (
        Lang::Python,
        "class Shape:\n    def area(self):\n        return 0\n",
        "class Square(Shape):\n    def __init__(self, s):\n        self.s = s\n    def area(self):\n        return self.s ** 2\n",
    ),
    (
        Lang::Rust,
        "fn main() { let x = 1; println!(\"{}\", x); }",
        "fn main() { let x = 2; let y = x * 3; println!(\"{} {}\", x, y); }",
    ),
    (
        Lang::Rust,
        "struct P { x: i32 }\nimpl P { fn get(&self) -> i32 { self.x } }",
        "struct P { x: Option<i32> }\nimpl P { fn get(&self) -> i32 { self.x.unwrap_or(0) } }",
    ),
    (
        Lang::JavaScript,
        "function f(a) { return a.map(x => x * 2); }",
        "function f(a) { if (!a) return []; return a.map((x) => x * 2).filter(Boolean); }",
    ),
    (
        Lang::TypeScript,
        "interface A { x: number }\nconst a: A = { x: 1 };",
        "interface A { x: number; y?: string }\nconst a: A = { x: 1, y: 'k' };",
    ),
    (
        Lang::Tsx,
        "const C = () => <div>hi</div>;",
        "const C = ({ n }) => <div className=\"a\">hi {n}</div>;",
    ),
    (
        Lang::Go,
        "package main\nfunc f(x int) int { return x + 1 }\n",
        "package main\nimport \"fmt\"\nfunc f(x int) int { fmt.Println(x); return x + 2 }\n",
    ),
    (
        Lang::Java,
        "class A { int f(int x) { return x; } }",
        "class A { int f(int x) { if (x < 0) { return -x; } return x; } }",
    ),
    (
        Lang::Java,
        "class A { void a() {} void b() { int y = 1; } }",
        "class A { void b() { int y = 2; } void a() {} }",
    ),
];

fn normalise(lang: Lang, source: &str) -> Tree {
    let deadline = Instant::now() + Duration::from_secs(5);
    let syntax = parse(lang, source, deadline).unwrap();
    Tree::from_syntax(lang, &syntax, source, 1_000_000).unwrap()
}

fn far(region_work: u64, total_work: u64) -> Limits {
    Limits {
        region_work,
        total_work,
        band_work: total_work,
        deadline: Instant::now() + Duration::from_secs(600),
    }
}

/// Checks every pair under every set of limits; returns how many decomposed results (the
/// small budgets) were certified exact.
fn check(name: &str, pairs: &[(Tree, Tree)], expected: &[u64]) -> usize {
    let mut certified = 0;
    for (k, ((a, b), &truth)) in pairs.iter().zip(expected).enumerate() {
        let case = || format!("{name} case {k}: {} -> {}", a.to_bracket(), b.to_bracket());
        let whole = distance(a, b, &Limits::default());
        assert!(
            whole.exact,
            "default limits must be exact on small trees: {}",
            case()
        );
        assert_eq!(whole.value, truth, "{}", case());
        for limits in [far(0, 0), far(16, 1_000), far(200, u64::MAX)] {
            let split = distance(a, b, &limits);
            assert!(
                split.value >= truth,
                "{split:?} below apted's {truth}: {}",
                case()
            );
            if split.exact {
                assert_eq!(split.value, truth, "certified exact but wrong: {}", case());
                certified += 1;
            }
        }
    }
    certified
}

#[test]
fn random_trees_agree_with_apted() {
    let pairs = random_pairs();
    let expected = oracle(&oracle_inputs(&pairs));
    let certified = check("random", &pairs, &expected);
    println!(
        "decomposed results certified exact: {certified} of {}",
        3 * pairs.len()
    );
    // The edited pairs are mostly a few edits apart: certification must succeed on many.
    assert!(certified > pairs.len(), "only {certified} certified");
}

#[test]
fn code_snippets_agree_with_apted() {
    let pairs: Vec<(Tree, Tree)> = SNIPPETS
        .iter()
        .map(|&(lang, before, after)| (normalise(lang, before), normalise(lang, after)))
        .collect();
    let expected = oracle(&oracle_inputs(&pairs));
    assert!(expected.iter().all(|&d| d > 0));
    check("snippet", &pairs, &expected);
}
