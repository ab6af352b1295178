#!/usr/bin/env bash
# one device call: build the landed P2, its bit-identity test, then where the full launch on P2
# overtakes the heuristic (below T 512 the heuristic is unchanged), P2 against one producer under
# skewed routing, and the hybrid's big tiles on P2
# `... probe`: instead, experiments/2026-12-05-f4p2-probes.patch applied, what bounds P2 (timing
# probes with wrong results: no dequantization, no wgmma, neither) at T 512..1536.
# `... mid` (needs moe_bench's `--ab "--wg 1"`, c4f351d): the heuristic against the full launch
# with P2 interleaved, where 2c008cf's thresholds were set from separate runs or not measured:
# unsharded T 512..1024 (16..32 per expert) by routing, TP8 / EP8 T 320..512.
set -u
o=${OUT:-/tmp/out}; mkdir -p $o; L=$o/land.log
source scripts/gpu-env.sh; moe_unpack_deps >/dev/null || exit 2
phase=${1:-all}
if [ $phase = probe ]; then
  git apply experiments/2026-12-05-f4p2-probes.patch || { echo "patch failed" >> $L; exit 3; }
fi
nvidia-smi --query-gpu=name --format=csv,noheader >> $L
moe_configure build-gpu $o/cfg.log
echo "== build $(date +%T)" >> $L
timeout 240 cmake --build build-gpu -j16 --target moe_bench moe_grouped_tests > $o/build.log 2>&1 || { grep -B2 -A6 error $o/build.log | head -60 >> $L; exit 4; }
T=build-gpu/bin/moe_grouped_tests; H=build-gpu/bin/moe_bench
run() { local tag=$1; shift; echo "== $tag $(date +%T): $*" >> $L
  timeout ${TMO:-90} "$@" 2>&1 | grep -v "^device\|^shape\|^fp8 emul" | tail -n ${TAIL:-200} >> $L; }
if [ $phase = mid ]; then
  TMO=150 run mid-unsharded $H --fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 512,640,768,896,1024 --ab "--wg 1"
  TMO=100 run mid-sharded $H --fmt nvfp4 --shape glm5-ep8,glm5-tp8 --routing uniform,zipf1,hot8 --tokens 320,384,448,512 --ab "--wg 1"
  echo "== done $(date +%T)" >> $L; exit 0
fi
if [ $phase = probe ]; then
  for pr in 1 2 3; do
    TMO=100 run probe-$pr $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --tokens 512,1024,1536 --wg 1 --ab "--wip-probe $pr"
  done
  echo "== done $(date +%T)" >> $L; exit 0
fi
TAIL=8 run test $T --gtest_filter='*F4TwoProducers*:*F4ActivationsByTma*'
for wg in 0 1; do
  TMO=80 run cross-wg$wg $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --routing uniform,zipf1,hot8 --tokens 192,256,320,384,448 --wg $wg
done
TMO=80 run skew-p2 $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --routing zipf1,hot8 --tokens 512,1024 --wg 1 --ab "--f4p2 0"
TMO=80 run big-p2 $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --routing hot8,zipf1 --tokens 48,64,128,256,384 --ab "--f4p2-big 2"
echo "== done $(date +%T)" >> $L
