#!/usr/bin/env python3
"""PyTorch's grouped GEMMs on the same routing and shapes as bench/moe (moe_bench), and one table
with both. torch path: tokens pre-sorted by expert (sorting not timed, as in the anchors), then
torch._grouped_mm (BF16) or torch._scaled_grouped_mm (FP8 rowwise) for gate_up, SiLU*up, down.
Timing: median of CUDA-event-timed CUDA-graph replays, L2 flushed before each: a 256 MiB write
(--flush memset, the default) or a read of it (--flush read: clean lines, as moe_bench --flush read).
Bytes: touched experts' weights (+ scales) and activations, same model as moe_bench; FLOP:
2 * assignments * 3 * D * I. The rows, routings and token counts are those of --ours (moe_bench
--json); the ids come from moe_bench's routing files routing_<shape>_<routing>_T<T>.bin (int32
[rows, K]; EP shapes: [rows, 1] local ids, one row per (token, local expert)).
--layer full times torch's whole layer as ours is timed: the routing's sort and the experts' row
offsets (stable argsort of the ids, counts by scatter_add, cumsum: no host sync), the gather of
x's rows (and their E4M3 cast for FP8), the grouped GEMMs, and the combine (f32 y += the slot rows
x routing weights, index_add_); the default (--layer gemms) times the grouped GEMMs and SiLU on
rows already sorted and gathered, torch's best case (ours includes the grouping, the gather and
the combine either way: at TP8 T 8192 they are ~20% of our layer, docs/perf.md session 61).
Usage: moe_vs_torch.py --routing-dir DIR --ours ours.jsonl [--shape glm5,dsv3,glm5-tp8,...]
                       [--iters 20] [--md table.md] [--flush memset|read] [--layer gemms|full]
                       [--json torch.jsonl]
"""
import argparse
import json
import os
import sys
import time

# (D, I, experts on the GPU, ids per row in the routing file): as moe_bench's shape table.
SHAPES = {
    "glm5": (6144, 2048, 256, 8),
    "dsv3": (7168, 2048, 256, 8),
    "glm5-tp8": (6144, 256, 256, 8),
    "dsv3-tp8": (7168, 256, 256, 8),
    "glm5-ep8": (6144, 2048, 32, 1),
    "dsv3-ep8": (7168, 2048, 32, 1),
}
ALIASES = {"tp8": "glm5-tp8", "ep8": "glm5-ep8"}
PEAK = 4800.0  # GB/s


