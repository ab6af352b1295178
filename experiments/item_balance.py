#!/usr/bin/env python3
"""Load balance of the warp-specialized FP8 kernels' static item striding (unit u takes items
u, u + U, u + 2U, ...; U = 66 clusters of the pair kernels on 132 SMs; items tile-major, 16
n-block pairs per tile in gate_up, 12 in down), under uniform top-K routing (as
experiments/narrow_tiles.py). Cost model: an item of a full or >64-token tile costs 1, an item of
a narrow tile (an expert's last tile of <= 64 tokens, computed by the NARROW instance) costs R
(default 0.7). Prints, per T and shape, the slowest unit's load over the mean (full instance and
narrow) and narrow's gain on the slowest unit against its gain on the total work (what dynamic
claiming of items would approach). Written to test session 65's hypothesis that EP8's gain from
narrow at 261 tokens per expert, where unsharded at 256 loses, comes from tail / wave balance
(docs/perf.md session 67).
Usage: experiments/item_balance.py [R]"""
import sys

from narrow_tiles import counts_by_expert


def tile_sizes(cnt):
    out = []
    for n in cnt:
        while n > 0:
            out.append(min(n, 128))
            n -= 128
    return out


def loads(ts, per_tile, units, cost):
    load = [0.0] * units
    for i in range(len(ts) * per_tile):
        load[i % units] += cost(ts[i // per_tile])
    return max(load), sum(load) / units


def main():
    r = float(sys.argv[1]) if len(sys.argv) > 1 else 0.7
    print(f"narrow item cost R = {r}; units 66")
    print("| GEMM | T | shape | tokens per expert | items | slowest / mean: full, narrow | "
          "narrow's gain: slowest unit, total work |")
    print("|---|---|---|---|---|---|---|")
    cases = ((4096, None), (6144, None), (7168, None), (8192, None), (4192, 32), (5248, 32),
             (6208, 32), (8192, 32), (8352, 32))
    for gemm, per_tile in (("gate_up", 16), ("down", 12)):
        for t, local in cases:
            cnt = counts_by_expert(t, local=local)
            ts = tile_sizes(cnt)
            mf, af = loads(ts, per_tile, 66, lambda c: 1.0)
            mn, an = loads(ts, per_tile, 66, lambda c: r if c <= 64 else 1.0)
            shape = "glm5-ep8" if local else "glm5"
            print(f"| {gemm} | {t} | {shape} | {sum(cnt) / len(cnt):.0f} | {len(ts) * per_tile} | "
                  f"{mf / af:.3f}, {mn / an:.3f} | {100 * (1 - mn / mf):.1f}%, "
                  f"{100 * (1 - an / af):.1f}% |")


if __name__ == "__main__":
    main()
