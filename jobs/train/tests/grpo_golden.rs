//! The GRPO loss and its gradient on fixed tensors equal a numpy reference of the formula
//! (TRL / verl / DAPO: clip-higher, dual clip, truncated importance weights, k3 KL), and the
//! aggregation weights are what each mode promises.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use agentrl_train::loss::{Aggregation, Clip, TokenInputs, grpo_loss, token_weights};
use candle_core::{Device, Tensor, Var};
use serde_json::{Value, json};

struct Case {
    logp: Vec<f64>,
    old: Vec<f64>,
    adv: Vec<f64>,
    weights: Vec<f64>,
    is_weights: Vec<f64>,
    reference: Option<Vec<f64>>,
    beta: f64,
}

fn cases() -> Vec<Case> {
    let logp = vec![-1.0, -0.5, -2.0, -0.1, -3.0, -0.7, -1.2, -0.05];
    // Log-ratios inside and outside [ln 0.8, ln 1.28], and one past the dual clip (e^1.5 > 3).
    let old: Vec<f64> = logp
        .iter()
        .zip([0.0, -0.5, -0.5, 0.4, 1.5, 0.4, 0.3, -0.2])
        .map(|(l, d)| l - d)
        .collect();
    let adv = vec![1.0, -1.0, 0.5, -0.5, -2.0, 0.8, -0.3, 1.5];
    let n = logp.len();
    let token_mean = vec![1.0 / n as f64; n];
    let lengths = [3usize, 5];
    let rollout = [0usize, 1];
    let per_seq = token_weights(Aggregation::SequenceMean, &lengths, &rollout, 2, 8);
    let seq_mean: Vec<f64> = (0..n)
        .map(|i| if i < 3 { per_seq[0] } else { per_seq[1] })
        .collect();
    let dr = vec![token_weights(Aggregation::DrGrpo, &lengths, &rollout, 2, 16)[0]; n];
    let ones = vec![1.0; n];
    vec![
        Case {
            logp: logp.clone(),
            old: old.clone(),
            adv: adv.clone(),
            weights: token_mean.clone(),
            is_weights: ones.clone(),
            reference: None,
            beta: 0.0,
        },
        Case {
            logp: logp.clone(),
            old: old.clone(),
            adv: adv.clone(),
            weights: seq_mean,
            is_weights: ones.clone(),
            reference: None,
            beta: 0.0,
        },
        Case {
            logp: logp.clone(),
            old: old.clone(),
            adv: adv.clone(),
            weights: dr,
            is_weights: vec![0.5, 2.0, 1.0, 1.3, 0.2, 2.0, 1.0, 0.9],
            reference: None,
            beta: 0.0,
        },
        Case {
            logp: logp.clone(),
            old,
            adv,
            weights: token_mean,
            is_weights: ones,
            reference: Some(logp.iter().map(|l| l - 0.3).collect()),
            beta: 0.04,
        },
    ]
}

fn ours(c: &Case, clip: Clip) -> (f64, Vec<f64>) {
    let d = Device::Cpu;
    let t = |v: &Vec<f64>| Tensor::new(v.as_slice(), &d).unwrap();
    let logp = Var::new(c.logp.as_slice(), &d).unwrap();
    let (old, adv, w, is) = (t(&c.old), t(&c.adv), t(&c.weights), t(&c.is_weights));
    let reference = c.reference.as_ref().map(t);
    let inputs = TokenInputs {
        logp: logp.as_tensor(),
        old: &old,
        advantages: &adv,
        weights: &w,
        is_weights: &is,
        reference: reference.as_ref().map(|r| (r, c.beta)),
    };
    let loss = grpo_loss(&inputs, clip).unwrap();
    let grad = loss
        .backward()
        .unwrap()
        .get(logp.as_tensor())
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    (loss.to_scalar::<f64>().unwrap(), grad)
}

#[test]
fn loss_and_gradient_equal_the_numpy_reference() {
    let clip = Clip {
        low: 0.2,
        high: 0.28,
        dual: 3.0,
    };
    let cases = cases();
    let payload = json!({"cases": cases.iter().map(|c| json!({
        "logp": c.logp, "old": c.old, "adv": c.adv, "weights": c.weights, "is_weights": c.is_weights,
        "ref": c.reference, "beta": c.beta, "eps_low": clip.low, "eps_high": clip.high, "dual": clip.dual,
    })).collect::<Vec<_>>()});
    let mut child = Command::new(agentrl_testkit::venv_python())
        .arg(common::script("grpo_reference.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let golden: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for (i, (c, g)) in cases.iter().zip(&golden).enumerate() {
        let (loss, grad) = ours(c, clip);
        let want = g["loss"].as_f64().unwrap();
        assert!(
            (loss - want).abs() < 1e-12,
            "case {i}: loss {loss} vs {want}"
        );
        for (j, (a, b)) in grad.iter().zip(g["grad"].as_array().unwrap()).enumerate() {
            let b = b.as_f64().unwrap();
            assert!((a - b).abs() < 1e-7, "case {i} token {j}: grad {a} vs {b}");
        }
    }
    // The cases exercise every branch: clipped tokens have zero gradient, the dual clip caps
    // the loss of the token whose ratio passed 3 with a negative advantage.
    let (_, grad) = ours(&cases[0], clip);
    assert_eq!(grad[1], 0.0, "A<0 and ratio below 1-ε_low: clipped");
    assert_eq!(grad[5], 0.0, "A>0 and ratio above 1+ε_high: clipped");
    assert_eq!(grad[4], 0.0, "A<0 and ratio past c: dual-clipped");
    assert_ne!(
        grad[3], 0.0,
        "A<0 and ratio above 1+ε: the pessimistic bound keeps the gradient"
    );
    assert_ne!(grad[0], 0.0);
}

#[test]
fn aggregation_weights_follow_their_definitions() {
    let lengths = [2usize, 6, 4];
    let rollout = [0usize, 0, 1];
    let tm = token_weights(Aggregation::TokenMean, &lengths, &rollout, 2, 10);
    assert!(tm.iter().all(|&w| (w - 1.0 / 12.0).abs() < 1e-15));
    // Each rollout weighs ½, shared by its 8 and 4 tokens.
    let sm = token_weights(Aggregation::SequenceMean, &lengths, &rollout, 2, 10);
    assert_eq!(sm, [1.0 / 16.0, 1.0 / 16.0, 1.0 / 8.0]);
    let total: f64 = sm.iter().zip(lengths).map(|(w, n)| w * n as f64).sum();
    assert!((total - 1.0).abs() < 1e-15);
    let dr = token_weights(Aggregation::DrGrpo, &lengths, &rollout, 2, 10);
    assert!(dr.iter().all(|&w| w == 1.0 / 20.0));
}
