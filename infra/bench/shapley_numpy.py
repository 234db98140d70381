#!/usr/bin/env python3
"""numpy baseline for shared/core/benches/shapley.rs: the same games, estimators and timing.

1. Exact Shapley (and Banzhaf) of a random n = 20 table by subset enumeration, vectorised per
   agent over all 2^19 coalitions without it.
2. Permutation sampling of a random n = 100 pairwise game until the largest standard error is
   at most 1% of max_i |phi_i| (at least 100 permutations). Permutations are drawn in blocks of
   64; each block's marginals are computed with fancy indexing, and the stopping rule is checked
   after each block.

Both games come from splitmix64, exactly as in the Rust bench, so the exact values agree.
Prints a markdown table of median times over 5 runs; `--machine` prints `case<TAB>seconds<TAB>detail`
lines for the Rust bench instead.
"""

import math
import sys
import time

import numpy as np

RUNS = 5
EXACT_N = 20
SAMPLED_N = 100
TARGET_ERROR = 0.01
MIN_PERMUTATIONS = 100
MAX_PERMUTATIONS = 1_000_000
BLOCK = 64


def uniform(key, index):
    """splitmix64 of key * 2^32 + index, as floats in [0, 1) (vectorised, wrapping uint64)."""
    z = (np.uint64(key) << np.uint64(32)) + np.asarray(index, dtype=np.uint64)
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def exact_game():
    v = 10.0 * uniform(1, np.arange(1 << EXACT_N, dtype=np.uint64))
    v[0] = 0.0
    return v


def sampled_game():
    n = SAMPLED_N
    a = uniform(2, np.arange(n, dtype=np.uint64))
    i, j = np.triu_indices(n, k=1)
    w = np.zeros((n, n))
    w[i, j] = 2.0 * uniform(3, (i * n + j).astype(np.uint64)) - 1.0
    w[j, i] = w[i, j]
    return a, w


def exact_shapley(v, n):
    masks = np.arange(1 << n, dtype=np.int64)
    sizes = np.bitwise_count(masks)
    f = [math.factorial(k) for k in range(n + 1)]
    weights = np.array([f[s] * f[n - s - 1] / f[n] for s in range(n)])
    phi = np.empty(n)
    banzhaf = np.empty(n)
    for i in range(n):
        without = masks[(masks >> i) & 1 == 0]
        d = v[without | (1 << i)] - v[without]
        phi[i] = weights[sizes[without]] @ d
        banzhaf[i] = d.sum() / 2 ** (n - 1)
    return phi, banzhaf


def sample_shapley(a, w, seed):
    n = len(a)
    rng = np.random.default_rng(seed)
    total = np.zeros(n)
    total_sq = np.zeros(n)
    m = 0
    while m < MAX_PERMUTATIONS:
        block = min(BLOCK, MAX_PERMUTATIONS - m) if m >= MIN_PERMUTATIONS else MIN_PERMUTATIONS
        perms = np.argsort(rng.random((block, n)), axis=1)
        wp = w[perms[:, :, None], perms[:, None, :]]  # wp[b, k, l] = w[p_k, p_l]
        marginal = a[perms] + np.tril(wp, -1).sum(axis=2)  # a_{p_k} + sum_{l<k} w[p_k, p_l]
        x = np.empty_like(marginal)
        np.put_along_axis(x, perms, marginal, axis=1)
        total += x.sum(axis=0)
        total_sq += (x * x).sum(axis=0)
        m += block
        mean = total / m
        se = np.sqrt(np.maximum(total_sq - m * mean * mean, 0.0) / (m - 1) / m)
        if se.max() <= TARGET_ERROR * np.abs(mean).max():
            return mean, se, m, True
    return mean, se, m, False


def timed(run):
    times = []
    out = None
    for k in range(RUNS):
        start = time.perf_counter()
        out = run(k)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2], out


def main():
    v = exact_game()
    exact_s, (phi, _) = timed(lambda _: exact_shapley(v, EXACT_N))
    checksum = float(np.arange(1, EXACT_N + 1) @ phi)

    a, w = sampled_game()
    sampled_s, (_, _, perms, reached) = timed(lambda k: sample_shapley(a, w, k))
    assert reached, "target not reached"

    rows = [
        ("exact Shapley + Banzhaf, n = 20 table", exact_s, f"Σ(i+1)·φ_i = {checksum:.9f}"),
        ("sampled Shapley, n = 100 pairwise, se ≤ 1% of spread", sampled_s, f"{perms} permutations"),
    ]
    if "--machine" in sys.argv:
        for name, secs, detail in rows:
            print(f"{name}\t{secs!r}\t{detail}")
        return
    print(f"\nnumpy {np.__version__}, median of {RUNS} runs\n")
    print("| case | numpy | detail |\n|---|---|---|")
    for name, secs, detail in rows:
        print(f"| {name} | {secs * 1e3:.2f} ms | {detail} |")


if __name__ == "__main__":
    main()
