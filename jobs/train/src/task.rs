//! Tasks for online GRPO: a source of environments to train on and held-out ones to evaluate
//! on. [`AnswerTask`] is the prompts-file task (one turn, answer matching by our verifiers).

use agentrl_core::verify::{self, AnswerMatch, MatchMode, Request, VerifyConfig};

use crate::data::PromptLine;
use crate::rollout::{Environment, Step};

/// Environments to train and evaluate on.
pub trait Task: Sync {
    /// Training prompts.
    fn train_len(&self) -> usize;
    /// A fresh environment for training prompt `i`.
    fn train_env(&self, i: usize) -> Box<dyn Environment>;
    /// Held-out prompts.
    fn eval_len(&self) -> usize;
    /// A fresh environment for held-out prompt `i`.
    fn eval_env(&self, i: usize) -> Box<dyn Environment>;
    /// Most model turns per episode.
    fn max_turns(&self) -> usize;
    /// Strings that end a model turn (besides the end-of-sequence token).
    fn stop(&self) -> Vec<String>;
}

/// Prompts with answers: the completion is checked by `answer_match`.
#[derive(Debug, Clone)]
pub struct AnswerTask {
    train: Vec<PromptLine>,
    eval: Vec<PromptLine>,
    stop: Vec<String>,
}

impl AnswerTask {
    /// Splits `prompts` into training and held-out prompts: every k-th prompt is held out,
    /// k = 1 / `holdout_fraction`, at most `max_eval`. With fewer than 10 prompts, or a
    /// fraction of 0, evaluation runs on the training prompts.
    #[must_use]
    pub fn new(
        prompts: Vec<PromptLine>,
        holdout_fraction: f64,
        max_eval: usize,
        stop: Vec<String>,
    ) -> Self {
        if prompts.len() < 10 || holdout_fraction <= 0.0 {
            let eval = prompts.iter().take(max_eval).cloned().collect();
            return Self {
                train: prompts,
                eval,
                stop,
            };
        }
        let every = (1.0 / holdout_fraction).round().max(2.0) as usize;
        let (mut train, mut eval) = (Vec::new(), Vec::new());
        for (i, p) in prompts.into_iter().enumerate() {
            if i % every == every - 1 && eval.len() < max_eval {
                eval.push(p);
            } else {
                train.push(p);
            }
        }
        Self { train, eval, stop }
    }
}

impl Task for AnswerTask {
    fn train_len(&self) -> usize {
        self.train.len()
    }
    fn train_env(&self, i: usize) -> Box<dyn Environment> {
        Box::new(AnswerEnv {
            line: self.train[i].clone(),
            stop: self.stop.clone(),
        })
    }
    fn eval_len(&self) -> usize {
        self.eval.len()
    }
    fn eval_env(&self, i: usize) -> Box<dyn Environment> {
        Box::new(AnswerEnv {
            line: self.eval[i].clone(),
            stop: self.stop.clone(),
        })
    }
    fn max_turns(&self) -> usize {
        1
    }
    fn stop(&self) -> Vec<String> {
        self.stop.clone()
    }
}

struct AnswerEnv {
    line: PromptLine,
    stop: Vec<String>,
}

/// 1 when `answer` matches `line` by its mode, else 0 (our `answer_match` verifier).
#[must_use]
pub fn answer_reward(line: &PromptLine, answer: &str) -> f64 {
    let (expected, pattern) = match line.mode {
        MatchMode::Regex => (None, Some(line.answer.clone())),
        _ => (Some(line.answer.clone()), None),
    };
    let request = Request::AnswerMatch(AnswerMatch {
        mode: line.mode,
        expected,
        tolerance: None,
        relative_tolerance: None,
        pattern,
        schema: None,
        answer: Some(answer.to_owned()),
        safety_violation: false,
    });
    let config = VerifyConfig::default();
    let ctx = verify::Context {
        output: answer,
        config: &config,
    };
    verify::run(&request, &ctx)
        .ok()
        .and_then(|o| o.value)
        .unwrap_or(0.0)
}

impl Environment for AnswerEnv {
    fn prompt(&self) -> String {
        self.line.prompt.clone()
    }

    fn step(&mut self, turn: &str, _ended_by_eos: bool) -> Step {
        let answer = self
            .stop
            .iter()
            .find_map(|s| turn.strip_suffix(s.as_str()))
            .unwrap_or(turn);
        let reward = answer_reward(&self.line, answer);
        Step::Done {
            reward,
            success: reward >= 1.0,
            turn_reward: 0.0,
        }
    }
}
