//! `tojson` as transformers gives it to chat templates: Python's `json.dumps(x,
//! ensure_ascii=False, indent=None, separators=None, sort_keys=False)`, so tool specs and call
//! arguments render as they do under `apply_chat_template` (`, ` and `: ` between items, no
//! HTML escaping) rather than as minijinja's own compact, HTML-safe `tojson`. One difference
//! remains: objects come out with their keys sorted (the turn table's JSON is read into
//! `serde_json` maps, which sort), where Python keeps the order a client sent.

use minijinja::value::Kwargs;
use serde_json::Value;

/// The `tojson` filter: `indent`, `sort_keys` and `ensure_ascii` as Python takes them.
///
/// # Errors
/// A value that is not JSON (an undefined or a callable), or an unknown keyword argument.
pub(crate) fn tojson(value: minijinja::Value, kwargs: Kwargs) -> Result<String, minijinja::Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(&value).map_err(|e| {
        minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
    })?;
    let style = Style {
        indent,
        sort_keys: sort_keys.unwrap_or(false),
        ensure_ascii: ensure_ascii.unwrap_or(false),
    };
    let mut out = String::new();
    style.dump(&json, 0, &mut out);
    Ok(out)
}

struct Style {
    indent: Option<usize>,
    sort_keys: bool,
    ensure_ascii: bool,
}

impl Style {
    fn dump(&self, v: &Value, level: usize, out: &mut String) {
        match v {
            Value::Array(items) => {
                let items: Vec<(Option<&String>, &Value)> =
                    items.iter().map(|v| (None, v)).collect();
                self.container(('[', ']'), &items, level, out);
            }
            Value::Object(map) => {
                let mut entries: Vec<(Option<&String>, &Value)> =
                    map.iter().map(|(k, v)| (Some(k), v)).collect();
                if self.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                }
                self.container(('{', '}'), &entries, level, out);
            }
            Value::String(s) => self.string(s, out),
            other => out.push_str(&other.to_string()),
        }
    }

    /// Python's layout: `[a, b]` on one line, or one item a line under `indent` (then `,`
    /// ends a line instead of `, `).
    fn container(
        &self,
        (open, close): (char, char),
        items: &[(Option<&String>, &Value)],
        level: usize,
        out: &mut String,
    ) {
        out.push(open);
        if items.is_empty() {
            out.push(close);
            return;
        }
        let newline = |out: &mut String, level: usize, width: usize| {
            out.push('\n');
            out.push_str(&" ".repeat(level * width));
        };
        for (i, (key, value)) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(if self.indent.is_some() { "," } else { ", " });
            }
            if let Some(width) = self.indent {
                newline(out, level + 1, width);
            }
            if let Some(key) = key {
                self.string(key, out);
                out.push_str(": ");
            }
            self.dump(value, level + 1, out);
        }
        if let Some(width) = self.indent {
            newline(out, level, width);
        }
        out.push(close);
    }

    /// A JSON string as Python escapes it.
    fn string(&self, s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (self.ensure_ascii && !(' '..='~').contains(&c)) => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn dumps(v: &Value, indent: Option<usize>, sort_keys: bool, ensure_ascii: bool) -> String {
        let mut out = String::new();
        Style {
            indent,
            sort_keys,
            ensure_ascii,
        }
        .dump(v, 0, &mut out);
        out
    }

    #[test]
    fn layouts_and_escapes_are_python_s() {
        let v = json!({"name": "read", "b": [1, 2.5, null, true], "a": {}, "s": "é\n\"<&>'𝄞"});
        assert_eq!(
            dumps(&v, None, false, false),
            r#"{"a": {}, "b": [1, 2.5, null, true], "name": "read", "s": "é\n\"<&>'𝄞"}"#
        );
        assert_eq!(
            dumps(&v, None, true, true),
            r#"{"a": {}, "b": [1, 2.5, null, true], "name": "read", "s": "\u00e9\n\"<&>'\ud834\udd1e"}"#
        );
        assert_eq!(
            dumps(&json!({"a": [1, {"b": []}]}), Some(4), false, false),
            "{\n    \"a\": [\n        1,\n        {\n            \"b\": []\n        }\n    ]\n}"
        );
    }
}
