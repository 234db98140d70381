//! Reading a dataset written by `agentrl dataset build` (`manifest.json`, `train.parquet`,
//! `sft.jsonl`) into training sequences, through the safe-training gate: rows that must not be
//! trained on are dropped and counted, never silently used.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::Path;

use agentrl_core::contracts::Manifest;
pub use agentrl_core::training::{GateCounts, SftCounts};
use agentrl_turns::{READABLE_VERSIONS, SCHEMA_VERSION, TurnRow, read_turns};
use serde_json::{Value, json};

use crate::config::TrainConfig;
use crate::error::{Result, TrainError};
use crate::tokenizer::{Message, Tok, message};
use crate::turn_store::{TurnRef, TurnStore};

/// Rewards outside this range are refused: the verifiers produce [0, 1], learning events
/// [−1, 1].
pub const REWARD_RANGE: (f64, f64) = (-1.0, 1.0);

/// One model turn to train on.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSeq {
    /// Prompt then response ids.
    pub ids: Vec<u32>,
    /// Where the response starts.
    pub start: usize,
    /// Loss mask over the response.
    pub mask: Vec<bool>,
    /// Behaviour logprobs over the response, when usable as π_old.
    pub behaviour: Option<Vec<f32>>,
}

/// One trajectory that passed the gate; its turns are in the split's [`TurnStore`].
#[derive(Debug, Clone, PartialEq)]
pub struct DataRollout {
    /// Its `group_id` (its own id when it has none).
    pub group: String,
    /// `episode_reward`.
    pub reward: f64,
    /// `turn_reward` of each model turn (0 when null).
    pub turn_rewards: Vec<f64>,
    /// The model turns.
    pub turns: Vec<TurnRef>,
    /// A turn violated a safety rule (kept in validation only, to measure how likely the
    /// policy is to produce such trajectories).
    pub safety_violation: bool,
}

/// The trajectories of a split that passed the gate, and the store of their turns.
#[derive(Debug)]
pub struct Rollouts {
    /// The trajectories, in the order they completed in the file.
    pub items: Vec<DataRollout>,
    /// Their model turns.
    pub store: TurnStore,
    /// The longest turn, prompt and response, in tokens (what a micro-batch must hold).
    pub longest: usize,
}

impl Rollouts {
    /// The model turns of trajectory `i`.
    ///
    /// # Errors
    /// I/O.
    pub fn turns(&self, i: usize) -> Result<Vec<TurnSeq>> {
        self.items[i]
            .turns
            .iter()
            .map(|&at| self.store.load(at))
            .collect()
    }
}

/// Which file of a dataset is read, and how the gate treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// `train.parquet`: every gate rule applies; nothing left is an error.
    Train,
    /// `validation.parquet`: trajectories with a safety violation are kept (flagged); a missing
    /// file or nothing left is an empty set.
    Validation,
}

impl Split {
    /// The file's name.
    pub fn file(self) -> &'static str {
        match self {
            Self::Train => "train.parquet",
            Self::Validation => "validation.parquet",
        }
    }
}

/// What the trainer reads from a dataset's `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestHashes {
    /// The dataset's content hash.
    pub content: String,
    /// SHA-256 of `validation.parquet` (empty when the manifest lists none).
    pub validation: String,
}

/// Checks `manifest.json` and returns the hashes the run reports.
///
/// # Errors
/// A missing or unreadable manifest, a newer manifest version, or another schema version.
pub fn check_manifest(dir: &Path) -> Result<ManifestHashes> {
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(|e| TrainError::file(&path, e))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| TrainError::file(&path, e))?;
    manifest
        .check_version()
        .map_err(|e| TrainError::file(&path, e))?;
    let version = manifest.schema_version;
    if !READABLE_VERSIONS.contains(&version) {
        return Err(TrainError::file(
            &path,
            format!("schema_version {version}: this trainer reads 1 to {SCHEMA_VERSION}"),
        ));
    }
    Ok(ManifestHashes {
        validation: manifest
            .files
            .get("validation")
            .map(|f| f.sha256.clone())
            .unwrap_or_default(),
        content: manifest.content_hash,
    })
}

fn parse_version(v: &str) -> Option<i64> {
    v.trim_start_matches(['v', 'V']).parse().ok()
}

