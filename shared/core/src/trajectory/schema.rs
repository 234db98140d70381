//! A small JSON Schema validator for tool arguments and, later, answer verification.
//!
//! Supported keywords: `type` (a name or an array of names; `integer` accepts any number with
//! no fractional part, e.g. `1.0`), `const`, `enum` (numbers compare by value, so `1` equals
//! `1.0`), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numeric form),
//! `minLength`/`maxLength` (in Unicode scalar values), `minItems`/`maxItems`, `items` (one
//! schema for every element, or an array of schemas for a tuple prefix), `required`,
//! `properties`, `additionalProperties` (boolean or schema), `allOf`, `anyOf`, `oneOf`, `not`,
//! and boolean schemas. Every other keyword — `$ref`, `pattern`, `format`, … — is ignored, i.e.
//! accepts anything; a schema that is neither an object nor a boolean accepts anything too.
//!
//! Schemas come from agents, so evaluation is bounded: recursion stops with a violation past
//! [`MAX_DEPTH`] levels, and the whole check with a violation after [`MAX_STEPS`] schema
//! evaluations (combinators multiply work: each branch re-checks the whole value). The first violation
//! found is reported, with a `$.a.b[2]` path into the checked value.

use serde_json::{Map, Value};

/// Deepest nesting of schema-and-value evaluation before the check gives up with a violation.
pub const MAX_DEPTH: usize = 64;
/// Most (sub)schema evaluations of one check before it gives up with a violation.
pub const MAX_STEPS: usize = 100_000;

/// Where and why a value does not satisfy a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct SchemaViolation {
    /// Path into the checked value: `$` is the root, then `.key` or `["odd key"]` and `[i]`.
    pub path: String,
    /// What the value violates.
    pub reason: String,
}

/// Checks `value` against `schema`.
///
/// # Errors
/// The first [`SchemaViolation`] found, including a depth or work limit being reached.
pub fn check(schema: &Value, value: &Value) -> Result<(), SchemaViolation> {
    let mut checker = Checker {
        steps: 0,
        path: "$".to_owned(),
    };
    checker.check(schema, value, 0)
}

struct Checker {
    steps: usize,
    path: String,
}

const STEPS_REASON: &str = "schema evaluation exceeded its work limit";

impl Checker {
    fn fail(&self, reason: impl Into<String>) -> Result<(), SchemaViolation> {
        Err(SchemaViolation {
            path: self.path.clone(),
            reason: reason.into(),
        })
    }

    fn exhausted(&self) -> bool {
        self.steps > MAX_STEPS
    }

    /// Runs `f` with `segment` appended to the path, then restores it.
    fn nested(
        &mut self,
        segment: &str,
        f: impl FnOnce(&mut Self) -> Result<(), SchemaViolation>,
    ) -> Result<(), SchemaViolation> {
        let len = self.path.len();
        self.path.push_str(segment);
        let r = f(self);
        self.path.truncate(len);
        r
    }

    fn check(
        &mut self,
        schema: &Value,
        value: &Value,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        self.steps += 1;
        if self.exhausted() {
            return self.fail(STEPS_REASON);
        }
        if depth > MAX_DEPTH {
            return self.fail(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        let s = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return self.fail("no value is allowed here"),
            Value::Object(s) => s,
            _ => return Ok(()),
        };
        self.check_type(s, value)?;
        if let Some(c) = s.get("const")
            && !json_eq(c, value)
        {
            return self.fail(format!("must equal {c}"));
        }
        if let Some(Value::Array(options)) = s.get("enum")
            && !options.iter().any(|o| json_eq(o, value))
        {
            return self.fail("is not one of the enumerated values");
        }
        match value {
            Value::Number(n) => self.check_number(s, n.as_f64().unwrap_or(f64::NAN))?,
            Value::String(text) => self.check_string(s, text)?,
            Value::Array(items) => self.check_array(s, items, depth)?,
            Value::Object(m) => self.check_object(s, m, depth)?,
            _ => {}
        }
        self.check_combinators(s, value, depth)
    }

    fn check_type(&self, s: &Map<String, Value>, value: &Value) -> Result<(), SchemaViolation> {
        let allowed: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return Ok(()),
        };
        if allowed.iter().any(|t| type_matches(t, value)) {
            Ok(())
        } else {
            self.fail(format!("must be of type {}", allowed.join(" or ")))
        }
    }

