#!/usr/bin/env bash
# moe_bench --phases 1 on the GPU (phase_timing.h): for FP8 and BF16 at a decode and a prefill
# size of the TP8 shard, each JSON row holds the chain of the layer's kernels with positive
# times: the grouping first, the combine last, at least two GEMM kernels between (gate_up,
# down), gemm_us their sum, and the phases' sum within 0.5x..5x of the layer's time (the event
# nodes cut PDL overlap and add launch gaps: a sanity bound, not a timing claim). Exit 77
# (skipped) without a usable device, unless MOE_REQUIRE_GPU=1. Usage: phases_test.sh MOE_BENCH
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! nvidia-smi -L >/dev/null 2>&1; then
  [ "${MOE_REQUIRE_GPU:-0}" = 1 ] && { echo "FAIL: no usable device (MOE_REQUIRE_GPU=1)"; exit 1; }
  echo "skipped: no GPU"
  exit 77
fi
"$bin" --shape glm5-tp8 --fmt fp8,bf16 --tokens 16,4096 --iters 5 --phases 1 \
  --json "$tmp/rows.jsonl" >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; echo "FAIL: moe_bench"; exit 1; }
python3 - "$tmp/rows.jsonl" <<'PY' || { cat "$tmp/out.txt"; exit 1; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = []
if len(rows) != 4:
    bad.append(f"{len(rows)} rows, want 4")
for r in rows:
    tag = f"{r['fmt']} T {r['T']}"
    ph = r.get("phases")
    if not ph:
        bad.append(f"{tag}: no phases")
        continue
    names = [n for n, _ in ph]
    gemm = [us for n, us in ph if n.startswith(("moe_gemm", "moe_tile_gemm", "moe_wgmma"))]
    if not names[0].startswith("moe_group"):
        bad.append(f"{tag}: first kernel {names[0]}, want the grouping")
    if names[-1] != "moe_combine_kernel":
        bad.append(f"{tag}: last kernel {names[-1]}, want moe_combine_kernel")
    if len(gemm) < 2:
        bad.append(f"{tag}: {len(gemm)} GEMM kernels in {names}")
    if any(us <= 0 for _, us in ph):
        bad.append(f"{tag}: a non-positive time in {ph}")
    if abs(sum(gemm) - r["gemm_us"]) > 1e-3 * r["gemm_us"] + 0.01:
        bad.append(f"{tag}: gemm_us {r['gemm_us']} is not the GEMM kernels' sum {sum(gemm)}")
    total = sum(us for _, us in ph)
    if not 0.5 * r["us"] <= total <= 5 * r["us"]:
        bad.append(f"{tag}: phases sum to {total:.1f} us against the layer's {r['us']:.1f}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "PASS: moe_bench --phases 1 gives each row's kernel chain"
