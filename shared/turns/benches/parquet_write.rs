//! Turn table write throughput against pyarrow, and peak memory of a long write.
//!
//! 1. Generates N realistic rows (default 200,000; `--rows N` or `TURNS_BENCH_ROWS`): agent
//!    trajectories of 4–16 turns whose assistant turns carry the whole token context as
//!    `prompt_token_ids`, as token-logging agents store it.
//! 2. Times `TurnWriter` writing them into a `Vec` (best of 3), from `TurnRow`s, so the Arrow
//!    conversion is part of the time: once with 1 encode thread (pyarrow's `write_table` is
//!    single-threaded) and once with the default (the available parallelism).
//! 3. Writes the same rows as Arrow IPC (untimed; decoded from the file just written) and runs
//!    `infra/bench/turns_pyarrow.py`, which times `pyarrow.parquet.write_table` from Arrow with
//!    the same settings (best of 3).
//! 4. Re-runs itself to stream 100,000 and 1,000,000 rows into `io::sink()` and reports each
//!    run's peak RSS (VmHWM): flat in N when memory is bounded by one row group.
//!
//! `cargo bench -p agentrl-turns --bench parquet_write [-- --rows N]`

use std::borrow::Borrow;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use agentrl_turns::{DICTIONARY_COLUMNS, TurnRow, TurnWriter, WriterOptions};
use arrow_array::RecordBatchReader;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const DEFAULT_ROWS: usize = 200_000;
const RUNS: usize = 3;
const RSS_ROWS: [usize; 2] = [100_000, 1_000_000];
const RSS_CHILD_FLAG: &str = "--rss-child";

mod synthetic;
use synthetic::Synthetic;

fn write_all<R: Borrow<TurnRow>>(
    rows: impl IntoIterator<Item = R>,
    sink: impl Write + Send,
    options: &WriterOptions,
) -> u64 {
    let mut writer = TurnWriter::new(sink, options).expect("writer");
    for row in rows {
        writer.write(row.borrow()).expect("row");
    }
    let n = writer.rows();
    writer.finish().expect("finish");
    n
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM line")
}

/// Our file, decoded back to Arrow batches of one row group each, as an IPC file for pyarrow.
fn write_ipc(parquet_file: Bytes, path: &Path) {
    let reader = ParquetRecordBatchReaderBuilder::try_new(parquet_file)
        .expect("our file")
        .with_batch_size(WriterOptions::default().rows_per_group)
        .build()
        .expect("reader");
    let file = std::fs::File::create(path).expect("ipc file");
    let mut ipc =
        arrow_ipc::writer::FileWriter::try_new(std::io::BufWriter::new(file), &reader.schema())
            .expect("ipc");
    for batch in reader {
        ipc.write(&batch.expect("batch")).expect("ipc batch");
    }
    ipc.finish().expect("ipc footer");
}

fn pyarrow_seconds(python: &Path, ipc: &Path) -> Result<(f64, u64), String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../infra/bench/turns_pyarrow.py"
    );
    let options = WriterOptions::default();
    let out = Command::new(python)
        .arg(script)
        .arg("--ipc")
        .arg(ipc)
        .args(["--rows-per-group", &options.rows_per_group.to_string()])
        .args(["--zstd-level", &options.zstd_level.to_string()])
        .args(["--dictionary", &DICTIONARY_COLUMNS.join(",")])
        .args(["--runs", &RUNS.to_string()])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("pyarrow: {}", stdout.trim());
    // The one-line JSON has flat numeric fields; a JSON crate for two numbers is not worth it.
    let field = |name: &str| -> Result<f64, String> {
        let key = format!("\"{name}\": ");
        let start = stdout.find(&key).ok_or(format!("no {name} in {stdout}"))? + key.len();
        let end = stdout[start..].find([',', '}']).ok_or("unterminated")? + start;
        stdout[start..end]
            .trim()
            .parse()
            .map_err(|e| format!("{name}: {e}"))
    };
    Ok((field("best_seconds")?, field("bytes")? as u64))
}

