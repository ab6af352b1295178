#!/usr/bin/env bash
# one device call (~120 s) on build-run/s51/mix (67fdd9c + experiments/2026-12-06-f4p2-split-mix.
# patch, built here: scripts/stage-wip.sh s51/mix experiments/2026-12-06-f4p2-split-mix.patch
# 67fdd9c moe_bench moe_grouped_tests; carry build-run/s51/mix). P2's split by expert in one launch
# (`--wip-mix 1`, moe_wgmma_f4mix_kernel: its CTAs divide between the big list on the one-producer
# body and P2's by their items) against the split's two launches, then against no split on TP8 /
# EP8 (where the serial second launch lost: a tail of long items), interleaved; then
# F4TwoProducersSplitByExpertIsBitIdentical with the mix. Log: $OUT/mix.log.
set -u
D=${D:-build-run/s51/mix}
LOG=mix
source "$(dirname "$0")/device-run.sh"  # $L, run
TMO=90 run vs-two $D/moe_bench --fmt nvfp4 --shape glm5,glm5-tp8,glm5-ep8 --routing uniform,zipf1,zipf1.5,hot8 --tokens 640,1024,1536 --wg 1 --f4p2-split 96 --ab "--wip-mix 1"
TMO=60 run vs-none $D/moe_bench --fmt nvfp4 --shape glm5-tp8,glm5-ep8,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 640,1024 --wg 1 --ab "--f4p2-split 96 --wip-mix 1"
TAIL=8 TMO=120 run test $D/moe_grouped_tests --gtest_filter='*F4TwoProducersSplit*'
echo "== done $(date +%T)" >>"$L"
