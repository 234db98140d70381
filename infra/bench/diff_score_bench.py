#!/usr/bin/env python3
"""Diff-score benchmark on real file pairs, against difftastic on the same pairs.

Usage: diff_score_bench.py AGENTRL_BIN DIFFT_BIN PAIRS_DIR
Everything runs pinned to one core (taskset -c 0). Prints a Markdown report.
- in process: `agentrl diff-score --pairs` reports elapsed_ms per pair (parse + distance +
  detectors, measured inside the process);
- per process: wall time of `agentrl diff-score --before B --after A` and of `difft B A`
  for every pair (best of 3), so both pay process start-up and file reading;
- peak RSS of every run (ru_maxrss of the child).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PIN = ["taskset", "-c", "0"]


def run_measured(cmd: list[str]) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    proc = subprocess.Popen(PIN + cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss, out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> None:
    agentrl, difft, pairs_dir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    pairs = sorted(p for p in pairs_dir.iterdir() if p.is_dir() and not p.name.startswith("."))

    wall, rss_pairs, out = run_measured([agentrl, "diff-score", "--pairs", str(pairs_dir)])
    lines = [json.loads(l) for l in out.decode().splitlines() if l.strip()]
    by_lang: dict[str, list[dict]] = {}
    for line in lines:
        by_lang.setdefault(line["language"], []).append(line)

    ours, theirs, rss_ours, rss_theirs = [], [], [], []
    for pair in pairs:
        before = next(pair.glob("before.*"))
        after = next(pair.glob("after.*"))
        best_ours, best_theirs = float("inf"), float("inf")
        for _ in range(3):
            w, r, _ = run_measured([agentrl, "diff-score", "--before", str(before), "--after", str(after)])
            best_ours, _ = min(best_ours, w), rss_ours.append(r)
            w, r, _ = run_measured([difft, "--color", "never", "--display", "inline", str(before), str(after)])
            best_theirs, _ = min(best_theirs, w), rss_theirs.append(r)
        ours.append(best_ours * 1e3)
        theirs.append(best_theirs * 1e3)

    elapsed = [l["elapsed_ms"] for l in lines]
    sizes = [max((pair / n).stat().st_size for n in os.listdir(pair)) for pair in pairs]
    print(f"pairs: {len(lines)} (largest file {max(sizes) // 1024} KB), machine: {os.cpu_count()} cores, pinned to core 0")
    print()
    print("| language | pairs | exact | nodes (median) | P50 ms | P95 ms | max ms |")
    print("|---|---|---|---|---|---|---|")
    for lang, group in sorted(by_lang.items(), key=lambda kv: str(kv[0])):
        e = [l["elapsed_ms"] for l in group]
        exact = sum(1 for l in group if l["exact"])
        nodes = statistics.median(l["nodes_before"] + l["nodes_after"] for l in group)
        print(f"| {lang} | {len(group)} | {exact} | {nodes:.0f} | {pct(e, 50):.2f} | {pct(e, 95):.2f} | {max(e):.2f} |")
    exact = sum(1 for l in lines if l["exact"])
    print(f"| all | {len(lines)} | {exact} | | {pct(elapsed, 50):.2f} | {pct(elapsed, 95):.2f} | {max(elapsed):.2f} |")
    print()
    print("| per process, best of 3 | P50 ms | P95 ms | total s | peak RSS MB |")
    print("|---|---|---|---|---|")
    print(f"| agentrl diff-score | {pct(ours, 50):.1f} | {pct(ours, 95):.1f} | {sum(ours) / 1e3:.2f} | {max(rss_ours) / 1024:.0f} |")
    print(f"| difft | {pct(theirs, 50):.1f} | {pct(theirs, 95):.1f} | {sum(theirs) / 1e3:.2f} | {max(rss_theirs) / 1024:.0f} |")
    print()
    print(f"difft / agentrl total time: {sum(theirs) / sum(ours):.1f}x; "
          f"`--pairs` over all pairs: {wall:.2f} s wall, peak RSS {rss_pairs / 1024:.0f} MB")


if __name__ == "__main__":
    main()
