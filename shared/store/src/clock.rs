//! The wall clock. The domain takes time as an argument; this is where it comes from.

/// Now, in epoch milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Now, in epoch milliseconds as the signed count that records, windows and projections
/// hold (it saturates, some 292 million years from now).
pub fn now_ms_i64() -> i64 {
    i64::try_from(now_ms()).unwrap_or(i64::MAX)
}
