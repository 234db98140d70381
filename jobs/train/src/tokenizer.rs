//! The tokenizer: `tokenizer.json` through the `tokenizers` crate, identified by the sha256 of
//! its bytes (what rows name in their `tokenizer` column), plus the ids that end a completion
//! and a chat rendering for rows that carry text but no token ids: the model's Jinja
//! `chat_template` from `tokenizer_config.json` when it has one (rendered as `transformers`
//! does: `trim_blocks`, `lstrip_blocks`, Python string methods, `raise_exception`), ChatML or
//! plain `role: content` lines otherwise.
//!
//! A completion ends at any id a model's files name as an end: `config.json`'s and
//! `generation_config.json`'s `eos_token_id` (one id or a list), `tokenizer_config.json`'s
//! `eos_token`, and the special token that closes an assistant turn in the chat template
//! (`<|im_end|>`, `<|eot_id|>`): an Instruct model ends its turns with that one.

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
    /// Every id that ends a completion.
    eos: Vec<u32>,
    /// The id appended to a completion that names no end (TRL appends `eos_token`).
    eos_token: Option<u32>,
    chatml: bool,
    template: Option<ChatTemplate>,
    /// The files read beside `tokenizer.json` (`tokenizer_config.json`, `chat_template.jinja`,
    /// `generation_config.json`), written again beside every model the trainer saves, so a
    /// trained version keeps its chat template and end ids.
    companions: Vec<(&'static str, Vec<u8>)>,
}

/// A model's Jinja chat template with the special tokens it may name.
#[derive(Debug, Clone)]
struct ChatTemplate {
    env: minijinja::Environment<'static>,
    bos_token: String,
    eos_token: String,
}

const TOKENIZER_CONFIG: &str = "tokenizer_config.json";
const GENERATION_CONFIG: &str = "generation_config.json";
const CHAT_TEMPLATE: &str = "chat_template.jinja";

/// One chat message as OpenAI's API (and transformers' chat templates) take it: `role`,
/// `content`, and an assistant's `tool_calls` or a tool's `tool_call_id`.
pub type Message = Value;

/// A message of `role` with text `content`.
#[must_use]
pub fn message(role: &str, content: &str) -> Message {
    json!({"role": role, "content": content})
}

/// A message's text (`null` content: none).
fn content(m: &Message) -> &str {
    m.get("content").and_then(Value::as_str).unwrap_or_default()
}

/// What a conversation renders without a chat template: a message's text, then each tool
/// call as a line of JSON.
fn plain(m: &Message) -> String {
    let mut text = content(m).to_owned();
    for call in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let f = call.get("function").unwrap_or(call);
        text.push('\n');
        text.push_str(&json!({"name": f.get("name"), "arguments": f.get("arguments")}).to_string());
    }
    text
}

