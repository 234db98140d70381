//! Learning events: what the API accepts about an agent's conversations, and their validation.
//!
//! On the wire an event is one flat JSON object whose `type` names the body
//! (`feedback.created`, `ai.message.reply`, `session.ended`, `ai.action`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Longest id (event, agent, user, message, session, source), in characters.
pub const MAX_ID_CHARS: usize = 256;
/// Most traits one reply or action may express.
pub const MAX_TRAITS_PER_EVENT: usize = 32;
/// Longest trait, reaction or action name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest feedback text, in characters.
pub const MAX_TEXT_CHARS: usize = 10_000;
/// Latest accepted time (9999-12-31T23:59:59.999Z): keeps dates four-digit, so date strings
/// sort chronologically, and keeps window arithmetic far from overflow.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;

/// The JSON Schema pattern of a text without control characters (`char::is_control`:
/// U+0000–U+001F and U+007F–U+009F): with their lengths, the rule of every id and name.
#[cfg(feature = "openapi")]
const NO_CONTROL_CHARS: &str = r"^[^\u0000-\u001F\u007F-\u009F]*$";

/// One learning event about an agent and a user.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = LearningEvent))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The version of this body's shape (absent: the shape before versions, read the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<crate::SchemaVersion>,
    /// Unique id; the deduplication key.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub event_id: String,
    /// The agent the event is about.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub agent_id: String,
    /// The user involved.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub user_id: String,
    /// When it happened (epoch ms, 1970 to 9999), from the body or, when the body leaves it
    /// out, the receipt time.
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 0, maximum = 253_402_300_799_999_i64)
    )]
    pub occurred_at_ms: i64,
    /// What happened.
    #[serde(flatten)]
    pub body: EventBody,
}

/// The kind-specific part of an [`Event`].
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = LearningEventBody))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum EventBody {
    /// A user (or the agent's owner) judged a reply.
    #[serde(rename = "feedback.created")]
    Feedback(Feedback),
    /// The agent replied.
    #[serde(rename = "ai.message.reply")]
    Reply(Reply),
    /// A conversation ended.
    #[serde(rename = "session.ended")]
    SessionEnded(SessionEnded),
    /// The agent took an action (a tool call, a suggestion).
    #[serde(rename = "ai.action")]
    Action(Action),
}

/// Explicit feedback: at least one of `value`, `rating` or `reaction`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = FeedbackEvent))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Feedback {
    /// A score in [−1, 1]. At least one of `value`, `rating` and `reaction` is required
    /// (not null); without any, the 400 names `value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub value: Option<f64>,
    /// A 1–5 star rating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 5))]
    pub rating: Option<u8>,
    /// A reaction name such as `thumbs_up`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 64,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub reaction: Option<String>,
    /// The `message_id` of the reply being judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub source_id: Option<String>,
    /// Whether the agent's owner gave it.
    #[serde(default)]
    pub is_owner: bool,
    /// Whether the judged reply violated a safety policy.
    #[serde(default)]
    pub contains_safety_violation: bool,
    /// Free-text comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 10_000))]
    pub text: Option<String>,
}

/// An agent's reply.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = ReplyEvent))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The reply's id: what `Feedback::source_id` refers to.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub message_id: String,
    /// The conversation it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub session_id: Option<String>,
    /// The trait values in [0, 1] this reply expressed, e.g. `{"verbosity": 0.8}`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = traits_schema))]
    pub traits: BTreeMap<String, f64>,
}

/// The end of a conversation.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = SessionEndedEvent))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEnded {
    /// The conversation.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub session_id: String,
    /// How long it lasted; ≥ 0.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub duration_seconds: f64,
    /// How many messages it had.
    #[cfg_attr(feature = "openapi", schema(maximum = 4_294_967_295_u32))]
    pub message_count: u32,
}

/// An action the agent took.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = ActionEvent))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// The action's name (e.g. a tool).
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 64,
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub action: String,
    /// Whether it succeeded.
    pub success: bool,
    /// Whether the user followed the agent's suggestion, when it made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion_followed: Option<bool>,
    /// The trait values in [0, 1] the action expressed.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = traits_schema))]
    pub traits: BTreeMap<String, f64>,
}

/// Why an event (or a learning configuration) is invalid: the offending field and the rule.
pub type EventError = crate::FieldError;

