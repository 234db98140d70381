//! Test helpers: event constructors, random event sets, and the reference pipeline that routes
//! events through the projection and the reply ledgers the way the function layer does.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde::Serialize;
use serde_json::Value;

use super::{
    Action, AgentProjection, Event, EventBody, Feedback, LearningConfig, Relationship, Reply,
    ReplyLedger, SessionEnded, absorb,
};

const DAY_MS: i64 = 86_400_000;

fn event(id: &str, at: i64, body: EventBody) -> Event {
    Event {
        schema_version: None,
        event_id: id.into(),
        agent_id: "agent".into(),
        user_id: "user".into(),
        occurred_at_ms: at,
        body,
    }
}

fn traits(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

pub(crate) fn feedback(id: &str, at: i64, f: Feedback) -> Event {
    event(id, at, EventBody::Feedback(f))
}

pub(crate) fn feedback_value(id: &str, at: i64, value: f64) -> Event {
    let f = Feedback {
        value: Some(value),
        ..Feedback::default()
    };
    feedback(id, at, f)
}

pub(crate) fn reply(id: &str, at: i64, message_id: &str, pairs: &[(&str, f64)]) -> Event {
    let body = Reply {
        message_id: message_id.into(),
        session_id: None,
        traits: traits(pairs),
    };
    event(id, at, EventBody::Reply(body))
}

pub(crate) fn session(id: &str, at: i64, seconds: f64, messages: u32) -> Event {
    let body = SessionEnded {
        session_id: "s".into(),
        duration_seconds: seconds,
        message_count: messages,
    };
    event(id, at, EventBody::SessionEnded(body))
}

pub(crate) fn action(
    id: &str,
    at: i64,
    name: &str,
    success: bool,
    followed: Option<bool>,
) -> Event {
    let body = Action {
        action: name.into(),
        success,
        suggestion_followed: followed,
        traits: BTreeMap::new(),
    };
    event(id, at, EventBody::Action(body))
}

pub(crate) fn action_with_traits(id: &str, at: i64, name: &str, pairs: &[(&str, f64)]) -> Event {
    let mut e = action(id, at, name, true, None);
    if let EventBody::Action(a) = &mut e.body {
        a.traits = traits(pairs);
    }
    e
}

/// Small caps and windows, so random event sets exercise every eviction rule.
pub(crate) fn small_config() -> LearningConfig {
    let mut c = LearningConfig {
        high_quality_cap: 5,
        high_quality_min_reward: 0.5,
        high_quality_days: 40,
        history_len: 4,
        ..LearningConfig::default()
    };
    c.dataset.positive_days = 10;
    c
}

fn trait_map() -> impl Strategy<Value = BTreeMap<String, f64>> {
    proptest::collection::btree_map(
        prop_oneof![Just("warmth"), Just("verbosity"), Just("autonomy")].prop_map(String::from),
        0.0..=1.0f64,
        0..3,
    )
}

fn body() -> impl Strategy<Value = EventBody> {
    let message = (0..6u8).prop_map(|m| format!("m{m}"));
    let feedback = (
        proptest::option::of(-1.0..=1.0f64),
        proptest::option::of(1..=5u8),
        proptest::option::of(prop_oneof![Just("heart"), Just("angry"), Just("shrug")]),
        proptest::option::of(message.clone()),
        any::<bool>(),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(value, rating, reaction, source_id, is_owner, unsafe_)| {
            EventBody::Feedback(Feedback {
                value,
                rating,
                reaction: reaction.map(String::from),
                source_id,
                is_owner,
                contains_safety_violation: unsafe_,
                text: None,
            })
        });
    let reply = (message, trait_map()).prop_map(|(message_id, traits)| {
        EventBody::Reply(Reply {
            message_id,
            session_id: None,
            traits,
        })
    });
    let session = (0.0..600.0f64, 0..20u32).prop_map(|(duration_seconds, message_count)| {
        EventBody::SessionEnded(SessionEnded {
            session_id: "s".into(),
            duration_seconds,
            message_count,
        })
    });
    let action = (
        prop_oneof![Just("search"), Just("browse"), Just("write")],
        any::<bool>(),
        proptest::option::of(any::<bool>()),
        trait_map(),
    )
        .prop_map(|(name, success, suggestion_followed, traits)| {
            EventBody::Action(Action {
                action: name.into(),
                success,
                suggestion_followed,
                traits,
            })
        });
    prop_oneof![3 => feedback, 2 => reply, 1 => session, 2 => action]
}

/// A set of events spread over 120 days (times repeat, to exercise tie-breaking) and the same
/// set shuffled. Each message id has at most one reply.
pub(crate) fn event_set_and_shuffle() -> impl Strategy<Value = (Vec<Event>, Vec<Event>)> {
    let at = prop_oneof![0..120 * DAY_MS, (0..120i64).prop_map(|d| d * DAY_MS)];
    proptest::collection::vec((at, body()), 0..60)
        .prop_map(|items| {
            let mut replied = std::collections::BTreeSet::new();
            items
                .into_iter()
                .enumerate()
                .filter(|(_, (_, body))| match body {
                    EventBody::Reply(r) => replied.insert(r.message_id.clone()),
                    _ => true,
                })
                .map(|(i, (at, body))| event(&format!("e{i:02}"), at, body))
                .collect::<Vec<_>>()
        })
        .prop_flat_map(|events| (Just(events.clone()), Just(events).prop_shuffle()))
}

/// Everything the events produce: the projection, the relationship and the reply ledgers.
#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    projection: AgentProjection,
    relationship: Relationship,
    ledgers: BTreeMap<String, ReplyLedger>,
}

/// Applies `events` in order, routing replies and their feedback through the ledgers.
pub(crate) fn run_all(events: &[Event], config: &LearningConfig) -> Outcome {
    let mut out = Outcome {
        projection: AgentProjection::default(),
        relationship: Relationship::default(),
        ledgers: BTreeMap::new(),
    };
    for e in events {
        let ledger = e
            .reply_id()
            .map(|id| out.ledgers.entry(id.to_owned()).or_default());
        absorb(
            e,
            &mut out.projection,
            &mut out.relationship,
            ledger,
            config,
        );
    }
    out
}

/// Fails unless `a` and `b` serialize to the same JSON, numbers equal within 1e-9 (relative
/// for large magnitudes).
pub(crate) fn assert_json_close<T: Serialize>(a: &T, b: &T) -> Result<(), TestCaseError> {
    let (a, b) = (
        serde_json::to_value(a).unwrap(),
        serde_json::to_value(b).unwrap(),
    );
    close(&a, &b, "$").map_err(TestCaseError::fail)
}

fn close(a: &Value, b: &Value, path: &str) -> Result<(), String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            let tolerance = 1e-9 * x.abs().max(y.abs()).max(1.0);
            if (x - y).abs() <= tolerance {
                Ok(())
            } else {
                Err(format!("{path}: {x} != {y}"))
            }
        }
        (Value::Array(xs), Value::Array(ys)) if xs.len() == ys.len() => xs
            .iter()
            .zip(ys)
            .enumerate()
            .try_for_each(|(i, (x, y))| close(x, y, &format!("{path}[{i}]"))),
        (Value::Object(xs), Value::Object(ys)) if xs.keys().eq(ys.keys()) => xs
            .iter()
            .zip(ys.values())
            .try_for_each(|((k, x), y)| close(x, y, &format!("{path}.{k}"))),
        _ if a == b => Ok(()),
        _ => Err(format!("{path}: {a} != {b}")),
    }
}
