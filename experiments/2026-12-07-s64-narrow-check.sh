#!/usr/bin/env bash
# Session 64 (carry ["build-run/s64/nar"]; ~120 s): kGroupedNarrowMaxMean 128 for FP8 (F4 stays
# at 64), built here as build-run/s64/nar. The moe_grouped_tests whose default launches reach
# 64..128 tokens per expert, then the bench's default against --narrow 0 (FP8: B/A < 1 where the
# default now takes narrow; NVFP4: level, its rule unchanged). Log: $OUT/check.log.
set -u
LOG=check
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
B=build-run/s64/nar
T='Fp8ActivationsOnTheWarpgroupMma:GlmShapeSmallBatch:RandomRoutingOverTokenCounts:LargeBatch'
T+=':HeuristicTakesTileGemm:ExpertsWithoutTokensAndAllOnOne'
TMO=100 TAIL=30 run tests env MOE_REQUIRE_GPU=1 $B/moe_grouped_tests \
  --gtest_filter="$(echo "MoeGroupedTest.$T" | sed 's/:/:MoeGroupedTest./g')"
TMO=30 run default-vs-narrow0 $B/moe_bench --fmt fp8,nvfp4 --shape glm5,glm5-tp8 \
  --tokens 4096,8192 --iters 10 --ab "--narrow 0"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
