//! `agentrl diff-score` as a user runs it: on files, on directories, and on a directory of
//! pairs whose emitted trees an independent implementation (Python `apted`) re-scores.

mod support;

use support::agentrl;

use agentrl_testkit::venv_python;
use std::{
    fs,
    io::Write,
    path::Path,
    process::{Command, Stdio},
};

use serde_json::Value;

fn write(path: &Path, content: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// APTED distances of bracket-notation tree pairs (labels with `\` escapes), one per line.
const APTED: &str = r#"
import json, sys
from apted import APTED
from apted.helpers import Tree

def safe(text, ids):
    # Re-label every node with a token apted's parser accepts, keeping label equality.
    out, label, i = [], None, 0
    while i < len(text):
        c = text[i]
        if c == '\\':
            label += text[i + 1]; i += 2; continue
        if c in '{}':
            if label is not None:
                out.append('L%d' % ids.setdefault(label, len(ids)))
            label = '' if c == '{' else None
            out.append(c)
        else:
            label += c
        i += 1
    return ''.join(out)

for line in sys.stdin:
    a, b = json.loads(line)
    ids = {}
    print(APTED(Tree.from_text(safe(a, ids)), Tree.from_text(safe(b, ids))).compute_edit_distance(), flush=True)
"#;

fn apted(pairs: &[(String, String)]) -> Vec<u64> {
    let mut child = Command::new(venv_python())
        .args(["-c", APTED])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for pair in pairs {
        writeln!(stdin, "{}", serde_json::to_string(pair).unwrap()).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// Small real edits in every language: the kind of change an agent makes.
const PAIRS: &[(&str, &str, &str, &str)] = &[
    (
        "py-guard",
        "py",
        "def f(x):\n    return x + 1\n",
        "def f(x):\n    if x is None:\n        return 0\n    return x + 1\n",
    ),
    (
        "py-rename",
        "py",
        "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n",
        "def total(items):\n    s = 0\n    for x in items:\n        s += x\n    return s\n",
    ),
    (
        "js-escape",
        "js",
        "const s = \"{a}\";\nfunction g(a) { return a.b; }\n",
        "const s = \"{a\\\\}\";\nfunction g(a) { return a?.b ?? null; }\n",
    ),
    (
        "ts-type",
        "ts",
        "function add(a: number, b: number): number {\n  return a + b;\n}\n",
        "function add(a: number, b: number): number {\n  const sum = a + b;\n  return sum;\n}\n",
    ),
    (
        "tsx-jsx",
        "tsx",
        "export const A = () => <div>{x}</div>;\n",
        "export const A = () => <div className=\"a\">{x}</div>;\n",
    ),
    (
        "rs-match",
        "rs",
        "fn f(x: Option<u8>) -> u8 {\n    x.unwrap()\n}\n",
        "fn f(x: Option<u8>) -> u8 {\n    match x {\n        Some(v) => v,\n        None => 0,\n    }\n}\n",
    ),
    (
        "go-loop",
        "go",
        "package p\n\nfunc S(xs []int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n",
        "package p\n\nfunc S(xs []int) (s int) {\n\tfor i := range xs {\n\t\ts += xs[i]\n\t}\n\treturn\n}\n",
    ),
    (
        "java-if",
        "java",
        "class A {\n  int f(int n) { return 10 / n; }\n}\n",
        "class A {\n  int f(int n) {\n    if (n == 0) return 0;\n    return 10 / n;\n  }\n}\n",
    ),
    ("broken", "py", "x = )\ny = 2\n", "x = 1\ny = 2\n"),
];

#[test]
fn pairs_emit_trees_whose_distance_apted_confirms() {
    let dir = tempfile::tempdir().unwrap();
    for (name, ext, before, after) in PAIRS {
        write(&dir.path().join(name).join(format!("before.{ext}")), before);
        write(&dir.path().join(name).join(format!("after.{ext}")), after);
    }
    write(&dir.path().join("incomplete/before.py"), "x = 1\n");
    let (ok, stdout, stderr) = agentrl(&[
        "diff-score",
        "--pairs",
        dir.path().to_str().unwrap(),
        "--emit-trees",
    ]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("skipping incomplete"), "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut names: Vec<&str> = PAIRS.iter().map(|p| p.0).collect();
    names.sort_unstable();
    let got: Vec<&str> = lines.iter().map(|l| l["pair"].as_str().unwrap()).collect();
    assert_eq!(got, names);

    let trees: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            (
                l["tree_before"].as_str().unwrap().to_owned(),
                l["tree_after"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let oracle = apted(&trees);
    for (line, truth) in lines.iter().zip(oracle) {
        let distance = line["tree_edit_distance"].as_u64().unwrap();
        assert_eq!(
            line["exact"], true,
            "small pairs are solved exactly: {line}"
        );
        assert_eq!(distance, truth, "{}", line["pair"]);
        let (nb, na) = (
            line["nodes_before"].as_u64().unwrap(),
            line["nodes_after"].as_u64().unwrap(),
        );
        let similarity = 1.0 - distance as f64 / (nb + na) as f64;
        assert!((line["ast_similarity"].as_f64().unwrap() - similarity).abs() < 1e-12);
        assert!(line["elapsed_ms"].as_f64().unwrap() > 0.0);
    }
    let broken = lines.iter().find(|l| l["pair"] == "broken").unwrap();
    assert!(broken["errors_before"].as_u64().unwrap() > 0);
    assert_eq!(broken["errors_after"], 0);
    assert!(broken["tree_before"].as_str().unwrap().contains("ERROR"));
}

#[test]
fn directories_are_scored_with_flags_and_the_tests_passed_gate() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (dir.path().join("before"), dir.path().join("after"));
    let source = "def parse(s):\n    return int(s)\n\n\ndef render(n):\n    return str(n)\n";
    let tests = "from app import parse\n\n\ndef test_parse():\n    assert parse('1') == 1\n    assert parse('2') == 2\n";
    for root in [&before, &after] {
        write(&root.join("README.md"), "# app\n");
    }
    write(&before.join("app.py"), source);
    write(&before.join("tests/test_app.py"), tests);
    write(
        &after.join("app.py"),
        &source.replace("int(s)", "int(s.strip())"),
    );
    write(
        &after.join("tests/test_app.py"),
        &tests.replace("    assert parse('2') == 2\n", ""),
    );

    let args = [
        "diff-score",
        "--before",
        before.to_str().unwrap(),
        "--after",
        after.to_str().unwrap(),
    ];
    let (ok, stdout, stderr) = agentrl(&[&args[..], &["--tests-passed"]].concat());
    assert!(ok, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let kinds: Vec<&str> = report["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"assertion_removed"), "{kinds:?}");
    assert!(kinds.contains(&"test_modified"), "{kinds:?}");
    assert_eq!(report["files_touched"], 2);
    assert_eq!(
        report["reward_multiplier"], 0.1,
        "a removed assertion forces the floor"
    );
    let readme = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "README.md")
        .unwrap();
    assert_eq!(readme["status"], "unchanged");

    write(&after.join("tests/test_app.py"), tests);
    let (_, stdout, _) = agentrl(&[&args[..], &["--tests-passed"]].concat());
    let honest: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(honest["flags"], serde_json::json!([]));
    assert!(
        honest["reward_multiplier"].as_f64().unwrap() > 0.5,
        "{honest}"
    );
    let (_, stdout, _) = agentrl(&args);
    let untested: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        untested["reward_multiplier"], 0.1,
        "without --tests-passed, the floor"
    );
    assert_eq!(untested["minimality_score"], honest["minimality_score"]);
}

#[test]
fn language_override_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a/script"), dir.path().join("b/script"));
    write(&a, "x = 1\n");
    write(&b, "x = 2\n");
    let (ok, stdout, _) = agentrl(&[
        "diff-score",
        "--before",
        a.to_str().unwrap(),
        "--after",
        b.to_str().unwrap(),
        "--lang",
        "python",
    ]);
    assert!(ok);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["tree_edit_distance"], 1);
    assert_eq!(report["files"][0]["language"], "python");

    let (ok, _, stderr) = agentrl(&[
        "diff-score",
        "--before",
        a.to_str().unwrap(),
        "--after",
        b.to_str().unwrap(),
        "--lang",
        "cobol",
    ]);
    assert!(!ok && stderr.contains("unknown language"), "{stderr}");

    fs::write(&b, [0xff, 0xfe, b'x']).unwrap();
    let (ok, _, stderr) = agentrl(&[
        "diff-score",
        "--before",
        a.to_str().unwrap(),
        "--after",
        b.to_str().unwrap(),
    ]);
    assert!(!ok && stderr.contains("is not UTF-8"), "{stderr}");
}
