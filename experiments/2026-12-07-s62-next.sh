#!/usr/bin/env bash
# The next session's first call (carry ["build-run/s62/xs"]: b568039 + experiments/2026-12-07-x-pos-
# scatter.patch, moe_bench and moe_grouped_tests built here; ~120 s on an H100, ~260 s on an
# H200). 1. The x_pos copy by token (GroupedLaunch::x_pos_scatter, off in the build): the test
# (GateUpActivationsByPositionAreBitIdentical with its scatter checks), then FP8 / NVFP4 prefill
# --ab "--x-scatter 1" both orders and --phases (moe_x_pos_kernel against moe_x_pos_scatter_kernel;
# the gather is 255 us of glm5 FP8 T 8192's 6885 on the H100). 2. On an H200 only: issue 5's
# table with the GEMMs' own rate (run.sh, MOE_BENCH_PRESET=issue5, MOE_BENCH_PHASES=1, read
# flush; the switch off: HEAD's kernels) and the unsharded decode rows T 1..256. Logs: $OUT/next.log,
# and on an H200 $OUT/table.tgz (run.sh's files in one archive: the device returns few files).
set -u
LOG=next
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
P=build-run/s62/xs/bin
TMO=120 TAIL=20 run test env MOE_REQUIRE_GPU=1 $P/moe_grouped_tests \
  --gtest_filter='MoeGroupedTest.GateUpActivationsByPositionAreBitIdentical'
F="--fmt fp8,nvfp4 --shape glm5,dsv3,glm5-ep8 --tokens 4096,8192 --iters 10"
TMO=40 run ab $P/moe_bench $F --ab "--x-scatter 1"
TMO=40 run ba $P/moe_bench $F --x-scatter 1 --ab "--x-scatter 0"
TMO=40 run phases $P/moe_bench --fmt fp8 --shape glm5 --tokens 4096,8192 --iters 10 --phases 1 \
  --x-scatter 1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  mkdir -p /tmp/t build-run/s62/xs/tbl/bin && cp $P/moe_bench build-run/s62/xs/tbl/bin/
  OUT=/tmp/t MOE_PREBUILT=build-run/s62/xs/tbl MOE_SKIP_TESTS=1 MOE_BENCH_PRESET=issue5 \
    MOE_BENCH_FLUSH=read MOE_BENCH_PHASES=1 MOE_TORCH_TIMEOUT=150 timeout 200 bash bench/moe/run.sh \
    >/tmp/t/run.out 2>&1
  tar czf "$o/table.tgz" -C /tmp/t .
  TMO=80 run coverage-read $P/moe_bench --flush read --fmt nvfp4,fp8,bf16 --shape glm5,dsv3 \
    --tokens 1,2,4,8,16,32,64,128,256 --iters 20
fi
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
