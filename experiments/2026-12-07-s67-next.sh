#!/usr/bin/env bash
# Session 67's second call (carry [".deps"]): on an H200 experiments/2026-12-07-s66-h200.sh
# (issue 5's table with targets.py's verdicts; the H200 last ran in session 41); on an H100
# (~400 s) scripts/gpu-test.sh on the tree (the EP narrow rule, kGroupedNarrowMaxMeanEp), then
# the heuristic against --narrow 0 on EP8 at 194 / 261 / 292 per expert (B/A above 1: the
# heuristic's narrow instance faster) and against --narrow 1 at 325 (the rule's full instance).
# Logs: as -s66-h200.sh, or $OUT/next.log, gpu-test.out, summary.txt.
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash "$(dirname "$0")/2026-12-07-s66-h200.sh"
fi
LOG=next
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
P=build-gpu/bin/moe_bench
TMO=60 run heuristic-vs-full $P --fmt fp8 --shape glm5-ep8,dsv3-ep8 --tokens 6144,8192,9216 \
  --iters 10 --ab "--narrow 0"
TMO=30 run heuristic-vs-narrow $P --fmt fp8 --shape glm5-ep8,dsv3-ep8 --tokens 10240 --iters 10 \
  --ab "--narrow 1"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
