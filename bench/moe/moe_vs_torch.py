#!/usr/bin/env python3
"""PyTorch's grouped GEMMs on the same routing and shapes as bench/moe (moe_bench), and one table
with both. torch path: tokens pre-sorted by expert (sorting not timed, as in the anchors), then
torch._grouped_mm (BF16) or torch._scaled_grouped_mm (FP8 rowwise) for gate_up, SiLU*up, down.
Timing: median of CUDA-event-timed CUDA-graph replays, L2 flushed (256 MiB write) before each.
Bytes: touched experts' weights (+ scales) and activations, same model as moe_bench.
Usage: moe_vs_torch.py --routing-dir DIR --ours ours.jsonl [--shape glm5,dsv3] [--iters 30]
"""
import argparse
import json
import os

import torch

SHAPES = {"glm5": (6144, 2048, 256, 8), "dsv3": (7168, 2048, 256, 8)}
PEAK = 4800.0  # GB/s


def bench_graph(fn, iters):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    ts = []
    for i in range(iters + 3):
        flush.fill_(i & 0xFF)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        if i >= 3:
            ts.append((a, b))
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) for a, b in ts)
    return 1e3 * ms[len(ms) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--routing-dir", required=True)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--shape", default="glm5,dsv3")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--md", default="")
    args = ap.parse_args()
    ours = {}
    with open(args.ours) as f:
        for line in f:
            r = json.loads(line)
            ours[(r["shape"], r["fmt"], r["T"])] = r
    tokens = sorted({k[2] for k in ours})
    rows = []
    for sname in args.shape.split(","):
        D, I, E, K = SHAPES[sname]
        w13 = torch.randn(E, 2 * I, D, device="cuda", dtype=torch.bfloat16) * 0.02
        w2 = torch.randn(E, D, I, device="cuda", dtype=torch.bfloat16) * 0.02
        try:
            w13f = w13.to(torch.float8_e4m3fn)
            w2f = w2.to(torch.float8_e4m3fn)
            s13 = torch.full((E, 2 * I), 0.01, device="cuda")
            s2 = torch.full((E, D), 0.01, device="cuda")
        except Exception as e:  # noqa: BLE001
            print("fp8 weights:", e)
            w13f = None
        for T in tokens:
            path = os.path.join(args.routing_dir, f"routing_T{T}.bin")
            ids = torch.from_numpy(
                __import__("numpy").fromfile(path, dtype="int32").reshape(T, K)).cuda()
            flat = ids.flatten()
            order = torch.argsort(flat, stable=True)
            counts = torch.bincount(flat, minlength=E)
            offs = torch.cumsum(counts, 0).to(torch.int32)
            uniq = int((counts > 0).sum())
            x = torch.randn(T, D, device="cuda", dtype=torch.bfloat16)
            xs = x[order // K].contiguous()
            res = {}

            def bf16_layer():
                h = torch._grouped_mm(xs, w13.transpose(-2, -1), offs=offs)
                g, u = h[:, :I], h[:, I:]
                a = torch.nn.functional.silu(g) * u
                return torch._grouped_mm(a, w2.transpose(-2, -1), offs=offs)

            try:
                res["torch_bf16"] = bench_graph(bf16_layer, args.iters)
            except Exception as e:  # noqa: BLE001
                print(f"torch._grouped_mm T={T}: {type(e).__name__}: {str(e)[:200]}")
            if w13f is not None:
                xq = xs.to(torch.float8_e4m3fn)
                sa = torch.ones(T * K, device="cuda")

                def fp8_layer():
                    h = torch._scaled_grouped_mm(xq, w13f.transpose(-2, -1), sa, s13, offs=offs,
                                                 out_dtype=torch.bfloat16)
                    g, u = h[:, :I], h[:, I:]
                    a = (torch.nn.functional.silu(g) * u).to(torch.float8_e4m3fn)
                    return torch._scaled_grouped_mm(a, w2f.transpose(-2, -1), sa, s2, offs=offs,
                                                    out_dtype=torch.bfloat16)

                try:
                    res["torch_fp8"] = bench_graph(fp8_layer, args.iters)
                except Exception as e:  # noqa: BLE001
                    print(f"torch._scaled_grouped_mm T={T}: {type(e).__name__}: {str(e)[:200]}")
            bytes_bf16 = uniq * 3 * D * I * 2 + 2 * T * D * 2
            bytes_fp8 = uniq * 3 * D * I * 1 + 2 * T * D * 2
            row = {"shape": sname, "T": T, "unique": uniq}
            for fmt in ("bf16", "fp8", "nvfp4"):
                r = ours.get((sname, fmt, T))
                if r:
                    row[fmt] = (r["us"], r["bytes"] / (r["us"] * 1e3) / PEAK * 100)
            if "torch_bf16" in res:
                us = res["torch_bf16"]
                row["torch_bf16"] = (us, bytes_bf16 / (us * 1e3) / PEAK * 100)
            if "torch_fp8" in res:
                us = res["torch_fp8"]
                row["torch_fp8"] = (us, bytes_fp8 / (us * 1e3) / PEAK * 100)
            rows.append(row)
        del w13, w2, w13f
        torch.cuda.empty_cache()

    def cell(r, k):
        return f"{r[k][0]:.0f} ({r[k][1]:.0f}%)" if k in r else "-"

    head = ("| shape | T | unique experts | ours BF16 | ours FP8 | ours NVFP4 | torch BF16 "
            "| torch FP8 |\n|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['T']} | {r['unique']} | " + " | ".join(
            cell(r, k) for k in ("bf16", "fp8", "nvfp4", "torch_bf16", "torch_fp8")) + " |")
    table = "\n".join(lines)
    print("Cells: time in us (effective bandwidth as % of 4.8 TB/s)")
    print(table)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
