//! Logging set-up, in one place: JSON lines with the request span's fields.

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

/// JSON logs to stderr; the level comes from `AWS_LAMBDA_LOG_LEVEL` (Lambda's advanced logging
/// controls) or `RUST_LOG`, `info` by default. Safe to call twice (the second call is a no-op).
pub fn init() {
    let filter = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .ok()
        .map(|l| EnvFilter::new(l.to_lowercase()))
        .or_else(|| EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(
            fmt::layer()
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .with_writer(std::io::stderr),
        )
        .try_init();
}
