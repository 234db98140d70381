//! Retrying optimistic-concurrency writes: how often, and how long to wait between tries.

use std::time::Duration;

use rand::Rng;

/// Attempts of a read-modify-write before a contended write gives up (callers answer 409).
pub const MAX_ATTEMPTS: u32 = 64;

/// Sleeps before retry `attempt` (0-based) after losing a race: full jitter over an
/// exponentially growing window (1 ms doubling to 64 ms), so contending writers spread out
/// instead of colliding again in lock step.
pub async fn back_off(attempt: u32) {
    let window_us = 1_000u64 << attempt.min(6);
    let sleep_us = rand::rng().random_range(0..window_us);
    tokio::time::sleep(Duration::from_micros(sleep_us)).await;
}

/// Now, in epoch milliseconds (the domain takes time as an argument; this is where it comes from).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
