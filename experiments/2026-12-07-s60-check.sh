#!/usr/bin/env bash
# Session 60 (carry [".deps"]; ~360 s on an H100): scripts/gpu-test.sh on the tree (device build),
# after BF16's warp-specialized defaults landed. Logs: $OUT/gpu-test.out, summary.txt.
set -u
LOG=check
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
echo "== done $(date +%T)" >>"$L"
