#!/usr/bin/env bash
# Session 58's check of the stream-K arrival by one acq_rel atomic (carry [".deps",
# "build-run/s58/bench", "build-run/s58/div"]; ~450 s): scripts/gpu-test.sh on the tree (device
# build), then in turn, three times each (separate processes, so no --ab), the new moe_bench
# (build-gpu/bin), 4362277's (build-run/s58/bench, built here: the __threadfence form) and the
# new one with experiments/2026-12-06-div32.patch (build-run/s58/div: the ring's item arithmetic
# in 32 bits, no 64-bit divisions on the way to a segment's first copies): NVFP4 T 1..4 on the
# four shapes, FP8 / BF16 TP8 T 1 / 2 (the rings there), read flush. Logs: $OUT/gpu-test.out,
# summary.txt, check.log.
set -u
LOG=check
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
NEW=build-gpu/bin/moe_bench
OLD=${OLD:-build-run/s58/bench/moe_bench}
DIV=${DIV:-build-run/s58/div/moe_bench}
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
for i in 1 2 3; do
  for v in old new div; do
    B=$OLD
    [ $v = new ] && B=$NEW
    [ $v = div ] && B=$DIV
    [ -x "$B" ] || continue
    TMO=60 run "$v-$i" $B --flush read --fmt nvfp4 $S --tokens 1,2,3,4 --iters 40
    TMO=30 run "$v-rings-$i" $B --flush read --fmt fp8,bf16 --shape glm5-tp8 --tokens 1,2 --iters 40
  done
done
echo "== done $(date +%T)" >>"$L"
