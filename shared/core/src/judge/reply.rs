//! A judge's reply: one JSON object `{score 1–10, reasoning, confidence 0–1}`, found in the
//! model's text (bare, or in a fenced block), validated field by field.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A valid judgment.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// 1 (worst) to 10 (best).
    pub score: f64,
    /// Why, in the model's words.
    pub reasoning: String,
    /// The model's confidence in its score, in [0, 1].
    pub confidence: f64,
}

/// Lowest and highest score of the judges' scale.
pub const SCALE: (f64, f64) = (1.0, 10.0);

/// Longest reasoning kept; a model that rambles past it is cut, not rejected.
pub const MAX_REASONING_CHARS: usize = 4_000;

/// Parses a model's reply text.
///
/// # Errors
/// What is wrong, in words a model can act on when asked to repair its reply.
pub fn parse(text: &str) -> Result<Reply, String> {
    let json = object_text(text).ok_or("no JSON object found")?;
    let value: Value = serde_json::from_str(json).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(fields) = value else {
        return Err("the reply must be a JSON object".to_owned());
    };
    let score = fields
        .get("score")
        .and_then(Value::as_f64)
        .ok_or("`score` must be a number")?;
    if !(SCALE.0..=SCALE.1).contains(&score) {
        return Err(format!("`score` must be within 1 and 10, not {score}"));
    }
    let confidence = fields
        .get("confidence")
        .and_then(Value::as_f64)
        .ok_or("`confidence` must be a number")?;
    if !(0.0..=1.0).contains(&confidence) {
        return Err(format!(
            "`confidence` must be within 0 and 1, not {confidence}"
        ));
    }
    let reasoning = fields
        .get("reasoning")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or("`reasoning` must be a non-empty string")?;
    Ok(Reply {
        score,
        reasoning: reasoning.chars().take(MAX_REASONING_CHARS).collect(),
        confidence,
    })
}

/// The text of the first `{` to its matching `}` (strings and escapes respected): models wrap
/// JSON in prose or code fences often enough that a strict parse of the whole text would throw
/// good judgments away.
fn object_text(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text[start..].char_indices() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') | (false, _, '"') => in_string = !in_string,
            (false, _, '{') => depth += 1,
            (false, _, '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..=start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_replies_parse_bare_fenced_or_in_prose() {
        for text in [
            r#"{"score": 8, "reasoning": "ok", "confidence": 0.9}"#,
            "```json\n{\"score\": 8, \"reasoning\": \"ok\", \"confidence\": 0.9}\n```",
            "Here you go: {\"confidence\": 0.9, \"score\": 8.0, \"reasoning\": \"ok\"} hope it helps {x}",
        ] {
            let r = parse(text).expect(text);
            assert_eq!(
                (r.score, r.confidence, r.reasoning.as_str()),
                (8.0, 0.9, "ok")
            );
        }
    }

    #[test]
    fn braces_inside_strings_do_not_end_the_object() {
        let r = parse(r#"{"score": 3, "reasoning": "uses } and \" {", "confidence": 1}"#)
            .expect("valid");
        assert_eq!(r.reasoning, "uses } and \" {");
    }

    #[test]
    fn invalid_replies_say_what_is_wrong() {
        let table = [
            ("I think 7/10", "no JSON object"),
            ("{\"score\": 7, \"reasoning\": \"x\"", "no JSON object"),
            (
                "{\"score\": \"7\", \"reasoning\": \"x\", \"confidence\": 1}",
                "`score`",
            ),
            (
                "{\"score\": 11, \"reasoning\": \"x\", \"confidence\": 1}",
                "within 1 and 10",
            ),
            (
                "{\"score\": 0, \"reasoning\": \"x\", \"confidence\": 1}",
                "within 1 and 10",
            ),
            (
                "{\"score\": 5, \"reasoning\": \"x\", \"confidence\": 1.5}",
                "`confidence`",
            ),
            (
                "{\"score\": 5, \"reasoning\": \"  \", \"confidence\": 0.5}",
                "`reasoning`",
            ),
            ("{\"score\": 5, \"confidence\": 0.5}", "`reasoning`"),
            ("{\"score\": 5,, }", "invalid JSON"),
        ];
        for (text, expected) in table {
            let e = parse(text).expect_err(text);
            assert!(e.contains(expected), "{text}: {e}");
        }
    }
}
