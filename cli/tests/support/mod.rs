//! `agentrl serve` as a child process: start it, find its address, stop it with a signal.

#![allow(dead_code)] // each test file uses its own subset

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::Duration,
};

pub const KEY: &str = "local-test-key-0123456789";

pub struct Server {
    pub child: Child,
    pub base: String,
}

pub fn start(data_dir: &std::path::Path) -> Server {
    start_command(serve(data_dir))
}

/// `agentrl serve` on a free port of 127.0.0.1 and `data_dir`, tenant `acme` keyed by [`KEY`].
pub fn serve(data_dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentrl"));
    command
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--api-key",
            &format!("acme={KEY}"),
        ])
        .arg("--data-dir")
        .arg(data_dir);
    command
}

pub fn start_command(mut command: Command) -> Server {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("the server exited before listening")
            .unwrap();
        if let Some(url) = line.strip_prefix("agentrl listening on ") {
            break url.to_owned();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Server { child, base }
}

pub fn stop(mut server: Server, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for _ in 0..100 {
        if let Some(exit) = server.child.try_wait().unwrap() {
            assert!(exit.success(), "exit after SIG{signal}: {exit}");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    server.child.kill().unwrap();
    panic!("the server did not stop within 5 s of SIG{signal}");
}

/// `agentrl ARGS…` to its end: whether it succeeded, its stdout and its stderr.
pub fn agentrl(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentrl"))
        .args(args)
        .output()
        .expect("agentrl runs");
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}