def bench_graph(torch, fn, iters, flush_mode="memset"):
    flush = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    ts = []
    for i in range(iters + 3):
        if flush_mode == "read":  # every byte read, one value stored: the L2 left clean
            flush.view(torch.int32).max()
        else:
            flush.fill_(i & 0xFF)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        if i >= 3:
            ts.append((a, b))
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) for a, b in ts)
    del g
    return 1e3 * ms[len(ms) // 2]


def measure_torch(torch, np, args, sname, routing, T, w, iters):
    """Times torch's BF16 and FP8 layers on one routing file; returns a dict of results."""
    D, I, E, K = SHAPES[sname]
    w13, w2, w13f, w2f, s13, s2 = w
    path = os.path.join(args.routing_dir, f"routing_{sname}_{routing}_T{T}.bin")
    flat_np = np.fromfile(path, dtype="int32")
    rows = flat_np.size // K
    flat = torch.from_numpy(flat_np).cuda().long()
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=E)
    offs = torch.cumsum(counts, 0).to(torch.int32)
    uniq = int((counts > 0).sum())
    x = torch.randn(rows, D, device="cuda", dtype=torch.bfloat16)
    res = {"rows": rows, "unique": uniq}
    sa = torch.ones(rows * K, device="cuda")  # FP8 rowwise activation scales

    # The grouped GEMMs and SiLU on rows sorted by expert (offsets `of`).
    def gemms_bf16(xs_, of):
        h = torch._grouped_mm(xs_, w13.transpose(-2, -1), offs=of)
        a = torch.nn.functional.silu(h[:, :I]) * h[:, I:]
        return torch._grouped_mm(a, w2.transpose(-2, -1), offs=of)

    def gemms_fp8(xq_, of):
        h = torch._scaled_grouped_mm(xq_, w13f.transpose(-2, -1), sa, s13, offs=of,
                                     out_dtype=torch.bfloat16)
        a = (torch.nn.functional.silu(h[:, :I]) * h[:, I:]).to(torch.float8_e4m3fn)
        return torch._scaled_grouped_mm(a, w2f.transpose(-2, -1), sa, s2, offs=of,
                                        out_dtype=torch.bfloat16)

    if args.layer == "full":  # the whole layer from x in token order: sort, gather, combine
        wts = torch.rand(rows * K, device="cuda")  # routing weight per slot
        ones = torch.ones(rows * K, device="cuda", dtype=torch.int32)

        def layer(gemms, cast):
            o = torch.argsort(flat, stable=True)  # slot order and row offsets, on the device
            cnt = torch.zeros(E, device="cuda", dtype=torch.int32).scatter_add_(0, flat, ones)
            out = gemms(cast(x[o // K]), torch.cumsum(cnt, 0, dtype=torch.int32))
            y = torch.zeros(rows, D, device="cuda", dtype=torch.float32)  # y[token] += w x row
            return y.index_add_(0, o // K, out.float() * wts[o].unsqueeze(1))

        bf16_layer = lambda: layer(gemms_bf16, lambda t: t)  # noqa: E731
        fp8_layer = lambda: layer(gemms_fp8, lambda t: t.to(torch.float8_e4m3fn))  # noqa: E731
    else:  # the GEMMs on rows already sorted and gathered
        xs = x[order // K].contiguous()
        xq = xs.to(torch.float8_e4m3fn) if w13f is not None else None
        bf16_layer = lambda: gemms_bf16(xs, offs)  # noqa: E731
        fp8_layer = lambda: gemms_fp8(xq, offs)  # noqa: E731

    try:
        res["bf16"] = bench_graph(torch, bf16_layer, iters, args.flush)
    except Exception as e:  # noqa: BLE001
        print(f"torch._grouped_mm {sname} {routing} T={T}: {type(e).__name__}: {str(e)[:200]}")
    if w13f is not None:
        try:
            res["fp8"] = bench_graph(torch, fp8_layer, iters, args.flush)
        except Exception as e:  # noqa: BLE001
            print(f"torch._scaled_grouped_mm {sname} {routing} T={T}: {type(e).__name__}: "
                  f"{str(e)[:200]}")
    # Same byte model as moe_bench (16-bit activations in and out here), weights + scales.
    res["bytes_bf16"] = uniq * 3 * D * I * 2 + 2 * rows * D * 2
    res["bytes_fp8"] = uniq * (3 * D * I + 4 * (2 * I + D)) + 2 * rows * D * 2
    res["flop"] = 2.0 * rows * K * 3 * D * I
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--routing-dir", required=True)
    ap.add_argument("--ours", required=True, help="moe_bench --json output")
    ap.add_argument("--shape", default="", help="comma list; default: every shape in --ours")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--iters-large", type=int, default=8,
                    help="replays for rows with >= 16384 assignments (prefill)")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="seconds; after this, rows keep only our numbers (0: no limit)")
    ap.add_argument("--md", default="")
    ap.add_argument("--json", default="",
                    help="also write torch's rows, one JSON object per line (bench/moe/targets.py)")
    ap.add_argument("--flush", choices=("memset", "read"), default="memset",
                    help="the L2 flush before each replay (as moe_bench --flush)")
    ap.add_argument("--layer", choices=("gemms", "full"), default="gemms",
                    help="torch's timed layer: the grouped GEMMs on sorted, gathered rows, or "
                    "with the sort, the gather and the combine (as ours)")
    args = ap.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        sys.exit(f"moe_vs_torch.py needs torch and numpy: {e}")
    if args.json:
        open(args.json, "w").close()  # rows are appended as they are measured

    ours = {}
    with open(args.ours) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                ours[(r["shape"], r.get("routing", "uniform"), r["fmt"], r["T"])] = r
    shapes = [ALIASES.get(s, s) for s in args.shape.split(",") if s] or sorted(
        {k[0] for k in ours}, key=list(SHAPES).index)
    rows = []
    t0 = time.monotonic()
    for sname in shapes:
        if sname not in SHAPES:
            sys.exit(f"unknown shape {sname}; known: {', '.join(SHAPES)}")
        D, I, E, K = SHAPES[sname]
        cases = sorted({(k[1], k[3]) for k in ours if k[0] == sname})
        if not cases:
            print(f"{sname}: no rows in {args.ours}")
            continue
        w13 = torch.randn(E, 2 * I, D, device="cuda", dtype=torch.bfloat16) * 0.02
        w2 = torch.randn(E, D, I, device="cuda", dtype=torch.bfloat16) * 0.02
        try:
            w13f, w2f = w13.to(torch.float8_e4m3fn), w2.to(torch.float8_e4m3fn)
            s13 = torch.full((E, 2 * I), 0.01, device="cuda")
            s2 = torch.full((E, D), 0.01, device="cuda")
        except Exception as e:  # noqa: BLE001
            print("fp8 weights:", e)
            w13f = w2f = s13 = s2 = None
        w = (w13, w2, w13f, w2f, s13, s2)
        for routing, T in cases:
            any_ours = next(r for k, r in ours.items() if k[0] == sname and k[1] == routing
                            and k[3] == T)
            iters = args.iters if any_ours.get("rows", T) * K < 16384 else args.iters_large
            if args.time_budget and time.monotonic() - t0 > args.time_budget:
                res = {"rows": any_ours.get("rows", T), "unique": any_ours["unique"],
                       "flop": any_ours["flop"]}
                print(f"{sname} {routing} T={T}: torch skipped (--time-budget)")
            else:
                res = measure_torch(torch, np, args, sname, routing, T, w, iters)
            row = {"shape": sname, "routing": routing, "T": T, "rows": res["rows"],
                   "unique": res["unique"], "flop": res["flop"]}
            for fmt in ("bf16", "fp8", "nvfp4"):
                r = ours.get((sname, routing, fmt, T))
                if r:
                    row[fmt] = (r["us"], r["bytes"] / (r["us"] * 1e3) / PEAK * 100)
                    if r.get("gemm_us"):  # moe_bench --phases 1: its GEMM kernels alone
                        row[fmt + "_gemm"] = r["gemm_us"]
            for fmt in ("bf16", "fp8"):
                if fmt in res:
                    us = res[fmt]
                    row["torch_" + fmt] = (us, res["bytes_" + fmt] / (us * 1e3) / PEAK * 100)
            rows.append(row)
            if args.json:
                with open(args.json, "a") as jf:
                    jf.write(json.dumps({"shape": sname, "routing": routing, "T": T,
                                         "layer": args.layer, "flush": args.flush,
                                         **{f + "_us": res[f] for f in ("bf16", "fp8")
                                            if f in res}}) + "\n")
            print(f"{sname} {routing} T={T}: " + ", ".join(
                f"{k} {row[k][0]:.0f} us" for k in ("bf16", "fp8", "nvfp4", "torch_bf16",
                                                    "torch_fp8") if k in row), flush=True)
        del w13, w2, w13f, w2f, w
        torch.cuda.empty_cache()

    def cell(r, k):
        if k not in r:
            return "-"
        us, pct = r[k]
        tf = r["flop"] / (us * 1e6)
        c = f"{us:.0f} ({pct:.0f}%, {tf:.0f} TF/s)" if tf >= 100 else f"{us:.0f} ({pct:.0f}%)"
        g = r.get(k + "_gemm")
        if g:
            c += f"; GEMMs {g:.0f} us, {r['flop'] / (g * 1e6):.0f} TF/s"
        return c

    def ratio(r, a, b):  # torch time / our time: > 1 means ours is faster
        return f"{r[b][0] / r[a][0]:.2f}x" if a in r and b in r else "-"

    head = ("| shape | routing | T | rows | unique experts | ours BF16 | ours FP8 | ours NVFP4 "
            "| torch BF16 | torch FP8 | torch/ours BF16 | torch/ours FP8 |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['routing']} | {r['T']} | {r['rows']} | {r['unique']} | "
                     + " | ".join(cell(r, k) for k in ("bf16", "fp8", "nvfp4", "torch_bf16",
                                                       "torch_fp8"))
                     + f" | {ratio(r, 'bf16', 'torch_bf16')} | {ratio(r, 'fp8', 'torch_fp8')} |")
    table = "\n".join(lines)
    print("Cells: time in us (effective bandwidth as % of 4.8 TB/s; TFLOP/s where >= 100). "
          "rows: token rows this GPU computes (EP: one per local assignment). torch: "
          + ("the whole layer (sort, gather, GEMMs, combine)" if args.layer == "full"
             else "the grouped GEMMs on sorted, gathered rows") + "."
          + (" ours' GEMMs: its GEMM kernels alone (moe_bench --phases 1)."
             if any(k.endswith("_gemm") for r in rows for k in r) else ""))
    print(table)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
