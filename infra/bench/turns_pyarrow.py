#!/usr/bin/env python3
"""pyarrow baseline for shared/turns/benches/parquet_write.rs: the same rows, the same settings.

Reads the Arrow IPC file the Rust bench wrote (untimed), then times
`pyarrow.parquet.write_table` into an in-memory buffer, as the Rust bench writes into a Vec:
zstd at the given level, the given row group size, Parquet dictionary encoding only on the given
columns, statistics and the page index on (the Rust writer writes both). Best of --runs.

    turns_pyarrow.py --ipc FILE --rows-per-group N --zstd-level L --dictionary a,b,c [--runs 3]

Prints one JSON object: rows, best_seconds, bytes, row_groups, pyarrow version.
"""

import argparse
import json
import time

import pyarrow as pa
import pyarrow.parquet as pq


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ipc", required=True)
    parser.add_argument("--rows-per-group", type=int, required=True)
    parser.add_argument("--zstd-level", type=int, required=True)
    parser.add_argument("--dictionary", required=True, help="comma-separated column names")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    with pa.memory_map(args.ipc) as source:
        table = pa.ipc.open_file(source).read_all()

    best = float("inf")
    for _ in range(args.runs):
        sink = pa.BufferOutputStream()
        start = time.perf_counter()
        pq.write_table(
            table,
            sink,
            row_group_size=args.rows_per_group,
            compression="zstd",
            compression_level=args.zstd_level,
            use_dictionary=args.dictionary.split(","),
            write_statistics=True,
            write_page_index=True,
        )
        best = min(best, time.perf_counter() - start)
        buf = sink.getvalue()

    row_groups = pq.ParquetFile(pa.BufferReader(buf)).metadata.num_row_groups
    print(
        json.dumps(
            {
                "rows": table.num_rows,
                "best_seconds": best,
                "bytes": buf.size,
                "row_groups": row_groups,
                "pyarrow": pa.__version__,
            }
        )
    )


main()
