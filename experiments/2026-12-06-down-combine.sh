#!/usr/bin/env bash
# Down's combine fused into down's ring (experiments/2026-12-06-down-combine.patch on 0f1cbfe:
# GroupedLaunch::down_combine_max_slots, down_combine_at_end, DownCombineIsBitIdentical; not run
# on a GPU in session 55, whose device starts failed) and the upper bounds of the T 1..4 levers
# (experiments/2026-12-06-t1-bounds.sh). One device call (~250 s; carry ["build-run/s55/dc",
# "build-run/s55/bounds"]), binaries built here:
#   scripts/stage-wip.sh s55/dc experiments/2026-12-06-down-combine.patch 0f1cbfe moe_bench moe_grouped_tests
#   scripts/stage-wip.sh s55/bounds experiments/2026-12-06-t1-bounds.patch 0f1cbfe moe_bench
# The fused combine's tests and its neighbours', DownCombine under memcheck, then
# --down-combine 32 against 0 (tags 8: blocks counted in after each item, 9: --down-combine-end 1,
# at the end of each warp's items; interleaved, both orders, read flush; B/A < 1: B faster) on
# glm5 / dsv3 / TP8 / EP8, every format, T 1..4, then the bounds (`--wip 1` no combine launch, 2
# gate_up's wait for the grouping at its end) and `--wip 16` (the early tile list summed over the
# experts' leader lanes only, not all 32 lanes: a real change, same bits by construction). Logs: $OUT/dc.log, bounds.log (tables:
# experiments/abtab.py LOG, each variant's speed-up per cell). If the fused combine wins: apply the patch,
# set moe_launch's default, run scripts/gpu-test.sh (its moe lane runs DownCombine under both
# sanitizers).
set -u
LOG=dc
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
T=build-run/s55/dc/moe_grouped_tests
TAIL=12 TMO=150 run tests $T --gtest_filter='*DownCombine*:*RegisterTable*:*EarlyGateUpAndDown*:*StreamKSmall*:*SharedExpertSmall*'
TAIL=6 TMO=100 run memcheck compute-sanitizer --tool memcheck --error-exitcode 9 $T --gtest_filter='*DownCombine*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
B=build-run/s55/dc/moe_bench
for e in 0 1; do  # 8: blocks counted in after each item; 9: at the end of each warp's items
  TAIL=400 TMO=40 run "on-off-$((8 + e))" $B --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --down-combine 32 --down-combine-end $e --ab "--down-combine 0"
  TAIL=400 TMO=40 run "off-on-$((8 + e))" $B --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --down-combine 0 --ab "--down-combine 32 --down-combine-end $e"
done
echo "== done $(date +%T)" >>"$L"
D=build-run/s55/bounds
L=$o/bounds.log
for w in 1 2 16; do
  TAIL=400 TMO=40 run "on-off-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --wip $w --ab "--wip 0"
  TAIL=400 TMO=40 run "off-on-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --wip 0 --ab "--wip $w"
done
echo "== done $(date +%T)" >>"$L"
