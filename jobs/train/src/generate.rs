//! Serving a model: the `n` completions of one prompt, as an OpenAI-compatible server returns
//! them — the sampled token ids, each one's log-probability, and the text, released token by
//! token for streaming.
//!
//! The prompt is fed once, in one row of the key/value cache, which is then copied `n` times
//! (the rows of [`crate::rollout`]'s groups); the tokens are drawn on the device
//! ([`crate::sampler`]). A completion ends at an end id of the model ([`Tok::eos`]), which is
//! kept in its token ids (the policy chose to stop, and a trainer must learn it) but not in
//! its text; at a stop string, which ends the text before it (OpenAI's rule) while the token
//! ids keep every token drawn; or at `max_tokens` or the model's context, `length`. The
//! log-probability is the policy's at temperature 1, what `train logprobs` prints and what
//! the trainer's importance ratios need.
//!
//! Text is released as soon as it can no longer change: the decoded text minus the bytes that
//! could still be the start of a stop string, and minus an unfinished UTF-8 character (a
//! byte-level tokenizer decodes half a character as U+FFFD).

use candle_core::Tensor;
use rand_chacha::ChaCha8Rng;

use crate::error::Result;
use crate::model::Model;
use crate::model::kv_cache::KvCache;
use crate::sampler::{self, Draw};
use crate::tokenizer::Tok;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Completions of the prompt.
    pub n: usize,
    /// Most tokens a completion may have.
    pub max_tokens: usize,
    /// How each token is drawn.
    pub draw: Draw,
    /// Strings that end a completion's text.
    pub stop: Vec<String>,
}

/// Why a completion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// An end id or a stop string.
    Stop,
    /// `max_tokens`, or the model's context.
    Length,
    /// The caller stopped listening ([`Token`]'s callback said so).
    Abandoned,
}

/// One completion.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// Every token drawn, an end id included.
    pub token_ids: Vec<u32>,
    /// The log-probability of each, at temperature 1.
    pub logprobs: Vec<f32>,
    /// The text, up to a stop string.
    pub text: String,
    /// Why it ended.
    pub finish: Finish,
}

/// One drawn token, as a stream reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The completion it belongs to.
    pub choice: usize,
    /// Its id.
    pub id: u32,
    /// Its log-probability at temperature 1.
    pub logprob: f32,
    /// The text this token released (often empty while a stop string may be starting).
    pub text: String,
    /// Set on the completion's last token.
    pub finish: Option<Finish>,
}

/// A completion being drawn.
struct Row {
    ids: Vec<u32>,
    logprobs: Vec<f32>,
    /// The text released so far.
    sent: String,
    text: String,
    finish: Option<Finish>,
}

/// The completions of `prompt` by `view` (a [`Model::sampling_view`]), drawn with `rng`.
/// `on_token` hears each token as it is drawn; when it answers `false` every completion ends
/// as [`Finish::Abandoned`].
///
/// # Errors
/// An empty prompt, a prompt as long as the model's context, tensor or tokenizer failures.
pub fn generate(
    view: &Model,
    tok: &Tok,
    prompt: &[u32],
    spec: &Generation,
    rng: &mut ChaCha8Rng,
    on_token: &mut dyn FnMut(Token) -> bool,
) -> Result<Vec<Completion>> {
    let context = view.config.max_position_embeddings;
    if prompt.is_empty() || prompt.len() >= context {
        return Err(crate::TrainError::Data(format!(
            "the prompt has {} tokens; the model takes 1 to {}",
            prompt.len(),
            context - 1
        )));
    }
    let n = spec.n.max(1);
    let limit = spec.max_tokens.min(context - prompt.len());
    let hold = spec.stop.iter().map(String::len).max().unwrap_or(1) - 1;
    let mut rows: Vec<Row> = (0..n)
        .map(|_| Row {
            ids: Vec::new(),
            logprobs: Vec::new(),
            sent: String::new(),
            text: String::new(),
            finish: None,
        })
        .collect();
    let mut cache = KvCache::new(1);
    let prefill = view.decode(&mut cache, &[prompt.to_vec()])?;
    let fork = Tensor::from_vec(vec![0u32; n], n, prefill.device())?;
    let mut logits = prefill.index_select(&fork, 0)?;
    cache.retain(&vec![0; n])?;
    // Cache row r is completion live[r].
    let mut live: Vec<usize> = (0..n).collect();
    let mut listening = true;
    while !live.is_empty() {
        let uniform = crate::rollout::uniform(&logits, rng)?;
        let (tokens, logprobs) = sampler::draw(&logits, spec.draw, &uniform)?;
        for (r, &c) in live.iter().enumerate() {
            let row = &mut rows[c];
            row.ids.push(tokens[r]);
            row.logprobs.push(logprobs[r]);
            let text = release(row, tok, &spec.stop, hold, limit)?;
            if listening {
                listening = on_token(Token {
                    choice: c,
                    id: tokens[r],
                    logprob: logprobs[r],
                    text,
                    finish: row.finish,
                });
            }
        }
        if !listening {
            for c in live {
                rows[c].finish = Some(Finish::Abandoned);
            }
            break;
        }
        let keep: Vec<usize> = (0..live.len())
            .filter(|&r| rows[live[r]].finish.is_none())
            .collect();
        if keep.is_empty() {
            break;
        }
        cache.retain(&keep)?;
        cache.compact()?;
        live = keep.iter().map(|&r| live[r]).collect();
        let next: Vec<Vec<u32>> = live
            .iter()
            .map(|&c| vec![rows[c].ids[rows[c].ids.len() - 1]])
            .collect();
        logits = view.decode(&mut cache, &next)?;
    }
    Ok(rows
        .into_iter()
        .map(|r| Completion {
            token_ids: r.ids,
            logprobs: r.logprobs,
            text: r.text,
            finish: r.finish.unwrap_or(Finish::Length),
        })
        .collect())
}

