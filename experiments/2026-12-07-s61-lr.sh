#!/usr/bin/env bash
# Session 61 (carry ["build-run/s61/lr", "build-run/s61/base"]; ~300 s on an H100): every consumer
# lane arriving on the warp-specialized kernels' `empty` barriers (experiments/2026-12-07-lane-
# release.patch, build-run/s61/lr) instead of lane 0 after __syncwarp. (1) racecheck of
# Kernels/MoeGroupedBf16Ws.Small/0..3 (HEAD: WAR hazards on the stage headers once the ring wraps);
# (2) the warp-specialized tests on the patched build; (3) the patched moe_bench against HEAD's
# (build-run/s61/base), runs alternated base lr base lr. Log: $OUT/lr.log.
set -u
LOG=lr
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=build-run/s61/lr B=build-run/s61/base
for i in 0 1 2 3; do
  echo "== racecheck $i $(date +%T)" >>"$L"
  timeout 120 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 20 \
    $D/moe_grouped_tests "--gtest_filter=*MoeGroupedBf16Ws.Small/$i" >"$o/race-$i.log" 2>&1
  grep "Potential\|Thread (\|SUMMARY\|PASSED\|FAILED" "$o/race-$i.log" | sort | uniq -c | sort -rn | head -6 >>"$L"
done
TMO=300 TAIL=12 run tests $D/moe_grouped_tests \
  '--gtest_filter=*WarpgroupMmaSmall*:*Fp8ActivationsOnTheWarpgroupMma*:*F4*:*Bf16*:*LargeBatch*:*GlmShapeSmallBatch*:*RandomRouting*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 2048,8192 --iters 10"
H="--shape glm5,glm5-ep8 --routing hot8,zipf1 --tokens 64,256 --iters 10"
for r in 1 2; do
  for b in base lr; do
    bin=$B/moe_bench; [ $b = lr ] && bin=$D/moe_bench
    for f in bf16 fp8 nvfp4; do
      TMO=120 run "$b-$r-$f" $bin --fmt $f $S
      TMO=60 run "$b-$r-$f-hyb" $bin --fmt $f $H
    done
  done
done
echo "== done $(date +%T)" >>"$L"