impl EventBody {
    /// The wire name of this kind of event.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Feedback(_) => "feedback.created",
            Self::Reply(_) => "ai.message.reply",
            Self::SessionEnded(_) => "session.ended",
            Self::Action(_) => "ai.action",
        }
    }
}

impl Event {
    /// The wire name of this event's kind, e.g. `feedback.created`.
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }

    /// Checks ids, time, ranges and sizes.
    ///
    /// # Errors
    /// The first field that breaks a rule.
    pub fn validate(&self) -> Result<(), EventError> {
        check_id("event_id", &self.event_id)?;
        check_id("agent_id", &self.agent_id)?;
        check_id("user_id", &self.user_id)?;
        if !(0..=MAX_TIME_MS).contains(&self.occurred_at_ms) {
            return Err(EventError::new(
                "occurred_at_ms",
                "must be between 1970 and 9999",
            ));
        }
        match &self.body {
            EventBody::Feedback(f) => f.validate(),
            EventBody::Reply(r) => {
                check_id("message_id", &r.message_id)?;
                if let Some(session) = &r.session_id {
                    check_id("session_id", session)?;
                }
                check_traits(&r.traits)
            }
            EventBody::SessionEnded(s) => {
                check_id("session_id", &s.session_id)?;
                if !s.duration_seconds.is_finite() || s.duration_seconds < 0.0 {
                    return Err(EventError::new(
                        "duration_seconds",
                        "must be a finite number >= 0",
                    ));
                }
                Ok(())
            }
            EventBody::Action(a) => {
                check_name("action", &a.action)?;
                check_traits(&a.traits)
            }
        }
    }
}

impl Feedback {
    fn validate(&self) -> Result<(), EventError> {
        if self.value.is_none() && self.rating.is_none() && self.reaction.is_none() {
            return Err(EventError::new(
                "value",
                "one of value, rating or reaction is required",
            ));
        }
        if let Some(v) = self.value
            && !(v.is_finite() && (-1.0..=1.0).contains(&v))
        {
            return Err(EventError::new("value", "must be in [-1, 1]"));
        }
        if let Some(r) = self.rating
            && !(1..=5).contains(&r)
        {
            return Err(EventError::new("rating", "must be in 1..=5"));
        }
        if let Some(reaction) = &self.reaction {
            check_name("reaction", reaction)?;
        }
        if let Some(source) = &self.source_id {
            check_id("source_id", source)?;
        }
        if let Some(text) = &self.text
            && text.chars().count() > MAX_TEXT_CHARS
        {
            return Err(EventError::new(
                "text",
                format!("must be at most {MAX_TEXT_CHARS} characters"),
            ));
        }
        Ok(())
    }
}

fn check_id(field: &str, id: &str) -> Result<(), EventError> {
    check_text(field, id, MAX_ID_CHARS)
}

pub(crate) fn check_name(field: &str, name: &str) -> Result<(), EventError> {
    check_text(field, name, MAX_NAME_CHARS)
}

fn check_text(field: &str, text: &str, max: usize) -> Result<(), EventError> {
    let chars = text.chars().count();
    if chars == 0 || chars > max || text.chars().any(char::is_control) {
        return Err(EventError::new(
            field,
            format!("must be 1..={max} characters without control characters"),
        ));
    }
    Ok(())
}

/// The schema of a map keyed by names as [`check_name`] takes them, holding at most
/// `max_entries` of `value`; `description` stands for the field's doc comment, which a
/// schema of its own replaces.
#[cfg(feature = "openapi")]
pub(crate) fn name_map_schema(
    description: &str,
    max_entries: usize,
    value: impl Into<utoipa::openapi::RefOr<utoipa::openapi::Schema>>,
) -> utoipa::openapi::Object {
    use utoipa::openapi::{ObjectBuilder, RefOr, Schema, Type};
    let value: RefOr<Schema> = value.into();
    let name = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(MAX_NAME_CHARS))
        .pattern(Some(NO_CONTROL_CHARS))
        .build();
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .property_names(Some(name))
        .additional_properties(Some(value))
        .max_properties(Some(max_entries))
        .build()
}

/// The `traits` of a reply or an action, as [`check_traits`] takes them.
#[cfg(feature = "openapi")]
fn traits_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::{ObjectBuilder, Type};
    let value = ObjectBuilder::new()
        .schema_type(Type::Number)
        .minimum(Some(0))
        .maximum(Some(1));
    name_map_schema(
        &format!(
            "Trait name → the value in [0, 1] expressed, e.g. `{{\"verbosity\": 0.8}}`; at \
             most {MAX_TRAITS_PER_EVENT}."
        ),
        MAX_TRAITS_PER_EVENT,
        value,
    )
}

