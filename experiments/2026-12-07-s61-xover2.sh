#!/usr/bin/env bash
# Session 61 (carry ["build-run/s61/new"]; ~90 s on an H100): as 2026-12-07-s61-xover.sh with
# skewed routing (zipf1, hot8): glm5 / EP8 FP8 T 640..896, BF16 T 768 / 896. Log: $OUT/xover2.log.
set -u
LOG=xover2
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=build-run/s61/new/moe_bench
ROUNDS=2 SUSTAIN_MS=400 ITERS=20 OUT=$o/x1 TMO=150 TAIL=30 run fp8 bash bench/moe/crossover.sh $D \
  --shape glm5,glm5-ep8 --routing zipf1,hot8 --fmt fp8 --tokens 640,768,896
ROUNDS=2 SUSTAIN_MS=400 ITERS=20 OUT=$o/x2 TMO=100 TAIL=30 run bf16 bash bench/moe/crossover.sh $D \
  --shape glm5,glm5-ep8 --routing zipf1,hot8 --fmt bf16 --tokens 768,896
rm -rf "$o/x1" "$o/x2"
echo "== done $(date +%T)" >>"$L"
