//! Trajectory validation: what is refused with 400 before anything is enqueued.
//!
//! Checks run in document order and the first violation is returned, naming its field path
//! (`turns[3].behavior_logprobs[7]`) so an agent developer can find it without guessing.

use std::collections::HashSet;

use super::json;
use super::model::{Role, Trajectory, Turn};

/// The documented size limits of one trajectory.
#[derive(Debug, Clone, Copy)]
pub struct Limits;

impl Limits {
    /// Ids (`trajectory_id`, `agent_id`, `conversation_id`, `user_id`, `group_id`,
    /// `policy_version`, tool names) are 1 to this many characters of `[A-Za-z0-9_.:@/-]`.
    pub const MAX_ID_CHARS: usize = 128;
    /// Turns per trajectory.
    pub const MAX_TURNS: usize = 512;
    /// Characters of one `content`, `tool_result`, `error` or tool `description` (as JSON
    /// Schema counts a `maxLength`; the total below is in bytes).
    pub const MAX_TEXT_CHARS: usize = 256 * 1024;
    /// Entries of one token list (`prompt_token_ids`, `response_token_ids`, `loss_mask`,
    /// `behavior_logprobs`).
    pub const MAX_TOKENS_PER_LIST: usize = 32_768;
    /// Bytes of all text of a trajectory: contents, tool results, errors, tool descriptions,
    /// and the compact JSON of tool call arguments and tool parameter schemas.
    pub const MAX_TOTAL_TEXT_BYTES: usize = 4 * 1024 * 1024;
    /// Tools offered per trajectory.
    pub const MAX_TOOLS: usize = 64;
    /// Largest token id: ids are stored as int32.
    pub const MAX_TOKEN_ID: u32 = i32::MAX as u32;
    /// Nesting depth of tool call arguments and tool parameter schemas.
    pub const MAX_JSON_DEPTH: usize = 64;
    /// Characters of a `tokenizer` id or a `termination_reason`.
    pub const MAX_LABEL_CHARS: usize = 256;
}

/// Why a trajectory is refused; `field` is the path of the culprit.
pub type TrajectoryError = crate::FieldError;

fn err(field: impl Into<String>, reason: impl Into<String>) -> TrajectoryError {
    TrajectoryError::new(field, reason)
}

fn ensure(ok: bool, field: impl Into<String>, reason: &str) -> Result<(), TrajectoryError> {
    if ok { Ok(()) } else { Err(err(field, reason)) }
}

/// Checks an id of a trajectory (and of what refers to one: an agent id in the registry is the
/// agent id its trajectories carry).
///
/// # Errors
/// Empty, longer than 128 characters, or a character outside letters, digits and `_.:@/-`.
pub fn check_id(field: &str, id: &str) -> Result<(), TrajectoryError> {
    ensure(
        !id.is_empty() && id.len() <= Limits::MAX_ID_CHARS,
        field,
        "must be 1 to 128 characters",
    )?;
    ensure(
        id.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:@/-".contains(&b)),
        field,
        "may only contain letters, digits and _ . : @ / -",
    )
}

/// Checks one text's length in characters; returns its size in bytes, for the total.
fn check_text(field: String, text: &str) -> Result<usize, TrajectoryError> {
    ensure(
        text.chars().count() <= Limits::MAX_TEXT_CHARS,
        field,
        "exceeds 262144 characters",
    )?;
    Ok(text.len())
}

fn check_label(field: String, text: &str) -> Result<(), TrajectoryError> {
    ensure(
        !text.is_empty() && text.chars().count() <= Limits::MAX_LABEL_CHARS,
        field.clone(),
        "must be 1 to 256 characters",
    )?;
    ensure(
        !text.chars().any(char::is_control),
        field,
        "must not contain control characters",
    )
}

fn check_json(field: String, v: &serde_json::Value) -> Result<usize, TrajectoryError> {
    let (size, depth) = json::measure(v);
    ensure(
        depth <= Limits::MAX_JSON_DEPTH,
        field,
        "nests deeper than 64 levels",
    )?;
    Ok(size)
}

fn check_token_list<T>(field: String, list: &[T]) -> Result<(), TrajectoryError> {
    ensure(
        list.len() <= Limits::MAX_TOKENS_PER_LIST,
        field,
        "has more than 32768 entries",
    )
}

fn check_ids(field: &str, ids: &[u32]) -> Result<(), TrajectoryError> {
    check_token_list(field.to_owned(), ids)?;
    match ids.iter().position(|&id| id > Limits::MAX_TOKEN_ID) {
        Some(j) => Err(err(
            format!("{field}[{j}]"),
            "token ids must be below 2^31 (stored as int32)",
        )),
        None => Ok(()),
    }
}

