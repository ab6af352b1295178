#!/usr/bin/env bash
# one device call (~150 s) on build-run/s51/p2n (59015e4 + experiments/2026-12-06-p2-two-consumers.
# patch, built here: scripts/stage-wip.sh s51/p2n experiments/2026-12-06-p2-two-consumers.patch
# 59015e4 moe_bench moe_grouped_tests; carry build-run/s51/p2n). Two P2 variants and both:
# `--wip-p2n 1`: two consumer warpgroups on the narrow k-loop (quarters w, w + 2 each; 512
# threads, 88 / 168 registers); `--wip-bulk 1`: the raw stages by bulk copies (packed weights:
# thread 0 of each producer warpgroup copies its 16-row blocks, 1024 + 128 bytes each, on a raw
# mbarrier). Each against P2, interleaved: the full launch (`--wg 1`) at glm5 / dsv3 / EP8 / TP8
# T 512..1536, zipf1, and the hybrid's P2 big tiles (hot8 T 48 / 64); then
# F4TwoProducersIsBitIdentical (every variant bit-identical to P2). Log: $OUT/p2n.log.
set -u
D=${D:-build-run/s51/p2n}
LOG=p2n
source "$(dirname "$0")/device-run.sh"  # $L, run
for v in "--wip-p2n 1" "--wip-bulk 1" "--wip-p2n 1 --wip-bulk 1"; do
  TMO=60 run "full $v" $D/moe_bench --fmt nvfp4 --shape glm5,dsv3,glm5-ep8,glm5-tp8 --tokens 512,1024,1536 --wg 1 --ab "$v"
  TMO=30 run "zipf $v" $D/moe_bench --fmt nvfp4 --shape glm5,glm5-tp8 --routing zipf1 --tokens 768,1024 --wg 1 --ab "$v"
  TMO=30 run "hot $v" $D/moe_bench --fmt nvfp4 --shape glm5,glm5-tp8 --routing hot8 --tokens 48,64 --ab "$v"
done
TAIL=8 TMO=150 run test $D/moe_grouped_tests --gtest_filter='*F4TwoProducersIsBitIdentical*'
echo "== done $(date +%T)" >>"$L"