fn rss_child(rows: usize) {
    let start = Instant::now();
    let n = write_all(
        Synthetic::new(7).take(rows),
        std::io::sink(),
        &WriterOptions::default(),
    );
    println!(
        "{n}\t{}\t{:.1}",
        vm_hwm_kib(),
        start.elapsed().as_secs_f64()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.parse::<usize>().expect("a row count"))
    };
    if let Some(rows) = value_of(RSS_CHILD_FLAG) {
        rss_child(rows);
        return;
    }
    let rows_wanted = value_of("--rows")
        .or_else(|| {
            std::env::var("TURNS_BENCH_ROWS")
                .ok()
                .map(|v| v.parse().expect("a row count"))
        })
        .unwrap_or(DEFAULT_ROWS);

    let rows: Vec<TurnRow> = Synthetic::new(42).take(rows_wanted).collect();
    let tokens: usize = rows
        .iter()
        .map(|r| {
            r.prompt_token_ids.as_ref().map_or(0, Vec::len)
                + r.response_token_ids.as_ref().map_or(0, Vec::len)
        })
        .sum();
    let text: usize = rows.iter().map(|r| r.content.len()).sum();
    println!(
        "{rows_wanted} rows: {:.1} M token ids, {:.1} MB of content text",
        tokens as f64 / 1e6,
        text as f64 / 1e6
    );

    let default_threads = WriterOptions::default().encode_threads;
    let mut ours = Vec::new();
    let mut file = Vec::new();
    for threads in [1, default_threads] {
        let options = WriterOptions {
            encode_threads: threads,
            ..WriterOptions::default()
        };
        let mut best = f64::INFINITY;
        for _ in 0..RUNS {
            let start = Instant::now();
            let mut sink = Vec::new();
            write_all(&rows, &mut sink, &options);
            best = best.min(start.elapsed().as_secs_f64());
            file = sink;
        }
        println!(
            "TurnWriter, {threads} encode thread(s): best of {RUNS} {best:.3} s, {:.0} rows/s, \
             {:.1} MB of Parquet",
            rows_wanted as f64 / best,
            file.len() as f64 / 1e6
        );
        ours.push((threads, best));
    }
    drop(rows);

    let python = agentrl_testkit::venv_python_path();
    if python.exists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ipc = dir.path().join("turns.arrow");
        write_ipc(Bytes::from(file), &ipc);
        match pyarrow_seconds(&python, &ipc) {
            Ok((seconds, bytes)) => {
                println!(
                    "pyarrow write_table: best of {RUNS} {seconds:.3} s, {:.0} rows/s, \
                     {:.1} MB of Parquet",
                    rows_wanted as f64 / seconds,
                    bytes as f64 / 1e6,
                );
                for (threads, best) in &ours {
                    println!(
                        "pyarrow_time / our_time ({threads} encode thread(s)) = {:.2} (goal ≥ 1)",
                        seconds / best
                    );
                }
            }
            Err(e) => println!("pyarrow baseline failed: {e}"),
        }
    } else {
        println!(
            "pyarrow baseline skipped: {} is missing (run infra/scripts/python-env.sh)",
            python.display()
        );
    }

    // A fresh process per size, so each VmHWM is that write's alone.
    let exe = std::env::current_exe().expect("bench executable");
    for rows in RSS_ROWS {
        let out = Command::new(&exe)
            .args([RSS_CHILD_FLAG, &rows.to_string()])
            .output()
            .expect("child run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = String::from_utf8_lossy(&out.stdout);
        let fields: Vec<&str> = line.trim().split('\t').collect();
        let [written, kib, seconds] = fields[..] else {
            panic!("unexpected child output {line:?}");
        };
        println!(
            "streaming {written} generated rows into io::sink(): peak RSS (VmHWM) {:.0} MiB, {seconds} s",
            kib.parse::<f64>().expect("kB") / 1024.0
        );
    }
}
