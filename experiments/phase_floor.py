#!/usr/bin/env python3
"""Per-GEMM bandwidth of moe_bench `--phases 1` output: for each case, the weight bytes of the
touched experts that gate_up (2 I x D) and down (D x I) read (moe_bench's byte model: BF16 2 bytes,
FP8 1 + a 4-byte scale per 128 x 128 block, NVFP4 0.5 + a 1-byte scale per 16), over each
kernel's phase time, as GB/s and % of a peak (default 3350 GB/s, the H100 SXM's HBM3; 4800 for the
H200). Which GEMM holds a decode case below the byte floor (docs/moe-kernels.md, session 68).
A phases line ("  phases SHAPE ROUTING FMT T T: k1 t1 | k2 t2 | ...; GEMMs ...") is paired with the
row that follows it (shape routing fmt T rows uniq ...); the GEMM kernels are the phases named
moe_*gemm* / moe_wgmma* / moe_*pipe* in order (gate_up first, then down; a hybrid's
launches add up per GEMM only where they are named apart, so its rows are marked "several").
Usage: experiments/phase_floor.py LOG [--peak GBPS]"""
import argparse
import os
import re
import sys

# moe_bench's layer shapes, (D, I, E, K) by name: bench/moe/moe_vs_torch.py's (torch imported
# only when it runs)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "moe"))
from moe_vs_torch import SHAPES  # noqa: E402


def weight_bytes(fmt, n, k):
    if fmt == "bf16":
        return 2.0 * n * k
    if fmt == "fp8":
        return n * k + 4.0 * (n / 128) * (k / 128)
    if fmt == "nvfp4":
        return 0.5 * n * k + n * k / 16
    raise ValueError(f"unknown format {fmt}")


GEMM = re.compile(r"gemm|wgmma|pipe")


def parse(lines):
    out, pending = [], None
    for line in lines:
        m = re.match(r"\s*phases (\S+) (\S+) (\S+) T (\d+): (.*?)(?:;|$)", line)
        if m:
            kernels = []
            for part in m.group(5).split("|"):
                km = re.match(r"\s*(\S+) ([0-9.]+)", part)
                if km:
                    kernels.append((km.group(1), float(km.group(2))))
            pending = (m.group(1), m.group(3), int(m.group(4)), kernels)
            continue
        f = line.split()
        if pending and len(f) >= 6 and f[0] == pending[0] and f[2] == pending[1] and \
                f[3] == str(pending[2]):
            out.append((pending, int(f[5])))
            pending = None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--peak", type=float, default=3350.0)
    a = ap.parse_args()
    try:
        with open(a.log) as fh:
            rows = parse(fh)
    except OSError as e:
        print(f"phase_floor.py: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("phase_floor.py: no phases line followed by its row; run moe_bench --phases 1",
              file=sys.stderr)
        return 2
    print(f"| shape | fmt | T | uniq | gate_up us (GB/s, % of {a.peak:.0f}) | down us (GB/s, %) "
          "| other kernels us |")
    print("|---|---|---|---|---|---|---|")
    for (shape, fmt, t, kernels), uniq in rows:
        d, i = SHAPES[shape][:2]
        gemms = [(n, us) for n, us in kernels if GEMM.search(n)]
        other = sum(us for n, us in kernels if not GEMM.search(n))
        cells = []
        for idx, (n_rows, k) in enumerate(((2 * i, d), (d, i))):
            if len(gemms) == 2:
                us = gemms[idx][1]
                b = uniq * weight_bytes(fmt, n_rows, k)
                gbs = b / (us * 1e3)
                cells.append(f"{us:.1f} ({gbs:.0f}, {100 * gbs / a.peak:.0f}%)")
            else:
                cells.append("several" if idx == 0 else "-")
        print(f"| {shape} | {fmt} | {t} | {uniq} | {cells[0]} | {cells[1]} | {other:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
