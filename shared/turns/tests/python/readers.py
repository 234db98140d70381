"""Reads a turn table with pyarrow and DuckDB and prints what tests/python_readers.rs compares.

    readers.py file PATH ROW [ROW ...]   schema, counts, checksums and whole sample rows
    readers.py hive ROOT                 per-partition counts of ROOT/trajectories/**/*.parquet

Prints one JSON object on stdout. The expected values live on the Rust side, computed from the
rows that were written, so this script only observes.
"""

import json
import sys

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

LIST_COLUMNS = ["prompt_token_ids", "response_token_ids", "loss_mask", "behavior_logprobs"]


def with_epoch_ms(table):
    """Timestamps as epoch milliseconds, the form the Rust rows hold."""
    i = table.schema.get_field_index("ingested_at")
    return table.set_column(i, "ingested_at", pc.cast(table.column(i), pa.int64()))


def pyarrow_view(path, sample):
    pf = pq.ParquetFile(path)
    md = pf.metadata
    table = pq.read_table(path)
    lists = {}
    for c in LIST_COLUMNS:
        lengths = pc.list_value_length(table.column(c))
        lists[c] = {
            "sum_len": pc.sum(lengths).as_py() or 0,
            "nulls": table.column(c).null_count,
            "empty": pc.sum(pc.equal(lengths, 0)).as_py() or 0,
        }
    rows = with_epoch_ms(table).take(pa.array(sample)).to_pylist()
    return {
        "schema": [[f.name, str(f.type), f.nullable] for f in table.schema],
        "num_rows": table.num_rows,
        "num_row_groups": md.num_row_groups,
        "first_compression": md.row_group(0).column(0).compression,
        "compressions": sorted(
            {
                md.row_group(g).column(c).compression
                for g in range(md.num_row_groups)
                for c in range(md.num_columns)
            }
        ),
        "schema_version": (md.metadata or {}).get(b"agentrl.schema_version", b"").decode(),
        "sum_turn_index": pc.sum(table.column("turn_index")).as_py(),
        "sum_prompt_tokens": pc.sum(pc.list_flatten(table.column("prompt_token_ids"))).as_py(),
        "content_bytes": pc.sum(pc.binary_length(table.column("content"))).as_py(),
        "sum_episode_reward": pc.sum(table.column("episode_reward")).as_py(),
        "nulls": {name: table.column(name).null_count for name in table.column_names},
        "lists": lists,
        "rows": rows,
    }


def duckdb_view(path, sample):
    con = duckdb.connect()
    src = f"read_parquet('{path}', file_row_number=true)"
    schema = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
    names = [name for name, *_ in schema]
    (num_rows, sum_turn_index, sum_prompt_tokens, content_bytes, sum_episode_reward) = con.execute(
        f"""SELECT count(*), sum(turn_index),
                   (SELECT sum(t) FROM (SELECT unnest(prompt_token_ids) AS t FROM {src})),
                   sum(strlen(content)), sum(episode_reward)
            FROM {src}"""
    ).fetchone()
    nulls = {
        name: con.execute(f'SELECT count(*) - count("{name}") FROM {src}').fetchone()[0]
        for name in names
    }
    lists = {}
    for c in LIST_COLUMNS:
        s, n, e = con.execute(
            f"""SELECT coalesce(sum(len({c})), 0), count(*) - count({c}),
                       count(*) FILTER (WHERE len({c}) = 0)
                FROM {src}"""
        ).fetchone()
        lists[c] = {"sum_len": s, "nulls": n, "empty": e}
    cur = con.execute(
        f"""SELECT * EXCLUDE (ingested_at, file_row_number),
                   epoch_ms(ingested_at) AS ingested_at, file_row_number
            FROM {src} WHERE file_row_number IN ({", ".join(map(str, sample))})"""
    )
    cols = [d[0] for d in cur.description]
    by_index = {}
    for values in cur.fetchall():
        row = dict(zip(cols, values))
        by_index[row.pop("file_row_number")] = {name: row[name] for name in names}
    return {
        "schema": [[name, column_type] for name, column_type, *_ in schema],
        "num_rows": num_rows,
        "sum_turn_index": int(sum_turn_index),
        "sum_prompt_tokens": int(sum_prompt_tokens),
        "content_bytes": int(content_bytes),
        "sum_episode_reward": sum_episode_reward,
        "nulls": nulls,
        "lists": lists,
        "rows": [by_index[i] for i in sample],
    }


def hive_view(root):
    con = duckdb.connect()
    glob = f"{root}/trajectories/**/*.parquet"
    columns = [row[0] for row in con.execute(
        f"DESCRIBE SELECT * FROM read_parquet('{glob}', hive_partitioning=true)"
    ).fetchall()]
    groups = con.execute(
        f"""SELECT tenant, CAST(date AS VARCHAR), count(*), sum(turn_index),
                   count(DISTINCT trajectory_id)
            FROM read_parquet('{glob}', hive_partitioning=true)
            GROUP BY ALL ORDER BY tenant"""
    ).fetchall()
    return {"columns": columns, "groups": [list(g) for g in groups]}


def main():
    mode, target, *rest = sys.argv[1:]
    if mode == "file":
        sample = [int(i) for i in rest]
        out = {"pyarrow": pyarrow_view(target, sample), "duckdb": duckdb_view(target, sample)}
    else:
        out = hive_view(target)
    json.dump(out, sys.stdout)


main()