fn check_tokens(p: &str, turn: &Turn) -> Result<(), TrajectoryError> {
    if let Some(ids) = &turn.prompt_token_ids {
        check_ids(&format!("{p}.prompt_token_ids"), ids)?;
    }
    if let Some(ids) = &turn.response_token_ids {
        check_ids(&format!("{p}.response_token_ids"), ids)?;
    }
    let response_len = turn.response_token_ids.as_ref().map(Vec::len);
    if let Some(mask) = &turn.loss_mask {
        let field = format!("{p}.loss_mask");
        check_token_list(field.clone(), mask)?;
        let Some(n) = response_len else {
            return Err(err(field, "requires response_token_ids"));
        };
        if mask.len() != n {
            return Err(err(
                field,
                format!("has {} entries but response_token_ids has {n}", mask.len()),
            ));
        }
        if let Some(j) = mask.iter().position(|&m| m > 1) {
            return Err(err(format!("{field}[{j}]"), "must be 0 or 1"));
        }
    }
    if let Some(lps) = &turn.behavior_logprobs {
        let field = format!("{p}.behavior_logprobs");
        check_token_list(field.clone(), lps)?;
        let Some(n) = response_len else {
            return Err(err(field, "requires response_token_ids"));
        };
        if lps.len() != n {
            return Err(err(
                field,
                format!("has {} entries but response_token_ids has {n}", lps.len()),
            ));
        }
        if let Some(j) = lps.iter().position(|lp| !(lp.is_finite() && *lp <= 0.0)) {
            return Err(err(
                format!("{field}[{j}]"),
                "must be finite and at most 0 (a log-probability)",
            ));
        }
    }
    if let Some(tok) = &turn.tokenizer {
        check_label(format!("{p}.tokenizer"), tok)?;
    }
    Ok(())
}

