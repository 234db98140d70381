//! Every subcommand with missing, unreadable or malformed input: a clear message on stderr
//! naming what is wrong, a non-zero exit, nothing on stdout that looks like a result.

use std::process::Command;

fn agentrl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentrl"))
        .args(args)
        .env_remove("AGENTRL_AWS")
        .output()
        .expect("run agentrl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_inputs_fail_with_a_message_that_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{not json").unwrap();
    let garbage = garbage.to_str().unwrap();
    let source = dir.path().join("a.py");
    std::fs::write(&source, "x = 1\n").unwrap();
    let source = source.to_str().unwrap();
    let missing = "/nonexistent/agentrl-input";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["dataset", "build", "--data-dir", missing],
            "not an agentrl data directory",
        ),
        (vec!["dataset", "build", "--rules", missing], missing),
        (
            vec!["dataset", "build", "--rules", garbage],
            "is not valid rules",
        ),
        (
            vec!["diff-score", "--before", missing, "--after", source],
            missing,
        ),
        (
            vec![
                "diff-score",
                "--before",
                source,
                "--after",
                source,
                "--lang",
                "cobol",
            ],
            "cobol",
        ),
        (vec!["diff-score", "--pairs", missing], missing),
        (vec!["diff-score", "--before", source], "--after"),
        (vec!["budget", "replay", "--tasks", "many"], "many"),
        (vec!["serve", "--addr", "not-an-address"], "not-an-address"),
        (vec!["demo", "--addr", "256.0.0.1:80"], "256.0.0.1:80"),
        (
            vec![
                "train",
                "run",
                "--model",
                missing,
                "--prompts",
                garbage,
                "--out",
                dir.path().to_str().unwrap(),
            ],
            missing,
        ),
        (
            vec!["train", "logprobs", "--model", missing, "--input", missing],
            missing,
        ),
        (vec!["no-such-command"], "no-such-command"),
    ];
    for (args, named) in cases {
        let (code, stdout, stderr) = agentrl(&args);
        assert_ne!(code, 0, "agentrl {args:?} exited 0: {stdout}{stderr}");
        assert!(
            stderr.contains(named),
            "agentrl {args:?}: stderr does not name {named:?}: {stderr}"
        );
        assert!(
            stdout.trim().is_empty() || !stdout.trim_start().starts_with(['{', '[']),
            "agentrl {args:?} printed a result: {stdout}"
        );
    }
}

#[test]
fn the_demo_says_what_it_walks_through() {
    let (code, stdout, _) = agentrl(&["demo", "--help"]);
    assert_eq!(code, 0);
    for api in [
        "budgets",
        "diff scoring",
        "trajectories",
        "reward verification",
        "training",
    ] {
        assert!(
            stdout.contains(api),
            "demo --help does not mention {api}: {stdout}"
        );
    }
}