/// Reads a split of the dataset through the gate, streaming: a trajectory is gated as soon as
/// its `turn_count` rows have been read (rows of one trajectory written together, as the
/// dataset job does, keep only that trajectory in memory) and its token ids go to a
/// [`TurnStore`] on disk.
///
/// # Errors
/// An unreadable file, or nothing left to train on.
pub fn read_rollouts(
    dir: &Path,
    split: Split,
    tok: &Tok,
    model: Limits,
    config: &TrainConfig,
) -> Result<(Rollouts, GateCounts)> {
    let path = dir.join(split.file());
    let mut gated = Gating {
        split,
        tok,
        model,
        config,
        names: config
            .tokenizers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        counts: GateCounts::default(),
        rollouts: Rollouts {
            items: Vec::new(),
            store: TurnStore::create()?,
            longest: 0,
        },
    };
    if split == Split::Validation && !path.exists() {
        return Ok((gated.rollouts, gated.counts));
    }
    let file = File::open(&path).map_err(|e| TrainError::file(&path, e))?;
    let mut open: HashMap<String, Vec<TurnRow>> = HashMap::new();
    let mut closed: HashSet<String> = HashSet::new();
    for row in read_turns(file).map_err(|e| TrainError::file(&path, e))? {
        let row = row.map_err(|e| TrainError::file(&path, e))?;
        if closed.contains(&row.trajectory_id) {
            gated.counts.late_turns += 1;
            continue;
        }
        let id = row.trajectory_id.clone();
        let expected = usize::try_from(row.turn_count).unwrap_or(usize::MAX);
        let rows = open.entry(id.clone()).or_default();
        rows.push(row);
        if rows.len() >= expected
            && let Some(rows) = open.remove(&id)
        {
            gated.trajectory(&id, rows)?;
            closed.insert(id);
        }
    }
    // Trajectories with fewer rows than their `turn_count` says: gated on what there is.
    let mut rest: Vec<(String, Vec<TurnRow>)> = open.into_iter().collect();
    rest.sort_by(|a, b| a.0.cmp(&b.0));
    for (id, rows) in rest {
        gated.trajectory(&id, rows)?;
    }
    gated.rollouts.store.flush()?;
    let Gating {
        rollouts, counts, ..
    } = gated;
    if rollouts.items.is_empty() && split == Split::Train {
        return Err(TrainError::Data(format!(
            "{}: nothing left to train on after the safe-training gate: {}",
            path.display(),
            serde_json::to_string(&counts).unwrap_or_default()
        )));
    }
    Ok((rollouts, counts))
}

/// What rows must fit: the model's vocabulary and the run's longest sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Token ids must be below it.
    pub vocab: usize,
    /// `max_seq_len`: longer sequences keep their start.
    pub max_len: usize,
}

/// The gate's state while a split streams by.
struct Gating<'a> {
    split: Split,
    tok: &'a Tok,
    model: Limits,
    config: &'a TrainConfig,
    names: HashMap<&'a str, &'a str>,
    counts: GateCounts,
    rollouts: Rollouts,
}

impl Gating<'_> {
    /// Gates one whole trajectory and stores it when it passes.
    fn trajectory(&mut self, id: &str, mut rows: Vec<TurnRow>) -> Result<()> {
        self.counts.trajectories += 1;
        rows.sort_by_key(|r| r.turn_index);
        let unsafe_kept =
            self.split == Split::Validation && rows.iter().any(|r| r.safety_violation);
        let passed = gate(
            &rows,
            !unsafe_kept,
            self.tok,
            self.model,
            self.config,
            &self.names,
            &mut self.counts,
        );
        let turns = match passed {
            Ok(turns) => turns,
            Err(field) => {
                *field.counter(&mut self.counts) += 1;
                return Ok(());
            }
        };
        let first = &rows[0];
        let longest = turns.iter().map(|t| t.ids.len()).max().unwrap_or(0);
        self.rollouts.longest = self.rollouts.longest.max(longest);
        self.rollouts.items.push(DataRollout {
            group: first.group_id.clone().unwrap_or_else(|| id.to_owned()),
            reward: first.episode_reward.unwrap_or(0.0),
            turn_rewards: rows
                .iter()
                .filter(|r| r.role == "assistant")
                .map(|r| r.turn_reward.unwrap_or(0.0))
                .collect(),
            turns: turns
                .iter()
                .map(|t| self.rollouts.store.append(t))
                .collect::<Result<_>>()?,
            safety_violation: unsafe_kept,
        });
        self.counts.kept += 1;
        Ok(())
    }
}

/// Why a trajectory was dropped.
enum Drop {
    Safety,
    Lengths,
    Tokenizer,
    Vocab,
    Reward,
    Stale,
    NoTurn,
    Template,
    TooLong,
}

