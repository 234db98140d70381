//! A span as the trajectory builder reads it: ids as lowercase hex, times in Unix
//! nanoseconds, attributes as JSON values (strings, numbers, booleans, arrays; a key-value
//! list as an object, bytes as base64), the status's error message. Stored as JSON while its
//! conversation is assembled.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// 32 lowercase hex digits, not all zero.
    pub trace_id: String,
    /// 16 lowercase hex digits, not all zero.
    pub span_id: String,
    /// The parent's span id; `None` for a trace's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
    /// The span's name (`chat gpt-4o`, `execute_tool get_weather`).
    pub name: String,
    /// Start, Unix nanoseconds.
    pub start_ns: u64,
    /// End, Unix nanoseconds.
    pub end_ns: u64,
    /// The span's attributes, over those of its resource that name the agent or session.
    #[serde(default)]
    pub attributes: BTreeMap<String, Value>,
    /// The status's message when the span ended in error (`error` when it gave none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why a span cannot be used (counted in the export's `rejected_spans`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("span {span}: {reason}")]
pub struct SpanError {
    /// The span's id as received (hex), or its position when the id itself is at fault.
    pub span: String,
    /// Why.
    pub reason: String,
}

/// The resource attributes a span inherits (the rest of a resource describes the process).
pub const INHERITED: [&str; 6] = [
    "service.name",
    "gen_ai.agent.id",
    "gen_ai.agent.name",
    "gen_ai.conversation.id",
    "session.id",
    "gen_ai.system",
];

impl Span {
    /// The hex of a trace or span id of `len` bytes, refusing another length and all zeros
    /// (OTLP's invalid id).
    ///
    /// # Errors
    /// Which id is wrong, and how.
    pub fn id_hex(what: &str, bytes: &[u8], len: usize) -> Result<String, String> {
        if bytes.len() != len {
            return Err(format!("{what} must be {len} bytes, not {}", bytes.len()));
        }
        if bytes.iter().all(|b| *b == 0) {
            return Err(format!("{what} is all zeros (invalid)"));
        }
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// A string attribute.
    #[must_use]
    pub fn str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    /// An integer attribute (an integer-valued double, or a decimal string, is taken too).
    #[must_use]
    pub fn int(&self, key: &str) -> Option<u64> {
        match self.attributes.get(key)? {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// The conversation the span belongs to, when it names one (`gen_ai.conversation.id`,
    /// else OpenInference's and OpenLLMetry's `session.id`).
    #[must_use]
    pub fn conversation(&self) -> Option<&str> {
        self.str("gen_ai.conversation.id")
            .or_else(|| self.str("session.id"))
            .filter(|s| !s.is_empty())
    }

    /// The agent the span names itself (`gen_ai.agent.id`, else `gen_ai.agent.name`).
    #[must_use]
    pub fn agent(&self) -> Option<&str> {
        self.str("gen_ai.agent.id")
            .or_else(|| self.str("gen_ai.agent.name"))
            .filter(|s| !s.is_empty())
    }
}
