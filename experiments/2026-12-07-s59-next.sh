#!/usr/bin/env bash
# The session after 59, first call (carry ["build-run/s59/bt"]; ~300 s on an H100; on an H200 the
# list follows only if the first part took under 250 s). build-run/s59/bt: e281594 +
# experiments/2026-12-07-bf16-tma.patch, built here (static cudart, sm_90a; BUILD.txt); its
# moe_bench is HEAD's with the extra switches (bf16_tma, bf16_ws off by default), so it also serves the H200 list. Runs experiments/2026-12-07-bf16-tma.sh (the new test
# Bf16WeightTilesByTmaAreBitIdentical with the FP8 TMA test and the register table, then BF16
# weights by TMA, the warp-specialized kernel and its pairs against the default), then on an H200
# experiments/2026-12-06-s54-h200.sh on the same moe_bench. Logs: $OUT/bt.log, $OUT/h200.log.
set -u
here=$(dirname "$0")
D=build-run/s59/bt bash "$here/2026-12-07-bf16-tma.sh"
if [ "$SECONDS" -lt 250 ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  D=build-run/s59/bt bash "$here/2026-12-06-s54-h200.sh"
fi
