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

const WORDS: &[&str] = &[
    "the",
    "file",
    "function",
    "returns",
    "error",
    "test",
    "value",
    "list",
    "user",
    "request",
    "response",
    "build",
    "cargo",
    "failed",
    "passed",
    "config",
    "module",
    "import",
    "update",
    "database",
    "query",
    "index",
    "table",
    "column",
    "row",
    "schema",
    "version",
    "deploy",
    "run",
    "check",
    "fix",
    "bug",
    "issue",
    "branch",
    "commit",
    "merge",
    "review",
    "change",
    "line",
    "path",
    "directory",
    "output",
    "input",
    "string",
    "number",
    "object",
    "array",
    "field",
    "type",
    "struct",
    "trait",
    "impl",
    "async",
    "await",
    "thread",
    "lock",
    "memory",
    "cache",
    "timeout",
    "retry",
    "token",
    "model",
    "reward",
    "policy",
    "step",
    "episode",
    "agent",
    "tool",
    "call",
    "argument",
    "result",
    "search",
    "read",
    "write",
    "open",
    "close",
    "parse",
    "format",
    "because",
    "so",
    "then",
    "now",
    "will",
    "should",
    "could",
    "let",
    "me",
    "look",
    "at",
    "this",
    "I",
    "see",
    "that",
    "it",
    "is",
    "was",
    "not",
    "a",
    "an",
    "of",
    "to",
    "in",
    "for",
    "on",
    "with",
];
const TOOLS: &[&str] = &[
    "read_file",
    "run_tests",
    "search_code",
    "edit_file",
    "shell",
];
const VOCAB: u64 = 151_936;

/// splitmix64 stream: fast, reproducible, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi: u64) -> usize {
        (lo + self.below(hi - lo + 1)) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    fn hex(&mut self, chars: usize) -> String {
        let mut s = String::with_capacity(chars);
        while s.len() < chars {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(chars);
        s
    }
    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }
    fn text(&mut self, words: usize) -> String {
        let mut s = String::with_capacity(words * 7);
        for k in 0..words {
            if k > 0 {
                s.push(if self.chance(0.08) { '\n' } else { ' ' });
            }
            s.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
        }
        s
    }
    fn tokens(&mut self, n: usize) -> Vec<i32> {
        (0..n).map(|_| self.below(VOCAB) as i32).collect()
    }
}

/// State of the trajectory being generated.
struct Episode {
    id: String,
    conversation_id: String,
    agent: u64,
    user_id: Option<String>,
    group_id: String,
    turn_count: i32,
    next_turn: i32,
    context: Vec<i32>,
    message_id: String,
    episode_reward: f64,
    success: bool,
    truncated: bool,
    dp_epsilon: Option<f64>,
}

/// Endless realistic rows: system, user, then assistant/tool turns ending on assistant.
struct Synthetic {
    rng: Rng,
    episode: Option<Episode>,
    system_prompts: Vec<(String, Vec<i32>)>,
    clock_ms: i64,
}

impl Synthetic {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        let system_prompts = (0..5)
            .map(|_| {
                let words = rng.range(80, 200);
                (rng.text(words), rng.tokens(words * 4 / 3))
            })
            .collect();
        Self {
            rng,
            episode: None,
            system_prompts,
            clock_ms: 1_795_000_000_000,
        }
    }

    fn start_episode(&mut self) -> Episode {
        let r = &mut self.rng;
        let agent = r.below(self.system_prompts.len() as u64);
        let success = r.chance(0.6);
        Episode {
            id: r.uuid(),
            conversation_id: r.uuid(),
            agent,
            user_id: r.chance(0.9).then(|| r.hex(64)),
            group_id: format!("task-{:05}", r.below(20_000)),
            turn_count: r.range(4, 16) as i32,
            next_turn: 0,
            context: self.system_prompts[agent as usize].1.clone(),
            message_id: r.uuid(),
            episode_reward: if success { 1.0 } else { 0.0 } + (r.unit() - 0.5) * 0.1,
            success,
            truncated: r.chance(0.05),
            dp_epsilon: r.chance(0.3).then_some(1.0),
        }
    }
}

