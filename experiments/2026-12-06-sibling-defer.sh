#!/usr/bin/env bash
# One device call (~300 s) on build-run/s53/defer (e8f83ad + experiments/2026-12-06-sibling-defer.
# patch, built here: scripts/stage-wip.sh s53/defer experiments/2026-12-06-sibling-defer.patch
# HEAD moe_bench moe_grouped_tests; carry build-run/s53/defer). A GEMM's launches after its first
# (the hybrid's big tiles after the streaming launch, the split's list after P2's) wait for their
# predecessor at their end instead of their start (GroupedLaunch::wip_defer 1; 2: the full
# launch's split launch with PDL too): their inputs come from the grouping kernel, complete before
# the first launch triggered, so their CTAs work in the predecessor's tail. First the tests with
# MOE_WIP_DEFER=2 (every grouped call), then --ab against no deferral (B/A > 1: deferral wins).
# Log: $OUT/defer.log.
set -u
D=${D:-build-run/s53/defer}
LOG=defer
source "$(dirname "$0")/device-run.sh"  # $L, run
MOE_WIP_DEFER=2 TAIL=15 TMO=150 run test-defer2 $D/moe_grouped_tests --gtest_filter='*F4*:*Hybrid*:*Split*:*Grouping*:*Wgmma*:*Fp8*'
R="--routing uniform,zipf1,zipf1.5,hot8"
TMO=60 run hybrid-nvfp4 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 192,256,384,512 --wip-defer 1 --ab "--wip-defer 0"
TMO=60 run full-nvfp4 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 640,1024,1536 --wip-defer 2 --ab "--wip-defer 0"
TMO=60 run sharded-nvfp4 $D/moe_bench --fmt nvfp4 --shape glm5-tp8,glm5-ep8 $R --tokens 48,64,128,256,384 --wip-defer 1 --ab "--wip-defer 0"
TMO=60 run fp8 $D/moe_bench --fmt fp8 --shape glm5,glm5-tp8,glm5-ep8 $R --tokens 64,256,512 --wip-defer 1 --ab "--wip-defer 0"
SP="--f4p2-split 96 --f4p2-split-share 0.9"
TMO=60 run tp8-split $D/moe_bench --fmt nvfp4 --shape glm5-tp8,glm5-ep8 $R --tokens 384,512,640,1024 $SP --wip-defer 2 --ab "$SP --wip-defer 0"
TMO=60 run tp8-split-vs-none $D/moe_bench --fmt nvfp4 --shape glm5-tp8 $R --tokens 384,512,640,1024 $SP --wip-defer 2 --ab "--f4p2-split 0 --f4p2-split-share 0 --wip-defer 0"
echo "== done $(date +%T)" >>"$L"
