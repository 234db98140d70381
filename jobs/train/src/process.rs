//! Process-wide settings a training process makes once, before it starts any thread. Each
//! was found with `perf` on `agentrl train bench` (BENCHMARKS.md has the figures).
//!
//! **Freed memory stays in the process.** A step allocates and frees the same activation and
//! gradient buffers every time (candle gives every op a fresh output, and its backward a zeroed
//! gradient per edge). With glibc's defaults the large ones are `mmap`ed and unmapped, or handed
//! back when a heap is trimmed, so every step page-faults them in again and the kernel zeroes
//! each page: a fifth of a 16 × 128 step's samples were in the kernel. So blocks up to 32 MiB
//! come from the heap, freed memory is not trimmed below 512 MiB, and there is one arena:
//! a thread that lands on one of glibc's per-thread arenas (64 MiB heaps, created and deleted
//! as the step's buffers come and go) page-faulted 14× more, and which arena the training
//! thread got varied from run to run (steps of 90 or 130 ms, in the same binary). PyTorch
//! keeps such buffers in its caching allocator for the same reason. Resident memory then
//! stays at the step's peak between steps; the peak itself is unchanged.
//!
//! **No spinning helper threads.** candle runs its element-wise ops on a pool of its own
//! whose idle workers spin before they sleep, on the cores rayon's workers need for the
//! matrix products and our kernels: the pool's one worker took 40% of a small step's samples.
//! `CANDLE_NUM_THREADS=1` runs those (memory-bound, small) ops on the calling thread.
//!
//! **The thread count is read once.** candle's matrix product asks for its thread count on
//! every call, and without `RAYON_NUM_THREADS` that means parsing `/proc/cpuinfo` for the
//! physical cores: 4% of a small step. Setting the variable to the count candle would have
//! found gives the same parallelism without the parse (rayon's own pool, which would otherwise
//! take the logical CPUs, gets the same count: one thread per core, as PyTorch's default).

/// Set by SIGTERM once [`watch_termination`] ran.
static TERMINATING: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

/// From now on SIGTERM (a Spot reclaim or an instance drain, a cancelled job) sets the flag
/// [`terminating`] reads instead of killing the process: the trainer stops at its next step
/// boundary, writes the checkpoint that fits the stop window, and exits with
/// [`crate::cli::EXIT_TERMINATED`].
///
/// # Errors
/// The handler cannot be installed.
pub fn watch_termination() -> std::io::Result<()> {
    let flag = TERMINATING.get_or_init(Default::default).clone();
    signal_hook::flag::register(signal_hook::consts::SIGTERM, flag)?;
    Ok(())
}

/// Whether SIGTERM arrived.
#[must_use]
pub fn terminating() -> bool {
    TERMINATING
        .get()
        .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}

/// The largest block served from the heap rather than its own `mmap`: glibc's ceiling on
/// 64-bit (`DEFAULT_MMAP_THRESHOLD_MAX`), so only buffers larger than 32 MiB are unmapped when
/// freed. Setting it also turns off glibc's own adjustment of the threshold.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 32 << 20;

/// Free memory at the top of a heap that is kept rather than returned to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 512 << 20;

/// Applies the settings. Call it first thing in `main`, while the process has one thread;
/// `RAYON_NUM_THREADS` and `CANDLE_NUM_THREADS` already set are kept.
///
/// # Safety
/// No other thread may exist: it writes the environment, which other threads may be reading
/// (`getenv` is not synchronised with `setenv`).
#[allow(
    unsafe_code,
    reason = "the environment and the allocator are process-wide"
)]
pub unsafe fn prepare() {
    let threads = candle_core::utils::get_num_threads().to_string();
    for (name, value) in [
        ("RAYON_NUM_THREADS", threads.as_str()),
        ("CANDLE_NUM_THREADS", "1"),
    ] {
        if std::env::var_os(name).is_none() {
            // SAFETY: the caller guarantees this is the only thread (this function's contract).
            unsafe { std::env::set_var(name, value) };
        }
    }
    // Not every allocator has these settings; without them training is slower, not wrong.
    let _ = keep_freed_memory();
}

/// Tells the allocator to keep freed memory for reuse, in one arena (glibc; a no-op
/// elsewhere). Returns whether every setting took.
fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` takes no pointers; it sets allocator parameters under the main
        // arena's lock, and rejects values outside glibc's ranges (returning 0, changing
        // nothing). glibc lists it as unsafe only for the allocator's first-call
        // initialisation, which is over by the time anything calls this: the process has
        // allocated.
        #[allow(unsafe_code, reason = "a libc call with no pointers")]
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1) == 1
                && libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_accepts_every_allocator_setting() {
        assert!(super::keep_freed_memory());
    }
}