impl Tok {
    /// Loads `<dir>/tokenizer.json` with the end ids of the model's files (`eos`: the model
    /// config's; `generation_config.json`, `tokenizer_config.json` and the chat template are
    /// read here).
    ///
    /// # Errors
    /// A missing or malformed file.
    pub fn load(dir: &Path, eos: &[u32]) -> Result<Self> {
        let path = dir.join("tokenizer.json");
        let bytes = std::fs::read(&path).map_err(|e| TrainError::file(&path, e))?;
        let mut tok = Self::from_bytes(bytes).map_err(|e| TrainError::file(&path, e))?;
        let config_path = dir.join(TOKENIZER_CONFIG);
        let config: Value = match std::fs::read_to_string(&config_path) {
            Ok(text) => {
                let config =
                    serde_json::from_str(&text).map_err(|e| TrainError::file(&config_path, e))?;
                tok.companions.push((TOKENIZER_CONFIG, text.into_bytes()));
                config
            }
            Err(_) => Value::Null,
        };
        let token = |name: &str| match config.get(name) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(o)) => o.get("content").and_then(Value::as_str).map(String::from),
            _ => None,
        };
        let named_eos = token("eos_token").and_then(|t| tok.inner.token_to_id(&t));
        let generation_path = dir.join(GENERATION_CONFIG);
        let generation = match std::fs::read_to_string(&generation_path) {
            Ok(text) => {
                let generation = serde_json::from_str::<Value>(&text)
                    .map_err(|e| TrainError::file(&generation_path, e))?;
                tok.companions.push((GENERATION_CONFIG, text.into_bytes()));
                generation
            }
            Err(_) => Value::Null,
        };
        let mut ends: Vec<u32> = eos.to_vec();
        ends.extend(crate::model::config::token_ids(
            generation.get("eos_token_id"),
        ));
        ends.extend(named_eos);
        // transformers ≥ 4.43 saves the template as `chat_template.jinja`, which wins over the
        // config's entry.
        let jinja_path = dir.join(CHAT_TEMPLATE);
        let (source, template_path) = match std::fs::read_to_string(&jinja_path) {
            Ok(source) => {
                tok.companions
                    .push((CHAT_TEMPLATE, source.clone().into_bytes()));
                (Some(source), jinja_path)
            }
            Err(_) => (chat_template(&config), config_path.clone()),
        };
        if let Some(source) = source {
            let compiled = ChatTemplate::compile(
                source,
                token("bos_token").unwrap_or_default(),
                token("eos_token").unwrap_or_default(),
            )
            .map_err(|e| TrainError::file(&template_path, format!("chat_template: {e}")))?;
            tok.template = Some(compiled);
        }
        if tok.template.is_some() || tok.chatml {
            // A template that cannot render a plain conversation is the model's fault: say so
            // now, naming the file, rather than dropping every row later.
            let (_, turn) = tok
                .chat(
                    &[message("user", "hi")],
                    &[message("assistant", "hello")],
                    None,
                )
                .map_err(|e| TrainError::file(&template_path, format!("chat_template: {e}")))?;
            ends.extend(tok.first_special(&tok.encode(&turn)?));
        }
        if !ends.is_empty() {
            let mut seen = std::collections::HashSet::new();
            ends.retain(|id| seen.insert(*id));
            tok.eos = ends;
        }
        tok.eos_token = named_eos.or_else(|| tok.eos.first().copied());
        Ok(tok)
    }

    /// The first special (added, `special: true`) token of `ids`.
    fn first_special(&self, ids: &[u32]) -> Option<u32> {
        let special = self.inner.get_added_tokens_decoder();
        ids.iter()
            .copied()
            .find(|id| special.get(id).is_some_and(|t| t.special))
    }

    /// A tokenizer from the bytes of a `tokenizer.json`.
    ///
    /// # Errors
    /// Malformed JSON or an unknown model.
    pub fn from_bytes(bytes: Vec<u8>) -> std::result::Result<Self, String> {
        let inner = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| e.to_string())?;
        let eos: Vec<u32> = ["<|endoftext|>", "</s>", "<|im_end|>", "<eos>"]
            .iter()
            .find_map(|t| inner.token_to_id(t))
            .into_iter()
            .collect();
        let chatml = inner.token_to_id("<|im_start|>").is_some();
        Ok(Self {
            sha256: hex::encode(Sha256::digest(&bytes)),
            inner,
            json: bytes,
            eos_token: eos.first().copied(),
            eos,
            chatml,
            template: None,
            companions: Vec::new(),
        })
    }

    /// A character-level tokenizer over `alphabet` with the special tokens `specials` first
    /// (ids 0, 1, …; the first is the end-of-sequence token): the demo and the tests build
    /// their models' tokenizers with it.
    ///
    /// # Errors
    /// A repeated character or special token.
    pub fn char_level(alphabet: &str, specials: &[&str]) -> std::result::Result<Self, String> {
        let mut vocab = serde_json::Map::new();
        let mut added = Vec::new();
        let tokens = specials
            .iter()
            .map(|s| ((*s).to_owned(), true))
            .chain(alphabet.chars().map(|c| (c.to_string(), false)));
        for (i, (token, special)) in tokens.enumerate() {
            if vocab.insert(token.clone(), json!(i)).is_some() {
                return Err(format!("{token:?} appears twice"));
            }
            if special {
                added.push(json!({"id": i, "content": token, "single_word": false,
                    "lstrip": false, "rstrip": false, "normalized": false, "special": true}));
            }
        }
        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
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

    /// Writes `tokenizer.json` and the files read beside it into `dir`: with the weights
    /// there, a directory the trainer, the built-in server and `transformers` load whole.
    ///
    /// # Errors
    /// I/O.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::write(dir.join("tokenizer.json"), &self.json)?;
        for (name, bytes) in &self.companions {
            std::fs::write(dir.join(name), bytes)?;
        }
        Ok(())
    }

    /// Whether the model's files carry a chat template (without one, conversations render as
    /// ChatML or `role: content` lines, and tools cannot be shown).
    #[must_use]
    pub fn has_chat_template(&self) -> bool {
        self.template.is_some()
    }

    /// Ids that end a completion.
    #[must_use]
    pub fn eos(&self) -> &[u32] {
        &self.eos
    }

    /// `ids`, ending with an end id: unchanged when one of them is an end id already (a turn
    /// the chat template closed), else with the end-of-sequence token appended, as TRL's
    /// trainers append `eos_token` to a completion.
    #[must_use]
    pub fn ended(&self, mut ids: Vec<u32>) -> Vec<u32> {
        if !ids.iter().any(|id| self.eos.contains(id)) {
            ids.extend(self.eos_token);
        }
        ids
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

    /// Text of `ids` with special tokens written out (`<|im_end|>`): what stop strings are
    /// matched against.
    ///
    /// # Errors
    /// Ids outside the vocabulary.
    pub fn decode_raw(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| TrainError::Data(format!("tokenizer: {e}")))
    }

    /// The prompt text of `prompt` as the model sees it: rendered by the chat template as a
    /// user turn with the assistant's turn opened (`chat`), or as written.
    ///
    /// # Errors
    /// The template fails on it.
    pub fn prompt_text(&self, prompt: &str, chat: bool) -> std::result::Result<String, String> {
        if chat {
            self.generation_prompt(&[message("user", prompt)], None)
        } else {
            Ok(prompt.to_owned())
        }
    }

    /// The text of a conversation ending where the assistant's answer starts, with `tools`
    /// (OpenAI's function specs) for the template: what a served model is fed.
    ///
    /// # Errors
    /// The template fails on it.
    pub fn generation_prompt(
        &self,
        messages: &[Message],
        tools: Option<&Value>,
    ) -> std::result::Result<String, String> {
        match &self.template {
            Some(template) => template.render(messages, tools, true),
            None => Ok(self.render(messages, true)),
        }
    }

    /// The text of a conversation's `prompt` (ending where the model starts to answer) and of
    /// the `completion` that follows it, for rows that carry no token ids. With the model's
    /// chat template: the prompt rendered with `add_generation_prompt`, the completion what the
    /// whole conversation adds to it. Without: ChatML when the vocabulary has `<|im_start|>`,
    /// `role: content` lines otherwise. `tools` (OpenAI's `tools`, function specs) go to the
    /// template as transformers passes them, so tool calls are rendered in the model's own
    /// format.
    ///
    /// # Errors
    /// The template fails (`raise_exception`, an unknown construct) or renders a conversation
    /// that does not start with its own prompt.
    pub fn chat(
        &self,
        prompt: &[Message],
        completion: &[Message],
        tools: Option<&Value>,
    ) -> std::result::Result<(String, String), String> {
        let Some(template) = &self.template else {
            let body = completion
                .iter()
                .map(|m| format!("{}{}", plain(m), self.turn_end()))
                .collect();
            return Ok((self.render(prompt, true), body));
        };
        let head = template.render(prompt, tools, true)?;
        let whole = template.render(&[prompt, completion].concat(), tools, false)?;
        match whole.strip_prefix(head.as_str()) {
            Some(body) => {
                let body = body.to_owned();
                Ok((head, body))
            }
            None => Err("the rendered conversation does not start with its rendered prompt".into()),
        }
    }

    fn render(&self, messages: &[Message], open_assistant: bool) -> String {
        let mut out = String::new();
        for m in messages {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
            let content = plain(m);
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

    fn turn_end(&self) -> &'static str {
        if self.chatml { "<|im_end|>\n" } else { "\n" }
    }
}

