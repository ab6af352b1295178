#!/usr/bin/env bash
# One device call (~3 min) on build-run/s55/bounds (0f1cbfe + experiments/2026-12-06-t1-bounds.patch,
# built here: scripts/stage-wip.sh s55/bounds experiments/2026-12-06-t1-bounds.patch 0f1cbfe
# moe_bench; carry build-run/s55/bounds; experiments/2026-12-06-down-combine.sh runs bits 1 and
# 2). Upper bounds of the T 1..4 levers in the docs' "Not done yet" (calls of <= 32 slots; the routing is the same in every replay, so the scratch
# already holds the call's lists): `--wip 1` launches no combine (y not written: the bound of a
# combine fused into down), 2 gate_up's ring waits for the grouping at its end (the bound of
# gate_up independent of the grouping), 4 launches no grouping (6: both), 8 down's combine fused
# (the ring's down: the last of a 32-row block's tiles sums the block's rows into y; no combine
# launch; the first form of experiments/2026-12-06-down-combine.patch), 10: 8 and 2; 16 gate_up's
# and down's early tile list (early_tiles) summed over the experts' leader lanes, not all 32
# lanes (a real change: ~150 fewer instructions per warp at T 1, before the first weight copy). The
# stream-K counters reset themselves in this build (the grouping leaves them alone with 2 / 4). B/A < 1: the
# variant faster. Read flush, both orders. Log: $OUT/bounds.log.
set -u
D=${D:-build-run/s55/bounds}
LOG=bounds
source "$(dirname "$0")/device-run.sh"  # $L, run
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
for w in 8 1 2 6 10 16; do
  TAIL=400 TMO=60 run "on-off-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --wip $w --ab "--wip 0"
  TAIL=400 TMO=60 run "off-on-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --wip 0 --ab "--wip $w"
done
echo "== done $(date +%T)" >>"$L"
