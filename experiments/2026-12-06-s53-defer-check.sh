#!/usr/bin/env bash
# Session 53's check of GroupedLaunch::sibling_defer (4b17417, 2nd commit after it; ~480 s; carry
# [".deps"]): scripts/gpu-test.sh on the tree (SiblingLaunchesWaitingAtTheirEndAreBitIdentical
# and every other GPU test with the default on), then on that build the default against --defer 0
# (B/A > 1: deferral faster) for every format's hybrid, unsharded and TP8 / EP8. Log: check.log.
set -u
o=${OUT:-/tmp/out}
MOE_GPU_TARGETS="cuda_ops_tests cuda_model_tests moe_grouped_tests moengine moe_bench" \
  bash scripts/gpu-test.sh >"$o/gpu-test.out" 2>&1
echo "gpu-test.sh rc=$?" >>"$o/summary.txt"
D=build-gpu/bin
LOG=check
source "$(dirname "$0")/device-run.sh"  # $L, run
R="--routing uniform,zipf1,zipf1.5,hot8"
TMO=60 run nvfp4 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 192,256,320,384,448,512,576 --ab "--defer 0"
TMO=60 run nvfp4-sharded $D/moe_bench --fmt nvfp4 --shape glm5-tp8,glm5-ep8 $R --tokens 48,64,128,256 --ab "--defer 0"
TMO=60 run fp8 $D/moe_bench --fmt fp8 --shape glm5,dsv3,glm5-tp8,glm5-ep8 $R --tokens 64,128,256,512 --ab "--defer 0"
TMO=60 run bf16 $D/moe_bench --fmt bf16 --shape glm5,glm5-tp8,glm5-ep8 $R --tokens 32,64,256,512 --ab "--defer 0"
echo "== done $(date +%T)" >>"$L"
