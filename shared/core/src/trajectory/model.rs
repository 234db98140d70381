//! The trajectory an agent posts: turns with text, tool calls and optional token-level data.
//!
//! These are the domain shapes after deserialisation; [`Trajectory::validate`] enforces the
//! documented limits before anything is scored, anonymised or written. With the `openapi`
//! feature they are also the request schema of `POST /v1/trajectories`, stating each limit of
//! one field that [`Trajectory::validate`] checks (the rules across fields are in its docs).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, de};

/// One multi-turn, possibly tool-using episode of one agent. Ids are 1 to 128 characters of
/// `[A-Za-z0-9_.:@/-]`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// The version of this body's shape (absent: the shape before versions, read the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<crate::SchemaVersion>,
    /// The episode's id; a redelivery carries the same id.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub trajectory_id: String,
    /// The agent that produced the episode.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub agent_id: String,
    /// The conversation the episode belongs to.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub conversation_id: String,
    /// The end user, when known; replaced by a keyed pseudonym before anything is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub user_id: Option<String>,
    /// Episodes answering the same prompt or task share a group: the GRPO group key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub group_id: Option<String>,
    /// The policy that sampled the episode; accepted as a JSON integer or string, kept as text.
    #[serde(
        default,
        deserialize_with = "integer_or_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::policy_version))]
    pub policy_version: Option<String>,
    /// The tools the agent was offered (at most 64, each name declared once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 64))]
    pub tools: Vec<ToolSpec>,
    /// The turns, in order (1 to 512). All text together (contents, tool results, errors,
    /// tool descriptions, the compact JSON of arguments and parameter schemas) is at most
    /// 4 MiB.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 512))]
    pub turns: Vec<Turn>,
    /// How the episode ended, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_outcome: Option<FinalOutcome>,
}

/// A tool offered to the agent.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The name calls refer to: an id, not the name of another tool of the trajectory.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub name: String,
    /// Free-text description shown to the model (at most 262144 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 262_144))]
    pub description: Option<String>,
    /// JSON schema of the call arguments (see [`crate::trajectory::schema`] for the subset checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::tool_parameters))]
    pub parameters: Option<serde_json::Value>,
}

/// Who produced a turn.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// "Role" alone is the judges' model role in the merged API document.
#[cfg_attr(feature = "openapi", schema(as = TurnRole))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The end user or the task.
    User,
    /// The policy being trained: the only role whose turns are actions.
    Assistant,
    /// A tool's answer to an assistant's call.
    Tool,
}

impl Role {
    /// The role's name, as it is serialised and stored in the turn table.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

/// One turn of a trajectory.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Who produced the turn.
    pub role: Role,
    /// The turn's text (at most 262144 characters).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 262_144))]
    pub content: String,
    /// The message's content as parts, when it came as parts (OpenAI's `text`, `image_url`,
    /// `input_audio`, `file`…: each an object with a `type`), at most 64; `content` holds
    /// their text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::content_parts))]
    pub content_parts: Vec<serde_json::Value>,
    /// The tool the assistant called in this turn: assistant turns only. The shape before
    /// `tool_calls`, still taken (not with `tool_calls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<ToolCall>,
    /// The tools the assistant called in this turn, in the order it produced them (parallel
    /// calls): assistant turns only, at most 64.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 64))]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool turn answers (a `tool_calls[].id` of an earlier assistant turn): tool
    /// turns only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub tool_call_id: Option<String>,
    /// What a tool returned (at most 262144 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 262_144))]
    pub tool_result: Option<String>,
    /// An error a tool (or the runtime) reported for this turn (at most 262144 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 262_144))]
    pub error: Option<String>,
    /// A reward the agent's environment assigned to this turn, on the [-1, 1] scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    /// The prompt exactly as tokenised by the sampler (at most 32768 ids, each below 2^31:
    /// they are stored as int32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_items = 32_768, maximum = 2_147_483_647)
    )]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// The sampled response tokens (model and interleaved tool tokens); at most 32768 ids, each
    /// below 2^31.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_items = 32_768, maximum = 2_147_483_647)
    )]
    pub response_token_ids: Option<Vec<u32>>,
    /// Per response token: 1 = generated by the model (trained on), 0 = tool/environment token.
    /// Requires `response_token_ids`, with as many entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_items = 32_768, maximum = 1))]
    pub loss_mask: Option<Vec<u8>>,
    /// Per response token: the sampler's log-probability, used as π_old off-policy: at most 0,
    /// and finite as a 32-bit float (above −(2^128 − 2^103), past which it rounds to −∞).
    /// Requires `response_token_ids`, with as many entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_items = 32_768,
            maximum = 0,
            exclusive_minimum = -3.4028235677973366e38
        )
    )]
    pub behavior_logprobs: Option<Vec<f32>>,
    /// Tokenizer or chat-template id the token ids belong to: 1 to 256 characters, no control
    /// characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$"
        )
    )]
    pub tokenizer: Option<String>,
    /// Prompt tokens the model call that produced this (assistant) turn reported (below 2^31).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(maximum = 2_147_483_647))]
    pub input_tokens: Option<u32>,
    /// Completion tokens it reported (below 2^31).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(maximum = 2_147_483_647))]
    pub output_tokens: Option<u32>,
}

