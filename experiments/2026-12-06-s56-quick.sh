#!/usr/bin/env bash
# The short form of experiments/2026-12-06-s56-check.sh for a call with little device time left
# (carry [".deps"]; ~250 s): scripts/gpu-test.sh without the sanitizer lanes (ctest -L gpu on the
# device build with GroupedLaunch::group_yields on by default). Logs: $OUT/gpu-test.out,
# summary.txt.
set -u
o=${OUT:-/tmp/out}
mkdir -p "$o"
MOE_GPU_SANITIZE=0 MOE_GPU_TARGETS="cuda_ops_tests cuda_model_tests moe_grouped_tests moengine" \
  bash scripts/gpu-test.sh >"$o/gpu-test.out" 2>&1
echo "gpu-test.sh (no sanitizers) rc=$?" >>"$o/summary.txt"
