#!/usr/bin/env bash
# Session 59 (carry ["build-run/s59/bt"]; ~300 s on an H100): BF16 prefill on the warpgroup-MMA
# kernels as FP8 runs it (experiments/2026-12-07-bf16-tma.patch, built here on e281594: to rebuild,
# scripts/stage-wip.sh s59/bt experiments/2026-12-07-bf16-tma.patch e281594). Variants against the
# default (the 256-thread kernel, weights by cp.async), in one moe_bench each way (--ab, both
# orders): tma = --bf16-tma 1 (weight tiles by TMA), ws = + --bf16-ws 1 (the warp-specialized
# kernel), pairs = + --bf16-ws 2 (its 2-CTA pairs where they apply). Tests first:
# Bf16WeightTilesByTmaAreBitIdentical (new: every variant bit-identical to the default), the FP8
# TMA test, the register table. Cells: glm5 / dsv3 / TP8 / EP8 uniform T 1024..8192; glm5 / EP8
# hot8 / zipf1 T 256 / 1024 (the hybrid's big tiles). Log: $OUT/bt.log
# (python3 experiments/abtab.py bt.log). QUICK=1: pairs, pairsd and wsd at T 2048 / 8192 only,
# no skewed cells. pairsd / wsd: --bf16-defer 1 (the consumers release a stage a k-block later).
set -u
LOG=bt
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=${D:-build-run/s59/bt}
TMO=240 TAIL=30 run tests $D/moe_grouped_tests \
  --gtest_filter='*Bf16WeightTilesByTma*:*WarpgroupMmaTmaIsBitIdentical*:*RegisterTable*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 1024,2048,4096,8192 --iters 10"
K="--shape glm5,glm5-ep8 --routing hot8,zipf1 --tokens 256,1024 --iters 10"
V=("pairs:--bf16-tma 1 --bf16-ws 2" "pairsd:--bf16-tma 1 --bf16-ws 2 --bf16-defer 1"
  "wsd:--bf16-tma 1 --bf16-ws 1 --bf16-defer 1" "ws:--bf16-tma 1 --bf16-ws 1" "tma:--bf16-tma 1")
if [ "${QUICK:-0}" != 0 ]; then
  V=("${V[@]:0:$((QUICK == 2 ? 2 : 3))}")  # QUICK=2: pairs and pairsd only
  S="--shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 2048,8192 --iters 10"
fi
for v in "${V[@]}"; do
  n=${v%%:*} f=${v#*:}
  TMO=90 run "off-on-$n" $D/moe_bench --fmt bf16 $S --bf16-tma 0 --bf16-ws 0 --bf16-defer 0 --ab "$f"
  TMO=90 run "on-off-$n" $D/moe_bench --fmt bf16 $S $f --ab "--bf16-tma 0 --bf16-ws 0 --bf16-defer 0"
done
[ "${QUICK:-0}" != 0 ] && { echo "== done $(date +%T)" >>"$L"; exit 0; }
TMO=60 run "off-on-pairs" $D/moe_bench --fmt bf16 $K --bf16-tma 0 --bf16-ws 0 --bf16-defer 0 --ab "--bf16-tma 1 --bf16-ws 2"
TMO=60 run "on-off-pairs" $D/moe_bench --fmt bf16 $K --bf16-tma 1 --bf16-ws 2 --ab "--bf16-tma 0 --bf16-ws 0 --bf16-defer 0"
echo "== done $(date +%T)" >>"$L"
