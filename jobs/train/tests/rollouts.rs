//! Rollouts with continuous batching and shared prompts sample what one row at a time would:
//! greedy episodes (multi-turn, with observations fed between turns, groups of three sharing
//! a prompt) come out the same whatever the number of rows running at once — rows joining
//! as others leave, a prompt prefilled once and copied, the cache compacted as it goes.

mod common;

use agentrl_train::model::Model;
use agentrl_train::rollout::{Environment, Episode, Sampling, Step, run_episodes};
use candle_core::{DType, Device};
use rand::SeedableRng;

/// Two observations, then done.
struct Script {
    prompt: String,
    turns: usize,
}

impl Environment for Script {
    fn prompt(&self) -> String {
        self.prompt.clone()
    }

    fn step(&mut self, turn: &str, _: bool) -> Step {
        self.turns += 1;
        if self.turns < 3 {
            Step::Continue {
                observation: format!("R:{}", self.turns),
                turn_reward: 0.0,
            }
        } else {
            Step::Done {
                reward: turn.len() as f64,
                success: false,
                turn_reward: 0.0,
            }
        }
    }
}

fn episodes(model: &Model, rows: usize) -> Vec<Episode> {
    let prompts = ["Q:1", "Q:12+3=", "A", "C:99+1\nR:100\n", "L:7"];
    let envs: Vec<Box<dyn Environment>> = prompts
        .iter()
        .flat_map(|p| std::iter::repeat_n(*p, 3))
        .map(|p| {
            Box::new(Script {
                prompt: p.into(),
                turns: 0,
            }) as Box<dyn Environment>
        })
        .collect();
    let sampling = Sampling {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_rows: rows,
        max_new_tokens: 5,
        stop: Vec::new(),
        max_turns: 3,
        chat_template: false,
        max_len: 128,
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    run_episodes(model, &common::tok(), envs, &sampling, &mut rng).unwrap()
}

#[test]
fn episodes_do_not_depend_on_how_many_rows_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    common::write_model(dir.path(), "qwen2", false, 12);
    let model = Model::load(dir.path(), DType::F32, &Device::Cpu).unwrap();
    let one = episodes(&model, 1);
    assert_eq!(one.len(), 15);
    assert!(
        one.iter().any(|e| e.mask.iter().any(|m| !m)),
        "no observation was fed between turns"
    );
    for rows in [2, 4, 64] {
        let many = episodes(&model, rows);
        for (i, (a, b)) in one.iter().zip(&many).enumerate() {
            assert_eq!(
                (&a.prompt, &a.response, &a.mask),
                (&b.prompt, &b.response, &b.mask),
                "episode {i}, {rows} rows"
            );
            let err = a
                .logprobs
                .iter()
                .zip(&b.logprobs)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f32, f32::max);
            assert!(
                err < 1e-4,
                "episode {i}, {rows} rows: logprobs differ by {err}"
            );
        }
    }
}
