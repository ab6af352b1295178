#!/usr/bin/env bash
# Session 61 (carry ["build-run/s61/thr"]; ~100 s on an H100): the full launch's new thresholds for
# unsharded / EP8 FP8 (20 per expert) and BF16 (24): the moe_grouped_tests that take moe_launch's
# configurations, and moe_bench's heuristic at 19..28 per expert (the column "wg": the full
# launch). Log: $OUT/thr.log.
set -u
LOG=thr
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=build-run/s61/thr
TMO=150 TAIL=6 run tests $D/moe_grouped_tests \
  '--gtest_filter=*Heuristic*:*GlmShapeSmallBatch*:*LargeBatch*:*RandomRoutingOverTokenCounts*'
TMO=60 run fp8 $D/moe_bench --fmt fp8 --shape glm5,glm5-ep8 --routing uniform,zipf1 --tokens 608,640,768 --iters 20
TMO=60 run bf16 $D/moe_bench --fmt bf16 --shape glm5,glm5-ep8 --tokens 736,768 --iters 20
echo "== done $(date +%T)" >>"$L"