/// `chat_template` of a `tokenizer_config.json`: a string, or a list of named templates of
/// which `default` is the one (transformers' multi-template form).
fn chat_template(config: &Value) -> Option<String> {
    match config.get("chat_template")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(named) => named.iter().find_map(|t| {
            (t.get("name")?.as_str()? == "default")
                .then(|| t.get("template")?.as_str().map(String::from))
                .flatten()
        }),
        _ => None,
    }
}

impl ChatTemplate {
    /// `source` compiled once (a dataset renders it twice per text-only turn), with the
    /// environment transformers gives it.
    fn compile(
        source: String,
        bos_token: String,
        eos_token: String,
    ) -> std::result::Result<Self, String> {
        let mut env = minijinja::Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", crate::pyjson::tojson);
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    message,
                ))
            },
        );
        env.add_template_owned(CHAT, source)
            .map_err(|e| e.to_string())?;
        Ok(Self {
            env,
            bos_token,
            eos_token,
        })
    }

    fn render(
        &self,
        messages: &[Message],
        tools: Option<&Value>,
        add_generation_prompt: bool,
    ) -> std::result::Result<String, String> {
        self.env
            .get_template(CHAT)
            .and_then(|t| {
                t.render(minijinja::context! {
                    messages => messages,
                    tools => tools,
                    add_generation_prompt => add_generation_prompt,
                    bos_token => self.bos_token,
                    eos_token => self.eos_token,
                })
            })
            .map_err(|e| e.to_string())
    }
}