fn check_traits(traits: &BTreeMap<String, f64>) -> Result<(), EventError> {
    if traits.len() > MAX_TRAITS_PER_EVENT {
        return Err(EventError::new(
            "traits",
            format!("at most {MAX_TRAITS_PER_EVENT} traits"),
        ));
    }
    for (name, value) in traits {
        check_name("traits", name)?;
        if !(value.is_finite() && (0.0..=1.0).contains(value)) {
            return Err(EventError::new(
                format!("traits.{name}"),
                "must be in [0, 1]",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(body: EventBody) -> Event {
        Event {
            schema_version: None,
            event_id: "e1".into(),
            agent_id: "a1".into(),
            user_id: "u1".into(),
            occurred_at_ms: 1_700_000_000_000,
            body,
        }
    }

    #[test]
    fn wire_shape_is_flat_and_tagged() {
        let wire = json!({
            "event_id": "e1", "agent_id": "a1", "user_id": "u1",
            "occurred_at_ms": 1_700_000_000_000_i64,
            "type": "feedback.created", "rating": 4, "source_id": "m1"
        });
        let e: Event = serde_json::from_value(wire).unwrap();
        let EventBody::Feedback(f) = &e.body else {
            panic!("not feedback: {e:?}")
        };
        assert_eq!((f.rating, f.is_owner), (Some(4), false));
        assert_eq!(e.kind(), "feedback.created");
        let back: Event = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
        assert_eq!(back, e);

        let wire = json!({
            "event_id": "e2", "agent_id": "a1", "user_id": "u1", "occurred_at_ms": 5,
            "type": "ai.message.reply", "message_id": "m1", "traits": {"verbosity": 0.8}
        });
        let e: Event = serde_json::from_value(wire).unwrap();
        assert_eq!(e.kind(), "ai.message.reply");
        assert!(e.validate().is_ok());
    }

    #[test]
    fn validation_names_the_field() {
        let cases: Vec<(EventBody, &str)> = vec![
            (EventBody::Feedback(Feedback::default()), "value"),
            (
                EventBody::Feedback(Feedback {
                    value: Some(1.5),
                    ..Feedback::default()
                }),
                "value",
            ),
            (
                EventBody::Feedback(Feedback {
                    value: Some(f64::NAN),
                    ..Feedback::default()
                }),
                "value",
            ),
            (
                EventBody::Feedback(Feedback {
                    rating: Some(6),
                    ..Feedback::default()
                }),
                "rating",
            ),
            (
                EventBody::Feedback(Feedback {
                    reaction: Some(String::new()),
                    ..Feedback::default()
                }),
                "reaction",
            ),
            (
                EventBody::Reply(Reply {
                    message_id: "m".into(),
                    session_id: None,
                    traits: [("verbosity".to_string(), 1.2)].into(),
                }),
                "traits.verbosity",
            ),
            (
                EventBody::Action(Action {
                    action: "search".into(),
                    success: true,
                    suggestion_followed: None,
                    traits: (0..33).map(|i| (format!("t{i}"), 0.5)).collect(),
                }),
                "traits",
            ),
            (
                EventBody::SessionEnded(SessionEnded {
                    session_id: "s".into(),
                    duration_seconds: f64::INFINITY,
                    message_count: 3,
                }),
                "duration_seconds",
            ),
        ];
        for (body, field) in cases {
            let err = event(body).validate().unwrap_err();
            assert_eq!(err.field, field, "{err}");
        }
    }

    #[test]
    fn ids_and_time_are_checked() {
        let ok = event(EventBody::Feedback(Feedback {
            reaction: Some("heart".into()),
            ..Feedback::default()
        }));
        assert!(ok.validate().is_ok());
        let mut e = ok.clone();
        e.event_id = "x".repeat(257);
        assert_eq!(e.validate().unwrap_err().field, "event_id");
        let mut e = ok.clone();
        e.user_id = "a\nb".into();
        assert_eq!(e.validate().unwrap_err().field, "user_id");
        let mut e = ok;
        e.occurred_at_ms = -1;
        assert_eq!(
            e.validate().unwrap_err().to_string(),
            "occurred_at_ms: must be between 1970 and 9999"
        );
    }
}
