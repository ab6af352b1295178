#!/usr/bin/env bash
# The next session's first call (session 66: -s65-next.sh with -s66-h200.sh as its H200 branch;
# carry [".deps"]). On an H100 (~520 s): scripts/gpu-test.sh on
# the tree (21c888e's narrow rule at 192 per expert has run only moe_grouped_tests' first 17
# tests), then on its moe_bench the NARROW instance past 256 per expert: T 9216 (288 per expert,
# narrow share 0.32 by experiments/narrow_tiles.py, as at 128) in sustained blocks both orders
# ("on-off": narrow on the command line, A; B/A = speed-up) and interleaved, and where narrow's
# time goes at T 8192 (`--phases 1`, narrow 0 / 1: gate_up or down?) for glm5, where it loses
# 1-2%, and EP8, where it gains 2-3% at the same share. On an H200: experiments/2026-12-07-s66-h200.sh
# (issue 5's table with a device build and targets.py's verdicts, torch's whole layer) instead.
# Logs: $OUT/next.log (experiments/abtab.py), gpu-test.out, summary.txt, gpu-test-logs.tgz.
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash "$(dirname "$0")/2026-12-07-s66-h200.sh"
fi
LOG=next
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
gpu_test  # (device-run.sh: $OUT/gpu-test.out, summary.txt; builds build-gpu/)
P=build-gpu/bin/moe_bench
F="--fmt fp8 --shape glm5,dsv3 --tokens 9216 --iters 10 --sustain-ms 800 --ab-blocks 4"
TMO=45 run on-off-narrow $P $F --narrow 1 --ab "--narrow 0"
TMO=45 run off-on-narrow $P $F --ab "--narrow 1"
TMO=30 run interleaved-narrow $P --fmt fp8 --shape glm5,dsv3,glm5-ep8 --tokens 9216 --iters 10 \
  --ab "--narrow 1"
for n in 0 1; do
  TMO=30 TAIL=40 run "phases-narrow$n" $P --phases 1 --narrow $n --fmt fp8 --shape glm5,glm5-ep8 \
    --tokens 8192 --iters 10
done
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
