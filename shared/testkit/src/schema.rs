//! Checks that an OpenAPI schema states what a validator checks.

use serde_json::{Value, json};

/// Checks that `accepts` takes the numeric bounds `schema` declares for `property`
/// (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`) and refuses what lies just
/// past them: one for an integer, 1e-9 for a number.
///
/// # Panics
/// When a bound and the validator disagree, or when the property declares no bound.
pub fn bounds_hold(schema: &Value, property: &str, accepts: impl Fn(Value) -> bool) {
    let p = &schema["properties"][property];
    let integer = p["type"] == "integer" || p["type"][0] == "integer";
    let mut bounds = 0;
    for (key, inside, outside) in [
        ("minimum", 0, -1),
        ("maximum", 0, 1),
        ("exclusiveMinimum", 1, 0),
        ("exclusiveMaximum", -1, 0),
    ] {
        let bound = &p[key];
        if bound.is_null() {
            continue;
        }
        let at = |offset: i8| {
            if integer {
                integer_past(bound, offset)
            } else {
                json!(bound.as_f64().expect("a numeric bound") + f64::from(offset) * 1e-9)
            }
        };
        assert!(accepts(at(inside)), "{property}: {key} {bound}");
        assert!(!accepts(at(outside)), "{property}: past {key} {bound}");
        bounds += 1;
    }
    assert!(bounds > 0, "{property} declares no bound: {p}");
}

/// `bound + offset` as a JSON integer, exact over the whole range of `i64` and `u64` (f64
/// arithmetic would round 2^63 − 1 up to 2^63).
fn integer_past(bound: &Value, offset: i8) -> Value {
    let bound = bound
        .as_i64()
        .map(i128::from)
        .or_else(|| bound.as_u64().map(i128::from))
        .or_else(|| bound.as_f64().map(|f| f as i128))
        .expect("a numeric bound");
    let n = bound + i128::from(offset);
    i64::try_from(n)
        .map(Value::from)
        .or_else(|_| u64::try_from(n).map(Value::from))
        .unwrap_or_else(|_| json!(n as f64))
}