    fn check_number(&self, s: &Map<String, Value>, x: f64) -> Result<(), SchemaViolation> {
        let bound = |k: &str| s.get(k).and_then(Value::as_f64);
        if let Some(m) = bound("minimum")
            && x < m
        {
            return self.fail(format!("must be at least {m}"));
        }
        if let Some(m) = bound("maximum")
            && x > m
        {
            return self.fail(format!("must be at most {m}"));
        }
        if let Some(m) = bound("exclusiveMinimum")
            && x <= m
        {
            return self.fail(format!("must be greater than {m}"));
        }
        if let Some(m) = bound("exclusiveMaximum")
            && x >= m
        {
            return self.fail(format!("must be less than {m}"));
        }
        Ok(())
    }

    fn check_string(&self, s: &Map<String, Value>, text: &str) -> Result<(), SchemaViolation> {
        let len = text.chars().count() as u64;
        if let Some(m) = s.get("minLength").and_then(Value::as_u64)
            && len < m
        {
            return self.fail(format!("must be at least {m} characters"));
        }
        if let Some(m) = s.get("maxLength").and_then(Value::as_u64)
            && len > m
        {
            return self.fail(format!("must be at most {m} characters"));
        }
        Ok(())
    }

    fn check_array(
        &mut self,
        s: &Map<String, Value>,
        items: &[Value],
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        let len = items.len() as u64;
        if let Some(m) = s.get("minItems").and_then(Value::as_u64)
            && len < m
        {
            return self.fail(format!("must have at least {m} items"));
        }
        if let Some(m) = s.get("maxItems").and_then(Value::as_u64)
            && len > m
        {
            return self.fail(format!("must have at most {m} items"));
        }
        match s.get("items") {
            Some(Value::Array(tuple)) => {
                for (i, (sub, item)) in tuple.iter().zip(items).enumerate() {
                    self.nested(&format!("[{i}]"), |c| c.check(sub, item, depth + 1))?;
                }
            }
            Some(sub) => {
                for (i, item) in items.iter().enumerate() {
                    self.nested(&format!("[{i}]"), |c| c.check(sub, item, depth + 1))?;
                }
            }
            None => {}
        }
        Ok(())
    }

    fn check_object(
        &mut self,
        s: &Map<String, Value>,
        m: &Map<String, Value>,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        if let Some(Value::Array(required)) = s.get("required")
            && let Some(missing) = required
                .iter()
                .filter_map(Value::as_str)
                .find(|k| !m.contains_key(*k))
        {
            return self.fail(format!("missing required property {missing:?}"));
        }
        let properties = s.get("properties").and_then(Value::as_object);
        let additional = s.get("additionalProperties");
        for (k, v) in m {
            let declared = properties.and_then(|p| p.get(k));
            let sub = match (declared, additional) {
                (Some(sub), _) => sub,
                (None, Some(Value::Bool(false))) => {
                    return self.nested(&key_segment(k), |c| c.fail("is not an allowed property"));
                }
                (None, Some(sub)) => sub,
                (None, None) => continue,
            };
            self.nested(&key_segment(k), |c| c.check(sub, v, depth + 1))?;
        }
        Ok(())
    }

    fn check_combinators(
        &mut self,
        s: &Map<String, Value>,
        value: &Value,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        if let Some(Value::Array(all)) = s.get("allOf") {
            for sub in all {
                self.check(sub, value, depth + 1)?;
            }
        }
        if let Some(Value::Array(any)) = s.get("anyOf")
            && self.count_matches(any, value, depth, 1)? == 0
        {
            return self.fail("matches none of the anyOf schemas");
        }
        if let Some(Value::Array(one)) = s.get("oneOf") {
            let n = self.count_matches(one, value, depth, 2)?;
            if n != 1 {
                return self.fail(format!("matches {n} of the oneOf schemas, not exactly 1"));
            }
        }
        if let Some(not) = s.get("not")
            && self.count_matches(std::slice::from_ref(not), value, depth, 1)? == 1
        {
            return self.fail("matches the schema under not");
        }
        Ok(())
    }

    /// How many of `schemas` accept `value`, counting no further than `enough`. Running out of
    /// work is an error rather than a non-match, so it cannot flip the meaning of `not`.
    fn count_matches(
        &mut self,
        schemas: &[Value],
        value: &Value,
        depth: usize,
        enough: usize,
    ) -> Result<usize, SchemaViolation> {
        let mut n = 0;
        for sub in schemas {
            if self.check(sub, value, depth + 1).is_ok() {
                n += 1;
                if n == enough {
                    break;
                }
            }
            if self.exhausted() {
                return Err(SchemaViolation {
                    path: self.path.clone(),
                    reason: STEPS_REASON.to_owned(),
                });
            }
        }
        Ok(n)
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match (t, v) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// JSON Schema equality: numbers by value, everything else structurally.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        _ => a == b,
    }
}

