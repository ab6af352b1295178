#!/usr/bin/env bash
# Session 61 (carry [".deps", "build-run/s61/base"]; ~450 s on an H100): scripts/gpu-test.sh on
# the tree (device build; its sanitizer lane now takes the BF16 warp-specialized instances and the
# ring-wrapping FP8 / NVFP4 cases), then the tree's moe_bench (every consumer thread arrives on
# `empty`) against 8ed824d's (build-run/s61/base: one arrival per warp), runs alternated
# base new base new base new. Logs: $OUT/gpu-test.out, summary.txt, check.log.
set -u
LOG=check
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 2048,8192 --iters 10"
for r in 1 2 3; do
  for b in base new; do
    bin=build-run/s61/base/moe_bench; [ $b = new ] && bin=build-gpu/bin/moe_bench
    for f in bf16 fp8 nvfp4; do TMO=120 run "$b-$r-$f" $bin --fmt $f $S; done
  done
done
echo "== done $(date +%T)" >>"$L"
