//! The agent learns: the demo's multi-turn calculator task, shortened to fit the test suite.
//! After the SFT warm-up on noisy demonstrations the greedy policy mostly skips the tool and
//! guesses; GRPO must raise held-out success by a clear margin. The full run (≥ 0.9 within
//! 15 minutes) and the credit comparison are in BENCHMARKS.md.

use agentrl_train::advantage::Credit;
use agentrl_train::demo::{DemoOptions, DemoTask, run};

#[test]
fn grpo_raises_held_out_success_on_the_tool_use_task() {
    let out = tempfile::tempdir().unwrap();
    let mut o = DemoOptions::new(
        DemoTask::Calc,
        Credit::Broadcast,
        0,
        1.0,
        out.path().to_owned(),
    );
    o.max_steps = 25;
    o.target = 0.8;
    let run = run(&o).unwrap();
    let before = run["eval_success_before"].as_f64().unwrap();
    let after = run["eval_success_after"].as_f64().unwrap();
    assert!(
        before < 0.3,
        "the warm-up alone should leave the agent guessing: {before}"
    );
    assert!(after >= before + 0.4, "success {before} → {after}");
    assert!(out.path().join("plots/success.png").exists());
}
