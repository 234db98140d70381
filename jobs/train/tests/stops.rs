//! How online completions end and what the model sees as a prompt: end ids from every file a
//! model ships (`config.json`, `generation_config.json`, `tokenizer_config.json`, the chat
//! template's turn end), stop strings matched on the text with special tokens written out,
//! and prompts rendered by the chat template when `grpo.chat_template` is on.
//!
//! The model is a scripted successor: one-hot embeddings, zero attention and MLP weights, and
//! an output head that maps each token to the one the test names next, so greedy decoding
//! writes exactly the sequence under test.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use agentrl_core::verify::MatchMode;
use agentrl_train::data::PromptLine;
use agentrl_train::model::{Model, ModelConfig, save_safetensors};
use agentrl_train::rollout::{Episode, Sampling, run_episodes};
use agentrl_train::task::{AnswerTask, Task};
use agentrl_train::tokenizer::Tok;
use candle_core::{DType, Device, Tensor};
use rand::SeedableRng;
use serde_json::json;

const SPECIALS: [&str; 5] = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "<|eot|>",
];
const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyz\n ";

const CHATML: &str = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// Writes the successor model of `next` (token → the token after it; every other token is
/// followed by `z`) with its tokenizer files to `dir`.
fn successor(dir: &Path, next: &[(&str, &str)]) -> Tok {
    std::fs::create_dir_all(dir).unwrap();
    let tok = Tok::char_level(ALPHABET, &SPECIALS).unwrap();
    let v = tok.vocab_size();
    let id = |t: &str| tok.encode(t).unwrap()[0] as usize;
    let config = json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": v, "intermediate_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 8, "vocab_size": v,
        "eos_token_id": 0, "max_position_embeddings": 256, "tie_word_embeddings": false});
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    std::fs::write(dir.join("tokenizer.json"), tok.json()).unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        json!({"eos_token": "<|endoftext|>", "chat_template": CHATML}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("generation_config.json"),
        json!({"eos_token_id": [0, id("<|eot|>")]}).to_string(),
    )
    .unwrap();
    let follows: HashMap<usize, usize> = next.iter().map(|(a, b)| (id(a), id(b))).collect();
    let shapes = Model::init(
        ModelConfig::from_json(config).unwrap(),
        0,
        DType::F32,
        &Device::Cpu,
    )
    .unwrap()
    .state_dict(false)
    .unwrap();
    let mut tensors = BTreeMap::new();
    for (name, t) in shapes {
        let (dims, n) = (t.dims().to_vec(), t.elem_count());
        let mut values = vec![0.0f32; n];
        if name.ends_with("norm.weight") {
            values.fill(1.0);
        } else if name == "model.embed_tokens.weight" {
            (0..v).for_each(|i| values[i * v + i] = 1.0);
        } else if name == "lm_head.weight" {
            // Row j scores the tokens j follows.
            for i in 0..v {
                let j = follows.get(&i).copied().unwrap_or(id("z"));
                values[j * v + i] = 20.0;
            }
        }
        tensors.insert(name, Tensor::from_vec(values, dims, &Device::Cpu).unwrap());
    }
    save_safetensors(&tensors, &dir.join("model.safetensors")).unwrap();
    Tok::load(dir, &[0]).unwrap()
}

fn greedy(dir: &Path, tok: &Tok, prompt: &str, answer: &str, stop: &[&str], chat: bool) -> Episode {
    let model = Model::load(dir, DType::F32, &Device::Cpu).unwrap();
    let line = PromptLine {
        prompt: prompt.into(),
        answer: answer.into(),
        mode: MatchMode::Exact,
    };
    let task = AnswerTask::new(vec![line], 0.0, 1, Vec::new());
    let sampling = Sampling {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_rows: 64,
        max_new_tokens: 8,
        stop: stop.iter().map(|s| (*s).to_owned()).collect(),
        max_turns: 1,
        chat_template: chat,
        max_len: 256,
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    run_episodes(&model, tok, vec![task.train_env(0)], &sampling, &mut rng)
        .unwrap()
        .remove(0)
}

#[test]
fn end_ids_come_from_every_file_and_the_template_turn_end() {
    let dir = tempfile::tempdir().unwrap();
    let tok = successor(dir.path(), &[]);
    let id = |t: &str| tok.encode(t).unwrap()[0];
    for end in ["<|endoftext|>", "<|eot|>", "<|im_end|>"] {
        assert!(
            tok.eos().contains(&id(end)),
            "{end} is not an end id: {:?}",
            tok.eos()
        );
    }
    assert!(!tok.eos().contains(&id("<tool_call>")));
    // A completion the template closed keeps its turn end; a bare one gets `eos_token`.
    let closed = tok.encode("ok<|im_end|>\n").unwrap();
    assert_eq!(tok.ended(closed.clone()), closed);
    assert_eq!(
        tok.ended(tok.encode("ok").unwrap()).last(),
        Some(&id("<|endoftext|>"))
    );
}

#[test]
fn an_online_prompt_goes_through_the_chat_template_and_stops_at_its_turn_end() {
    let dir = tempfile::tempdir().unwrap();
    let tok = successor(
        dir.path(),
        &[
            ("\n", "o"),
            ("o", "k"),
            ("k", "<|im_end|>"),
            ("<|im_end|>", "z"),
        ],
    );
    let e = greedy(dir.path(), &tok, "hi", "ok", &[], true);
    let rendered = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(e.prompt, tok.encode(rendered).unwrap());
    assert_eq!(tok.decode_raw(&e.response).unwrap(), "ok<|im_end|>");
    assert!(!e.truncated && e.success, "{e:?}");
    // Without the template the prompt goes in as written.
    let raw = greedy(dir.path(), &tok, "hi", "ok", &[], false);
    assert_eq!(raw.prompt, tok.encode("hi").unwrap());
}

#[test]
fn stop_strings_match_special_tokens_and_end_the_answer_where_they_match() {
    let dir = tempfile::tempdir().unwrap();
    let tok = successor(
        dir.path(),
        &[
            ("x", "y"),
            ("y", "<tool_call>"),
            ("<tool_call>", "w"),
            ("w", "w"),
        ],
    );
    let e = greedy(dir.path(), &tok, "x", "y", &["<tool_call>"], false);
    assert_eq!(tok.decode_raw(&e.response).unwrap(), "y<tool_call>");
    assert!(!e.truncated && e.success, "{e:?}");
    // Without the stop string the model runs to the token limit, and the answer is wrong.
    let e = greedy(dir.path(), &tok, "x", "y", &[], false);
    assert!(e.truncated && !e.success && e.response.len() == 8, "{e:?}");
}
