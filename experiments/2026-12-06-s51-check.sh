#!/usr/bin/env bash
# Session 51's second device call (~420 s; carry [".deps", "build-run/s51/probe"]): scripts/gpu-test.sh on the tree (P2's
# four 64-row stages, 5429caa; f4p2_split by default, 4f79128), then on that build the default
# against `--f4p2-split 0` (unsharded: where it runs; TP8 / EP8: a no-op), and the full launch
# (P2 split by expert) against the heuristic's hybrid below 20 tokens per expert under hot /
# skewed routing. The device tool returns at most 8 files: gpu-test.sh's logs go into gpu-logs.tgz
# as soon as it ends; summary.txt and check.log stay beside it.
set -u
o=${OUT:-/tmp/out}
MOE_GPU_TARGETS="cuda_ops_tests cuda_model_tests moe_grouped_tests moengine moe_bench" \
  bash scripts/gpu-test.sh >"$o/gpu-test.out" 2>&1
echo "gpu-test.sh rc=$?" >>"$o/summary.txt"
# (packed now: a call cut short by the device budget still returns them)
(cd "$o" && tar czf gpu-logs.tgz ./*.log ./*.out && find . -maxdepth 1 -type f \( -name '*.log' -o -name '*.out' \) -delete)
D=build-gpu/bin
LOG=check
source "$(dirname "$0")/device-run.sh"  # $L, run
TMO=150 run split-default $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 512,640,1024,1536,2048 --ab "--f4p2-split 0"
TMO=60 run split-sharded $D/moe_bench --fmt nvfp4 --shape glm5-tp8,glm5-ep8 --routing uniform,zipf1,hot8 --tokens 640,1024 --ab "--f4p2-split 0"
TMO=90 run wg-below-20 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 256,384,512 --ab "--wg 1"
# P2's timing probes on four ring stages (build-run/s51/probe: 4f79128 + experiments/2026-12-06-f4p2-
# probes-4st.patch, built here; wrong results, timing only): bit 0 no dequantization, bit 1 no wgmma.
if [ -x build-run/s51/probe/moe_bench ]; then
  for n in 1 2 3; do
    TMO=60 run probe-$n build-run/s51/probe/moe_bench --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --tokens 512,1024,1536 --wg 1 --ab "--wip-probe $n"
  done
fi
echo "== done $(date +%T)" >>"$L"
