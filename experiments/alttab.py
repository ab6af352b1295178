#!/usr/bin/env python3
"""Tabulates moe_bench runs of several binaries taken in turn (separate processes, no --ab).

Runs are tagged "== ARM-N" or "== ARM-rings-N" (experiments/device-run.sh's `run` headers; ARM a
binary's name, N the round). Each moe_bench table row "SHAPE ROUTING FMT T ... us ..." gives that
arm's time of the cell (the 8th column). Prints one row per (shape, routing, fmt, T): the first
arm's median time over its rounds and, per other arm, the ratio of medians (first arm / arm:
above 1, the arm faster) [min-max of the per-round ratios]. Usage: experiments/alttab.py LOG
[FIRST_ARM]
"""
import collections
import re
import statistics
import sys

HEAD = re.compile(r"^== ([a-z0-9]+)(?:-rings)?-(\d+) ")
ROW = re.compile(r"^(\S+)\s+(\S+)\s+(nvfp4|fp8|bf16)\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+([\d.]+)")


def main(path, first=None):
    times = collections.defaultdict(dict)  # (arm, cell) -> {round: us}
    arms = []
    arm = rnd = None
    with open(path) as f:
        for line in f:
            m = HEAD.match(line)
            if m:
                arm, rnd = m.group(1), int(m.group(2))
                if arm not in arms:
                    arms.append(arm)
                continue
            if line.startswith("=="):
                arm = None
                continue
            m = ROW.match(line)
            if m and arm:
                cell = (m.group(1), m.group(2), m.group(3), int(m.group(4)))
                times[(arm, cell)][rnd] = float(m.group(5))
    if not arms:
        sys.exit("alttab: no tagged runs in " + path)
    base = first or arms[0]
    others = [a for a in arms if a != base]
    cells = sorted({c for (a, c) in times if a == base})
    print("| shape routing fmt T | %s us | %s |" % (base, " | ".join(others)))
    print("|---|---|" + "---|" * len(others))
    for c in cells:
        b = times[(base, c)]
        row = ["%s %s %s %d" % c, "%.1f" % statistics.median(b.values())]
        for a in others:
            t = times.get((a, c), {})
            if not t:
                row.append("-")
                continue
            ratio = statistics.median(b.values()) / statistics.median(t.values())
            per = [b[r] / t[r] for r in t if r in b]
            row.append("%.3f [%.3f-%.3f]" % (ratio, min(per), max(per)) if per else "%.3f" % ratio)
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
