#!/usr/bin/env bash
# The next session's first call (carry [".deps"]; ~320 s, ~520 s on an H200): scripts/gpu-test.sh
# on the tree (432409b, the stream-K fix-up's batched loads, has not run on a GPU), then on an H200
# only experiments/2026-12-06-s54-h200.sh with the device build's moe_bench.
set -u
LOG=first
source "$(dirname "$0")/device-run.sh"  # $o, $L, gpu_test
gpu_test
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  D=build-gpu/bin timeout 250 bash "$(dirname "$0")/2026-12-06-s54-h200.sh"
  echo "h200 rc=$?" >>"$o/summary.txt"
fi
