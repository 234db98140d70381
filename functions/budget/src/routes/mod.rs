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
pub(crate) const MAX_ATTEMPTS: u32 = 64;

/// Sleeps before retry `attempt` (0-based) after losing a race: full jitter over an
/// exponentially growing window (1 ms doubling to 64 ms), so contending writers spread out
/// instead of colliding again in lock step.
pub(crate) async fn back_off(attempt: u32) {
    use rand::Rng;
    let window_ms = 1u64 << attempt.min(6);
    let sleep_us = rand::rng().random_range(0..window_ms * 1_000);
    tokio::time::sleep(std::time::Duration::from_micros(sleep_us)).await;
}
