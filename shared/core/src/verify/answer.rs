//! `answer_match`: the answer (the request's `answer`, else the execution's output) against an
//! expected string, number, regular expression or JSON Schema. Matches are binary and
//! deterministic, so the confidence is 1.
//!
//! An answer in the wrong format (not a number, not JSON) scores 0 rather than being invalid:
//! format correctness is part of what is verified. A request missing what its mode needs, or
//! carrying a parameter its mode does not use, is invalid.

use regex::RegexBuilder;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{InvalidInput, Outcome, finite};
use crate::trajectory::schema;

/// Compiled-program budget of a pattern; patterns come from callers.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
const DEFAULT_TOLERANCE: f64 = 1e-9;

/// How the answer is compared.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// Byte-equal to `expected`.
    Exact,
    /// Equal to `expected` after both are lowercased (Unicode), trimmed, whitespace-collapsed
    /// and stripped of trailing `.`, `!`, `?`.
    Normalized,
    /// Both parse as numbers (after trimming and removing `,` thousands separators) within
    /// `tolerance` (absolute, default 1e-9) or `relative_tolerance` × |expected|.
    Numeric,
    /// `pattern` matches the whole answer.
    Regex,
    /// The answer is JSON satisfying `schema` (the subset of [`crate::trajectory::schema`]).
    JsonSchema,
}

impl MatchMode {
    /// The wire name, e.g. `json_schema`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Normalized => "normalized",
            Self::Numeric => "numeric",
            Self::Regex => "regex",
            Self::JsonSchema => "json_schema",
        }
    }
}

/// An answer check. Evidence: `{mode, matched}`, plus for `numeric` `{expected, answer,
/// difference}` (or `error` when the answer is not a number) and for `json_schema` a
/// `violation: {path, reason}` or an `error` when the answer is not JSON.
///
/// Each mode requires its own parameter and refuses the others': `expected` for `exact`,
/// `normalized` and `numeric` (which alone takes the tolerances), `pattern` for `regex`,
/// `schema` for `json_schema`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerMatch {
    /// The comparison.
    pub mode: MatchMode,
    /// The expected answer: required by `exact`, `normalized` and `numeric` (a finite
    /// number there), refused by the other modes.
    pub expected: Option<String>,
    /// Absolute tolerance, ≥ 0: `numeric` only.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub tolerance: Option<f64>,
    /// Tolerance relative to |expected|, ≥ 0: `numeric` only.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub relative_tolerance: Option<f64>,
    /// A regular expression in the `regex` crate's syntax that compiles: required by
    /// `regex`, refused by the other modes.
    pub pattern: Option<String>,
    /// A JSON Schema (an object or a boolean): required by `json_schema`, refused by the
    /// other modes.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema_schema))]
    pub schema: Option<Value>,
    /// The answer to check; the execution's output when absent.
    pub answer: Option<String>,
    /// Marks the outcome as a safety violation.
    #[serde(default)]
    pub safety_violation: bool,
}

/// `schema`: a JSON Schema is an object or a boolean ([`json_schema`] refuses anything else).
#[cfg(feature = "openapi")]
fn schema_schema() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([
            Type::Object,
            Type::Boolean,
            Type::Null,
        ]))
        .description(Some(
            "A JSON Schema (an object or a boolean): required by `json_schema`, refused by \
             the other modes.",
        ))
        .into()
}

pub(super) fn verify(r: &AnswerMatch, output: &str) -> Result<Outcome, InvalidInput> {
    check_parameters(r)?;
    let answer = r.answer.as_deref().unwrap_or(output);
    let mode = r.mode.as_str();
    let expected = || r.expected.as_deref().unwrap_or_default();
    let (matched, mut evidence) = match r.mode {
        MatchMode::Exact => (answer == expected(), json!({})),
        MatchMode::Normalized => (normalize(answer) == normalize(expected()), json!({})),
        MatchMode::Numeric => numeric(r, answer)?,
        MatchMode::Regex => (
            full_match(r.pattern.as_deref().unwrap_or_default(), answer)?,
            json!({}),
        ),
        MatchMode::JsonSchema => json_schema(r.schema.as_ref().unwrap_or(&Value::Null), answer)?,
    };
    evidence["mode"] = json!(mode);
    evidence["matched"] = json!(matched);
    let value = if matched { 1.0 } else { 0.0 };
    Ok(Outcome::ok(
        value,
        1.0,
        evidence,
        &format!("answer_match/{mode}@1"),
    ))
}

