#!/usr/bin/env bash
# Session 57: GroupedLaunch::fuse_group (no grouping launch; gate_up does the grouping's work),
# binaries built here: 0c5d84a + experiments/2026-12-06-fuse-group.patch (fuse_group on by default
# for NVFP4 T <= 4; the run's build had FusedGroupingIsBitIdentical expect the nb 2 case to be
# fused, which it is not, fixed in the patch since). Rebuild with scripts/stage-wip.sh s57/fg2
# experiments/2026-12-06-fuse-group.patch 0c5d84a moe_bench moe_grouped_tests; carry [".deps",
# "build-run/s57/fg2"], ~120 s. The grouping / early-list / stream-K / PDL tests, then moe_bench
# --fuse-group 1 against 0, both orders, NVFP4 T 1..4, read flush. Log: $OUT/fuse.log.
set -u
LOG=fuse
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=${D:-build-run/s57/fg2}
TMO=120 TAIL=40 run moe-grouped-tests $D/moe_grouped_tests --gtest_filter='*Fused*:*EarlyGateUp*:*GroupingPlacement*:*RandomRouting*:*StreamK*:*DynamicSplit*:*BadExpert*:*SharedExpert*:*GlmShape*:*RegisterTable*:*GroupOneWarp*:*ProgrammaticDependent*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
TMO=60 run "off-on-f" $D/moe_bench --flush read --fmt nvfp4 $S --tokens 1,2,3,4 --iters 60 --fuse-group 0 --ab "--fuse-group 1"
TMO=60 run "on-off-f" $D/moe_bench --flush read --fmt nvfp4 $S --tokens 1,2,3,4 --iters 60 --fuse-group 1 --ab "--fuse-group 0"
echo "== done $(date +%T)" >>"$L"
