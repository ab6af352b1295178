#!/usr/bin/env bash
# For the session after 57 (~150 s): experiments/2026-12-06-fuse-group-v2.patch on def17e2,
# built here (scripts/stage-wip.sh s57/fg3 experiments/2026-12-06-fuse-group-v2.patch def17e2
# moe_bench moe_grouped_tests; carry [".deps", "build-run/s57/fg3"]). v2 of the no-grouping-launch
# form: positions by __fns over the expert's match mask instead of a second 32-shuffle loop; the
# f32 path (--fuse-group 1) prefetches each row's next step into L1 (prefetch.global.L1), so the
# conversion after its loads waits for L1, not L2 (v1's likeliest cost); and --fuse-group 2, x's
# 16-bit copy made before the call (the bound of a caller whose producer of x writes it too: no
# conversion in gate_up's k-loop). If 1 comes near 2, the stall was v1's cost. Tests
# (FusedGroupingIsBitIdentical runs both modes), then 2 and 1 each against 0, both orders, NVFP4
# T 1..4, read flush. Log: $OUT/fuse2.log.
set -u
LOG=fuse2
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=${D:-build-run/s57/fg3}
TMO=120 TAIL=30 run tests $D/moe_grouped_tests \
  --gtest_filter='*FusedGrouping*:*EarlyGateUp*:*GroupingPlacement*:*StreamKSmall*:*RandomRouting*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
for v in 2 1; do
  TMO=60 run "off-on-$v" $D/moe_bench --flush read --fmt nvfp4 $S --tokens 1,2,3,4 --iters 60 --fuse-group 0 --ab "--fuse-group $v"
  TMO=60 run "on-off-$v" $D/moe_bench --flush read --fmt nvfp4 $S --tokens 1,2,3,4 --iters 60 --fuse-group $v --ab "--fuse-group 0"
done
echo "== done $(date +%T)" >>"$L"