impl Iterator for Synthetic {
    type Item = TurnRow;

    fn next(&mut self) -> Option<TurnRow> {
        let mut episode = match self.episode.take() {
            Some(e) if e.next_turn < e.turn_count => e,
            _ => self.start_episode(),
        };
        let turn = episode.next_turn;
        episode.next_turn += 1;
        self.clock_ms += 3;
        let r = &mut self.rng;
        let last = turn + 1 == episode.turn_count;
        let mut row = TurnRow {
            trajectory_id: episode.id.clone(),
            conversation_id: episode.conversation_id.clone(),
            turn_index: turn,
            turn_count: episode.turn_count,
            agent_id: format!("agent-{}", episode.agent),
            user_id: episode.user_id.clone(),
            group_id: Some(episode.group_id.clone()),
            policy_version: Some(format!("policy-2026-11-{:02}", 15 + episode.agent)),
            episode_reward: Some(episode.episode_reward),
            episode_success: Some(episode.success),
            termination_reason: Some(
                if episode.truncated {
                    "max_turns"
                } else {
                    "done"
                }
                .into(),
            ),
            truncated: episode.truncated,
            dp_epsilon: episode.dp_epsilon,
            pii_replacements: if r.chance(0.1) {
                r.range(1, 3) as i32
            } else {
                0
            },
            message_id: episode.message_id.clone(),
            ingested_at_ms: self.clock_ms,
            ..TurnRow::default()
        };
        match turn {
            0 => {
                row.role = "system".into();
                row.content = self.system_prompts[episode.agent as usize].0.clone();
            }
            1 => {
                row.role = "user".into();
                let words = r.range(10, 60);
                row.content = r.text(words);
                episode.context.extend(r.tokens(words * 4 / 3));
            }
            _ if turn % 2 == 0 || last => {
                row.role = "assistant".into();
                let words = r.range(20, 150);
                row.content = r.text(words);
                let extra = r.range(10, 60);
                let response = r.tokens(words * 4 / 3 + extra);
                row.prompt_token_ids = Some(episode.context.clone());
                row.loss_mask = Some(vec![1; response.len()]);
                row.behavior_logprobs = Some(
                    (0..response.len())
                        .map(|_| -(r.unit().powi(3) * 6.0) as f32)
                        .collect(),
                );
                episode.context.extend_from_slice(&response);
                row.response_token_ids = Some(response);
                row.tokenizer = Some("Qwen/Qwen2.5-7B-Instruct@chatml".into());
                if !last {
                    let tool = TOOLS[r.below(TOOLS.len() as u64) as usize];
                    row.tool_name = Some(tool.into());
                    row.tool_arguments = Some(format!(
                        "{{\"path\": \"src/{}.rs\", \"line\": {}}}",
                        WORDS[r.below(WORDS.len() as u64) as usize],
                        r.below(500)
                    ));
                }
                let (gain, format, progress) = (r.unit(), r.unit(), r.unit());
                row.reward_information_gain = Some(gain);
                row.reward_format = Some(format);
                row.reward_progress = Some(progress);
                row.turn_reward = Some(0.3 * gain + 0.2 * format + 0.5 * progress);
                row.tool_call_valid = (!last).then(|| r.unit());
                row.tool_choice = (!last).then(|| r.unit());
                row.tool_efficiency = (!last).then(|| r.unit());
                row.safety_violation = r.chance(0.002);
            }
            _ => {
                row.role = "tool".into();
                row.tool_name = Some(TOOLS[r.below(TOOLS.len() as u64) as usize].into());
                let words = r.range(30, 300);
                let result = r.text(words);
                episode.context.extend(r.tokens(words * 4 / 3));
                if r.chance(0.03) {
                    row.error = Some("exit status 101: test failed".into());
                    row.tool_error_handling = Some(r.unit());
                }
                row.content = result.clone();
                row.tool_result = Some(result);
            }
        }
        self.episode = Some(episode);
        Some(row)
    }
}

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
