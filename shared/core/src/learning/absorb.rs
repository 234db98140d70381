//! One new event applied to everything it touches: the agent's projection, the relationship
//! with the event's user, and the ledger of the reply it names. The function layer and the
//! property tests route events through this one function, so what is tested is what runs.

use super::{
    AgentProjection, Event, EventBody, Feedback, LearningConfig, Relationship, ReplyLedger, reward,
};

impl Event {
    /// The reply this event is about: a reply's own `message_id`, a feedback's `source_id`.
    pub fn reply_id(&self) -> Option<&str> {
        match &self.body {
            EventBody::Reply(r) => Some(&r.message_id),
            EventBody::Feedback(f) => f.source_id.as_deref(),
            _ => None,
        }
    }
}

/// Applies a new (deduplicated) event: its reward to the projection and to `relationship`
/// (the event user's), and — for a reply or a feedback on one — to `ledger` (the ledger of
/// [`Event::reply_id`]), crediting the reply's traits to the projection once both the reply
/// and the feedback are known. Returns the event's reward.
pub fn absorb(
    event: &Event,
    projection: &mut AgentProjection,
    relationship: &mut Relationship,
    ledger: Option<&mut ReplyLedger>,
    config: &LearningConfig,
) -> f64 {
    let r = reward(event, &config.rewards);
    projection.apply(event, r, config);
    relationship.apply(event, r, config);
    let credits = match (&event.body, ledger) {
        (EventBody::Reply(body), Some(ledger)) => ledger.record_reply(event, body, config),
        (
            EventBody::Feedback(Feedback {
                source_id: Some(_), ..
            }),
            Some(ledger),
        ) => ledger
            .record_feedback(&event.event_id, r)
            .into_iter()
            .collect(),
        _ => Vec::new(),
    };
    for credit in &credits {
        projection.credit(credit);
    }
    r
}
