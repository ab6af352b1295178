#!/usr/bin/env bash
# Session 54, second check (carry [".deps", "build-run/s54/fb"], ~330 s): scripts/gpu-test.sh on
# the tree (the batched stream-K fix-up loads), then the device build's moe_bench against
# build-run/s54/fb's with --wip 0 (the fix-up of before: f898ce2's kernels), alternated 3 times,
# TP8 / EP8 / glm5 T 1 / 2 / 4, read flush. Logs: $OUT/gpu-test.out, $OUT/check2.log.
set -u
LOG=check2
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
A="--flush read --fmt nvfp4,fp8,bf16 --shape glm5-tp8,glm5-ep8,glm5 --tokens 1,2,4 --iters 60"
for i in 1 2 3; do
  TMO=30 run "new-$i" build-gpu/bin/moe_bench $A
  TMO=30 run "old-$i" build-run/s54/fb/moe_bench $A --wip 0
done
echo "== done $(date +%T)" >>"$L"