impl Drop {
    fn counter(self, c: &mut GateCounts) -> &mut usize {
        match self {
            Self::Safety => &mut c.safety_violation,
            Self::Lengths => &mut c.inconsistent_lengths,
            Self::Tokenizer => &mut c.tokenizer_mismatch,
            Self::Vocab => &mut c.token_out_of_vocab,
            Self::Reward => &mut c.reward_out_of_range,
            Self::Stale => &mut c.stale,
            Self::NoTurn => &mut c.no_model_turn,
            Self::Template => &mut c.chat_template_error,
            Self::TooLong => &mut c.too_long,
        }
    }
}

fn in_range(x: f64) -> bool {
    x.is_finite() && (REWARD_RANGE.0..=REWARD_RANGE.1).contains(&x)
}

fn gate(
    rows: &[TurnRow],
    drop_unsafe: bool,
    tok: &Tok,
    model: Limits,
    config: &TrainConfig,
    names: &HashMap<&str, &str>,
    counts: &mut GateCounts,
) -> std::result::Result<Vec<TurnSeq>, Drop> {
    if drop_unsafe && rows.iter().any(|r| r.safety_violation) {
        return Err(Drop::Safety);
    }
    let rewards_ok = rows
        .iter()
        .all(|r| r.episode_reward.is_some_and(in_range) && r.turn_reward.is_none_or(in_range));
    if !rewards_ok {
        return Err(Drop::Reward);
    }
    let mut named = rows
        .iter()
        .filter_map(|r| r.tokenizer.as_deref())
        .peekable();
    let verified = named.peek().is_some();
    if named.any(|name| names.get(name).copied().unwrap_or(name) != tok.sha256) {
        return Err(Drop::Tokenizer);
    }
    let version = rows
        .iter()
        .filter_map(|r| r.policy_version.as_deref().and_then(parse_version))
        .min();
    let current = config.grpo.policy_version;
    if let (Some(v), Some(now), Some(max)) = (version, current, config.grpo.max_staleness)
        && now - v > max
    {
        return Err(Drop::Stale);
    }
    let same_policy = verified && version.is_some() && version == current;
    let mut turns = Vec::new();
    let (mut retokenized, mut truncated) = (0, 0);
    let mut history: Vec<Message> = Vec::new();
    let tools: Option<Value> = rows
        .iter()
        .find_map(|r| r.tools.as_deref())
        .and_then(|t| serde_json::from_str(t).ok());
    for row in rows {
        if row.role != "assistant" {
            history.push(row_message(row));
            continue;
        }
        let seq = match (&row.prompt_token_ids, &row.response_token_ids) {
            (Some(prompt), Some(response)) => {
                let n = response.len();
                let mask_ok = row.loss_mask.as_ref().is_none_or(|m| m.len() == n);
                let logp_ok = row.behavior_logprobs.as_ref().is_none_or(|l| l.len() == n);
                if n == 0 || prompt.is_empty() || !mask_ok || !logp_ok {
                    return Err(Drop::Lengths);
                }
                let ids: Vec<u32> = prompt
                    .iter()
                    .chain(response)
                    .map(|&t| {
                        u32::try_from(t)
                            .ok()
                            .filter(|&t| (t as usize) < model.vocab)
                    })
                    .collect::<Option<_>>()
                    .ok_or(Drop::Vocab)?;
                let mask = row
                    .loss_mask
                    .as_ref()
                    .map_or_else(|| vec![true; n], |m| m.iter().map(|&x| x != 0).collect());
                let behaviour = row
                    .behavior_logprobs
                    .clone()
                    .filter(|l| same_policy && l.iter().all(|x| x.is_finite() && *x <= 0.0));
                TurnSeq {
                    ids,
                    start: prompt.len(),
                    mask,
                    behaviour,
                }
            }
            (None, None) => {
                let (prompt, response) = tok
                    .chat(&history, &[row_message(row)], tools.as_ref())
                    .map_err(|_| Drop::Template)?;
                let prompt = tok.encode(&prompt).map_err(|_| Drop::Vocab)?;
                let response = tok.encode(&response).map_err(|_| Drop::Vocab)?;
                if prompt.is_empty() || response.is_empty() {
                    return Err(Drop::Lengths);
                }
                retokenized += 1;
                let n = response.len();
                TurnSeq {
                    start: prompt.len(),
                    ids: [prompt, response].concat(),
                    mask: vec![true; n],
                    behaviour: None,
                }
            }
            _ => return Err(Drop::Lengths),
        };
        let seq = match fit(seq, model.max_len) {
            Fit::Whole(seq) => seq,
            Fit::Cut(seq) => {
                truncated += 1;
                seq
            }
            Fit::TooLong => return Err(Drop::TooLong),
        };
        history.push(row_message(row));
        turns.push(seq);
    }
    if turns.is_empty() {
        return Err(Drop::NoTurn);
    }
    counts.unverified_tokenizer += usize::from(!verified);
    counts.retokenized_turns += retokenized;
    counts.truncated_turns += truncated;
    let off = turns.iter().filter(|t| t.behaviour.is_some()).count();
    counts.off_policy_turns += off;
    counts.on_policy_surrogate_turns += turns.len() - off;
    Ok(turns)
}

