//! The local launcher: `agentrl serve` runs each job as a child process (`agentrl train run`),
//! one at a time, reading and writing the store's objects: files of the embedded store's
//! object directory, or `s3://` locations of the bucket under `--aws`.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex},
};

use agentrl_core::training::{
    architecture::ModelConfig,
    config::TrainConfig,
    placement::{NoFit, Placement},
};
use async_trait::async_trait;
use tokio::sync::{Notify, mpsc, watch};

use super::{JobSpec, Launcher, LogTail};
use crate::{
    TrainingState,
    runs::{self, JobState},
};

/// The job running now and how to stop it.
type Current = Arc<Mutex<Option<(String, Arc<Notify>)>>>;

/// Queues jobs for the [`LocalRunner`].
pub struct LocalLauncher {
    jobs: mpsc::UnboundedSender<JobSpec>,
    current: Current,
    logs: PathBuf,
}

/// Runs the queued jobs, one at a time (a training run takes every core).
pub struct LocalRunner {
    jobs: mpsc::UnboundedReceiver<JobSpec>,
    current: Current,
    program: PathBuf,
    args: Vec<String>,
    storage: Storage,
    logs: PathBuf,
    state: TrainingState,
}

/// Where the objects a job reads and writes are.
#[derive(Debug, Clone)]
pub enum Storage {
    /// The embedded store's object directory.
    Dir(PathBuf),
    /// An S3 bucket (the trainer reaches it with the process's AWS settings).
    Bucket(String),
}

impl Storage {
    fn location(&self, prefix: &str) -> String {
        match self {
            Self::Dir(root) => root.join(prefix).display().to_string(),
            Self::Bucket(bucket) => format!("s3://{bucket}/{prefix}"),
        }
    }
}

/// The parts of a local launcher before the state that owns it exists.
pub struct LocalJobs {
    jobs: mpsc::UnboundedReceiver<JobSpec>,
    current: Current,
    logs: PathBuf,
}

impl LocalLauncher {
    /// A launcher whose jobs log to `logs/RUN.log`, and the queue its runner takes jobs from.
    pub fn new(logs: PathBuf) -> (Self, LocalJobs) {
        let (tx, rx) = mpsc::unbounded_channel();
        let current = Current::default();
        (
            Self {
                jobs: tx,
                current: current.clone(),
                logs: logs.clone(),
            },
            LocalJobs {
                jobs: rx,
                current,
                logs,
            },
        )
    }
}

#[async_trait]
impl Launcher for LocalLauncher {
    fn name(&self) -> &'static str {
        "local"
    }

    fn place(
        &self,
        _model: &ModelConfig,
        _config: &TrainConfig,
    ) -> Result<Option<Placement>, NoFit> {
        Ok(None)
    }

    fn instance_type(&self, _placement: Option<&Placement>) -> String {
        "local".into()
    }

    fn resumes_after_restart(&self) -> bool {
        false
    }

    async fn submit(&self, job: &JobSpec) -> anyhow::Result<String> {
        self.jobs
            .send(job.clone())
            .map_err(|_| anyhow::anyhow!("the local training runner has stopped"))?;
        Ok(job.run_id.clone())
    }

    async fn log_tail(&self, job_id: &str, lines: usize) -> anyhow::Result<LogTail> {
        // Job ids are run ids, which name no other directory (`run-` and hex).
        anyhow::ensure!(
            !job_id.contains(['/', '\\']) && !job_id.starts_with('.'),
            "not a local job id: {job_id:?}"
        );
        let log = log_path(&self.logs, job_id);
        let tail = tokio::task::spawn_blocking(move || last_lines(&log, lines)).await??;
        Ok(LogTail::Lines(tail))
    }

    async fn cancel(&self, job_id: &str, _reason: &str) -> anyhow::Result<()> {
        // A queued job is skipped by the runner, which sees its run cancelled.
        if let Some((running, stop)) = &*self.current.lock().expect("not poisoned")
            && running == job_id
        {
            stop.notify_one();
        }
        Ok(())
    }
}

impl LocalRunner {
    /// A runner of `jobs` that starts `program ARGS… run …` on the objects of `storage`,
    /// writing each job's output where its launcher reads it, reporting to `state`.
    pub fn new(
        jobs: LocalJobs,
        (program, args): (PathBuf, Vec<String>),
        storage: Storage,
        state: TrainingState,
    ) -> Self {
        Self {
            jobs: jobs.jobs,
            current: jobs.current,
            program,
            args,
            storage,
            logs: jobs.logs,
            state,
        }
    }