fn check_parameters(r: &AnswerMatch) -> Result<(), InvalidInput> {
    let mode = r.mode;
    let needs = |field: &str| match mode {
        MatchMode::Exact | MatchMode::Normalized => field == "expected",
        MatchMode::Numeric => matches!(field, "expected" | "tolerance" | "relative_tolerance"),
        MatchMode::Regex => field == "pattern",
        MatchMode::JsonSchema => field == "schema",
    };
    let given = [
        ("expected", r.expected.is_some()),
        ("tolerance", r.tolerance.is_some()),
        ("relative_tolerance", r.relative_tolerance.is_some()),
        ("pattern", r.pattern.is_some()),
        ("schema", r.schema.is_some()),
    ];
    for (field, given) in given {
        if given && !needs(field) {
            return Err(InvalidInput::new(
                field,
                format!("not used by mode {}", mode.as_str()),
            ));
        }
    }
    let required = match mode {
        MatchMode::Exact | MatchMode::Normalized | MatchMode::Numeric => {
            ("expected", r.expected.is_some())
        }
        MatchMode::Regex => ("pattern", r.pattern.is_some()),
        MatchMode::JsonSchema => ("schema", r.schema.is_some()),
    };
    match required {
        (field, false) => Err(InvalidInput::new(
            field,
            format!("required by mode {}", mode.as_str()),
        )),
        _ => Ok(()),
    }
}

/// Lowercase, collapse whitespace, strip trailing sentence punctuation.
fn normalize(s: &str) -> String {
    let collapsed = s
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    collapsed
        .trim_end_matches(['.', '!', '?'])
        .trim_end()
        .to_owned()
}

fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim().replace(',', "");
    s.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn numeric(r: &AnswerMatch, answer: &str) -> Result<(bool, Value), InvalidInput> {
    let expected = r.expected.as_deref().unwrap_or_default();
    let expected = parse_number(expected)
        .ok_or_else(|| InvalidInput::new("expected", "not a finite number"))?;
    let absolute = tolerance("tolerance", r.tolerance)?.unwrap_or(DEFAULT_TOLERANCE);
    let relative = tolerance("relative_tolerance", r.relative_tolerance)?.unwrap_or(0.0);
    let Some(answer) = parse_number(answer) else {
        let evidence = json!({ "expected": expected, "error": "answer is not a number" });
        return Ok((false, evidence));
    };
    let difference = (answer - expected).abs();
    let matched = difference <= absolute || difference <= relative * expected.abs();
    let evidence = json!({ "expected": expected, "answer": answer, "difference": difference });
    Ok((matched, evidence))
}

fn tolerance(field: &str, t: Option<f64>) -> Result<Option<f64>, InvalidInput> {
    t.map(|t| match finite(field, t)? {
        t if t >= 0.0 => Ok(t),
        _ => Err(InvalidInput::new(field, "must not be negative")),
    })
    .transpose()
}

fn full_match(pattern: &str, answer: &str) -> Result<bool, InvalidInput> {
    // Anchored here rather than trusting the caller: a bare `\d+` must not accept "abc 1".
    let regex = RegexBuilder::new(&format!(r"\A(?:{pattern})\z"))
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| InvalidInput::new("pattern", e.to_string()))?;
    Ok(regex.is_match(answer))
}

