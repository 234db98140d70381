//! A thinking budget enforced on a chat call: the completion limit the call is given, and the
//! tokens its answer is charged.

use serde_json::{Map, Value};

use super::CallRecord;

/// The completion fields a request may limit itself with; the gateway lowers the ones it set.
const LIMIT_FIELDS: [&str; 2] = ["max_completion_tokens", "max_tokens"];

/// The completion tokens each of a call's `n` choices may produce when the budget still
/// allows `allowance` in all (usage counts every choice): `None` when that is not one token.
#[must_use]
pub fn per_choice(allowance: u64, request: &Map<String, Value>) -> Option<u64> {
    let n = request.get("n").and_then(Value::as_u64).unwrap_or(1).max(1);
    Some(allowance / n).filter(|&t| t > 0)
}

/// Lowers the request's completion limit to `limit`: each of `max_completion_tokens` and
/// `max_tokens` it set, or `max_completion_tokens` when it set neither. A lower limit the
/// request set stays. Returns the limit the call goes with.
pub fn clamp(request: &mut Map<String, Value>, limit: u64) -> u64 {
    let mut effective = None;
    for field in LIMIT_FIELDS {
        if let Some(v) = request.get_mut(field).filter(|v| !v.is_null()) {
            let own = v.as_u64().unwrap_or(limit).min(limit);
            *v = Value::from(own);
            effective = Some(effective.map_or(own, |e: u64| e.min(own)));
        }
    }
    effective.unwrap_or_else(|| {
        request.insert(LIMIT_FIELDS[0].into(), Value::from(limit));
        limit
    })
}

impl CallRecord {
    /// The completion tokens the call produced: the upstream's `usage.completion_tokens`, else
    /// the sampled token ids of every choice when the upstream returned them, else `None`.
    #[must_use]
    pub fn completion_tokens(&self) -> Option<u64> {
        if let Some(t) = self
            .usage
            .as_ref()
            .and_then(|u| u.get("completion_tokens"))
            .and_then(Value::as_u64)
        {
            return Some(t);
        }
        let counted: Option<Vec<usize>> = self
            .choices
            .iter()
            .map(|c| c.token_ids.as_ref().map(Vec::len))
            .collect();
        counted
            .filter(|c| !c.is_empty())
            .map(|c| c.iter().sum::<usize>() as u64)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::gateway::ChoiceRecord;

    fn request(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_request_without_a_limit_gets_max_completion_tokens() {
        let mut r = request(json!({"temperature": 0.2}));
        assert_eq!(clamp(&mut r, 300), 300);
        assert_eq!(r["max_completion_tokens"], 300);
        assert!(!r.contains_key("max_tokens"));
    }

    #[test]
    fn the_fields_the_request_set_are_lowered_and_a_lower_own_limit_stays() {
        let mut r = request(json!({"max_tokens": 1000, "max_completion_tokens": 50}));
        assert_eq!(clamp(&mut r, 300), 50);
        assert_eq!(r["max_tokens"], 300);
        assert_eq!(r["max_completion_tokens"], 50);
        let mut r = request(json!({"max_tokens": 1000}));
        assert_eq!(clamp(&mut r, 300), 300);
        assert_eq!(r["max_tokens"], 300);
        assert!(!r.contains_key("max_completion_tokens"));
    }

    #[test]
    fn n_choices_share_the_allowance() {
        assert_eq!(per_choice(300, &request(json!({"n": 3}))), Some(100));
        assert_eq!(per_choice(300, &request(json!({}))), Some(300));
        assert_eq!(per_choice(2, &request(json!({"n": 3}))), None);
        assert_eq!(per_choice(0, &request(json!({}))), None);
    }

    #[test]
    fn usage_is_charged_else_the_token_ids_counted() {
        let mut r = CallRecord::new("c".into(), "m".into(), None, vec![], vec![]);
        assert_eq!(r.completion_tokens(), None);
        r.choices = vec![
            ChoiceRecord {
                token_ids: Some(vec![1, 2, 3]),
                ..ChoiceRecord::default()
            },
            ChoiceRecord {
                index: 1,
                token_ids: Some(vec![4]),
                ..ChoiceRecord::default()
            },
        ];
        assert_eq!(r.completion_tokens(), Some(4));
        r.usage = Some(json!({"prompt_tokens": 9, "completion_tokens": 7}));
        assert_eq!(r.completion_tokens(), Some(7));
    }
}
