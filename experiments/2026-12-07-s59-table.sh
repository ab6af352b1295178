#!/usr/bin/env bash
# Session 59 (carry ["build-run/s59/pre"]; ~5 min on an H200, ~6 on an H100): issue 5's table
# against torch in one command, bench/moe/run.sh with MOE_BENCH_PRESET=issue5 and the read flush
# (clean L2, as in a decode step), on a moe_bench built here (build-run/s59/pre/bin/moe_bench:
# 6e2123b + experiments/2026-12-06-combine-unroll.patch with the switch off by default, i.e. the
# kernels of HEAD; MOE_PREBUILT, no tests: gpu-test.sh ran on the tree this session). On an H200
# also the s54 list's decode coverage (T 1..256, every format and shape). Logs: $OUT/summary.txt,
# bench.log, torch.log, table.md (run.sh's), $OUT/h200.log.
set -u
here=$(dirname "$0")
MOE_PREBUILT=build-run/s59/pre MOE_SKIP_TESTS=1 MOE_BENCH_PRESET=issue5 MOE_BENCH_FLUSH=read \
  MOE_TORCH_TIMEOUT=200 timeout 480 bash bench/moe/run.sh >"${OUT:-/tmp/out}/run.out" 2>&1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  LOG=h200
  source "$here/device-run.sh"  # $L, run
  TMO=90 run coverage-read build-run/s59/pre/bin/moe_bench --flush read --fmt nvfp4,fp8,bf16 \
    --shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 1,2,4,8,16,32,64,128,256 --iters 20
fi
