//! The tokenizer: `tokenizer.json` through the `tokenizers` crate, identified by the sha256 of
//! its bytes (what rows name in their `tokenizer` column), plus the end-of-sequence ids and a
//! chat rendering for rows that carry text but no token ids.

use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::{Result, TrainError};

/// A loaded tokenizer.
#[derive(Debug, Clone)]
pub struct Tok {
    inner: tokenizers::Tokenizer,
    json: Vec<u8>,
    /// sha256 of `tokenizer.json`.
    pub sha256: String,
    eos: Vec<u32>,
    chatml: bool,
}

impl Tok {
    /// Loads `<dir>/tokenizer.json`; end-of-sequence ids come from `eos` (the model config's)
    /// and otherwise from `tokenizer_config.json`'s `eos_token`.
    ///
    /// # Errors
    /// A missing or malformed file.
    pub fn load(dir: &Path, eos: &[u32]) -> Result<Self> {
        let path = dir.join("tokenizer.json");
        let bytes = std::fs::read(&path).map_err(|e| TrainError::file(&path, e))?;
        let mut tok = Self::from_bytes(bytes).map_err(|e| TrainError::file(&path, e))?;
        if !eos.is_empty() {
            tok.eos = eos.to_vec();
        } else if let Ok(text) = std::fs::read_to_string(dir.join("tokenizer_config.json")) {
            let config: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let token = match config.get("eos_token") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Object(o)) => {
                    o.get("content").and_then(Value::as_str).map(String::from)
                }
                _ => None,
            };
            if let Some(id) = token.and_then(|t| tok.inner.token_to_id(&t)) {
                tok.eos = vec![id];
            }
        }
        Ok(tok)
    }

    /// A tokenizer from the bytes of a `tokenizer.json`.
    ///
    /// # Errors
    /// Malformed JSON or an unknown model.
    pub fn from_bytes(bytes: Vec<u8>) -> std::result::Result<Self, String> {
        let inner = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| e.to_string())?;
        let eos = ["<|endoftext|>", "</s>", "<|im_end|>", "<eos>"]
            .iter()
            .find_map(|t| inner.token_to_id(t))
            .into_iter()
            .collect();
        let chatml = inner.token_to_id("<|im_start|>").is_some();
        Ok(Self {
            sha256: hex::encode(Sha256::digest(&bytes)),
            inner,
            json: bytes,
            eos,
            chatml,
        })
    }

    /// A character-level tokenizer over `alphabet` with `eos` as its one special token (id 0):
    /// the demo and the tests build their models' tokenizers with it.
    ///
    /// # Errors
    /// A repeated character.
    pub fn char_level(alphabet: &str, eos: &str) -> std::result::Result<Self, String> {
        let mut vocab = serde_json::Map::new();
        vocab.insert(eos.to_owned(), json!(0));
        for (i, c) in alphabet.chars().enumerate() {
            if vocab.insert(c.to_string(), json!(i + 1)).is_some() {
                return Err(format!("character {c:?} appears twice"));
            }
        }
        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": [{"id": 0, "content": eos, "single_word": false, "lstrip": false,
                               "rstrip": false, "normalized": false, "special": true}],
            "normalizer": null,
            "pre_tokenizer": null,
            "post_processor": null,
            "decoder": {"type": "Fuse"},
            "model": {"type": "BPE", "dropout": null, "unk_token": null,
                      "continuing_subword_prefix": null, "end_of_word_suffix": null,
                      "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                      "vocab": vocab, "merges": []}
        });
        Self::from_bytes(serde_json::to_vec_pretty(&spec).map_err(|e| e.to_string())?)
    }

    /// The bytes of `tokenizer.json` (copied next to every checkpoint).
    #[must_use]
    pub fn json(&self) -> &[u8] {
        &self.json
    }

    /// Ids that end a sequence.
    #[must_use]
    pub fn eos(&self) -> &[u32] {
        &self.eos
    }

    /// Tokens in the vocabulary, added tokens included.
    #[must_use]
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Token ids of `text`, without special tokens added.
    ///
    /// # Errors
    /// Text the model cannot encode.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .inner
            .encode(text, false)
            .map_err(|e| TrainError::Data(format!("tokenizer: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Text of `ids`, special tokens kept out.
    ///
    /// # Errors
    /// Ids outside the vocabulary.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, true)
            .map_err(|e| TrainError::Data(format!("tokenizer: {e}")))
    }

    /// Chat messages rendered for training when rows carry no token ids: ChatML when the
    /// vocabulary has `<|im_start|>` (Qwen2's template), `role: content` lines otherwise. The
    /// Jinja template of `tokenizer_config.json` is not interpreted; such rows are counted as
    /// re-tokenised in the run's report.
    #[must_use]
    pub fn render(&self, messages: &[(String, String)], open_assistant: bool) -> String {
        let mut out = String::new();
        for (role, content) in messages {
            if self.chatml {
                out.push_str(&format!("<|im_start|>{role}\n{content}<|im_end|>\n"));
            } else {
                out.push_str(&format!("{role}: {content}\n"));
            }
        }
        if open_assistant {
            out.push_str(if self.chatml {
                "<|im_start|>assistant\n"
            } else {
                "assistant: "
            });
        }
        out
    }

    /// The end of an assistant turn in [`Self::render`]'s format.
    #[must_use]
    pub fn turn_end(&self) -> &'static str {
        if self.chatml { "<|im_end|>\n" } else { "\n" }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_level_round_trips() {
        let tok = Tok::char_level("0123456789+=:\nACQR", "<eos>").unwrap();
        let ids = tok.encode("Q:12+3\n").unwrap();
        assert_eq!(ids.len(), 7);
        assert_eq!(tok.decode(&ids).unwrap(), "Q:12+3\n");
        assert_eq!(tok.eos(), [0]);
        let again = Tok::from_bytes(tok.json().to_vec()).unwrap();
        assert_eq!(again.sha256, tok.sha256);
    }
}
