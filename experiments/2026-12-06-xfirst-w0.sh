#!/usr/bin/env bash
# One device call (~150 s) on build-run/s53/xw (db5ff5f + experiments/2026-12-06-xfirst-w0.patch,
# built here: scripts/stage-wip.sh s53/xw experiments/2026-12-06-xfirst-w0.patch db5ff5f moe_bench
# moe_grouped_tests; carry build-run/s53/xw). Two variants of sibling_defer: `--wip-w0 1` (of a
# deferred launch only block 0 waits at the end: its other CTAs exit when done, leaving their SMs
# to the next launch), `--wip-xfirst 1` (the hybrid's third list, hot experts' 128-token tiles,
# launched before P2's big tiles instead of after). Tests first with MOE_WIP_XW=3 (both, every
# call), then --ab against the default (B/A < 1: the variant faster). Log: $OUT/xw.log.
set -u
D=${D:-build-run/s53/xw}
LOG=xw
source "$(dirname "$0")/device-run.sh"  # $L, run
MOE_WIP_XW=3 TAIL=12 TMO=150 run test-xw3 $D/moe_grouped_tests --gtest_filter='*F4TwoProducersSplit*:*SiblingLaunches*:*GroupingThreeLists*'
S="--fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 192,256,384,512,576"
for ab in "--wip-w0 1" "--wip-xfirst 1" "--wip-w0 1 --wip-xfirst 1"; do
  TMO=60 run "ab $ab" $D/moe_bench $S --ab "$ab"
done
TMO=60 run "ab fp8 w0" $D/moe_bench --fmt fp8 --shape glm5,glm5-ep8 --routing zipf1,zipf1.5 --tokens 64,256,512 --ab "--wip-w0 1"
echo "== done $(date +%T)" >>"$L"
