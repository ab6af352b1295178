#!/usr/bin/env bash
# Session 52's check call (~480 s; carry [".deps"]): scripts/gpu-test.sh on the tree (the hybrid's
# split by expert, its share gate, and the unsharded default from T 192), its logs packed into
# gpu-test-logs.tgz as soon as it ends; then on that build the new default against the heuristic of
# before (B: --hybrid-min 48 below T 512, 32 from it, --f4p2-big 1 --f4p2-split 0), so B/A > 1
# where the new default wins; TP8 / EP8 with the share gate. Log: check.log.
set -u
o=${OUT:-/tmp/out}
MOE_GPU_TARGETS="cuda_ops_tests cuda_model_tests moe_grouped_tests moengine moe_bench" \
  bash scripts/gpu-test.sh >"$o/gpu-test.out" 2>&1
echo "gpu-test.sh rc=$?" >>"$o/summary.txt"
# (gpu-test.sh packs its own logs into gpu-test-logs.tgz under the device tool, 47548a6)
D=build-gpu/bin
LOG=check
source "$(dirname "$0")/device-run.sh"  # $L, run
OLD="--f4p2-big 1 --f4p2-split 0 --f4p2-split-share 0"
TMO=60 run old-below-512 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 192,256,384,448 --ab "--hybrid-min 48 $OLD"
TMO=60 run old-from-512 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 512,576 --ab "--hybrid-min 32 $OLD"
# TP8 / EP8 (not on by default there): the same with the share gate, with and without the
# hybrid from 16 tokens.
SH="--fmt nvfp4 --shape glm5-tp8,glm5-ep8 --routing uniform,zipf1,zipf1.5,hot8 --tokens 128,192,256,320,384"
TMO=60 run sharded-16 $D/moe_bench $SH --ab "--hybrid-min 16 --f4p2-big 2 --f4p2-split 96 --f4p2-split-share 0.9"
TMO=60 run sharded $D/moe_bench $SH --ab "--f4p2-big 2 --f4p2-split 96 --f4p2-split-share 0.9"
echo "== done $(date +%T)" >>"$L"
