//! Iterative walks over JSON values: arguments and schemas come from agents, so nothing here
//! recurses on their nesting.

use std::fmt::Write as _;

use serde_json::Value;

/// Approximate compact-serialised size in bytes, and nesting depth (a scalar has depth 0).
pub(crate) fn measure(v: &Value) -> (usize, usize) {
    let mut size = 0usize;
    let mut max_depth = 0usize;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        max_depth = max_depth.max(depth);
        size = size.saturating_add(match v {
            Value::Null => 4,
            Value::Bool(b) => 4 + usize::from(!b),
            Value::Number(n) => n.to_string().len(),
            Value::String(s) => s.len() + 2,
            Value::Array(a) => {
                stack.extend(a.iter().map(|x| (x, depth + 1)));
                2 + a.len()
            }
            Value::Object(m) => {
                stack.extend(m.values().map(|x| (x, depth + 1)));
                2 + m.keys().map(|k| k.len() + 4).sum::<usize>()
            }
        });
    }
    (size, max_depth)
}

/// Key-sorted compact text of `v`, so two calls with the same arguments in a different key
/// order compare equal (serde_json may preserve insertion order in this workspace).
pub(crate) fn canonical(v: &Value) -> String {
    enum Item<'a> {
        Value(&'a Value),
        Key(&'a str),
        Text(&'static str),
    }
    let mut out = String::new();
    let mut stack = vec![Item::Value(v)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Text(s) => out.push_str(s),
            Item::Key(k) => {
                let _ = write!(out, "{k:?}:");
            }
            Item::Value(Value::Array(a)) => {
                out.push('[');
                stack.push(Item::Text("]"));
                for (i, x) in a.iter().enumerate().rev() {
                    stack.push(Item::Value(x));
                    if i > 0 {
                        stack.push(Item::Text(","));
                    }
                }
            }
            Item::Value(Value::Object(m)) => {
                out.push('{');
                stack.push(Item::Text("}"));
                let mut entries: Vec<_> = m.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                for (i, (k, x)) in entries.into_iter().enumerate().rev() {
                    stack.push(Item::Value(x));
                    stack.push(Item::Key(k));
                    if i > 0 {
                        stack.push(Item::Text(","));
                    }
                }
            }
            Item::Value(Value::String(s)) => {
                let _ = write!(out, "{s:?}");
            }
            Item::Value(scalar) => {
                let _ = write!(out, "{scalar}");
            }
        }
    }
    out
}

/// Every string in `v`; object keys are not included.
pub(crate) fn string_leaves(v: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.push(s.as_str()),
            Value::Array(a) => stack.extend(a.iter().rev()),
            Value::Object(m) => stack.extend(m.values().rev()),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_ignores_key_order() {
        let a = json!({"b": [1, {"y": 2, "x": "s"}], "a": null});
        let b = json!({"a": null, "b": [1, {"x": "s", "y": 2}]});
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(canonical(&a), r#"{"a":null,"b":[1,{"x":"s","y":2}]}"#);
        assert_ne!(canonical(&json!({"a": "1"})), canonical(&json!({"a": 1})));
    }

    #[test]
    fn measure_reports_depth_and_size_without_recursing() {
        assert_eq!(measure(&json!(1)), (1, 0));
        assert_eq!(measure(&json!({"a": [1]})).1, 2);
        let mut deep = json!(0);
        for _ in 0..5_000 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(measure(&deep).1, 5_000);
        assert_eq!(canonical(&deep).len(), 10_001);
        assert_eq!(string_leaves(&deep).len(), 0);
        // serde_json drops values recursively; unwind this one by hand so the test thread's
        // stack is not the thing under test.
        let mut v = deep;
        while let Value::Array(mut a) = v {
            v = a.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn string_leaves_skip_keys_and_scalars() {
        let v = json!({"a": "x", "b": ["y", {"c": "z"}], "n": 3});
        let mut got = string_leaves(&v);
        got.sort_unstable();
        assert_eq!(got, ["x", "y", "z"]);
    }
}
