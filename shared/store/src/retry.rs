//! Optimistic concurrency: one read → decide → conditional write, retried with backoff when
//! another writer won the race. Every read-modify-write of the table goes through
//! [`optimistic`], so how often and how long to retry is decided here once.

use std::{future::Future, time::Duration};

use rand::Rng;

use crate::StoreError;

/// Attempts of a read-modify-write before a contended write gives up (callers answer 409).
pub const MAX_ATTEMPTS: u32 = 64;

/// A failure that a fresh read may cure: another writer changed what the attempt read.
pub trait Contended {
    /// True when the attempt lost a race (retry from a fresh read), false when it failed.
    fn is_contended(&self) -> bool;
}

impl Contended for StoreError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::ConditionFailed { .. } | Self::Conflict)
    }
}

/// Runs `attempt` (read, decide, write conditionally on what was read) until it returns
/// anything but a lost race, backing off between tries; after [`MAX_ATTEMPTS`] lost races
/// the last one is returned, for the caller to answer "contended, retry later".
///
/// # Errors
/// The first error that is not contended, or the last contended one.
///
/// `attempt` is a plain closure returning a future (`move || async move { … }` over
/// references), not an async closure: the futures of async closures cannot yet be proven
/// `Send` for every lifetime, which axum's handlers require.
pub async fn optimistic<T, E: Contended, F: Future<Output = Result<T, E>>>(
    mut attempt: impl FnMut() -> F,
) -> Result<T, E> {
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(e) if e.is_contended() && tries + 1 < MAX_ATTEMPTS => {
                back_off(tries).await;
                tries += 1;
            }
            done => return done,
        }
    }
}

/// Sleeps before retry `attempt` (0-based) after losing a race: full jitter over an
/// exponentially growing window (1 ms doubling to 64 ms), so contending writers spread out
/// instead of colliding again in lock step.
pub async fn back_off(attempt: u32) {
    let window_us = 1_000u64 << attempt.min(6);
    let sleep_us = rand::rng().random_range(0..window_us);
    tokio::time::sleep(Duration::from_micros(sleep_us)).await;
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[tokio::test]
    async fn lost_races_are_retried_until_the_write_wins() {
        let calls = &Cell::new(0);
        let out: Result<u32, StoreError> = optimistic(move || async move {
            calls.set(calls.get() + 1);
            if calls.get() < 3 {
                Err(StoreError::ConditionFailed { index: None })
            } else {
                Ok(calls.get())
            }
        })
        .await;
        assert_eq!(out.unwrap(), 3);
    }

    #[tokio::test]
    async fn a_failure_that_is_not_a_race_stops_at_once() {
        let calls = &Cell::new(0);
        let out: Result<(), StoreError> = optimistic(move || async move {
            calls.set(calls.get() + 1);
            Err(StoreError::Invalid("too large".into()))
        })
        .await;
        assert!(matches!(out, Err(StoreError::Invalid(_))));
        assert_eq!(calls.get(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_race_lost_every_time_gives_up_after_max_attempts() {
        let calls = &Cell::new(0);
        let out: Result<(), StoreError> = optimistic(move || async move {
            calls.set(calls.get() + 1);
            Err(StoreError::Conflict)
        })
        .await;
        assert!(matches!(out, Err(StoreError::Conflict)));
        assert_eq!(calls.get(), MAX_ATTEMPTS);
    }
}
