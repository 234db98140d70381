//! Request rules both table adapters enforce identically: limits, cursors, transaction shape.

use std::collections::HashSet;

use crate::{
    StoreError,
    ports::{Query, Write},
};

pub(crate) fn encode_cursor(sk: &str) -> String {
    hex_encode(sk.as_bytes())
}

fn decode_cursor(cursor: &str) -> Result<String, StoreError> {
    let bad = || StoreError::Invalid("cursor is not one this table issued".to_owned());
    if !cursor.len().is_multiple_of(2) {
        return Err(bad());
    }
    let bytes = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(cursor.get(i..i + 2).ok_or_else(bad)?, 16).map_err(|_| bad()))
        .collect::<Result<Vec<u8>, _>>()?;
    String::from_utf8(bytes).map_err(|_| bad())
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn check_query(query: &Query) -> Result<Option<String>, StoreError> {
    if !(1..=1000).contains(&query.limit) {
        return Err(StoreError::Invalid(
            "limit must be between 1 and 1000".to_owned(),
        ));
    }
    query.cursor.as_deref().map(decode_cursor).transpose()
}

pub(crate) fn check_transaction(writes: &[Write]) -> Result<(), StoreError> {
    if writes.len() > 100 {
        return Err(StoreError::Invalid(
            "a transaction holds at most 100 writes".to_owned(),
        ));
    }
    let mut keys = HashSet::new();
    for w in writes {
        let key = match w {
            Write::Put(p) => &p.key,
            Write::Delete { key, .. } | Write::Check { key, .. } => key,
        };
        if !keys.insert(key) {
            return Err(StoreError::Invalid(format!(
                "two writes on one key ({}, {}) in a transaction",
                key.pk, key.sk
            )));
        }
    }
    Ok(())
}

/// Largest message body accepted by both queues (SQS's own limit).
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024;

pub(crate) fn check_bodies(bodies: &[String]) -> Result<(), StoreError> {
    match bodies.iter().find(|b| b.len() > MAX_BODY_BYTES) {
        Some(b) => Err(StoreError::Invalid(format!(
            "message body of {} bytes is over the {MAX_BODY_BYTES}-byte limit",
            b.len()
        ))),
        None => Ok(()),
    }
}
