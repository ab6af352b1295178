#!/usr/bin/env python3
"""Tabulates moe_bench --ab runs of a device log (experiments/device-run.sh's `run` headers).

Runs tagged "on-off-N" time the variant N as A against the baseline as B, "off-on-N" the other
order (a prefix such as "rings-off-on-N" is allowed: the cells tell the runs apart). Each
"ab SHAPE ROUTING FMT T n: A a us, B b us, B/A r" line gives the variant's speed-up (baseline
time / variant time: r for on-off, 1/r for off-on). Prints one row per (shape, routing, fmt, T):
the baseline's median time and, per variant, the median speed-up of its runs [min-max] (above 1:
the variant faster). A run whose --ab flags disagree with its tag (an "on-off" run whose B turns
a 0|1 flag on, or an "off-on" run whose B turns one off: the orders named the wrong way round, as
session 63's script did) is reported on stderr and left out.
Usage: experiments/abtab.py LOG [LOG...]
"""
import collections
import re
import statistics
import sys

HEAD = re.compile(r"^== (?:[a-z0-9]+-)*?(on-off|off-on)-(\S+) ")  # "rings-off-on-2" too
AB = re.compile(r"ab (\S+) (\S+) (\S+) T (\d+): A ([\d.]+) us, B ([\d.]+) us, B/A ([\d.]+)")
B_FLAGS = re.compile(r"B: ([^)]*)\)")


def main(paths):
    speed = collections.defaultdict(list)  # (variant, cell) -> speed-ups
    base = collections.defaultdict(list)   # cell -> baseline us
    for path in paths:
        tag = None
        with open(path) as f:
            for line in f:
                m = HEAD.match(line)
                if m:
                    tag = (m.group(1), m.group(2))
                    continue
                if line.startswith("=="):
                    tag = None
                    continue
                m = AB.search(line)
                if not m or tag is None:
                    continue
                fl = B_FLAGS.search(line)
                last = fl.group(1).split()[-1] if fl and fl.group(1).split() else ""
                if (tag[0] == "on-off" and last == "1") or (tag[0] == "off-on" and last == "0"):
                    print("abtab: %s run with B: %s (the orders named the wrong way round?), "
                          "left out: %s" % (tag[0], fl.group(1), line.strip()), file=sys.stderr)
                    continue
                shape, routing, fmt, t, a, b, r = m.groups()
                cell = (shape, routing, fmt, int(t))
                r = float(r)
                on_off = tag[0] == "on-off"
                speed[(tag[1], cell)].append(r if on_off else 1.0 / r)
                base[cell].append(float(b) if on_off else float(a))
    variants = sorted({v for v, _ in speed}, key=lambda v: (len(v), v))
    if not variants:
        sys.exit("abtab: no on-off / off-on ab lines in " + " ".join(paths))
    print("| shape routing fmt T | baseline us | " + " | ".join("variant " + v for v in variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for cell in sorted(base):
        cols = []
        for v in variants:
            x = speed.get((v, cell))
            cols.append("%.3f [%.3f-%.3f]" % (statistics.median(x), min(x), max(x)) if x else "-")
        print("| %s %s %s %d | %.1f | %s |" % (*cell, statistics.median(base[cell]), " | ".join(cols)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
