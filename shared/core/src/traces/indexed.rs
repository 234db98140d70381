//! Flattened, indexed attributes (`gen_ai.prompt.0.role`, `llm.input_messages.1.message.content`)
//! gathered back into one map per index, in index order.

use std::collections::BTreeMap;

use serde_json::Value;

/// The entries `prefix.N.rest` of `attributes` as one map of `rest` per `N`, by `N`.
pub(super) fn entries<'a>(
    attributes: &'a BTreeMap<String, Value>,
    prefix: &str,
) -> Vec<BTreeMap<&'a str, &'a Value>> {
    let mut by_index: BTreeMap<usize, BTreeMap<&str, &Value>> = BTreeMap::new();
    let start = format!("{prefix}.");
    for (key, value) in attributes.range(start.clone()..) {
        let Some(rest) = key.strip_prefix(&start) else {
            break;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        if let Ok(i) = index.parse::<usize>() {
            by_index.entry(i).or_default().insert(field, value);
        }
    }
    by_index.into_values().collect()
}

/// The entries `prefix.N.rest` of one entry's map, as [`entries`] gathers them.
pub(super) fn nested<'a>(
    entry: &BTreeMap<&'a str, &'a Value>,
    prefix: &str,
) -> Vec<BTreeMap<&'a str, &'a Value>> {
    let mut by_index: BTreeMap<usize, BTreeMap<&str, &Value>> = BTreeMap::new();
    let start = format!("{prefix}.");
    for (key, value) in entry {
        let Some(rest) = key.strip_prefix(&start) else {
            continue;
        };
        let Some((index, field)) = rest.split_once('.') else {
            continue;
        };
        if let Ok(i) = index.parse::<usize>() {
            by_index.entry(i).or_default().insert(field, *value);
        }
    }
    by_index.into_values().collect()
}

/// A string field of an entry.
pub(super) fn text<'a>(entry: &BTreeMap<&str, &'a Value>, field: &str) -> Option<&'a str> {
    entry.get(field).and_then(|v| v.as_str())
}
