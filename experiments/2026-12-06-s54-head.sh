#!/usr/bin/env bash
# Session 54's last device call (carry build-run/s54/head: 432409b's moe_grouped_tests and
# cuda_model_tests built here, scripts/stage-wip.sh s54/head "" 432409b moe_grouped_tests
# cuda_model_tests; ~150 s): the session's device time left no room for gpu-test.sh's device build,
# so the kernels' tests run from binaries built here: every moe_grouped test and cuda_model_tests,
# and beside them compute-sanitizer memcheck / racecheck on the stream-K and early-list tests
# (gpu-test.sh's grouped lane, narrowed). Log: $OUT/head.log, $OUT/san-*.log.
set -u
D=${D:-build-run/s54/head}
LOG=head
source "$(dirname "$0")/device-run.sh"  # $L, run
F='*StreamKSmall*:*EarlyGateUp*:*StreamKSplits*'
(for tool in memcheck racecheck; do
   timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $D/moe_grouped_tests \
     --gtest_filter="$F" >"$o/san-$tool.log" 2>&1
   echo "sanitizer $tool rc=$?" >>"$o/san-$tool.log"
 done) &
TAIL=8 TMO=250 run grouped $D/moe_grouped_tests
TAIL=5 TMO=100 run model $D/cuda_model_tests
wait
grep -h "SUMMARY\|PASSED\|FAILED\|rc=" "$o"/san-*.log >>"$L"
echo "== done $(date +%T)" >>"$L"
