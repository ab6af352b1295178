#!/usr/bin/env bash
# Session 61 (carry ["build-run/s61/a"]; ~90 s on an H100): the BF16 warp-specialized kernels
# under the sanitizers, one instance at a time (Kernels/MoeGroupedBf16Ws.Small/0..3: bf16_ws 1 / 2
# x bf16_defer off / on). racecheck reported WAR hazards on a stage header (consumer lane 31's
# lds_v4 of the item, producer thread 0's sts_v4) in WarpgroupMmaSmall with all four in it.
# Log: $OUT/race.log; each racecheck's whole output in $OUT/race-N.log.
set -u
LOG=race
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=${D:-build-run/s61/a}
TMO=60 TAIL=3 run plain $D/moe_grouped_tests '--gtest_filter=*MoeGroupedBf16Ws*'
TMO=120 TAIL=3 run memcheck compute-sanitizer --tool memcheck --error-exitcode 9 $D/moe_grouped_tests '--gtest_filter=*MoeGroupedBf16Ws*'
for i in 0 1 2 3; do
  echo "== racecheck $i $(date +%T)" >>"$L"
  timeout 120 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 20 \
    $D/moe_grouped_tests "--gtest_filter=*MoeGroupedBf16Ws.Small/$i" >"$o/race-$i.log" 2>&1
  grep "Potential\|Thread (\|SUMMARY\|PASSED\|FAILED" "$o/race-$i.log" | sort | uniq -c | sort -rn | head -8 >>"$L"
done
echo "== done $(date +%T)" >>"$L"
