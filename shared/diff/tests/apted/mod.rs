//! The Python `apted` package (APTED, unit costs) as an exact oracle for the tests.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use agentrl_diff::tree::Tree;
use agentrl_testkit::venv_python;

const ORACLE: &str = r#"
import json, sys
from apted import APTED
from apted.helpers import Tree
for line in sys.stdin:
    case = json.loads(line)
    print(APTED(Tree.from_text(case["a"]), Tree.from_text(case["b"])).compute_edit_distance())
"#;

/// APTED distances for all pairs, from one Python process.
pub fn oracle(pairs: &[(String, String)]) -> Vec<u64> {
    let mut child = Command::new(venv_python())
        .args(["-c", ORACLE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python starts");
    let mut stdin = child.stdin.take().unwrap();
    let input: String = pairs
        .iter()
        .map(|(a, b)| serde_json::json!({"a": a, "b": b}).to_string() + "\n")
        .collect();
    // Written from another thread so a full stdout pipe can never stall both processes.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let results: Vec<u64> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| {
            line.unwrap()
                .trim()
                .parse()
                .expect("apted prints an integer")
        })
        .collect();
    writer.join().unwrap().unwrap();
    assert!(child.wait().unwrap().success(), "the apted oracle failed");
    assert_eq!(results.len(), pairs.len());
    results
}

/// Bracket notation with labels replaced by `L<id>`: apted reads no escapes, and ids from
/// `labels_in` keep equal labels equal across both trees.
fn oracle_text(labels: &[u32], sizes: &[u32]) -> String {
    enum Step {
        Open(usize),
        Close,
    }
    let mut out = String::new();
    let mut stack = vec![Step::Open(labels.len() - 1)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Close => out.push('}'),
            Step::Open(node) => {
                write!(out, "{{L{}", labels[node]).unwrap();
                stack.push(Step::Close);
                // Pushed right to left, so the leftmost child is opened first.
                let first = node + 1 - sizes[node] as usize;
                let mut next = node;
                while next > first {
                    stack.push(Step::Open(next - 1));
                    next = next - sizes[next - 1] as usize;
                }
            }
        }
    }
    out
}

/// Both trees of each pair as the oracle reads them.
pub fn oracle_inputs(pairs: &[(Tree, Tree)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| {
            (
                oracle_text(&a.labels_in(b), a.sizes()),
                oracle_text(b.labels(), b.sizes()),
            )
        })
        .collect()
}