impl Turn {
    /// A turn of plain text: no tool call, result, error, reward, tokens or usage.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            content_parts: Vec::new(),
            tool_call: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_result: None,
            error: None,
            reward: None,
            prompt_token_ids: None,
            response_token_ids: None,
            loss_mask: None,
            behavior_logprobs: None,
            tokenizer: None,
            input_tokens: None,
            output_tokens: None,
        }
    }

    /// Every call of the turn: `tool_call`, then `tool_calls`.
    pub fn calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.tool_call.iter().chain(&self.tool_calls)
    }

    /// Whether the turn calls a tool.
    pub fn has_calls(&self) -> bool {
        self.tool_call.is_some() || !self.tool_calls.is_empty()
    }
}

/// A call the assistant made.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The call's id, which the tool turn answering it names in `tool_call_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub id: Option<String>,
    /// The called tool's name (an id).
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$"))]
    pub name: String,
    /// The arguments: a JSON object (nested at most 64 levels deep), or the string the model
    /// produced, as OpenAI-compatible servers return it (at most 262144 characters; a string
    /// that is not a JSON object is kept, and scores as an invalid call).
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::tool_arguments))]
    pub arguments: serde_json::Value,
}

impl ToolCall {
    /// The arguments as the model produced them: a string as it is, an object as compact
    /// JSON.
    #[must_use]
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// The arguments as a JSON object: the object, or the string parsed, when it is one.
    #[must_use]
    pub fn arguments_object(&self) -> Option<std::borrow::Cow<'_, serde_json::Value>> {
        match &self.arguments {
            serde_json::Value::Object(_) => Some(std::borrow::Cow::Borrowed(&self.arguments)),
            serde_json::Value::String(s) => serde_json::from_str::<serde_json::Value>(s)
                .ok()
                .filter(serde_json::Value::is_object)
                .map(std::borrow::Cow::Owned),
            _ => None,
        }
    }
}

/// How the episode ended.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalOutcome {
    /// Whether the task was accomplished.
    pub success: bool,
    /// The episode reward, on the [-1, 1] scale, when the environment gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
    /// Why the episode stopped (e.g. `done`, `max_turns`): 1 to 256 characters, no control
    /// characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$"
        )
    )]
    pub termination_reason: Option<String>,
    /// The episode was cut short rather than finished.
    #[serde(default)]
    pub truncated: bool,
}

/// The schemas of the fields whose Rust type says less than the JSON they take.
#[cfg(feature = "openapi")]
mod openapi {
    use utoipa::openapi::{Array, ArrayBuilder, Object, ObjectBuilder, Type, schema::SchemaType};

    use crate::trajectory::Limits;

