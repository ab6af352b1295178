#!/usr/bin/env bash
# one device call (~120 s) on build-run/s52/hs2 (e37375a + experiments/2026-12-06-hybrid-split.patch
# with the share gate, built here: scripts/stage-wip.sh s52/hs2 experiments/2026-12-06-hybrid-split.
# patch e37375a moe_bench moe_grouped_tests; carry build-run/s52/hs2). The hybrid's split gated on
# the device (GroupedLaunch::f4p2_split_share: only where the experts of >= 96 slots hold that
# share of the big experts' slots, so hot8 splits and zipf stays on P2): the candidate default
# (hybrid from 16 tokens, big tiles on P2, split 96 at share 0.9) against the heuristic, unsharded
# T 128..576; share 0.75 and no split beside it. Log: $OUT/hybrid-split2.log.
set -u
D=${D:-build-run/s52/hs2}
LOG=hybrid-split2
source "$(dirname "$0")/device-run.sh"  # $L, run
TAIL=14 TMO=200 run test $D/moe_grouped_tests --gtest_filter='*F4TwoProducersSplit*:*GroupingThreeLists*:*GroupingMatches*'
S="--fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 128,192,256,320,384,448,512,576"
C="--hybrid-min 16 --f4p2-big 2 --f4p2-split 96"
TMO=80 run share90 $D/moe_bench $S --ab "$C --f4p2-split-share 0.9"
TMO=80 run share75 $D/moe_bench $S --ab "$C --f4p2-split-share 0.75"
TMO=60 run nosplit $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 --routing zipf1,zipf1.5 --tokens 192,256,320,384,448,512,576 --ab "--hybrid-min 16 --f4p2-big 2"
echo "== done $(date +%T)" >>"$L"
