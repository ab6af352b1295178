#!/usr/bin/env bash
# one device call, after scripts/gpu-test.sh built this tree (build-gpu, MOE_GPU_TARGETS with
# moe_bench): the narrow instances' one k-loop (a64a6da: the warpgroup's quarters picked at run
# time; FP8 narrow instances spill-free, F4 gate_up 232 -> 108 bytes stored) against main's two
# k-loops (build-run/s50/base: 258605c's moe_bench, built here, carried), each binary run in turn
# on the same cells (separate processes: compare the pairs, not across rounds); then, on this
# tree, where the narrow instance now stops paying (`--ab "--narrow 0"` at 64..256 per expert).
# `... ab` (default) / `... where`
set -u
o=${OUT:-/tmp/out}; mkdir -p $o; L=$o/narrow.log
phase=${1:-ab}
A=${A:-build-run/s50/base/moe_bench}; B=${B:-build-gpu/bin/moe_bench}
[ -x $A ] && [ -x $B ] || { echo "missing $A or $B" >> $L; exit 2; }
nvidia-smi --query-gpu=name --format=csv,noheader >> $L
run() { local tag=$1; shift; echo "== $tag $(date +%T): $*" >> $L
  timeout ${TMO:-90} "$@" 2>&1 | grep -v "^device\|^shape\|^fp8 emul" | tail -n ${TAIL:-200} >> $L; }
if [ $phase = ab ]; then
  # FP8: narrow by the call's mean (<= 64 per expert); hybrid narrow at T <= 64 (hot8)
  for r in 1 2; do
    for bin in A B; do
      eval b=\$$bin
      TMO=60 run "fp8-$bin-r$r" $b --fmt fp8 --shape glm5,dsv3,glm5-ep8,glm5-tp8 --routing uniform,zipf1 --tokens 256,512,1024,2048
      TMO=30 run "fp8hot-$bin-r$r" $b --fmt fp8 --shape glm5,glm5-tp8 --routing hot8 --tokens 32,48,64
    done
  done
  # NVFP4: narrow F4 only where forced (P2 holds the full launch below 64 per expert)
  for bin in A B; do
    eval b=\$$bin
    TMO=40 run "f4narrow-$bin" $b --fmt nvfp4 --shape glm5,glm5-ep8 --tokens 512,1024,2048 --wg 1 --f4p2 0 --narrow 1
  done
fi
if [ $phase = where ]; then
  TMO=120 run where-fp8 $B --fmt fp8 --shape glm5,dsv3,glm5-ep8,glm5-tp8 --routing uniform,zipf1 --tokens 2048,3072,4096,8192 --narrow 1 --ab "--narrow 0"
  TMO=60 run where-fp8-hot $B --fmt fp8 --shape glm5,glm5-tp8 --routing hot8 --tokens 64,96,128,256 --ab "--narrow 1"
fi
echo "== done $(date +%T)" >> $L
