#!/usr/bin/env bash
# Session 51's first device call (~460 s): scripts/gpu-test.sh on the tree (with moe_bench in its
# build), then experiments/2026-12-06-f4p2-split.sh on that build, then
# experiments/2026-12-06-p2-half-a.sh on build-run/s50/depth2, staged here first:
#   scripts/gpu-deps.sh
#   scripts/stage-wip.sh s50/depth2 experiments/2026-12-06-p2-half-a.patch 5df7df0 moe_bench moe_grouped_tests
# device call: bash experiments/2026-12-06-next.sh, carry [".deps", "build-run/s50/depth2"],
# timeout 600. Logs: $OUT/summary.txt (gpu-test), split.log, half-a.log.
set -u
MOE_GPU_TARGETS="cuda_ops_tests cuda_model_tests moe_grouped_tests moengine moe_bench" \
  bash scripts/gpu-test.sh >"${OUT:-/tmp/out}/gpu-test.out" 2>&1
echo "gpu-test.sh rc=$?"
D=build-gpu/bin bash experiments/2026-12-06-f4p2-split.sh
if [ -x build-run/s50/depth2/moe_bench ]; then
  bash experiments/2026-12-06-p2-half-a.sh
else
  echo "no build-run/s50/depth2: half-A not run"
fi
