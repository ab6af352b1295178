#!/usr/bin/env bash
# Session 58 (~200 s): experiments/2026-12-06-sk-fence.patch on 4362277, built here
# (scripts/stage-wip.sh s58/fence experiments/2026-12-06-sk-fence.patch 4362277; carry
# [".deps", "build-run/s58/fence"]). The ring's stream-K fix-up orders each contributor's partial
# sums before its arrival with __threadfence (fence.sc.gpu) on every lane, and the last arrival's
# reads after it with another: `--sk-fence 1` takes fence.acq_rel.gpu instead, `--sk-fence 2` no
# fence, lane 0's arrival an atom.acq_rel.gpu behind __syncwarp (CUTLASS's barrier pattern at
# warp scope). At T 1..4 the fix-up's fence, atomic and partial loads are the GEMMs' last steps
# (TP8 T 1: ~11 contributors an item). Tests (bit-identity of the modes; StreamKSmall), then 1
# and 2 each against 0, both orders: NVFP4 T 1..4 and 8, 64 on the four shapes, FP8 / BF16 TP8
# T 1, 2 (the ring there). Log: $OUT/fence.log.
set -u
LOG=fence
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=${D:-build-run/s58/fence}
TMO=150 TAIL=30 run tests $D/moe_grouped_tests --gtest_filter='*StreamKFence*:*StreamKSmall*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
for v in 1 2; do
  TMO=70 run "off-on-$v" $D/moe_bench --flush read --fmt nvfp4 $S --tokens 1,2,3,4,8,64 --iters 60 --sk-fence 0 --ab "--sk-fence $v"
  TMO=70 run "on-off-$v" $D/moe_bench --flush read --fmt nvfp4 $S --tokens 1,2,3,4,8,64 --iters 60 --sk-fence $v --ab "--sk-fence 0"
  TMO=40 run "rings-off-on-$v" $D/moe_bench --flush read --fmt fp8,bf16 --shape glm5-tp8 --tokens 1,2 --iters 60 --sk-fence 0 --ab "--sk-fence $v"
  TMO=40 run "rings-on-off-$v" $D/moe_bench --flush read --fmt fp8,bf16 --shape glm5-tp8 --tokens 1,2 --iters 60 --sk-fence $v --ab "--sk-fence 0"
done
echo "== done $(date +%T)" >>"$L"
