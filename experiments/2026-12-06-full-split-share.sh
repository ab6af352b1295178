#!/usr/bin/env bash
# one device call (~90 s) on build-run/s52/fs (0ce426e + experiments/2026-12-06-full-split-share.
# patch, built here: scripts/stage-wip.sh s52/fs experiments/2026-12-06-full-split-share.patch
# 0ce426e moe_bench moe_grouped_tests; carry build-run/s52/fs). P2's full-launch split gated by the
# big experts' share of the call's 8-token tiles (f4p2_split_share on the full launch: the big
# list's gate without its bytes bound). Unsharded (split on by default): the default against
# share 0.5 / 0.9; TP8 / EP8 (split off by default): split 96 with share 0.75 / 0.9 against none.
# Log: $OUT/full-split-share.log.
set -u
D=${D:-build-run/s52/fs}
LOG=full-split-share
source "$(dirname "$0")/device-run.sh"  # $L, run
TAIL=8 TMO=120 run test $D/moe_grouped_tests --gtest_filter='*F4TwoProducersSplit*'
R="--routing uniform,zipf1,zipf1.5,hot8"
for x in 0.5 0.9; do
  TMO=60 run "unsharded-$x" $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 640,1024,1536 --wg 1 --ab "--f4p2-split-share $x"
done
for x in 0.75 0.9; do
  TMO=60 run "sharded-$x" $D/moe_bench --fmt nvfp4 --shape glm5-tp8,glm5-ep8 $R --tokens 384,512,640,1024,1536 --wg 1 --ab "--f4p2-split 96 --f4p2-split-share $x"
done
echo "== done $(date +%T)" >>"$L"
