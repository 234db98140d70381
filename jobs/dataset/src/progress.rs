//! Progress of a long job: a bar in a terminal, periodic log lines otherwise (Lambda, CI).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Reports how far a step has come.
pub struct Progress {
    bar: Option<ProgressBar>,
    step: String,
    total: u64,
    done: u64,
    last_log: Instant,
}

/// How often the log-line variant reports.
const LOG_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    /// Starts a step of `total` units.
    pub fn start(step: &str, total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            if let Ok(style) =
                ProgressStyle::with_template("{msg:>24} [{bar:40}] {pos}/{len} {elapsed}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(step.to_owned());
            bar
        });
        tracing::info!(step, total, "started");
        Self {
            bar,
            step: step.to_owned(),
            total,
            done: 0,
            last_log: Instant::now(),
        }
    }

    /// `n` more units are done.
    pub fn advance(&mut self, n: u64) {
        self.done += n;
        match &self.bar {
            Some(bar) => bar.inc(n),
            None if self.last_log.elapsed() >= LOG_EVERY => {
                tracing::info!(step = %self.step, done = self.done, total = self.total, "progress");
                self.last_log = Instant::now();
            }
            None => {}
        }
    }

    /// The step is over.
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        tracing::info!(step = %self.step, done = self.done, "finished");
    }
}
