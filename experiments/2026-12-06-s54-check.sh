#!/usr/bin/env bash
# Session 54 (carry [".deps"], ~360 s): scripts/gpu-test.sh on the tree (early_down_max_slots,
# EarlyGateUpAndDownAreBitIdentical), then the default (16) against --early-down 0 with the
# device build's moe_bench, both orders, at T 1..4 (uniform / zipf1 / hot8, memset and read
# flush). Logs: $OUT/gpu-test.out, $OUT/check.log.
set -u
LOG=check
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
D=build-gpu/bin
R="--routing uniform,zipf1,hot8"
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
for fl in memset read; do
  TAIL=400 TMO=60 run "on-off-$fl" $D/moe_bench --flush $fl --fmt nvfp4,fp8,bf16 $S $R --tokens 1,2,3,4 --iters 60 --ab "--early-down 0"
  TAIL=400 TMO=60 run "off-on-$fl" $D/moe_bench --flush $fl --fmt nvfp4,fp8,bf16 $S $R --tokens 1,2,3,4 --iters 60 --early-down 0 --ab "--early-down 16"
done
echo "== done $(date +%T)" >>"$L"
