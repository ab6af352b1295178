#!/usr/bin/env bash
# Session 56's check of GroupedLaunch::group_yields (carry [".deps"]; ~350 s): scripts/gpu-test.sh
# on the tree (device build), then the landed default against --group-yield 0 on its moe_bench
# (NVFP4 T 1..4 where it is on, one order; FP8 / BF16 T 1 / 2 where it is off: B/A 1), read
# flush. Logs: $OUT/gpu-test.out, summary.txt, check.log.
set -u
LOG=check
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
B=build-gpu/bin/moe_bench
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
TAIL=200 TMO=60 run "off-on-y" $B --flush read --fmt nvfp4 $S --tokens 1,2,3,4 --iters 60 --group-yield 0 --ab "--group-yield 1"
TAIL=200 TMO=60 run "default-vs-off" $B --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2 --iters 40 --ab "--group-yield 0"
echo "== done $(date +%T)" >>"$L"
