#!/usr/bin/env bash
# Session 58's check of the stream-K arrival by one acq_rel atomic (carry [".deps",
# "build-run/s58/bench"]; ~400 s): scripts/gpu-test.sh on the tree (device build), then the new
# moe_bench (build-gpu/bin) and 4362277's (build-run/s58/bench, built here: the __threadfence
# form) in turn, three times each (separate processes, so no --ab): NVFP4 T 1..4 on the four
# shapes, FP8 / BF16 TP8 T 1 / 2 (the rings there), read flush. Logs: $OUT/gpu-test.out,
# summary.txt, check.log.
set -u
LOG=check
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
NEW=build-gpu/bin/moe_bench
OLD=${OLD:-build-run/s58/bench/moe_bench}
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
for i in 1 2 3; do
  for v in old new; do
    B=$OLD
    [ $v = new ] && B=$NEW
    TMO=60 run "$v-$i" $B --flush read --fmt nvfp4 $S --tokens 1,2,3,4 --iters 40
    TMO=30 run "$v-rings-$i" $B --flush read --fmt fp8,bf16 --shape glm5-tp8 --tokens 1,2 --iters 40
  done
done
echo "== done $(date +%T)" >>"$L"
