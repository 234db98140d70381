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
    let (step, number) = if integer {
        (1.0, (|x: f64| json!(x as i64)) as fn(f64) -> Value)
    } else {
        (1e-9, (|x: f64| json!(x)) as fn(f64) -> Value)
    };
    let mut bounds = 0;
    for (key, inside, outside) in [
        ("minimum", 0.0, -step),
        ("maximum", 0.0, step),
        ("exclusiveMinimum", step, 0.0),
        ("exclusiveMaximum", -step, 0.0),
    ] {
        if let Some(bound) = p[key].as_f64() {
            assert!(accepts(number(bound + inside)), "{property}: {key} {bound}");
            assert!(
                !accepts(number(bound + outside)),
                "{property}: past {key} {bound}"
            );
            bounds += 1;
        }
    }
    assert!(bounds > 0, "{property} declares no bound: {p}");
}