fn json_schema(schema: &Value, answer: &str) -> Result<(bool, Value), InvalidInput> {
    if !(schema.is_object() || schema.is_boolean()) {
        return Err(InvalidInput::new(
            "schema",
            "must be a JSON Schema object or boolean",
        ));
    }
    let value: Value = match serde_json::from_str(answer) {
        Ok(value) => value,
        Err(e) => {
            return Ok((
                false,
                json!({ "error": format!("answer is not JSON: {e}") }),
            ));
        }
    };
    Ok(match schema::check(schema, &value) {
        Ok(()) => (true, json!({})),
        Err(v) => (
            false,
            json!({ "violation": { "path": v.path, "reason": v.reason } }),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    fn req(mode: MatchMode) -> AnswerMatch {
        AnswerMatch {
            mode,
            expected: None,
            tolerance: None,
            relative_tolerance: None,
            pattern: None,
            schema: None,
            answer: None,
            safety_violation: false,
        }
    }

    fn expecting(mode: MatchMode, expected: &str) -> AnswerMatch {
        AnswerMatch {
            expected: Some(expected.to_owned()),
            ..req(mode)
        }
    }

    fn value(r: &AnswerMatch, output: &str) -> f64 {
        let o = verify(r, output).unwrap_or_else(|e| panic!("{r:?}: {e}"));
        assert_eq!((o.status, o.confidence), (Status::Ok, 1.0));
        o.value.expect("ok has a value")
    }

    #[test]
    fn exact_and_normalized() {
        let table = [
            (MatchMode::Exact, "Paris", "Paris", 1.0),
            (MatchMode::Exact, "Paris", "Paris ", 0.0),
            (MatchMode::Exact, "Paris", "paris", 0.0),
            (MatchMode::Normalized, "Paris", "  PARIS.  ", 1.0),
            (MatchMode::Normalized, "new york", "New\t York!?", 1.0),
            (MatchMode::Normalized, "ÉTÉ", "été", 1.0),
            (MatchMode::Normalized, "Paris", "Paris, France", 0.0),
            (MatchMode::Normalized, "yes", "yes .", 1.0),
        ];
        for (mode, expected, output, v) in table {
            assert_eq!(
                value(&expecting(mode, expected), output),
                v,
                "{mode:?} {expected:?} {output:?}"
            );
        }
    }

    #[test]
    fn answer_overrides_output() {
        let r = AnswerMatch {
            answer: Some("42".to_owned()),
            ..expecting(MatchMode::Exact, "42")
        };
        assert_eq!(value(&r, "the output says 41"), 1.0);
    }

    #[test]
    fn numeric() {
        let with = |expected: &str, tol: Option<f64>, rel: Option<f64>| AnswerMatch {
            tolerance: tol,
            relative_tolerance: rel,
            ..expecting(MatchMode::Numeric, expected)
        };
        let table = [
            (with("1234.5", None, None), " 1,234.5\n", 1.0),
            (with("0.3", None, None), "0.30000000000000004", 1.0),
            (with("3.14159", Some(0.01), None), "3.14", 1.0),
            (with("3.14159", Some(0.001), None), "3.14", 0.0),
            (with("1000", None, Some(0.01)), "1009", 1.0),
            (with("1000", None, Some(0.01)), "1011", 0.0),
            (with("1e3", None, None), "1000", 1.0),
            (with("42", None, None), "forty-two", 0.0),
            (with("42", None, None), "inf", 0.0),
        ];
        for (r, output, v) in table {
            assert_eq!(value(&r, output), v, "{r:?} {output:?}");
        }
        let o = verify(&with("42", None, None), "NaN").expect("valid");
        assert_eq!(o.evidence["error"], "answer is not a number");
    }

    #[test]
    fn regex_matches_the_whole_answer() {
        let with = |pattern: &str| AnswerMatch {
            pattern: Some(pattern.to_owned()),
            ..req(MatchMode::Regex)
        };
        assert_eq!(value(&with(r"\d+"), "123"), 1.0);
        assert_eq!(value(&with(r"\d+"), "abc 123"), 0.0);
        assert_eq!(
            value(&with(r"a|b"), "ab"),
            0.0,
            "alternation stays inside the anchors"
        );
        assert_eq!(value(&with(r"(?i)yes"), "YES"), 1.0);
        assert_eq!(
            verify(&with("("), "").expect_err("invalid").field,
            "pattern"
        );
        let huge = with(r"(?:\w{1000}){1000}");
        assert_eq!(verify(&huge, "").expect_err("too big").field, "pattern");
    }

    #[test]
    fn json_schema() {
        let with = |schema: Value| AnswerMatch {
            schema: Some(schema),
            ..req(MatchMode::JsonSchema)
        };
        let schema =
            json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}});
        assert_eq!(value(&with(schema.clone()), r#"{"a": 1}"#), 1.0);
        let o = verify(&with(schema.clone()), r#"{"a": "x"}"#).expect("valid");
        assert_eq!(o.value, Some(0.0));
        assert_eq!(o.evidence["violation"]["path"], "$.a");
        let o = verify(&with(schema), "not json").expect("valid");
        assert_eq!(o.value, Some(0.0));
        assert!(
            o.evidence["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("answer is not JSON"))
        );
        assert_eq!(
            verify(&with(json!(3)), "{}").expect_err("invalid").field,
            "schema"
        );
    }

    #[test]
    fn parameters_must_fit_the_mode() {
        let table = [
            (req(MatchMode::Exact), "expected"),
            (req(MatchMode::Numeric), "expected"),
            (req(MatchMode::Regex), "pattern"),
            (req(MatchMode::JsonSchema), "schema"),
            (
                AnswerMatch {
                    pattern: Some("x".into()),
                    ..expecting(MatchMode::Exact, "x")
                },
                "pattern",
            ),
            (
                AnswerMatch {
                    tolerance: Some(0.1),
                    ..expecting(MatchMode::Normalized, "x")
                },
                "tolerance",
            ),
            (
                AnswerMatch {
                    tolerance: Some(-1.0),
                    ..expecting(MatchMode::Numeric, "1")
                },
                "tolerance",
            ),
            (
                AnswerMatch {
                    relative_tolerance: Some(f64::NAN),
                    ..expecting(MatchMode::Numeric, "1")
                },
                "relative_tolerance",
            ),
            (expecting(MatchMode::Numeric, "about 3"), "expected"),
        ];
        for (r, field) in table {
            assert_eq!(verify(&r, "1").expect_err("invalid").field, field, "{r:?}");
        }
    }

    #[test]
    fn versions_name_the_mode() {
        let o = verify(&expecting(MatchMode::Normalized, "x"), "x").expect("valid");
        assert_eq!(o.verifier_version, "answer_match/normalized@1");
        assert_eq!(o.evidence, json!({"mode": "normalized", "matched": true}));
    }
}
