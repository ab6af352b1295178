#!/usr/bin/env bash
# Session 56, one device call (~3-5 min; carry ["build-run/s55/bounds", "build-run/s56/bench"],
# both built here: scripts/stage-wip.sh s55/bounds experiments/2026-12-06-t1-bounds.patch 0f1cbfe
# moe_bench; scripts/stage-wip.sh s56/bench "" 7dea9e1 moe_bench).
# 1. The bounds session 56's first call left out (log bounds2.log): `--wip 4` no grouping launch
#    (the scratch keeps the replayed routing's lists), 7 no grouping and no combine launch, gate_up
#    waiting for the grouping at its end (the launches' total bound at T 1..4). Read flush, both orders.
# 2. The heuristic against every configuration that fits (`--sweep 2`: nb x warps x CTAs per SM x
#    pipelined, tc, warpgroup MMA) on 7dea9e1's moe_bench (log sweep.log), read flush: the sharded
#    shapes from T 64 (NVFP4 62-77% and FP8 78-88% of the H100's HBM, the target 90%) and T 1..4
#    (every format). Most of the heuristic was set on the H200 (session 8's sweep, session 36's
#    warps); "sweep ... best" lines against heur_us say where it leaves time.
# 3. On an H200 only: experiments/2026-12-06-s54-h200.sh on the same moe_bench (log h200.log).
set -u
LOG=bounds2
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
D=build-run/s55/bounds
for w in 4 7; do
  TAIL=400 TMO=40 run "on-off-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --wip $w --ab "--wip 0"
  TAIL=400 TMO=40 run "off-on-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --wip 0 --ab "--wip $w"
done
echo "== done $(date +%T)" >>"$L"
B=build-run/s56/bench
L=$o/sweep.log
TAIL=3000 TMO=200 run sweep-sharded $B/moe_bench --flush read --sweep 2 --fmt nvfp4,fp8 --shape glm5-tp8,glm5-ep8 --tokens 64,128,256 --iters 20
TAIL=3000 TMO=150 run sweep-t1 $B/moe_bench --flush read --sweep 2 --fmt nvfp4,fp8,bf16 --shape glm5,glm5-tp8,glm5-ep8 --tokens 1,2,4 --iters 30
echo "== done $(date +%T)" >>"$L"
D=$B bash experiments/2026-12-06-s54-h200.sh
