#!/usr/bin/env bash
# One device call (~120 s) on build-run/s53/head (db5ff5f's moe_bench, built here: scripts/stage-wip.sh
# s53/head "" db5ff5f moe_bench; carry build-run/s53/head). Unsharded NVFP4 uniform steps from
# 2224 us at T 448 to 2714 at T 512 (glm5, the same weight bytes: every expert touched), where the
# hybrid's big list (>= 16 tokens, on P2) grows from 82 to 143 experts. Which knob moves it: the
# streaming list's ring_dynamic and pipe_r2 choices (made from the expected tiles of all experts),
# the hybrid threshold, the full launch. Log: $OUT/cliff.log.
set -u
D=${D:-build-run/s53/head}
LOG=cliff
source "$(dirname "$0")/device-run.sh"  # $L, run
S="--fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1 --tokens 448,480,512,544,576"
for ab in "--dyn 0" "--dyn 1" "--r2 0" "--r2 1" "--hybrid-min 20" "--hybrid-min 24" "--wg 1" "--f4p2-split 0"; do
  TMO=60 run "ab $ab" $D/moe_bench $S --ab "$ab"
done
echo "== done $(date +%T)" >>"$L"
