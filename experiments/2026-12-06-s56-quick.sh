#!/usr/bin/env bash
# The short form of experiments/2026-12-06-s56-check.sh for a call with little device time left
# (carry [".deps"]; ~250 s): scripts/gpu-test.sh without the sanitizer lanes (ctest -L gpu on the
# device build with GroupedLaunch::group_yields on by default). Logs: $OUT/gpu-test.out,
# summary.txt.
set -u
export MOE_GPU_SANITIZE=0
LOG=quick
source "$(dirname "$0")/device-run.sh"  # gpu_test
gpu_test
