//! Files written by `TurnWriter` read back by the Python readers the dataset side uses: pyarrow
//! and DuckDB (plain and with Hive partitioning). Schema, counts, checksums and whole rows are
//! compared with what was written.
//!
//! Needs the project venv: `infra/scripts/python-env.sh` (pyarrow 26, duckdb 2.0).

use agentrl_testkit::venv_python;
use std::path::Path;
use std::process::Command;

use agentrl_turns::{RowToolCall, TurnRow, TurnWriter, WriterOptions, schema};
use arrow_schema::DataType;
use serde_json::{Value, json};

#[path = "../src/test_rows.rs"]
mod test_rows;

const ROWS: usize = 3000;
const ROWS_PER_GROUP: usize = 1000;
/// All-null row, all-set row, unicode and control characters, both sides of row group borders.
const SAMPLE: &[usize] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 999, 1000, 1001, 2999];

fn run_readers(args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/readers.py");
    let out = Command::new(venv_python())
        .arg(script)
        .args(args)
        .output()
        .expect("python starts");
    assert!(
        out.status.success(),
        "readers.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("readers.py prints JSON")
}

fn write_file(path: &Path, rows: &[TurnRow]) {
    std::fs::create_dir_all(path.parent().expect("has a parent")).expect("dir");
    let options = WriterOptions {
        rows_per_group: ROWS_PER_GROUP,
        ..WriterOptions::default()
    };
    let mut writer =
        TurnWriter::new(std::fs::File::create(path).expect("file"), &options).expect("writer");
    for row in rows {
        writer.write(row).expect("row");
    }
    writer.finish().expect("finish");
}

fn row_json(r: &TurnRow) -> Value {
    let floats = |v: &Option<Vec<f32>>| {
        v.as_ref()
            .map(|v| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>())
    };
    let mut row = json!({
        "trajectory_id": r.trajectory_id, "conversation_id": r.conversation_id,
        "turn_index": r.turn_index, "turn_count": r.turn_count, "agent_id": r.agent_id,
        "user_id": r.user_id, "group_id": r.group_id, "policy_version": r.policy_version,
        "role": r.role, "content": r.content, "tool_name": r.tool_name,
        "tool_arguments": r.tool_arguments, "tool_result": r.tool_result, "error": r.error,
        "prompt_token_ids": r.prompt_token_ids, "response_token_ids": r.response_token_ids,
        "loss_mask": r.loss_mask, "behavior_logprobs": floats(&r.behavior_logprobs),
        "tokenizer": r.tokenizer, "turn_reward": r.turn_reward,
        "reward_information_gain": r.reward_information_gain, "reward_format": r.reward_format,
        "reward_progress": r.reward_progress, "safety_violation": r.safety_violation,
        "tool_call_valid": r.tool_call_valid, "tool_choice": r.tool_choice,
        "tool_error_handling": r.tool_error_handling, "tool_efficiency": r.tool_efficiency,
        "episode_reward": r.episode_reward, "episode_success": r.episode_success,
        "termination_reason": r.termination_reason, "truncated": r.truncated,
        "dp_epsilon": r.dp_epsilon, "pii_replacements": r.pii_replacements,
        "message_id": r.message_id, "ingested_at": r.ingested_at_ms,
        "tool_calls": (!r.tool_calls.is_empty()).then(|| calls_json(&r.tool_calls)),
        "tool_call_id": r.tool_call_id, "tools": r.tools, "content_parts": r.content_parts,
    });
    // Version 3's columns: a second literal, past what one `json!` expands.
    row["input_tokens"] = json!(r.input_tokens);
    row["output_tokens"] = json!(r.output_tokens);
    row["information_gain_source"] = json!(r.information_gain_source);
    row["progress_source"] = json!(r.progress_source);
    row
}

fn calls_json(calls: &[RowToolCall]) -> Vec<Value> {
    calls
        .iter()
        .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
        .collect()
}

/// The type names pyarrow and DuckDB print for each Arrow type of the schema.
fn type_names(data_type: &DataType) -> (String, String) {
    let (pa, duck) = match data_type {
        DataType::Utf8 => ("string", "VARCHAR"),
        DataType::Int8 => ("int8", "TINYINT"),
        DataType::Int32 => ("int32", "INTEGER"),
        DataType::Int64 => ("int64", "BIGINT"),
        DataType::Float32 => ("float", "FLOAT"),
        DataType::Float64 => ("double", "DOUBLE"),
        DataType::Boolean => ("bool", "BOOLEAN"),
        DataType::Timestamp(_, _) => ("timestamp[ms, tz=UTC]", "TIMESTAMP WITH TIME ZONE"),
        DataType::List(item) => {
            let (pa, duck) = type_names(item.data_type());
            return (format!("list<item: {pa} not null>"), format!("{duck}[]"));
        }
        DataType::Struct(fields) => {
            let pa = fields
                .iter()
                .map(|f| {
                    let (pa, _) = type_names(f.data_type());
                    let null = if f.is_nullable() { "" } else { " not null" };
                    format!("{}: {pa}{null}", f.name())
                })
                .collect::<Vec<_>>()
                .join(", ");
            // DuckDB quotes the field names that are its keywords.
            let quoted = |name: &str| match name {
                "name" => format!("\"{name}\""),
                _ => name.to_owned(),
            };
            let duck = fields
                .iter()
                .map(|f| format!("{} {}", quoted(f.name()), type_names(f.data_type()).1))
                .collect::<Vec<_>>()
                .join(", ");
            return (format!("struct<{pa}>"), format!("STRUCT({duck})"));
        }
        other => panic!("no reader type name for {other}"),
    };
    (pa.to_owned(), duck.to_owned())
}

fn lists(rows: &[TurnRow]) -> Value {
    fn stats<T>(rows: &[TurnRow], get: impl Fn(&TurnRow) -> &Option<Vec<T>>) -> Value {
        let lens = rows.iter().filter_map(|r| get(r).as_ref().map(Vec::len));
        json!({
            "sum_len": lens.clone().sum::<usize>(),
            "nulls": rows.iter().filter(|r| get(r).is_none()).count(),
            "empty": lens.filter(|&n| n == 0).count(),
        })
    }
    json!({
        "prompt_token_ids": stats(rows, |r| &r.prompt_token_ids),
        "response_token_ids": stats(rows, |r| &r.response_token_ids),
        "loss_mask": stats(rows, |r| &r.loss_mask),
        "behavior_logprobs": stats(rows, |r| &r.behavior_logprobs),
    })
}

/// Null count of every column, read off the JSON form so no column can be forgotten.
fn nulls(rows: &[TurnRow]) -> Value {
    let jsons: Vec<Value> = rows.iter().map(row_json).collect();
    let counts: serde_json::Map<String, Value> = schema()
        .fields()
        .iter()
        .map(|f| {
            let n = jsons.iter().filter(|j| j[f.name()].is_null()).count();
            (f.name().clone(), json!(n))
        })
        .collect();
    Value::Object(counts)
}

#[test]
fn pyarrow_and_duckdb_read_what_the_writer_wrote() {
    let rows = test_rows::rows(ROWS);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("turns.parquet");
    write_file(&path, &rows);

    let sample: Vec<String> = SAMPLE.iter().map(usize::to_string).collect();
    let mut args = vec!["file", path.to_str().expect("utf-8 path")];
    args.extend(sample.iter().map(String::as_str));
    let seen = run_readers(&args);

    let schema = schema();
    let sum_turn_index: i64 = rows.iter().map(|r| i64::from(r.turn_index)).sum();
    let sum_prompt_tokens: i64 = rows
        .iter()
        .flat_map(|r| r.prompt_token_ids.iter().flatten())
        .map(|&t| i64::from(t))
        .sum();
    let content_bytes: usize = rows.iter().map(|r| r.content.len()).sum();
    let sum_episode_reward: f64 = rows.iter().filter_map(|r| r.episode_reward).sum();
    let sample_rows: Vec<Value> = SAMPLE.iter().map(|&i| row_json(&rows[i])).collect();
    assert!(
        nulls(&rows)
            .as_object()
            .expect("map")
            .values()
            .any(|n| n != 0),
        "the fixture has nulls to check"
    );

    for reader in ["pyarrow", "duckdb"] {
        let got = &seen[reader];
        let expected_schema: Vec<Value> = schema
            .fields()
            .iter()
            .map(|f| {
                let (pa, duck) = type_names(f.data_type());
                if reader == "pyarrow" {
                    json!([f.name(), pa, f.is_nullable()])
                } else {
                    json!([f.name(), duck])
                }
            })
            .collect();
        assert_eq!(got["schema"], json!(expected_schema), "{reader} schema");
        assert_eq!(got["num_rows"], json!(ROWS), "{reader} rows");
        assert_eq!(got["sum_turn_index"], json!(sum_turn_index), "{reader}");
        assert_eq!(
            got["sum_prompt_tokens"],
            json!(sum_prompt_tokens),
            "{reader}"
        );
        assert_eq!(got["content_bytes"], json!(content_bytes), "{reader}");
        let reward = got["sum_episode_reward"].as_f64().expect("a float");
        assert!(
            (reward - sum_episode_reward).abs() < 1e-9,
            "{reader}: episode_reward sum {reward} != {sum_episode_reward}"
        );
        assert_eq!(got["nulls"], nulls(&rows), "{reader} null counts");
        assert_eq!(got["lists"], lists(&rows), "{reader} list lengths");
        for (k, want) in sample_rows.iter().enumerate() {
            assert_eq!(&got["rows"][k], want, "{reader} row {}", SAMPLE[k]);
        }
    }

    let pa = &seen["pyarrow"];
    assert_eq!(pa["num_row_groups"], json!(ROWS.div_ceil(ROWS_PER_GROUP)));
    assert_eq!(pa["first_compression"], "ZSTD");
    assert_eq!(pa["compressions"], json!(["ZSTD"]), "every column chunk");
    assert_eq!(
        pa["schema_version"],
        agentrl_turns::SCHEMA_VERSION.to_string()
    );
}

#[test]
fn duckdb_reads_hive_partitions_by_tenant_and_date() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("trajectories");
    let tenant_a = test_rows::rows(1200);
    let tenant_b: Vec<TurnRow> = (5000..5800).map(test_rows::varied_row).collect();
    write_file(
        &root.join("tenant=a/date=2026-11-22/part-x.parquet"),
        &tenant_a,
    );
    write_file(
        &root.join("tenant=b/date=2026-11-22/part-x.parquet"),
        &tenant_b,
    );

    let seen = run_readers(&["hive", dir.path().to_str().expect("utf-8 path")]);

    let mut columns: Vec<Value> = schema().fields().iter().map(|f| json!(f.name())).collect();
    // DuckDB appends the partition keys, sorted by name, after the file's own columns: no clash.
    columns.extend([json!("date"), json!("tenant")]);
    assert_eq!(seen["columns"], json!(columns));
    let group = |tenant: &str, rows: &[TurnRow]| {
        let sum: i64 = rows.iter().map(|r| i64::from(r.turn_index)).sum();
        let mut ids: Vec<&str> = rows.iter().map(|r| r.trajectory_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        json!([tenant, "2026-11-22", rows.len(), sum, ids.len()])
    };
    assert_eq!(
        seen["groups"],
        json!([group("a", &tenant_a), group("b", &tenant_b)])
    );
}
