#!/usr/bin/env bash
# Session 53's first call (~300-560 s; carry [".deps"]): scripts/gpu-test.sh on the tree (c51d01a's
# test helper and b2b014d's host-side share helper had not run on a GPU), then, on an H200 only,
# h200-questions.sh's nvfp4 phase (sessions 51-52's NVFP4 defaults, set on an H100).
set -u
o=${OUT:-/tmp/out}
mkdir -p "$o"
MOE_GPU_TARGETS="cuda_ops_tests cuda_model_tests moe_grouped_tests moengine moe_bench" \
  bash scripts/gpu-test.sh >"$o/gpu-test.out" 2>&1
echo "gpu-test.sh rc=$?" >>"$o/summary.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 250 bash experiments/2026-12-05-h200-questions.sh nvfp4
  echo "h200 nvfp4 rc=$?" >>"$o/summary.txt"
fi
