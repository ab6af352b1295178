#!/usr/bin/env bash
# Session 56: the grouping kernel's placement beside gate_up's ring (experiments/2026-12-06-group-
# placement.patch on HEAD, built here: scripts/stage-wip.sh s56/gp
# experiments/2026-12-06-group-placement.patch HEAD moe_bench moe_grouped_tests; carry
# ["build-run/s56/gp"]; ~3 min). Why: `--wip 4` (no grouping launch, session 56) makes the rings
# 3-25% faster at T 1..4 while the register-streaming kernels gain <1%, and `--wip 2` (gate_up
# not waiting for the grouping's data) is level: the cost is where gate_up's CTAs can go, not the
# grouping's data. The grouping's 1 + conv blocks (512 threads, ~20 KB static shared memory) run
# when gate_up's CTAs are placed (the grouping triggers at its start); an SM holding one keeps a
# carveout chosen for it, where not all of gate_up's ring CTAs fit. `--group-exp N`: 1 gate_up
# launches when the grouping's blocks exit, 2 the grouping's carveout preference holds its block
# and the ring's CTAs, 3 both. Tests, then each against 0 (both orders, read flush). Log: $OUT/gp.log.
set -u
LOG=gp
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=build-run/s56/gp
TAIL=12 TMO=150 run tests $D/moe_grouped_tests --gtest_filter='*GroupingPlacement*:*EarlyGateUpAndDown*:*RegisterTable*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
for w in 1 2 3; do
  TAIL=400 TMO=60 run "on-off-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4,8,64 --iters 60 --group-exp $w --ab "--group-exp 0"
  TAIL=400 TMO=60 run "off-on-$w" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4,8,64 --iters 60 --group-exp 0 --ab "--group-exp $w"
done
echo "== done $(date +%T)" >>"$L"