/// A turn cut to a length.
enum Fit {
    /// It fits.
    Whole(TurnSeq),
    /// Its response's end was dropped.
    Cut(TurnSeq),
    /// Its prompt alone is as long as the limit: nothing to train on would be left.
    TooLong,
}

/// `seq` kept within `max_len` tokens, from its start (TRL's `keep_start`).
fn fit(mut seq: TurnSeq, max_len: usize) -> Fit {
    if seq.ids.len() <= max_len {
        return Fit::Whole(seq);
    }
    if seq.start >= max_len {
        return Fit::TooLong;
    }
    let keep = max_len - seq.start;
    seq.ids.truncate(max_len);
    seq.mask.truncate(keep);
    if let Some(b) = &mut seq.behaviour {
        b.truncate(keep);
    }
    Fit::Cut(seq)
}

/// One supervised example: prompt ids, completion ids, loss mask over the completion.
#[derive(Debug, Clone, PartialEq)]
pub struct SftExample {
    /// Prompt ids.
    pub prompt: Vec<u32>,
    /// Completion ids, ending with an end id (see [`Tok::ended`]) unless cut to `max_seq_len`.
    pub completion: Vec<u32>,
    /// Which completion tokens are trained on.
    pub mask: Vec<bool>,
}

/// A turn row as the chat message a template renders (vLLM's form: a call's arguments that
/// parse as a JSON object are given as that object, others as the string).
fn row_message(row: &TurnRow) -> Message {
    match row.role.as_str() {
        "assistant" if !row.tool_calls.is_empty() => {
            let calls: Vec<Value> = row
                .tool_calls
                .iter()
                .map(|c| {
                    let arguments = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| Value::String(c.arguments.clone()));
                    let mut call = json!({"type": "function",
                        "function": {"name": c.name, "arguments": arguments}});
                    if let Some(id) = &c.id {
                        call["id"] = json!(id);
                    }
                    call
                })
                .collect();
            json!({"role": "assistant", "content": row.content, "tool_calls": calls})
        }
        "tool" => {
            let mut m = message(
                "tool",
                row.tool_result.as_deref().unwrap_or(row.content.as_str()),
            );
            if let Some(id) = &row.tool_call_id {
                m["tool_call_id"] = json!(id);
            }
            m
        }
        role => message(role, &row.content),
    }
}

/// A list of chat messages, each an object with a `role` (and `content`, or an assistant's
/// `tool_calls`).
fn messages(v: &Value) -> Option<Vec<Message>> {
    v.as_array()?
        .iter()
        .map(|m| {
            let has_text = m.get("content").is_some_and(Value::is_string);
            let calls = m.get("tool_calls").is_some_and(Value::is_array);
            (m.get("role")?.is_string() && (has_text || calls)).then(|| m.clone())
        })
        .collect()
}

