//! One module per route.

pub(crate) mod complete;
pub(crate) mod config;
pub(crate) mod consume;
pub(crate) mod create;
pub(crate) mod read;

/// Now, in epoch milliseconds (the domain takes time as an argument).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Optimistic-concurrency attempts before a contended write gives up with 409.
pub(crate) const MAX_ATTEMPTS: usize = 32;