    /// A JSON integer (any that an `i64` or a `u64` holds) or an id, as `integer_or_string`
    /// reads it.
    pub(super) fn policy_version() -> Object {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([
                Type::Integer,
                Type::String,
                Type::Null,
            ]))
            .description(Some(format!(
                "The policy that sampled the episode: a JSON integer or an id (1 to {} \
                 characters of `[A-Za-z0-9_.:@/-]`), kept as text.",
                Limits::MAX_ID_CHARS
            )))
            .minimum(Some(i64::MIN))
            .maximum(Some(u64::MAX))
            .pattern(Some(format!(
                "^[A-Za-z0-9_.:@/-]{{1,{}}}$",
                Limits::MAX_ID_CHARS
            )))
            .build()
    }

    /// Tool-call arguments: a JSON object, or the string the model produced.
    pub(super) fn tool_arguments() -> Object {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Object, Type::String]))
            .description(Some(format!(
                "A JSON object, or the arguments string the model produced (at most {} \
                 characters).",
                Limits::MAX_TEXT_CHARS
            )))
            .max_length(Some(Limits::MAX_TEXT_CHARS))
            .build()
    }

    /// Content parts: objects with a `type` (OpenAI's `text`, `image_url`, …), any other
    /// fields as they come.
    pub(super) fn content_parts() -> Array {
        let kind = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(64));
        let part = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("type", kind)
            .required("type");
        ArrayBuilder::new()
            .items(part)
            .max_items(Some(Limits::MAX_TOOLS))
            .description(Some(
                "The message's content as parts, when it came as parts; `content` holds their text.",
            ))
            .build()
    }

    /// A JSON Schema is an object or a boolean.
    pub(super) fn tool_parameters() -> Object {
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([
                Type::Object,
                Type::Boolean,
                Type::Null,
            ]))
            .description(Some(format!(
                "JSON schema of the call arguments (an object or a boolean), nested at most {} \
                 levels deep.",
                Limits::MAX_JSON_DEPTH
            )))
            .build()
    }
}

/// Agents report policy versions as counters or as labels; both are kept as text.
fn integer_or_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct Visitor;
    impl de::Visitor<'_> for Visitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an integer or a string")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_owned()))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(Visitor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> serde_json::Value {
        json!({
            "trajectory_id": "t-1",
            "agent_id": "agent",
            "conversation_id": "c-1",
            "turns": [{"role": "user", "content": "hi"}]
        })
    }

    #[test]
    fn minimal_trajectory_gets_defaults() {
        let t: Trajectory = serde_json::from_value(minimal()).unwrap();
        assert!(t.tools.is_empty());
        assert_eq!(t.policy_version, None);
        assert_eq!(t.turns[0].role, Role::User);
        assert_eq!(t.turns[0].tool_call, None);
    }

    #[test]
    fn policy_version_accepts_integer_string_and_null() {
        for (raw, want) in [
            (json!(42), Some("42")),
            (json!("v3-rc1"), Some("v3-rc1")),
            (json!(null), None),
        ] {
            let mut v = minimal();
            v["policy_version"] = raw;
            let t: Trajectory = serde_json::from_value(v).unwrap();
            assert_eq!(t.policy_version.as_deref(), want);
        }
        let mut v = minimal();
        v["policy_version"] = json!(1.5);
        assert!(serde_json::from_value::<Trajectory>(v).is_err());
    }

    #[test]
    fn unknown_fields_and_roles_are_refused() {
        let mut v = minimal();
        v["tenant"] = json!("x");
        assert!(serde_json::from_value::<Trajectory>(v).is_err());

        let mut v = minimal();
        v["turns"][0]["extra"] = json!(1);
        assert!(serde_json::from_value::<Trajectory>(v).is_err());

        let mut v = minimal();
        v["turns"][0]["role"] = json!("Assistant");
        assert!(serde_json::from_value::<Trajectory>(v).is_err());
    }

    #[test]
    fn full_trajectory_round_trips() {
        let v = json!({
            "trajectory_id": "t-1",
            "agent_id": "agent",
            "conversation_id": "c-1",
            "user_id": "u-9",
            "group_id": "g-1",
            "policy_version": 7,
            "tools": [{"name": "search", "description": "web search",
                       "parameters": {"type": "object"}}],
            "turns": [
                {"role": "assistant", "content": "",
                 "tool_call": {"name": "search", "arguments": {"q": "rust"}},
                 "response_token_ids": [1, 2], "loss_mask": [1, 1],
                 "behavior_logprobs": [-0.5, -0.25], "tokenizer": "qwen2.5"},
                {"role": "tool", "tool_result": "ok", "reward": 0.5}
            ],
            "final_outcome": {"success": true, "reward": 1.0, "termination_reason": "done"}
        });
        let t: Trajectory = serde_json::from_value(v).unwrap();
        assert_eq!(t.policy_version.as_deref(), Some("7"));
        assert!(!t.final_outcome.as_ref().unwrap().truncated);
        let back: Trajectory = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }
}
