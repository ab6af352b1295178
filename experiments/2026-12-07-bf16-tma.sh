#!/usr/bin/env bash
# Session 59 (carry ["build-run/s59/bt"]; ~150 s on an H100): BF16 warpgroup-MMA weight tiles by
# TMA (experiments/2026-12-07-bf16-tma.patch: GroupedLaunch::bf16_tma, off by default; moe_bench
# --bf16-tma 0|1), built here (e281594 + the patch; to rebuild: scripts/stage-wip.sh s59/bt
# experiments/2026-12-07-bf16-tma.patch e281594). Tests:
# Bf16WeightTilesByTmaAreBitIdentical (new), the FP8 TMA test and the register table; then 1
# against 0, both orders, BF16 prefill and the mid range (glm5 / dsv3 / TP8 / EP8, T 1024..8192,
# uniform; glm5 hot8 / zipf1 T 256 / 1024 where the hybrid's big tiles take the wgmma kernel).
# Log: $OUT/bt.log (python3 experiments/abtab.py bt.log).
set -u
LOG=bt
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=${D:-build-run/s59/bt}
TMO=240 TAIL=30 run tests $D/moe_grouped_tests \
  --gtest_filter='*Bf16WeightTilesByTma*:*WarpgroupMmaTmaIsBitIdentical*:*RegisterTable*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
TMO=90 run "off-on-1" $D/moe_bench --fmt bf16 $S --tokens 1024,2048,4096,8192 --iters 10 --bf16-tma 0 --ab "--bf16-tma 1"
TMO=90 run "on-off-1" $D/moe_bench --fmt bf16 $S --tokens 1024,2048,4096,8192 --iters 10 --bf16-tma 1 --ab "--bf16-tma 0"
TMO=60 run "off-on-1" $D/moe_bench --fmt bf16 --shape glm5,glm5-ep8 --routing hot8,zipf1 --tokens 256,1024 --iters 10 --bf16-tma 0 --ab "--bf16-tma 1"
TMO=60 run "on-off-1" $D/moe_bench --fmt bf16 --shape glm5,glm5-ep8 --routing hot8,zipf1 --tokens 256,1024 --iters 10 --bf16-tma 1 --ab "--bf16-tma 0"
echo "== done $(date +%T)" >>"$L"
