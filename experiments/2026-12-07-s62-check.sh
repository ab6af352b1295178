#!/usr/bin/env bash
# Session 62's closing call (carry [".deps", "build-run/s62/ph"]; ~450 s on an H100):
# scripts/gpu-test.sh on the tree (88b953a's GlmShapeSmallBatch on 8 experts, 672fd5b's
# moe_bench_phases GPU test; gpu-test.sh now builds moe_bench), then issue 5's table against torch
# with each case's kernels timed apart (bench/moe/run.sh, MOE_BENCH_PRESET=issue5,
# MOE_BENCH_PHASES=1, read flush, on build-run/s62/ph's moe_bench: 672fd5b's, built here).
# Logs: $OUT/gpu-test.out, summary.txt, run.out, bench.log, torch.log, table.md.
set -u
source "$(dirname "$0")/device-run.sh"  # $o, gpu_test
gpu_test
mkdir -p build-run/s62/ph/tbl/bin && cp build-run/s62/ph/bin/moe_bench build-run/s62/ph/tbl/bin/
MOE_PREBUILT=build-run/s62/ph/tbl MOE_SKIP_TESTS=1 MOE_BENCH_PRESET=issue5 MOE_BENCH_FLUSH=read \
  MOE_BENCH_PHASES=1 MOE_TORCH_TIMEOUT=150 timeout 200 bash bench/moe/run.sh >"$o/run.out" 2>&1
echo "run.sh rc=$?" >>"$o/summary.txt"
