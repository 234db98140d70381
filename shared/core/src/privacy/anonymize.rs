//! Anonymising a whole trajectory before anything is written.
//!
//! - Every text field is scrubbed: turn content, tool results, errors, termination reasons,
//!   tool descriptions, and every string (and object key) inside tool call arguments.
//! - `user_id` becomes its keyed pseudonym in the [`USER`] namespace. Other ids are kept unless
//!   the scrubber finds something in them (an agent id that is an email address): then they
//!   become a pseudonym in a namespace named after the field, so joins on them still work.
//! - Token ids encode the original text, placeholders cannot be tokenised here, and a turn's
//!   prompt tokens repeat every earlier turn: so when anything was scrubbed anywhere, the
//!   token-level fields (`prompt_token_ids`, `response_token_ids`, `loss_mask`,
//!   `behavior_logprobs`) of *every* turn are dropped, and the trainer falls back to the text.
//!   Token ids can also carry text the turns do not (a system prompt sent only as tokens); the
//!   scrubber cannot see that, which callers accepting token ids should document.

use std::collections::BTreeMap;

use serde_json::Value;

use super::pseudonym::{Pseudonymizer, USER};
use super::scrub::{PiiKind, Scrubber};
use crate::trajectory::Trajectory;

/// What anonymisation changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Anonymized {
    /// Spans replaced, per kind, across all fields.
    pub found: BTreeMap<PiiKind, u32>,
    /// Token-level fields were removed because some text changed.
    pub tokens_dropped: bool,
}

struct Pass<'a> {
    scrubber: &'a Scrubber,
    found: BTreeMap<PiiKind, u32>,
}

impl Pass<'_> {
    fn text(&mut self, s: &mut String) {
        let out = self.scrubber.scrub(s);
        if !out.found.is_empty() {
            for (k, n) in out.found {
                *self.found.entry(k).or_insert(0) += n;
            }
            *s = out.text;
        }
    }

    fn json(&mut self, v: &mut Value) {
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) => self.text(s),
                Value::Array(a) => stack.extend(a.iter_mut()),
                Value::Object(m) => {
                    if m.keys().any(|k| !self.scrubber.scrub(k).found.is_empty()) {
                        let old = std::mem::take(m);
                        for (mut k, v) in old {
                            self.text(&mut k);
                            // Two keys may scrub to the same placeholder; keep both values.
                            let mut key = k.clone();
                            let mut n = 1;
                            while m.contains_key(&key) {
                                n += 1;
                                key = format!("{k}#{n}");
                            }
                            m.insert(key, v);
                        }
                    }
                    stack.extend(m.values_mut());
                }
                _ => {}
            }
        }
    }

    fn id(&mut self, p: &Pseudonymizer, kind: &str, id: &mut String) {
        let out = self.scrubber.scrub(id);
        if !out.found.is_empty() {
            for (k, n) in out.found {
                *self.found.entry(k).or_insert(0) += n;
            }
            *id = p.pseudonym(kind, id);
        }
    }
}

