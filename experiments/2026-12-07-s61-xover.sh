#!/usr/bin/env bash
# Session 61 (carry ["build-run/s61/new"]; ~150 s on an H100): the warpgroup-MMA launch against the
# heuristic's streaming launch for unsharded and EP8 FP8 / BF16 at 20..28 expected tokens per
# expert (moe_heuristic_config's threshold there is 32), on e31201f's moe_bench
# (bench/moe/crossover.sh: alternated sustained runs, medians, wg / heuristic). Log: $OUT/xover.log.
set -u
LOG=xover
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=build-run/s61/new/moe_bench
ROUNDS=2 SUSTAIN_MS=500 ITERS=20 OUT=$o/x1 TMO=200 TAIL=30 run fp8 bash bench/moe/crossover.sh $D \
  --shape glm5,dsv3,glm5-ep8 --fmt fp8 --tokens 640,768,896
ROUNDS=2 SUSTAIN_MS=500 ITERS=20 OUT=$o/x2 TMO=120 TAIL=30 run bf16 bash bench/moe/crossover.sh $D \
  --shape glm5,glm5-ep8 --fmt bf16 --tokens 768,896
echo "== done $(date +%T)" >>"$L"