fn key_segment(k: &str) -> String {
    let plain = k
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!(".{k}")
    } else {
        format!("[{}]", Value::from(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn violation(schema: Value, value: Value) -> SchemaViolation {
        check(&schema, &value).expect_err("expected a violation")
    }

    #[test]
    fn accepts_conforming_values() {
        let schema = json!({
            "type": "object",
            "required": ["query"],
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 5},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"enum": ["fast", "slow"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "nullable": {"type": ["string", "null"]}
            },
            "additionalProperties": false
        });
        for v in [
            json!({"query": "héllo"}),
            json!({"query": "a", "limit": 10, "mode": "fast", "tags": ["x"], "nullable": null}),
            json!({"query": "a", "limit": 3.0}),
        ] {
            check(&schema, &v).unwrap_or_else(|e| panic!("{v}: {e}"));
        }
    }

    #[test]
    fn violations_carry_path_and_reason() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "object", "properties": {
                "b c": {"type": "integer"}}}}}});
        let e = violation(s, json!({"a": [{}, {"b c": 1.5}]}));
        assert_eq!(e.path, r#"$.a[1]["b c"]"#);
        assert_eq!(e.reason, "must be of type integer");

        let table = [
            (json!({"required": ["q"]}), json!({}), "$"),
            (
                json!({"additionalProperties": false}),
                json!({"x": 1}),
                "$.x",
            ),
            (
                json!({"additionalProperties": {"type": "string"}}),
                json!({"x": 1}),
                "$.x",
            ),
            (json!({"minimum": 0}), json!(-1), "$"),
            (json!({"exclusiveMaximum": 1}), json!(1), "$"),
            (json!({"maxLength": 2}), json!("abc"), "$"),
            (json!({"minItems": 1}), json!([]), "$"),
            (json!({"items": [{"type": "string"}]}), json!([1]), "$[0]"),
            (json!({"const": 3}), json!(4), "$"),
            (json!({"enum": [1, 2]}), json!("1"), "$"),
            (json!({"type": "integer"}), json!(true), "$"),
            (json!(false), json!(null), "$"),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                json!(1),
                "$",
            ),
            (
                json!({"oneOf": [{"type": "number"}, {"type": "integer"}]}),
                json!(1),
                "$",
            ),
            (
                json!({"allOf": [{"type": "number"}, {"maximum": 1}]}),
                json!(2),
                "$",
            ),
            (json!({"not": {"type": "null"}}), json!(null), "$"),
        ];
        for (schema, value, path) in table {
            let e = violation(schema.clone(), value.clone());
            assert_eq!(e.path, path, "{schema} on {value}: {e}");
        }
    }

    #[test]
    fn numbers_compare_by_value_and_unknown_keywords_are_ignored() {
        check(&json!({"enum": [1]}), &json!(1.0)).unwrap();
        check(&json!({"const": 2.0}), &json!(2)).unwrap();
        check(
            &json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
            &json!(1),
        )
        .unwrap();
        check(
            &json!({"$ref": "#/x", "pattern": "^a$", "format": "email"}),
            &json!("b"),
        )
        .unwrap();
        check(&json!("not a schema"), &json!(1)).unwrap();
        check(&json!({"type": "number"}), &json!(1)).unwrap();
        check(&json!({"type": 7}), &json!(1)).unwrap();
    }

    #[test]
    fn deep_values_hit_the_depth_cap() {
        let mut schema = json!({"type": "array"});
        let mut value = json!([]);
        for _ in 0..100 {
            schema = json!({"type": "array", "items": schema});
            value = json!([value]);
        }
        let e = violation(schema, value);
        assert!(e.reason.contains("deeper than 64"), "{e}");
        assert_eq!(e.path.matches("[0]").count(), MAX_DEPTH + 1);
    }

    #[test]
    fn evaluation_work_is_bounded() {
        // Tree-shaped schemas cost at most |schema| × |value| evaluations, which is still far
        // too much for large inputs: 20 branches × 10 000 items exceeds the limit.
        let branch = json!({"items": {"type": "integer"}});
        let schema = json!({"anyOf": vec![branch; 20]});
        let mut items = vec![json!(1); 10_000];
        items.push(json!("x"));
        let value = Value::Array(items);
        let e = violation(schema.clone(), value.clone());
        assert_eq!(e.reason, STEPS_REASON);
        let not = json!({"not": schema});
        assert_eq!(violation(not, value).reason, STEPS_REASON);
    }
}