/// The chat template's name in its environment.
const CHAT: &str = "chat_template";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_level_round_trips() {
        let tok = Tok::char_level("0123456789+=:\nACQR", &["<eos>"]).unwrap();
        let ids = tok.encode("Q:12+3\n").unwrap();
        assert_eq!(ids.len(), 7);
        assert_eq!(tok.decode(&ids).unwrap(), "Q:12+3\n");
        assert_eq!(tok.eos(), [0]);
        let again = Tok::from_bytes(tok.json().to_vec()).unwrap();
        assert_eq!(again.sha256, tok.sha256);
    }

    #[test]
    fn a_saved_tokenizer_keeps_its_template_and_end_ids() {
        let base = tempfile::tempdir().unwrap();
        let tok = Tok::char_level("abc:\n", &["<eos>", "<end>"]).unwrap();
        std::fs::write(base.path().join("tokenizer.json"), tok.json()).unwrap();
        std::fs::write(
            base.path().join(CHAT_TEMPLATE),
            "{% for m in messages %}{{ m.role }}:{{ m.content }}<end>{% endfor %}\
             {% if add_generation_prompt %}assistant:{% endif %}",
        )
        .unwrap();
        std::fs::write(
            base.path().join(GENERATION_CONFIG),
            r#"{"eos_token_id": [0, 1]}"#,
        )
        .unwrap();
        std::fs::write(
            base.path().join(TOKENIZER_CONFIG),
            r#"{"eos_token": "<eos>"}"#,
        )
        .unwrap();
        let loaded = Tok::load(base.path(), &[]).unwrap();
        let saved = tempfile::tempdir().unwrap();
        loaded.save(saved.path()).unwrap();
        let again = Tok::load(saved.path(), &[]).unwrap();
        assert_eq!(again.eos(), loaded.eos());
        assert_eq!(again.eos(), [0, 1]);
        assert_eq!(
            again.prompt_text("a", true).unwrap(),
            "user:a<end>assistant:"
        );
    }
}
