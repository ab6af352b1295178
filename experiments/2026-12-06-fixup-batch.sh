#!/usr/bin/env bash
# One device call (~60 s) on build-run/s54/fb (f898ce2 + experiments/2026-12-06-fixup-batch.patch,
# built here: scripts/stage-wip.sh s54/fb experiments/2026-12-06-fixup-batch.patch f898ce2
# moe_bench moe_grouped_tests; carry build-run/s54/fb). The ring's stream-K fix-up: the last
# contributor of a split item read the others' partial sums one contributor at a time (a loop of
# dependent L2 round trips: 12 contributors per gate_up item on TP8 T 1); `--wip 1` keeps four
# contributors' loads in flight, `--wip 2` divides item indices in 32 bits (64-bit divisions in
# make_item and the loader), 3 both. StreamKSmall checks the same bits; then --ab against 0 (B/A >
# 1: the variant faster), read flush, both orders. Log: $OUT/fb.log.
set -u
D=${D:-build-run/s54/fb}
LOG=fb
source "$(dirname "$0")/device-run.sh"  # $L, run
TAIL=6 TMO=120 run test $D/moe_grouped_tests --gtest_filter='*StreamKSmall*'
S="--shape glm5,glm5-tp8,glm5-ep8"
for w in 1 2 3; do
  TAIL=400 TMO=60 run "on-off-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,4,8,16,32 --iters 60 --wip $w --ab "--wip 0"
  TAIL=400 TMO=60 run "off-on-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,4,8,16,32 --iters 60 --wip 0 --ab "--wip $w"
done
echo "== done $(date +%T)" >>"$L"