/// After a token was appended to `row`: whether the completion ended, its text so far, and
/// the text that can now be released (all of what is left once it ended).
fn release(row: &mut Row, tok: &Tok, stop: &[String], hold: usize, limit: usize) -> Result<String> {
    let mut text = tok.decode(&row.ids)?;
    if let Some(at) = stop.iter().filter_map(|s| text.find(s.as_str())).min() {
        text.truncate(at);
        row.finish = Some(Finish::Stop);
    } else if row.ids.last().is_some_and(|id| tok.eos().contains(id)) {
        row.finish = Some(Finish::Stop);
    } else if row.ids.len() >= limit {
        row.finish = Some(Finish::Length);
    }
    let mut ready = if row.finish.is_some() {
        text.len()
    } else {
        text.trim_end_matches('\u{fffd}').len().saturating_sub(hold)
    };
    while !text.is_char_boundary(ready) {
        ready -= 1;
    }
    // What was released stays released: a decoding that rewrote it (a tokenizer's clean-up)
    // releases nothing more, and the final text says what the model wrote.
    let out = match text
        .get(..ready)
        .and_then(|t| t.strip_prefix(row.sent.as_str()))
    {
        Some(new) => new.to_owned(),
        None => String::new(),
    };
    row.sent.push_str(&out);
    row.text = text;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use rand::SeedableRng;

    use super::*;
    use crate::model::ModelConfig;

    fn tiny() -> (Model, Tok) {
        let tok = Tok::char_level("abcdefgh", &[]).unwrap();
        let config = ModelConfig::tiny_qwen2(tok.vocab_size(), 32, 2, 4, 2).unwrap();
        let model = Model::init(config, 7, DType::F32, &Device::Cpu).unwrap();
        (model, tok)
    }

    fn greedy(max_tokens: usize, stop: &[&str]) -> Generation {
        Generation {
            n: 2,
            max_tokens,
            draw: Draw {
                temperature: 0.0,
                top_p: 1.0,
                top_k: 0,
            },
            stop: stop.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn tokens_logprobs_and_released_text_agree_with_the_model() {
        let (model, tok) = tiny();
        let view = model.sampling_view().unwrap();
        let prompt = tok.encode("abc").unwrap();
        let mut streamed = vec![String::new(); 2];
        let mut heard = 0;
        let out = generate(
            &view,
            &tok,
            &prompt,
            &greedy(12, &[]),
            &mut ChaCha8Rng::seed_from_u64(1),
            &mut |t| {
                streamed[t.choice].push_str(&t.text);
                heard += 1;
                true
            },
        )
        .unwrap();
        assert_eq!(heard, out.iter().map(|c| c.token_ids.len()).sum::<usize>());
        for c in &out {
            assert_eq!(c.token_ids.len(), c.logprobs.len());
            assert_eq!(c.text, tok.decode(&c.token_ids).unwrap());
        }
        // Greedy draws are the same for both rows, and the stream released the whole text.
        assert_eq!(out[0], out[1]);
        assert_eq!(streamed[0], out[0].text);
        // Each logprob is the model's own on the whole sequence, fed at once.
        let whole = crate::step::TrainSeq::completion(&prompt, &out[0].token_ids);
        let expected = crate::step::response_logprobs(&model, &[whole], 1024).unwrap();
        for (got, want) in out[0].logprobs.iter().zip(&expected[0]) {
            assert!((got - want).abs() < 1e-4, "{got} vs {want}");
        }
    }

    #[test]
    fn a_stop_string_ends_the_text_before_it_and_is_never_streamed() {
        let (model, tok) = tiny();
        let view = model.sampling_view().unwrap();
        let prompt = tok.encode("abc").unwrap();
        let free = generate(
            &view,
            &tok,
            &prompt,
            &greedy(12, &[]),
            &mut ChaCha8Rng::seed_from_u64(1),
            &mut |_| true,
        )
        .unwrap();
        // A stop string taken from the middle of the free answer.
        let text = &free[0].text;
        let stop = &text[3..5];
        let cut = text.find(stop).unwrap();
        let mut streamed = String::new();
        let out = generate(
            &view,
            &tok,
            &prompt,
            &greedy(12, &[stop]),
            &mut ChaCha8Rng::seed_from_u64(1),
            &mut |t| {
                if t.choice == 0 {
                    streamed.push_str(&t.text);
                }
                true
            },
        )
        .unwrap();
        assert_eq!(out[0].finish, Finish::Stop);
        assert_eq!(out[0].text, text[..cut]);
        assert_eq!(streamed, text[..cut]);
        assert_eq!(out[0].token_ids, free[0].token_ids[..cut + stop.len()]);
    }

    #[test]
    fn max_tokens_ends_with_length_and_a_deaf_listener_abandons() {
        let (model, tok) = tiny();
        let view = model.sampling_view().unwrap();
        let prompt = tok.encode("ab").unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let out = generate(&view, &tok, &prompt, &greedy(3, &[]), &mut rng, &mut |_| {
            true
        })
        .unwrap();
        for c in &out {
            assert!(c.token_ids.len() <= 3);
            if c.token_ids.len() == 3 && !tok.eos().contains(&c.token_ids[2]) {
                assert_eq!(c.finish, Finish::Length);
            }
        }
        let out = generate(
            &view,
            &tok,
            &prompt,
            &greedy(30, &[]),
            &mut rng,
            &mut |_| false,
        )
        .unwrap();
        assert!(
            out.iter()
                .all(|c| c.finish == Finish::Abandoned && c.token_ids.len() == 1)
        );
    }
}
