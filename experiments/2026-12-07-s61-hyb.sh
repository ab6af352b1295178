#!/usr/bin/env bash
# Session 61 (carry ["build-run/s61/a"]; ~300 s on an H100): (1) WarpgroupMmaSmall with its new
# BF16 cases (the warp-specialized kernel and its pairs with TMA weights and the deferred release,
# moe_launch's full launch for BF16) plain, under memcheck and under racecheck; (2) BF16's hybrid
# big tiles (decode-sized calls with hot experts) on the warp-specialized single-CTA kernel:
# wsd = --bf16-tma 1 --bf16-ws 1 --bf16-defer 1, ws = without the deferral, against moe_launch's
# default (the 256-thread kernel, cp.async weights), one moe_bench each way (--ab, both orders).
# Log: $OUT/hyb.log (python3 experiments/abtab.py hyb.log).
set -u
LOG=hyb
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=${D:-build-run/s61/a}
F='--gtest_filter=*WarpgroupMmaSmall*'
TMO=120 TAIL=5 run small $D/moe_grouped_tests "$F"
TMO=200 TAIL=5 run memcheck compute-sanitizer --tool memcheck --error-exitcode 9 $D/moe_grouped_tests "$F"
TMO=300 TAIL=5 run racecheck compute-sanitizer --tool racecheck --error-exitcode 9 $D/moe_grouped_tests "$F"
K="--shape glm5,dsv3,glm5-tp8,glm5-ep8 --routing hot8,zipf1,uniform --tokens 64,256,1024 --iters 10"
OFF="--bf16-tma 0 --bf16-ws 0 --bf16-defer 0"
for v in "wsd:--bf16-tma 1 --bf16-ws 1 --bf16-defer 1" "ws:--bf16-tma 1 --bf16-ws 1 --bf16-defer 0"; do
  n=${v%%:*} f=${v#*:}
  TMO=90 run "off-on-$n" $D/moe_bench --fmt bf16 $K $OFF --ab "$f"
  TMO=90 run "on-off-$n" $D/moe_bench --fmt bf16 $K $f --ab "$OFF"
done
echo "== done $(date +%T)" >>"$L"