/// Scrubs and pseudonymises `t` in place.
pub fn anonymize(
    t: &mut Trajectory,
    scrubber: &Scrubber,
    pseudonymizer: &Pseudonymizer,
) -> Anonymized {
    let mut pass = Pass {
        scrubber,
        found: BTreeMap::new(),
    };
    pass.id(pseudonymizer, "trajectory_id", &mut t.trajectory_id);
    pass.id(pseudonymizer, "agent_id", &mut t.agent_id);
    pass.id(pseudonymizer, "conversation_id", &mut t.conversation_id);
    if let Some(g) = &mut t.group_id {
        pass.id(pseudonymizer, "group_id", g);
    }
    if let Some(u) = &mut t.user_id {
        *u = pseudonymizer.pseudonym(USER, u);
    }
    for tool in &mut t.tools {
        if let Some(d) = &mut tool.description {
            pass.text(d);
        }
    }
    for turn in &mut t.turns {
        pass.text(&mut turn.content);
        for part in &mut turn.content_parts {
            pass.json(part);
        }
        for s in [&mut turn.tool_result, &mut turn.error]
            .into_iter()
            .flatten()
        {
            pass.text(s);
        }
        for call in turn.tool_call.iter_mut().chain(&mut turn.tool_calls) {
            // A raw arguments string is scrubbed as text, an object leaf by leaf.
            pass.json(&mut call.arguments);
        }
    }
    if let Some(reason) = t
        .final_outcome
        .as_mut()
        .and_then(|o| o.termination_reason.as_mut())
    {
        pass.text(reason);
    }
    let tokens_dropped = !pass.found.is_empty()
        && t.turns.iter().any(|turn| {
            turn.prompt_token_ids.is_some()
                || turn.response_token_ids.is_some()
                || turn.loss_mask.is_some()
                || turn.behavior_logprobs.is_some()
        });
    if tokens_dropped {
        for turn in &mut t.turns {
            turn.prompt_token_ids = None;
            turn.response_token_ids = None;
            turn.loss_mask = None;
            turn.behavior_logprobs = None;
        }
    }
    Anonymized {
        found: pass.found,
        tokens_dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fixture() -> Trajectory {
        serde_json::from_value(json!({
            "trajectory_id": "t-1",
            "agent_id": "ops@example.com",
            "conversation_id": "c-1",
            "user_id": "alice",
            "tools": [{"name": "mail", "description": "write to help@example.com"}],
            "turns": [
                {"role": "user", "content": "mail bob@example.com from 10.1.2.3",
                 "prompt_token_ids": [1, 2]},
                {"role": "assistant", "content": "ok",
                 "tool_call": {"name": "mail", "arguments":
                     {"to": ["bob@example.com"], "carol@example.com": "cc", "dave@example.com": 1}},
                 "response_token_ids": [3], "loss_mask": [1], "behavior_logprobs": [-0.5]},
                {"role": "tool", "tool_result": "sent", "error": "retry via +1 (555) 123-4567"}
            ],
            "final_outcome": {"success": true, "termination_reason": "mailed bob@example.com"}
        }))
        .unwrap()
    }

    #[test]
    fn scrubs_every_text_field_and_drops_tokens() {
        let scrubber = Scrubber::new();
        let p = Pseudonymizer::new(b"0123456789abcdef-deploy-secret").unwrap();
        let mut t = fixture();
        let report = anonymize(&mut t, &scrubber, &p);
        assert_eq!(
            t.user_id.as_deref(),
            Some(p.pseudonym(USER, "alice").as_str())
        );
        assert_eq!(t.agent_id, p.pseudonym("agent_id", "ops@example.com"));
        assert_eq!(t.trajectory_id, "t-1");
        assert_eq!(t.tools[0].description.as_deref(), Some("write to [EMAIL]"));
        assert_eq!(t.turns[0].content, "mail [EMAIL] from [IP]");
        let args = &t.turns[1].tool_call.as_ref().unwrap().arguments;
        assert_eq!(args["to"][0], "[EMAIL]");
        assert_eq!(args.as_object().unwrap().len(), 3, "{args}");
        assert!(
            args.get("[EMAIL]").is_some() && args.get("[EMAIL]#2").is_some(),
            "{args}"
        );
        assert_eq!(t.turns[2].error.as_deref(), Some("retry via [PHONE]"));
        assert_eq!(
            t.final_outcome.unwrap().termination_reason.as_deref(),
            Some("mailed [EMAIL]")
        );
        assert!(report.tokens_dropped);
        assert!(t.turns.iter().all(|t| t.prompt_token_ids.is_none()
            && t.response_token_ids.is_none()
            && t.loss_mask.is_none()
            && t.behavior_logprobs.is_none()));
        assert_eq!(report.found.get(&PiiKind::Email), Some(&7));
        assert_eq!(report.found.get(&PiiKind::Phone), Some(&1));
        assert_eq!(report.found.get(&PiiKind::Ip), Some(&1));
    }

    #[test]
    fn clean_trajectory_keeps_tokens() {
        let scrubber = Scrubber::new();
        let p = Pseudonymizer::new(b"0123456789abcdef-deploy-secret").unwrap();
        let mut t: Trajectory = serde_json::from_value(json!({
            "trajectory_id": "t-1", "agent_id": "a", "conversation_id": "c",
            "turns": [{"role": "assistant", "content": "version 1.2.3 at 10:30:00",
                       "response_token_ids": [3], "loss_mask": [1]}]
        }))
        .unwrap();
        let before = t.clone();
        let report = anonymize(&mut t, &scrubber, &p);
        assert_eq!(report, Anonymized::default());
        assert_eq!(t, before);
    }
}
