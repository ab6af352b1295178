#!/usr/bin/env python3
"""Markdown table of moe_bench's wstl lines (experiments/2026-12-05-ws-timeline.patch):
one row per (file, shape fmt T, variant, rep, GEMM, role). Usage: scripts/wstl-table.py OUT/a.txt [OUT/b.txt ...] (moe_bench outputs)"""
import re, sys
print("| file | case | var | rep | GEMM | role | cycles | item-start | full-wait | first-kb | kb | epilogue | release | drain | rest | per item start / first-kb / epi | per k-block | wait per k-block |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sys.argv[1:]:
    case = var = rep = "?"
    for l in open(f):
        m = re.match(r"\s*wstl (\S+) (\S+) T (\d+) (A|B) rep (\d+): layer ([\d.]+) us", l)
        if m:
            case, var, rep = f"{m.group(1)} {m.group(2)} T {m.group(3)} ({m.group(6)} us)", m.group(4), m.group(5)
            continue
        m = re.match(r"\s*wstl (A|B) (gate_up|down) (wg\d): ([\d.]+) cyc; item-start ([\d.]+)% full-wait ([\d.]+)% first-kb ([\d.]+)% kb ([\d.]+)% epilogue ([\d.]+)%(?: release ([\d.]+)% drain ([\d.]+)%)? rest ([-\d.]+)%; per item: start (\d+) first-kb (\d+) epi (\d+) cyc; per other k-block (\d+) cyc .*wait per k-block (\d+)", l)
        if m:
            g = m.groups()
            rel = f"{g[9]}%" if g[9] is not None else ""
            drn = f"{g[10]}%" if g[10] is not None else ""
            print(f"| {f.split('/')[-1]} | {case} | {var} | {rep} | {g[1]} | {g[2]} | {g[3]} | {g[4]}% | {g[5]}% | {g[6]}% | {g[7]}% | {g[8]}% | {rel} | {drn} | {g[11]}% | {g[12]} / {g[13]} / {g[14]} | {g[15]} | {g[16]} |")
            continue
        m = re.match(r"\s*wstl (A|B) (gate_up|down) producer: (\d+) cyc, empty-wait ([\d.]+)%, raw-wait ([\d.]+)%, dequant ([\d.]+)%", l)
        if m:
            g = m.groups()
            print(f"| {f.split('/')[-1]} | {case} | {var} | {rep} | {g[1]} | producer | {g[2]} | empty-wait {g[3]}% | raw-wait {g[4]}% | dequant {g[5]}% | | | | | | | | |")
