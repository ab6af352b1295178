#!/usr/bin/env bash
# Session 62 (carry ["build-run/s62/tail"]: badcb53 + experiments/2026-12-07-wgmma-tails.patch,
# moe_bench and moe_grouped_tests built here; ~100 s on an H100): GroupedLaunch::wgmma_tail_max.
# The test WgmmaTailsAreBitIdentical, then FP8 prefill with the experts' last tiles of <= 64 tokens
# on the narrow instance against without (--ab "--tail 64", and the reverse order). Logs: tail.log.
set -u
LOG=tail
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
P=build-run/s62/tail/bin
TMO=75 TAIL=30 run test env MOE_REQUIRE_GPU=1 $P/moe_grouped_tests \
  --gtest_filter='MoeGroupedTest.WgmmaTailsAreBitIdentical'
TMO=40 run ab $P/moe_bench --fmt fp8 --shape glm5,dsv3,glm5-ep8 --routing uniform,zipf1 \
  --tokens 4096,8192 --iters 10 --ab "--tail 64"
TMO=30 run ba $P/moe_bench --fmt fp8 --shape glm5,dsv3 --tokens 4096,8192 --iters 10 --tail 64 \
  --ab "--tail 0"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
