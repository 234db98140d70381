//! Trajectories end to end, on both adapter sets (real SQLite files and a real directory;
//! SQS, S3 and DynamoDB on moto over HTTP): the ingest worker, redelivery and failures,
//! differential privacy, the dataset job, and the files read back by pyarrow and DuckDB.

mod dataset;
mod helpers;
mod ingest;

/// Instantiates each case once per adapter set.
macro_rules! both {
    ($($module:ident :: $case:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let (stores, _dir) = crate::helpers::embedded();
                    crate::$module::$case(&stores).await;
                }
            )*
        }
        mod aws {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    crate::$module::$case(&agentrl_tests::aws_stores().await).await;
                }
            )*
        }
    };
}

both!(
    ingest::rows_are_scrubbed_partitioned_by_tenant_and_poison_is_dead_lettered,
    ingest::a_redelivered_batch_rewrites_the_same_object,
    ingest::private_rewards_are_charged_once_per_trajectory,
    ingest::a_trajectory_larger_than_a_message_travels_by_claim_check,
    dataset::datasets_split_by_conversation_without_duplicates,
    dataset::requested_datasets_take_the_named_agents_on_the_learning_counts,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_failed_write_is_retried() {
    let (stores, dir) = helpers::embedded();
    // An object root that became a file: every write under it fails.
    let root = dir.path().join("broken");
    let broken = agentrl_store::ObjectStoreObjects::local(&root).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::write(&root, b"not a directory").unwrap();
    ingest::failed_write_leaves_the_messages_for_a_retry(&stores, std::sync::Arc::new(broken))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_large_tables_are_built_by_a_batch_job() {
    dataset::large_tables_are_built_by_a_batch_job().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_failed_write_is_retried() {
    let stores = agentrl_tests::aws_stores().await;
    let settings = agentrl_store::aws::AwsSettings::emulator(&agentrl_tests::moto_endpoint());
    let missing = agentrl_tests::unique("missing-bucket");
    let broken = agentrl_store::ObjectStoreObjects::s3(&missing, &settings).unwrap();
    ingest::failed_write_leaves_the_messages_for_a_retry(&stores, std::sync::Arc::new(broken))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_table_reads_in_pyarrow_and_duckdb() {
    let (stores, dir) = helpers::embedded();
    dataset::ingest_sample(&stores).await;
    let script = r#"
import json, sys
import duckdb, pyarrow.dataset as ds
root = sys.argv[1] + "/objects/trajectories"
table = ds.dataset(root, format="parquet", partitioning="hive").to_table()
rows = duckdb.sql(f"SELECT tenant, count(*), count(DISTINCT trajectory_id), sum(turn_index) FROM read_parquet('{root}/**/*.parquet', hive_partitioning=true) GROUP BY tenant ORDER BY 2").fetchall()
print(json.dumps({"pyarrow_rows": table.num_rows, "columns": table.schema.names, "duckdb": [list(r[1:]) for r in rows]}))
"#;
    let out = std::process::Command::new(agentrl_testkit::venv_python())
        .args(["-c", script])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: usize = helpers::turn_table(&stores)
        .await
        .iter()
        .map(|(_, rows)| rows.len())
        .sum();
    assert_eq!(seen["pyarrow_rows"], written);
    for column in [
        "trajectory_id",
        "conversation_id",
        "turn_index",
        "turn_reward",
        "tenant",
        "date",
    ] {
        assert!(
            seen["columns"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c == column),
            "{column}"
        );
    }
    // tenant-b: 5 trajectories of 2 turns; tenant-a: 13 distinct (one sent twice), 28 rows.
    assert_eq!(
        seen["duckdb"],
        serde_json::json!([[10, 5, 5], [28, 13, 14]])
    );
}
