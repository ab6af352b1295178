#!/usr/bin/env bash
# Session 54's last device call (carry build-run/s54/head: 432409b's moe_grouped_tests and
# cuda_model_tests built here, scripts/stage-wip.sh s54/head "" 432409b moe_grouped_tests
# cuda_model_tests; ~120 s): the session's device time left no room for gpu-test.sh's device build
# (nor for all of moe_grouped_tests, ~500 s serial), so the tests of the changed code run from
# binaries built here: the ring's stream-K and early-list tests, the register table, the GLM-shaped
# small batch, bad ids, the shared expert, and cuda_model_tests; beside them compute-sanitizer
# memcheck / racecheck on the stream-K and early-list tests (gpu-test.sh's grouped lane,
# narrowed). Log: $OUT/head.log, $OUT/san-*.log.
set -u
D=${D:-build-run/s54/head}
LOG=head
source "$(dirname "$0")/device-run.sh"  # $L, run
F='*StreamKSmall*:*EarlyGateUp*'
(for tool in memcheck racecheck; do
   timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $D/moe_grouped_tests \
     --gtest_filter="$F" >"$o/san-$tool.log" 2>&1
   echo "sanitizer $tool rc=$?" >>"$o/san-$tool.log"
 done) &
TAIL=8 TMO=150 run grouped $D/moe_grouped_tests --gtest_filter='*StreamK*:*DynamicSplit*:*EarlyGateUp*:*RegisterTable*:*GlmShapeSmallBatch*:*BadExpertIds*:*SharedExpertSmall*'
TAIL=5 TMO=100 run model $D/cuda_model_tests
wait
grep -h "SUMMARY\|PASSED\|FAILED\|rc=" "$o"/san-*.log >>"$L"
echo "== done $(date +%T)" >>"$L"