    /// Runs jobs until `stop`; first queues again every run a previous process left
    /// unfinished (the trainer resumes from its newest checkpoint).
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        match runs::resume_unfinished(&self.state).await {
            Ok(n) if n > 0 => tracing::info!(runs = n, "unfinished training runs queued again"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "could not list unfinished training runs"),
        }
        loop {
            let job = tokio::select! {
                job = self.jobs.recv() => job,
                _ = stop.changed() => None,
            };
            let Some(job) = job else { return };
            if !self.run_one(&job, &mut stop).await {
                return;
            }
        }
    }

    /// Runs `job` to its end; false when the runner was stopped meanwhile (the run stays
    /// `running`, to be resumed by the next start).
    async fn run_one(&self, job: &JobSpec, stop: &mut watch::Receiver<bool>) -> bool {
        match runs::job_state(&self.state, &job.tenant, &job.run_id, JobState::Running).await {
            Ok(true) => {}
            Ok(false) => return true,
            Err(e) => {
                tracing::error!(run = %job.run_id, error = %e, "could not start the run");
                return true;
            }
        }
        let log = log_path(&self.logs, &job.run_id);
        let outcome = match self.spawn(job, &log) {
            Ok(mut child) => {
                let cancel = Arc::new(Notify::new());
                *self.current.lock().expect("not poisoned") =
                    Some((job.run_id.clone(), cancel.clone()));
                let outcome = tokio::select! {
                    status = child.wait() => match status {
                        Ok(s) if s.success() => Some(JobState::Succeeded),
                        Ok(s) => Some(JobState::Failed(format!("the trainer exited with {s}: {}", log_tail(&log)))),
                        Err(e) => Some(JobState::Failed(format!("waiting for the trainer: {e}"))),
                    },
                    () = cancel.notified() => {
                        let _ = child.kill().await;
                        None
                    }
                    _ = stop.changed() => {
                        let _ = child.kill().await;
                        *self.current.lock().expect("not poisoned") = None;
                        return false;
                    }
                };
                *self.current.lock().expect("not poisoned") = None;
                outcome
            }
            Err(e) => Some(JobState::Failed(format!("starting the trainer: {e}"))),
        };
        if let Some(outcome) = outcome
            && let Err(e) = runs::job_state(&self.state, &job.tenant, &job.run_id, outcome).await
        {
            tracing::error!(run = %job.run_id, error = %e, "could not record the run's end");
        }
        true
    }

    fn spawn(&self, job: &JobSpec, log: &Path) -> std::io::Result<tokio::process::Child> {
        std::fs::create_dir_all(&self.logs)?;
        let log = std::fs::File::create(log)?;
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .args(job.args(|prefix| self.storage.location(prefix)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        tracing::info!(run = %job.run_id, "training run started");
        command.spawn()
    }
}

fn log_path(logs: &Path, run_id: &str) -> PathBuf {
    logs.join(format!("{run_id}.log"))
}

/// Bytes read from a log's end: enough for hundreds of lines, however long the log grew.
const TAIL_BYTES: u64 = 256 * 1024;

/// The last `n` lines of the file at `path` (none when there is no file yet).
fn last_lines(path: &Path, n: usize) -> std::io::Result<Vec<String>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0); // cut mid-line by the seek
    }
    Ok(lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect())
}

/// The last lines of a run's log, for its failure reason.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logs_last_lines_are_read_from_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("run-1.log");
        assert_eq!(
            last_lines(&log, 5).unwrap(),
            Vec::<String>::new(),
            "no log yet"
        );
        let text: String = (0..10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, text).unwrap();
        assert_eq!(last_lines(&log, 3).unwrap(), ["line 7", "line 8", "line 9"]);
        assert_eq!(last_lines(&log, 100).unwrap().len(), 10);
        // Past the bytes read from the end, the line the seek cut is left out.
        let long: String = (0..40_000).map(|i| format!("progress {i:08}\n")).collect();
        std::fs::write(&log, long).unwrap();
        let tail = last_lines(&log, 100_000).unwrap();
        assert_eq!(tail.last().unwrap(), "progress 00039999");
        assert!(
            tail.iter().all(|l| l.len() == "progress 00000000".len()),
            "no cut line"
        );
    }
}
