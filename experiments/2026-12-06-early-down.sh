#!/usr/bin/env bash
# One device call (~150 s) on build-run/s54/ed (b01239b + experiments/2026-12-06-early-down.patch,
# built here: scripts/stage-wip.sh s54/ed experiments/2026-12-06-early-down.patch b01239b moe_bench
# moe_grouped_tests; carry build-run/s54/ed). Down on the ring the way gate_up runs with
# early_gate_up (GroupedLaunch::wip_early_down): with PDL after gate_up, it works out the tile list
# of <= 32 slots from the routing ids and issues its first weight stages before
# griddepcontrol.wait, so its CTAs stream weights in gate_up's tail instead of after it. First
# EarlyGateUpIsBitIdentical (the early down against the grouping kernel's list, same bits), then
# --ab against the default (B/A > 1: early down faster), memset and read flush, and plain PDL on
# down for reference. Log: $OUT/ed.log.
set -u
D=${D:-build-run/s54/ed}
LOG=ed
source "$(dirname "$0")/device-run.sh"  # $L, run
TAIL=12 TMO=120 run test $D/moe_grouped_tests --gtest_filter='*EarlyGateUp*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
TMO=90 run ed-memset $D/moe_bench --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --wip-early-down 1 --ab "--wip-early-down 0"
TMO=90 run ed-read $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,4 --wip-early-down 1 --ab "--wip-early-down 0"
TMO=60 run ep8-more $D/moe_bench --fmt nvfp4,fp8,bf16 --shape glm5-ep8 --tokens 6,8,10 --wip-early-down 1 --ab "--wip-early-down 0"
TMO=60 run pdl-nvfp4 $D/moe_bench --fmt nvfp4,bf16 $S --tokens 1,2,4 --wip-early-down 1 --ab "--pdl 1"
echo "== done $(date +%T)" >>"$L"