impl Trajectory {
    /// Checks ids, sizes, token alignment and value ranges against [`Limits`].
    ///
    /// Besides each field's own limits (which the OpenAPI schema states), the rules that no
    /// schema of one field can: tool names are unique; only assistant turns carry a
    /// `tool_call` or `tool_calls` (not both), only tool turns a `tool_call_id`; `loss_mask`
    /// and `behavior_logprobs` need `response_token_ids`, with as many
    /// entries; all text together is at most [`Limits::MAX_TOTAL_TEXT_BYTES`]; tool arguments
    /// and parameter schemas nest at most [`Limits::MAX_JSON_DEPTH`] levels.
    ///
    /// # Errors
    /// [`TrajectoryError`] naming the first field in violation.
    pub fn validate(&self) -> Result<(), TrajectoryError> {
        check_id("trajectory_id", &self.trajectory_id)?;
        check_id("agent_id", &self.agent_id)?;
        check_id("conversation_id", &self.conversation_id)?;
        for (field, id) in [
            ("user_id", &self.user_id),
            ("group_id", &self.group_id),
            ("policy_version", &self.policy_version),
        ] {
            if let Some(id) = id {
                check_id(field, id)?;
            }
        }

        let mut total = 0usize;
        ensure(
            self.tools.len() <= Limits::MAX_TOOLS,
            "tools",
            "has more than 64 tools",
        )?;
        let mut names = HashSet::new();
        for (i, tool) in self.tools.iter().enumerate() {
            let p = format!("tools[{i}]");
            check_id(&format!("{p}.name"), &tool.name)?;
            ensure(
                names.insert(tool.name.as_str()),
                format!("{p}.name"),
                "names a tool already declared",
            )?;
            if let Some(d) = &tool.description {
                total += check_text(format!("{p}.description"), d)?;
            }
            if let Some(schema) = &tool.parameters {
                let field = format!("{p}.parameters");
                ensure(
                    schema.is_object() || schema.is_boolean(),
                    field.clone(),
                    "must be a JSON schema (an object or a boolean)",
                )?;
                total += check_json(field, schema)?;
            }
        }

        ensure(
            !self.turns.is_empty(),
            "turns",
            "must hold at least one turn",
        )?;
        ensure(
            self.turns.len() <= Limits::MAX_TURNS,
            "turns",
            "has more than 512 turns",
        )?;
        for (i, turn) in self.turns.iter().enumerate() {
            let p = format!("turns[{i}]");
            total += check_text(format!("{p}.content"), &turn.content)?;
            ensure(
                turn.content_parts.len() <= Limits::MAX_TOOLS,
                format!("{p}.content_parts"),
                "has more than 64 parts",
            )?;
            for (j, part) in turn.content_parts.iter().enumerate() {
                let field = format!("{p}.content_parts[{j}]");
                let kind = part.get("type").and_then(serde_json::Value::as_str);
                ensure(
                    kind.is_some_and(|k| !k.is_empty() && k.len() <= 64),
                    field.clone(),
                    "must be an object with a `type` of 1 to 64 characters",
                )?;
                total += check_json(field, part)?;
            }
            if let Some(r) = &turn.tool_result {
                total += check_text(format!("{p}.tool_result"), r)?;
            }
            if let Some(e) = &turn.error {
                total += check_text(format!("{p}.error"), e)?;
            }
            ensure(
                turn.tool_call.is_none() || turn.tool_calls.is_empty(),
                format!("{p}.tool_call"),
                "give the calls in tool_calls, not in tool_call as well",
            )?;
            ensure(
                turn.tool_calls.len() <= Limits::MAX_TOOLS,
                format!("{p}.tool_calls"),
                "has more than 64 calls",
            )?;
            let single = turn.tool_call.iter().map(|c| (format!("{p}.tool_call"), c));
            let several = (turn.tool_calls.iter().enumerate())
                .map(|(j, c)| (format!("{p}.tool_calls[{j}]"), c));
            for (field, call) in single.chain(several) {
                ensure(
                    turn.role == Role::Assistant,
                    field.clone(),
                    "only assistant turns may call tools",
                )?;
                if let Some(id) = &call.id {
                    check_id(&format!("{field}.id"), id)?;
                }
                check_id(&format!("{field}.name"), &call.name)?;
                let field = format!("{field}.arguments");
                total += match &call.arguments {
                    serde_json::Value::String(text) => check_text(field, text)?,
                    arguments => {
                        ensure(
                            arguments.is_object(),
                            field.clone(),
                            "must be a JSON object, or the arguments string the model produced",
                        )?;
                        check_json(field, arguments)?
                    }
                };
            }
            if let Some(id) = &turn.tool_call_id {
                ensure(
                    turn.role == Role::Tool,
                    format!("{p}.tool_call_id"),
                    "only tool turns answer a call",
                )?;
                check_id(&format!("{p}.tool_call_id"), id)?;
            }
            if let Some(r) = turn.reward {
                ensure(r.is_finite(), format!("{p}.reward"), "must be finite")?;
            }
            for (field, n) in [
                ("input_tokens", turn.input_tokens),
                ("output_tokens", turn.output_tokens),
            ] {
                ensure(
                    n.is_none_or(|n| n <= Limits::MAX_TOKEN_ID),
                    format!("{p}.{field}"),
                    "must be below 2^31",
                )?;
            }
            check_tokens(&p, turn)?;
        }
        ensure(
            total <= Limits::MAX_TOTAL_TEXT_BYTES,
            "turns",
            "total text of the trajectory exceeds 4 MiB",
        )?;

        if let Some(outcome) = &self.final_outcome {
            if let Some(r) = outcome.reward {
                ensure(r.is_finite(), "final_outcome.reward", "must be finite")?;
            }
            if let Some(reason) = &outcome.termination_reason {
                check_label("final_outcome.termination_reason".to_owned(), reason)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::{FinalOutcome, ToolCall, ToolSpec};
    use serde_json::json;

    fn turn(role: Role, content: &str) -> Turn {
        Turn::text(role, content)
    }

    fn valid() -> Trajectory {
        let mut a = turn(Role::Assistant, "let me look");
        a.tool_call = Some(ToolCall {
            id: Some("call_1".into()),
            name: "search".into(),
            arguments: json!({"q": "x"}),
        });
        a.response_token_ids = Some(vec![5, 6, 7]);
        a.loss_mask = Some(vec![1, 1, 0]);
        a.behavior_logprobs = Some(vec![-0.1, 0.0, -3.0]);
        a.tokenizer = Some("Qwen/Qwen2.5-7B@abc".into());
        Trajectory {
            schema_version: Some(crate::SchemaVersion::CURRENT),
            trajectory_id: "traj-1".into(),
            agent_id: "agent:alpha".into(),
            conversation_id: "conv/1".into(),
            user_id: Some("user@example".into()),
            group_id: None,
            policy_version: Some("12".into()),
            tools: vec![ToolSpec {
                name: "search".into(),
                description: None,
                parameters: Some(json!({"type": "object"})),
            }],
            turns: vec![turn(Role::User, "find x"), a],
            final_outcome: Some(FinalOutcome {
                success: true,
                reward: Some(1.0),
                termination_reason: Some("done".into()),
                truncated: false,
            }),
        }
    }

    #[test]
    fn the_fixture_is_valid() {
        valid().validate().unwrap();
    }

    #[test]
    fn each_violation_names_its_field() {
        type Mutation = fn(&mut Trajectory);
        let cases: &[(&str, Mutation)] = &[
            ("trajectory_id", |t| t.trajectory_id.clear()),
            ("agent_id", |t| t.agent_id = "a b".into()),
            ("conversation_id", |t| t.conversation_id = "c".repeat(129)),
            ("user_id", |t| t.user_id = Some("ü".into())),
            ("group_id", |t| t.group_id = Some(String::new())),
            ("policy_version", |t| t.policy_version = Some("v 1".into())),
            ("tools", |t| {
                t.tools = (0..65)
                    .map(|i| ToolSpec {
                        name: format!("t{i}"),
                        description: None,
                        parameters: None,
                    })
                    .collect()
            }),
            ("tools[1].name", |t| {
                let dup = t.tools[0].clone();
                t.tools.push(dup)
            }),
            ("tools[0].parameters", |t| {
                t.tools[0].parameters = Some(json!("object"))
            }),
            ("tools[0].description", |t| {
                t.tools[0].description = Some("x".repeat(Limits::MAX_TEXT_CHARS + 1))
            }),
            ("turns", |t| t.turns.clear()),
            ("turns", |t| {
                t.turns = vec![turn(Role::User, "x"); Limits::MAX_TURNS + 1]
            }),
            ("turns", |t| {
                let big = "x".repeat(Limits::MAX_TEXT_CHARS);
                t.turns = vec![turn(Role::User, &big); 17]
            }),
            ("turns[0].content", |t| {
                t.turns[0].content = "x".repeat(Limits::MAX_TEXT_CHARS + 1)
            }),
            ("turns[0].tool_result", |t| {
                t.turns[0].tool_result = Some("x".repeat(Limits::MAX_TEXT_CHARS + 1))
            }),
            ("turns[0].error", |t| {
                t.turns[0].error = Some("x".repeat(Limits::MAX_TEXT_CHARS + 1))
            }),
            ("turns[0].tool_call", |t| {
                t.turns[0].tool_call = t.turns[1].tool_call.clone()
            }),
            ("turns[1].tool_call.name", |t| {
                if let Some(c) = &mut t.turns[1].tool_call {
                    c.name = "web search".into()
                }
            }),
            ("turns[1].tool_call.arguments", |t| {
                if let Some(c) = &mut t.turns[1].tool_call {
                    c.arguments = json!(3)
                }
            }),
            ("turns[1].tool_call", |t| {
                t.turns[1].tool_calls = t.turns[1].tool_call.clone().into_iter().collect()
            }),
            ("turns[1].tool_calls[1].id", |t| {
                let mut calls: Vec<ToolCall> = t.turns[1].tool_call.take().into_iter().collect();
                calls.push(ToolCall {
                    id: Some("call 2".into()),
                    ..calls[0].clone()
                });
                t.turns[1].tool_calls = calls
            }),
            ("turns[1].tool_calls[0].arguments", |t| {
                let mut call = t.turns[1].tool_call.take().unwrap();
                call.arguments = json!("x".repeat(Limits::MAX_TEXT_CHARS + 1));
                t.turns[1].tool_calls = vec![call]
            }),
            ("turns[0].tool_calls[0]", |t| {
                t.turns[0].tool_calls = t.turns[1].tool_call.clone().into_iter().collect()
            }),
            ("turns[0].tool_call_id", |t| {
                t.turns[0].tool_call_id = Some("call_1".into())
            }),
            ("turns[0].content_parts[1]", |t| {
                t.turns[0].content_parts = vec![json!({"type": "text", "text": "x"}), json!("x")]
            }),
            ("turns[1].tool_call.arguments", |t| {
                let mut deep = json!(1);
                for _ in 0..=Limits::MAX_JSON_DEPTH {
                    deep = json!({ "a": deep });
                }
                if let Some(c) = &mut t.turns[1].tool_call {
                    c.arguments = deep
                }
            }),
            ("turns[0].reward", |t| {
                t.turns[0].reward = Some(f64::INFINITY)
            }),
            ("turns[1].prompt_token_ids[1]", |t| {
                t.turns[1].prompt_token_ids = Some(vec![1, 1 << 31])
            }),
            ("turns[1].prompt_token_ids", |t| {
                t.turns[1].prompt_token_ids = Some(vec![1; Limits::MAX_TOKENS_PER_LIST + 1])
            }),
            ("turns[1].response_token_ids[2]", |t| {
                t.turns[1].response_token_ids = Some(vec![1, 2, u32::MAX])
            }),
            ("turns[1].loss_mask", |t| {
                t.turns[1].response_token_ids = None
            }),
            ("turns[1].loss_mask", |t| {
                t.turns[1].loss_mask = Some(vec![1, 1])
            }),
            ("turns[1].loss_mask[0]", |t| {
                t.turns[1].loss_mask = Some(vec![2, 1, 1])
            }),
            ("turns[1].behavior_logprobs", |t| {
                t.turns[1].loss_mask = None;
                t.turns[1].response_token_ids = None
            }),
            ("turns[1].behavior_logprobs", |t| {
                t.turns[1].behavior_logprobs = Some(vec![-1.0; 4])
            }),
            ("turns[1].behavior_logprobs[1]", |t| {
                t.turns[1].behavior_logprobs = Some(vec![-1.0, 0.5, -1.0])
            }),
            ("turns[1].behavior_logprobs[2]", |t| {
                t.turns[1].behavior_logprobs = Some(vec![-1.0, -1.0, f32::NAN])
            }),
            ("turns[1].behavior_logprobs[0]", |t| {
                t.turns[1].behavior_logprobs = Some(vec![f32::NEG_INFINITY, -1.0, -1.0])
            }),
            ("turns[1].tokenizer", |t| {
                t.turns[1].tokenizer = Some(String::new())
            }),
            ("turns[1].output_tokens", |t| {
                t.turns[1].output_tokens = Some(1 << 31)
            }),
            ("turns[1].tokenizer", |t| {
                t.turns[1].tokenizer = Some("a\nb".into())
            }),
            ("final_outcome.reward", |t| {
                if let Some(o) = &mut t.final_outcome {
                    o.reward = Some(f64::NAN)
                }
            }),
            ("final_outcome.termination_reason", |t| {
                if let Some(o) = &mut t.final_outcome {
                    o.termination_reason = Some("x".repeat(257))
                }
            }),
        ];
        for (i, (field, mutate)) in cases.iter().enumerate() {
            let mut t = valid();
            mutate(&mut t);
            let e = t
                .validate()
                .expect_err(&format!("case {i} ({field}) passed"));
            assert_eq!(&e.field, field, "case {i}: {e}");
        }
    }

    #[test]
    fn limits_are_inclusive() {
        let mut t = valid();
        t.conversation_id = "c".repeat(Limits::MAX_ID_CHARS);
        t.turns[0].content = "x".repeat(Limits::MAX_TEXT_CHARS);
        t.turns[1].prompt_token_ids = Some(vec![Limits::MAX_TOKEN_ID; 3]);
        t.turns[1].loss_mask = Some(vec![0, 0, 0]);
        t.validate().unwrap();
    }

    #[test]
    fn text_limits_count_characters() {
        let mut t = valid();
        t.turns[0].content = "é".repeat(Limits::MAX_TEXT_CHARS);
        t.turns[1].tokenizer = Some("é".repeat(Limits::MAX_LABEL_CHARS));
        t.validate().unwrap();
        t.turns[0].content.push('é');
        assert_eq!(t.validate().unwrap_err().field, "turns[0].content");
    }

    /// The document's exclusive minimum of a logprob: −(2^128 − 2^103) is where an `f64`
    /// rounds to −∞ as an `f32`; the next `f64` above stays finite (−`f32::MAX`).
    #[test]
    fn logprobs_are_finite_exactly_above_the_documented_bound() {
        let bound = -(2f64.powi(128) - 2f64.powi(103));
        assert_eq!(bound, -3.402_823_567_797_336_6e38);
        for (logprob, finite) in [(bound, false), (bound.next_up(), true)] {
            let mut v = serde_json::to_value(valid()).unwrap();
            v["turns"][1]["behavior_logprobs"] = json!([logprob, -1.0, -1.0]);
            let t: Trajectory = serde_json::from_value(v).unwrap();
            assert_eq!(t.validate().is_ok(), finite, "{logprob}");
        }
    }

    #[test]
    fn huge_logprob_from_json_becomes_infinite_and_is_refused() {
        let mut v = serde_json::to_value(valid()).unwrap();
        v["turns"][1]["behavior_logprobs"] = json!([-1e40, -1.0, -1.0]);
        let t: Trajectory = serde_json::from_value(v).unwrap();
        assert_eq!(
            t.validate().unwrap_err().field,
            "turns[1].behavior_logprobs[0]"
        );
    }
}
