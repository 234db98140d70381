//! What the HTTP benches share: their arguments, and the release `agentrl serve` binary
//! started in its own process on a data directory, found by its listening line, stopped with
//! SIGTERM.

#![allow(dead_code)] // each bench uses its own subset

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

pub const KEY: &str = "bench-key-0123456789abcdef";

/// Lines of the server's stderr kept after its listening line; the rest are only counted.
const KEPT_LINES: usize = 20;

/// The value after `name` on the command line, or `default`.
pub fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `agentrl serve` on 127.0.0.1 (a free port), one tenant keyed by [`KEY`], warnings only.
pub fn serve(data_dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentrl"));
    command
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--api-key",
            &format!("bench={KEY}"),
        ])
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn");
    command
}

/// What the server wrote on stderr after its listening line.
#[derive(Default)]
pub struct Log {
    pub lines: u64,
    /// Lines telling of a panic in a thread of the server.
    pub panics: u64,
    pub first: Vec<String>,
}

pub struct Server {
    pub child: Child,
    pub base: String,
    pub log: Arc<Mutex<Log>>,
}

/// Spawns `command` and waits for its listening line.
pub fn start(mut command: Command) -> Server {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("server exited").unwrap();
        if let Some(url) = line.strip_prefix("agentrl listening on ") {
            break url.to_owned();
        }
    };
    let log = Arc::new(Mutex::new(Log::default()));
    let kept = log.clone();
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let mut log = kept.lock().unwrap();
            log.lines += 1;
            log.panics += u64::from(line.contains("panicked"));
            if log.first.len() < KEPT_LINES {
                log.first.push(line);
            }
        }
    });
    Server { child, base, log }
}

impl Server {
    /// SIGTERM, then the exit status; `None` if it is still running 30 s later (then killed).
    pub fn stop(mut self) -> Option<ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}
