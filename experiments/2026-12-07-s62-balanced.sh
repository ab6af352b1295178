#!/usr/bin/env bash
# Session 62 (carry ["build-run/s62/ph"]: moe_bench with --routing balanced, built here; ~60 s on
# an H100): what partial tiles cost at prefill. Uniform random routing leaves each expert's count
# short of a whole 128-row tile by chance (T 8192: 256 +- 16 per expert, ~2.47 tiles of 128 for 2
# tiles of tokens); balanced routing gives every expert exactly T K / E. Both with --phases 1 (the
# GEMM kernels alone) and torch's grouped GEMMs on the same routing files. Logs: $OUT/bal.log.
set -u
LOG=bal
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
B=build-run/s62/ph/bin/moe_bench
mkdir -p "$o/rd"
TMO=120 run ours $B --phases 1 --fmt fp8,nvfp4,bf16 --shape glm5,dsv3 --routing uniform,balanced \
  --tokens 2048,4096,8192 --iters 10 --routing-dir "$o/rd" --json "$o/bal.jsonl"
TMO=150 TAIL=30 run torch python3 bench/moe/moe_vs_torch.py --routing-dir "$o/rd" \
  --ours "$o/bal.jsonl" --shape glm5,dsv3 --iters 10 --layer gemms
rm -rf "$o/rd"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
