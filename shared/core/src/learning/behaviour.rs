//! What an agent did: the recent action history and per-action statistics.
//!
//! `recent` keeps the last `history_len` actions by `(at_ms, event_id)`, and `actions` keeps
//! the [`MAX_ACTIONS`] alphabetically first action names. Both rules rank by the event alone,
//! so they are the same whatever order the actions arrive in (see [`bounded`](super::bounded));
//! the alphabetical cap is the price of that, and agents rarely have that many distinct actions.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bounded::{entry, insert_sorted};
use super::event::{Action, Event};

/// Most distinct actions with statistics.
pub const MAX_ACTIONS: usize = 128;

/// An agent's actions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Behaviour {
    /// The most recent actions, oldest first.
    pub recent: Vec<ActionRecord>,
    /// Per action name.
    pub actions: BTreeMap<String, ActionStats>,
}

/// One action in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The action event.
    pub event_id: String,
    /// The action's name.
    pub action: String,
    /// Whether it succeeded.
    pub success: bool,
    /// Its reward.
    pub reward: f64,
    /// When it happened.
    pub at_ms: i64,
}

/// Statistics of one action name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ActionStats {
    /// Times taken.
    pub attempts: u64,
    /// Times it succeeded.
    pub successes: u64,
    /// Times the user followed the suggestion that came with it.
    pub suggestions_followed: u64,
    /// Times the user ignored it.
    pub suggestions_ignored: u64,
    /// Σ reward.
    pub reward_sum: f64,
    /// Mean reward.
    pub avg_reward: f64,
}

impl Behaviour {
    /// Records one action and its reward.
    pub(crate) fn record(
        &mut self,
        event: &Event,
        action: &Action,
        reward: f64,
        history_len: usize,
    ) {
        let record = ActionRecord {
            event_id: event.event_id.clone(),
            action: action.action.clone(),
            success: action.success,
            reward,
            at_ms: event.occurred_at_ms,
        };
        insert_sorted(&mut self.recent, record, history_len, recency);
        if let Some(stats) = entry(&mut self.actions, &action.action, MAX_ACTIONS) {
            stats.attempts += 1;
            stats.successes += u64::from(action.success);
            stats.suggestions_followed += u64::from(action.suggestion_followed == Some(true));
            stats.suggestions_ignored += u64::from(action.suggestion_followed == Some(false));
            stats.reward_sum += reward;
            stats.avg_reward = stats.reward_sum / stats.attempts as f64;
        }
    }
}

fn recency(a: &ActionRecord, b: &ActionRecord) -> Ordering {
    (a.at_ms, &a.event_id).cmp(&(b.at_ms, &b.event_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::EventBody;
    use crate::learning::testkit::action;

    fn run(events: &[Event], history_len: usize) -> Behaviour {
        let mut b = Behaviour::default();
        for e in events {
            let EventBody::Action(a) = &e.body else {
                unreachable!()
            };
            b.record(e, a, if a.success { 0.2 } else { -0.3 }, history_len);
        }
        b
    }

    #[test]
    fn history_keeps_the_latest_and_stats_average() {
        let events = [
            action("e3", 30, "search", true, Some(true)),
            action("e1", 10, "search", false, None),
            action("e2", 20, "browse", true, Some(false)),
            action("e0", 30, "browse", true, None),
        ];
        let b = run(&events, 2);
        let ids: Vec<_> = b.recent.iter().map(|r| r.event_id.as_str()).collect();
        assert_eq!(ids, ["e0", "e3"]);
        let search = &b.actions["search"];
        assert_eq!(
            (
                search.attempts,
                search.successes,
                search.suggestions_followed
            ),
            (2, 1, 1)
        );
        assert!((search.avg_reward - (-0.05)).abs() < 1e-12);
        assert_eq!(b.actions["browse"].suggestions_ignored, 1);
        let mut reversed = events.to_vec();
        reversed.reverse();
        assert_eq!(run(&reversed, 2), b);
    }

    #[test]
    fn action_names_are_capped_alphabetically() {
        let events: Vec<_> = (0..=MAX_ACTIONS)
            .rev()
            .map(|i| action(&format!("e{i}"), 0, &format!("a{i:04}"), true, None))
            .collect();
        let b = run(&events, 1);
        assert_eq!(b.actions.len(), MAX_ACTIONS);
        assert!(!b.actions.contains_key(&format!("a{MAX_ACTIONS:04}")));
    }
}
