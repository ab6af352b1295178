#!/usr/bin/env bash
# one device call (~100 s) on build-run/s51/p2n (e000982 + experiments/2026-12-06-p2-two-consumers.
# patch, built here: scripts/stage-wip.sh s51/p2n experiments/2026-12-06-p2-two-consumers.patch
# e000982 moe_bench moe_grouped_tests; carry build-run/s51/p2n): P2 with two consumer warpgroups on
# the narrow k-loop (quarters w, w + 2 each; 512 threads, 88 / 168 registers) is bit-identical to
# P2 (F4TwoProducersIsBitIdentical with wip_p2n), then against P2, interleaved: the full launch
# (`--wg 1`) at glm5 / dsv3 / EP8 / TP8 T 512..1536, zipf1, and the hybrid's P2 big tiles (hot8 T
# 48 / 64). Log: $OUT/p2n.log.
set -u
D=${D:-build-run/s51/p2n}
LOG=p2n
source "$(dirname "$0")/device-run.sh"  # $L, run
TMO=60 run full $D/moe_bench --fmt nvfp4 --shape glm5,dsv3,glm5-ep8,glm5-tp8 --tokens 512,1024,1536 --wg 1 --ab "--wip-p2n 1"
TMO=30 run zipf $D/moe_bench --fmt nvfp4 --shape glm5,glm5-tp8 --routing zipf1 --tokens 768,1024 --wg 1 --ab "--wip-p2n 1"
TMO=30 run hot $D/moe_bench --fmt nvfp4 --shape glm5,glm5-tp8 --routing hot8 --tokens 48,64 --ab "--wip-p2n 1"
TAIL=8 TMO=150 run test $D/moe_grouped_tests --gtest_filter='*F4TwoProducersIsBitIdentical*'
echo "== done $(date +%T)" >>"$L"
