#!/usr/bin/env python3
"""Counts the FP8 grouped GEMM's token tiles under uniform top-K routing (each token picks K
distinct experts of E at random, as moe_bench's uniform routing): tiles of 128 tokens per expert,
the share of tiles that are an expert's last tile of <= 64 tokens (the NARROW instance computes
those on both consumer warpgroups instead of one plus 64 padding rows), and the rows computed per
useful row by the full and the narrow instance. EP8: the first E / 8 experts' rows (K 1 each).
Usage: experiments/narrow_tiles.py [T ...]   (docs/perf.md session 65)"""
import random
import sys


def counts_by_expert(T, E=256, K=8, local=None, seed=1):
    """Tokens per expert under uniform routing (EP8: the first `local` experts)."""
    rng = random.Random(seed)
    cnt = [0] * E
    for _ in range(T):
        for e in rng.sample(range(E), K):
            cnt[e] += 1
    return cnt[:local] if local else cnt


def tiles(T, E=256, K=8, local=None, seed=1):
    cnt = counts_by_expert(T, E, K, local, seed)
    full = sum(n // 128 for n in cnt)
    tails = [n % 128 for n in cnt if n % 128]
    narrow = sum(1 for r in tails if r <= 64)
    n_tiles = full + len(tails)
    rows = sum(cnt)
    computed_narrow = (full + len(tails) - narrow) * 128 + narrow * 64
    return (rows / len(cnt), n_tiles, narrow / n_tiles, n_tiles * 128 / rows, computed_narrow / rows)


def main():
    ts = [int(a) for a in sys.argv[1:]] or [2048, 3072, 4096, 5120, 6144, 7168, 8192, 9216]
    print("| T | shape | tokens per expert | tiles | narrow share | rows computed / useful: full, narrow |")
    print("|---|---|---|---|---|---|")
    for t in ts:
        for name, local in (("glm5", None), ("glm5-ep8", 32)):
            m, n, share, pf, pn = tiles(t, local=local)
            print(f"| {t} | {name} | {m:.0f} | {n} | {share:.2f} | {pf:.2f}, {pn:.2f} |")


if __name__ == "__main__":
    main()
