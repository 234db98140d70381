//! How large a turn table the dataset job builds inside one Lambda, and inside one Batch job:
//! the figures behind `DEFAULT_LAMBDA_MAX_BYTES` (docs/training-pipeline.md, "Dataset job
//! limits").
//!
//! For each size (trajectories of the turn bench's realistic rows, 4–16 turns with the token
//! context logged), a child process writes the table as the ingest worker does (one object
//! per 1,000 trajectories) into an embedded store, resets its peak RSS, builds the dataset
//! of every agent and prints time, peak RSS and bytes. The parent fits time and memory
//! linearly in the table's bytes and states the largest table that fits a 3,008 MB / 15-minute
//! / 10 GiB Lambda and a 30,000 MB / 6-hour Batch job (the template's settings), by memory,
//! time and scratch disk, each halved for safety.
//!
//! `cargo bench -p agentrl-dataset --bench build [-- --trajectories 5000,20000]`

#[path = "../../../shared/turns/benches/synthetic/mod.rs"]
mod synthetic;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use agentrl_core::dataset::Rules;
use agentrl_store::Stores;
use agentrl_turns::{TurnWriter, WriterOptions};
use serde_json::{Value, json};

const CHILD_FLAG: &str = "--child";
const PER_OBJECT: usize = 1_000;
const DEFAULT_SIZES: [usize; 2] = [5_000, 20_000];

/// Limits of the two places a build runs, as `template.yaml` sets them: memory (MB), time
/// (s) and scratch disk for the files before upload (MB: the Lambda's ephemeral storage; the
/// ECS-optimised AMI's 30 GiB root volume).
const PLACES: [(&str, f64, f64, f64); 2] = [
    (
        "lambda (3,008 MB, 900 s, 10 GiB /tmp)",
        3_008.0,
        900.0,
        10_240.0,
    ),
    (
        "batch (30,000 MB, 6 h, 30 GiB disk)",
        30_000.0,
        21_600.0,
        30_720.0,
    ),
];

fn vm_hwm_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Writes `trajectories` trajectories under `dir` as the ingest worker lays them out; returns
/// (rows, bytes, the last ingestion time).
fn write_table(dir: &Path, trajectories: usize) -> (u64, u64, i64) {
    let root = dir.join("objects/trajectories/tenant=bench/date=2026-11-24");
    std::fs::create_dir_all(&root).unwrap();
    let mut rows = synthetic::Synthetic::new(7).peekable();
    let (mut written, mut bytes, mut last) = (0u64, 0u64, 0i64);
    let mut started = 0;
    for object in 0.. {
        if started >= trajectories {
            break;
        }
        let path = root.join(format!("part-{object:05}.parquet"));
        let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut writer = TurnWriter::new(file, &WriterOptions::default()).unwrap();
        let mut in_object = 0;
        while let Some(row) = rows.peek() {
            if row.turn_index == 0 {
                if in_object == PER_OBJECT || started == trajectories {
                    break;
                }
                in_object += 1;
                started += 1;
            }
            let row = rows.next().unwrap();
            last = last.max(row.ingested_at_ms);
            writer.write(&row).unwrap();
            written += 1;
        }
        writer.finish().unwrap().flush().unwrap();
        bytes += std::fs::metadata(&path).unwrap().len();
    }
    (written, bytes, last)
}

fn child(trajectories: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (rows, table_bytes, last) = write_table(dir.path(), trajectories);
    let stores = Stores::embedded(dir.path()).unwrap();
    // Forget the generator's peak: what follows is the job's alone.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let rules = Rules {
        min_positive_feedback: 0,
        min_high_quality_interactions: 0,
        ..Rules::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let manifests = runtime
        .block_on(agentrl_dataset::build(
            stores.objects.as_ref(),
            stores.events.as_ref(),
            stores.training.as_ref(),
            &rules,
            last + 3_600_000,
        ))
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let output_bytes: u64 = manifests
        .iter()
        .flat_map(|m| m.files.values())
        .map(|f| f.bytes)
        .sum();
    println!(
        "{}",
        json!({
            "trajectories": trajectories,
            "rows": rows,
            "table_bytes": table_bytes,
            "output_bytes": output_bytes,
            "seconds": seconds,
            "peak_rss_mb": vm_hwm_mb(),
        })
    );
}

fn sizes() -> Vec<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--trajectories")
        .and_then(|i| args.get(i + 1))
        .map(|list| {
            list.split(',')
                .map(|n| n.parse().expect("--trajectories takes numbers"))
                .collect()
        })
        .unwrap_or_else(|| DEFAULT_SIZES.to_vec())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == CHILD_FLAG) {
        child(args[i + 1].parse().unwrap());
        return;
    }
    let me = std::env::current_exe().unwrap();
    let runs: Vec<Value> = sizes()
        .into_iter()
        .map(|n| {
            let out = Command::new(&me)
                .args([CHILD_FLAG, &n.to_string()])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line: Value = serde_json::from_slice(&out.stdout).unwrap();
            println!("{line}");
            line
        })
        .collect();
    let (first, last) = (&runs[0], &runs[runs.len() - 1]);
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
    let gb = 1024.0 * 1024.0 * 1024.0;
    let span = (f(last, "table_bytes") - f(first, "table_bytes")) / gb;
    let mb_per_gb = ((f(last, "peak_rss_mb") - f(first, "peak_rss_mb")) / span).max(0.0);
    let base_mb = f(last, "peak_rss_mb") - mb_per_gb * f(last, "table_bytes") / gb;
    let s_per_gb = f(last, "seconds") / (f(last, "table_bytes") / gb);
    let out_per_in = f(last, "output_bytes") / f(last, "table_bytes");
    println!(
        "{}",
        json!({"seconds_per_table_gb": s_per_gb, "peak_rss_mb_per_table_gb": mb_per_gb,
               "peak_rss_base_mb": base_mb,
               "output_bytes_per_table_byte": out_per_in})
    );
    for (place, memory_mb, seconds, disk_mb) in PLACES {
        let by_disk = disk_mb / 1024.0 / out_per_in;
        let by_time = seconds / s_per_gb;
        let by_memory = if mb_per_gb > 0.0 {
            (memory_mb - base_mb) / mb_per_gb
        } else {
            f64::INFINITY
        };
        println!(
            "{}",
            json!({"place": place, "max_table_gb_by_time": by_time,
                   "max_table_gb_by_memory": by_memory, "max_table_gb_by_disk": by_disk,
                   "max_table_gb_halved": by_time.min(by_memory).min(by_disk) / 2.0})
        );
    }
}
