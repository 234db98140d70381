//! What a run leaves for people: `metrics.jsonl` (one object per optimizer step and per
//! evaluation), PNG curves of reward, loss, KL and success, and progress on the terminal (a
//! bar) or in the log (periodic lines).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use agentrl_core::training::Metrics;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;

use crate::error::{Result, TrainError};

/// Appends to `metrics.jsonl`, flushed line by line.
#[derive(Debug)]
pub struct MetricsLog {
    path: PathBuf,
    rows: Vec<Metrics>,
}

impl MetricsLog {
    /// Opens `<out>/metrics.jsonl`, keeping only lines up to a resumed checkpoint's position.
    ///
    /// # Errors
    /// I/O.
    pub fn open(out: &Path, keep: impl Fn(&Metrics) -> bool) -> Result<Self> {
        let path = out.join("metrics.jsonl");
        let mut rows = Vec::new();
        if let Ok(file) = std::fs::File::open(&path) {
            for line in std::io::BufReader::new(file).lines() {
                if let Ok(m) = serde_json::from_str::<Metrics>(&line?)
                    && keep(&m)
                {
                    rows.push(m);
                }
            }
        }
        let mut log = Self {
            path,
            rows: Vec::new(),
        };
        let mut file = std::fs::File::create(&log.path)?;
        for m in &rows {
            writeln!(
                file,
                "{}",
                serde_json::to_string(m).map_err(|e| TrainError::Data(e.to_string()))?
            )?;
        }
        log.rows = rows;
        Ok(log)
    }

    /// Appends one line.
    ///
    /// # Errors
    /// I/O.
    pub fn push(&mut self, m: Metrics) -> Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.path)?;
        writeln!(
            file,
            "{}",
            serde_json::to_string(&m).map_err(|e| TrainError::Data(e.to_string()))?
        )?;
        self.rows.push(m);
        Ok(())
    }

    /// Every line so far.
    #[must_use]
    pub fn rows(&self) -> &[Metrics] {
        &self.rows
    }

    /// Writes `reward.png`, `loss.png`, `kl.png` and `success.png` into `dir`.
    ///
    /// # Errors
    /// I/O or drawing failures.
    pub fn plot(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        let grpo: Vec<&Metrics> = self
            .rows
            .iter()
            .filter(|m| m.phase == "grpo" && m.eval_success.is_none())
            .collect();
        let sft: Vec<&Metrics> = self
            .rows
            .iter()
            .filter(|m| m.phase == "sft" && m.eval_success.is_none())
            .collect();
        let series = |rows: &[&Metrics], f: fn(&Metrics) -> f64| -> Vec<(f64, f64)> {
            rows.iter().map(|m| (m.step as f64, f(m))).collect()
        };
        let evals: Vec<(f64, f64)> = self
            .rows
            .iter()
            .filter_map(|m| m.eval_success.map(|s| (m.step as f64, s)))
            .collect();
        let train_success: Vec<(f64, f64)> = grpo
            .iter()
            .filter_map(|m| m.success.map(|s| (m.step as f64, s)))
            .collect();
        chart(
            &dir.join("reward.png"),
            "GRPO reward (mean of rollouts)",
            "reward",
            &[("reward_mean", series(&grpo, |m| m.reward_mean))],
        )?;
        chart(
            &dir.join("loss.png"),
            "Loss",
            "loss",
            &[
                ("sft", series(&sft, |m| m.loss)),
                ("grpo", series(&grpo, |m| m.loss)),
            ],
        )?;
        chart(
            &dir.join("kl.png"),
            "KL to the reference (k3)",
            "kl",
            &[("kl", series(&grpo, |m| m.kl))],
        )?;
        chart(
            &dir.join("success.png"),
            "Success rate",
            "success",
            &[
                ("held-out, greedy", evals),
                ("rollouts, sampled", train_success),
            ],
        )
    }
}

fn chart(path: &Path, title: &str, y_label: &str, lines: &[(&str, Vec<(f64, f64)>)]) -> Result<()> {
    register_font();
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(path, (800, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let points = lines.iter().flat_map(|(_, s)| s.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in points {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        let pad = ((y1 - y0) * 0.05).max(1e-6);
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 24))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1.max(x0 + 1.0), (y0 - pad)..(y1 + pad))?;
        c.configure_mesh().x_desc("step").y_desc(y_label).draw()?;
        for (i, (name, s)) in lines.iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            let color = Palette99::pick(i).to_rgba();
            c.draw_series(LineSeries::new(s.iter().copied(), color.stroke_width(2)))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        c.configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| TrainError::file(path, e))
}

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bundled DejaVu Sans: the plots need no system fonts.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

/// Progress: a bar on a terminal, a log line every few percent otherwise.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    last_logged: u64,
    started: Instant,
    phase: &'static str,
}

impl Progress {
    /// Starts a phase of `total` steps.
    #[must_use]
    pub fn start(phase: &'static str, total: u64) -> Self {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} {msg} ({eta})")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_prefix(phase);
            bar
        });
        Self {
            bar,
            total,
            last_logged: 0,
            started: Instant::now(),
            phase,
        }
    }

    /// Reports step `done` with a short message.
    pub fn update(&mut self, done: u64, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            bar.set_message(message.to_owned());
        } else if done == self.total || done >= self.last_logged + (self.total / 20).max(1) {
            self.last_logged = done;
            tracing::info!(
                phase = self.phase,
                step = done,
                total = self.total,
                elapsed_s = self.started.elapsed().as_secs_f64(),
                "{message}"
            );
        }
    }

    /// Ends the phase.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}
