#!/usr/bin/env bash
# Session 62 (carry ["build-run/s62/ph"]: moe_bench with --phases, built here; ~250 s on an H100):
# bench/moe/phases_test.sh (the kernel chain of FP8 / BF16 TP8 T 16 / 4096), then prefill T 4096 /
# 8192 of every format and shape with --phases 1 (each kernel's time; the GEMM kernels' TFLOP/s:
# issue 5's "expert GEMMs" rate) against torch's grouped GEMMs on the same routing, and decode
# rows' phases (where the grouping and the combine stand at T 1 / 64 / 256). Logs: $OUT/phases.log.
set -u
LOG=phases
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
B=build-run/s62/ph/bin/moe_bench
MOE_REQUIRE_GPU=1 TMO=120 TAIL=20 run phases-test bash bench/moe/phases_test.sh $B
mkdir -p "$o/rd"
TMO=150 run prefill $B --phases 1 --fmt fp8,nvfp4,bf16 --shape glm5,dsv3,glm5-tp8,glm5-ep8 \
  --tokens 4096,8192 --iters 10 --routing-dir "$o/rd" --json "$o/prefill.jsonl"
TMO=200 TAIL=30 run torch python3 bench/moe/moe_vs_torch.py --routing-dir "$o/rd" \
  --ours "$o/prefill.jsonl" --shape glm5,dsv3,glm5-tp8,glm5-ep8 --iters 10 --layer gemms
rm -rf "$o/rd"
TMO=90 run decode $B --phases 1 --flush read --fmt nvfp4,fp8,bf16 --shape glm5,glm5-tp8 \
  --tokens 1,64,256 --iters 20
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