/// Reads SFT lines: `{"prompt": "...", "completion": "..."}` (text: as written, or with
/// `chat_template` a user turn and the assistant's answer rendered by the chat template) or
/// the dataset job's chat form (`prompt` and `completion` as message lists, rendered). Every
/// completion ends with an end id: the chat template's turn end, or else the
/// end-of-sequence token appended, so the warmed-up model learns to stop. Examples longer than
/// `max_len` keep their start.
///
/// # Errors
/// A malformed line, named by its number.
pub fn read_sft(
    path: &Path,
    tok: &Tok,
    chat_template: bool,
    max_len: usize,
) -> Result<(Vec<SftExample>, SftCounts)> {
    let text = std::fs::read_to_string(path).map_err(|e| TrainError::file(path, e))?;
    let (mut out, mut counts) = (Vec::new(), SftCounts::default());
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |reason: &str| TrainError::file(path, format!("line {}: {reason}", n + 1));
        let v: Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
        let (prompt, completion) = match (v.get("prompt"), v.get("completion")) {
            (Some(Value::String(p)), Some(Value::String(c))) if chat_template => tok
                .chat(&[message("user", p)], &[message("assistant", c)], None)
                .map_err(|e| bad(&format!("chat template: {e}")))?,
            (Some(Value::String(p)), Some(Value::String(c))) => (p.clone(), c.clone()),
            (Some(p @ Value::Array(_)), Some(c @ Value::Array(_))) => {
                let p = messages(p).ok_or_else(|| bad("prompt: messages need role and content"))?;
                let c =
                    messages(c).ok_or_else(|| bad("completion: messages need role and content"))?;
                tok.chat(&p, &c, v.get("tools").filter(|t| t.is_array()))
                    .map_err(|e| bad(&format!("chat template: {e}")))?
            }
            _ => {
                return Err(bad(
                    "needs prompt and completion, both strings or both message lists",
                ));
            }
        };
        let (prompt, completion) = (tok.encode(&prompt)?, tok.encode(&completion)?);
        if prompt.is_empty() || completion.is_empty() {
            return Err(bad("prompt and completion must not tokenise to nothing"));
        }
        let completion = tok.ended(completion);
        let n = completion.len();
        let seq = TurnSeq {
            start: prompt.len(),
            ids: [prompt, completion].concat(),
            mask: vec![true; n],
            behaviour: None,
        };
        let seq = match fit(seq, max_len) {
            Fit::Whole(seq) => seq,
            Fit::Cut(seq) => {
                counts.truncated += 1;
                seq
            }
            Fit::TooLong => {
                counts.too_long += 1;
                continue;
            }
        };
        let (prompt, completion) = seq.ids.split_at(seq.start);
        out.push(SftExample {
            prompt: prompt.to_vec(),
            completion: completion.to_vec(),
            mask: seq.mask,
        });
    }
    counts.examples = out.len();
    Ok((out, counts))
}

/// One line of a prompts file for online GRPO.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptLine {
    /// Raw prompt text.
    pub prompt: String,
    /// The expected answer (a pattern for `regex`).
    pub answer: String,
    /// How the completion is compared.
    #[serde(rename = "match", default = "default_match")]
    pub mode: agentrl_core::verify::MatchMode,
}

fn default_match() -> agentrl_core::verify::MatchMode {
    agentrl_core::verify::MatchMode::Exact
}

/// Reads a prompts file.
///
/// # Errors
/// A malformed line, named by its number.
pub fn read_prompts(path: &Path) -> Result<Vec<PromptLine>> {
    let text = std::fs::read_to_string(path).map_err(|e| TrainError::file(path, e))?;
    let mut out = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let de = &mut serde_json::Deserializer::from_str(line);
        let p: PromptLine = serde_path_to_error::deserialize(de).map_err(|e| {
            TrainError::file(path, format!("line {}: {}: {}", n + 1, e.path(), e.inner()))
        })?;
        if matches!(p.mode, agentrl_core::verify::MatchMode::JsonSchema) {
            return Err(TrainError::file(
                path,
                format!(
                    "line {}: match: json_schema is not a prompt answer mode",
                    n + 1
                ),
            ));
        }
        out.push(p);
    }
    if out.is_empty() {
        return Err(TrainError::file(path, "no prompts"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use agentrl_turns::RowToolCall;

    use super::*;

    fn turn(role: &str, content: &str) -> TurnRow {
        TurnRow {
            role: role.into(),
            content: content.into(),
            ..TurnRow::default()
        }
    }

    #[test]
    fn rows_become_the_messages_a_chat_template_renders() {
        let mut calls = turn("assistant", "Reading both.");
        calls.tool_calls = vec![
            RowToolCall {
                id: Some("call_1".into()),
                name: "read".into(),
                arguments: r#"{"path": "a.rs"}"#.into(),
            },
            RowToolCall {
                id: None,
                name: "grep".into(),
                arguments: "leap".into(),
            },
        ];
        let mut result = turn("tool", "");
        result.tool_call_id = Some("call_1".into());
        result.tool_result = Some("fn a() {}".into());
        let messages: Vec<Message> = [turn("user", "why?"), calls, result]
            .iter()
            .map(row_message)
            .collect();
        assert_eq!(
            messages,
            [
                json!({"role": "user", "content": "why?"}),
                json!({"role": "assistant", "content": "Reading both.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "read", "arguments": {"path": "a.rs"}}},
                    {"type": "function", "function": {"name": "grep", "arguments": "leap"}}]}),
                json!({"role": "tool", "tool_call_id": "call_1", "content": "fn a() {}"}),
            ],
            "arguments that parse are objects (as vLLM renders them), others the string; \
             a tool's result is its content"
        );
    }
}
