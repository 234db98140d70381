//! Listings, newest first: one small item per listed thing under a listing partition, its sort
//! key `CREATED_MS#ID` (milliseconds zero-padded to 13 digits, so text order is time order).
//! An entry holds only the id: a page of ids is read, then the things themselves from their
//! own items, so a listing never shows a stale state. A thing whose item is gone (expired,
//! deleted) is skipped by the reader.

use serde_json::json;

use crate::{
    StoreError,
    ports::{Condition, Key, Put, Query, SortRange, Table},
};

/// The entry of `id`, created at `at_ms`, in the listing `pk` (expiring with the thing when
/// `expires_at` is set: epoch seconds).
pub fn entry(pk: impl Into<String>, at_ms: u64, id: &str, expires_at: Option<u64>) -> Put {
    Put {
        key: Key::new(pk, format!("{at_ms:013}#{id}")),
        doc: json!({ "id": id }),
        expires_at,
        condition: Condition::None,
    }
}

/// A page of the ids in listing `pk`, newest first, and the cursor of the next page.
///
/// # Errors
/// The table failed, or `cursor` is not one it gave.
pub async fn newest_first(
    table: &dyn Table,
    pk: String,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<String>, Option<String>), StoreError> {
    let page = table
        .query(&Query {
            pk,
            range: SortRange::All,
            limit,
            cursor,
            ascending: false,
        })
        .await?;
    let ids = page
        .items
        .iter()
        .filter_map(|item| item.key.sk.split_once('#').map(|(_, id)| id.to_owned()))
        .collect();
    Ok((ids, page.next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_sort_by_time_as_text() {
        let early = entry("p", 999, "b", None);
        let late = entry("p", 1_000, "a", None);
        assert!(
            early.key.sk < late.key.sk,
            "{} < {}",
            early.key.sk,
            late.key.sk
        );
        assert_eq!(late.key.sk, "0000000001000#a");
        assert_eq!(late.doc, json!({"id": "a"}));
    }
}
