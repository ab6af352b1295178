#!/usr/bin/env bash
# one device call on build-run/s50/depth (HEAD + experiments/2026-12-06-p2-depth.patch, built here
# by scripts/stage-wip.sh): P2's variants are bit-identical (F4TwoProducersIsBitIdentical with
# wip_p2cfg 1..3), then each against main's 3 ring / 3 raw stages, interleaved: 1 = 2 / 5, 2 = 2 / 4,
# 3 = 2 / 3 (the full launch, `--wg 1`; the hybrid's big tiles at hot8 T 48 / 64 by default).
set -u
# (experiments/2026-12-06-p2-half-a.sh runs this with D / LOG of its own build.)
o=${OUT:-/tmp/out}; mkdir -p $o; L=$o/${LOG:-depth}.log
D=${D:-build-run/s50/depth}
export MOE_SOURCE_DIR_OVERRIDE=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader >> $L
run() { local tag=$1; shift; echo "== $tag $(date +%T): $*" >> $L
  timeout ${TMO:-90} "$@" 2>&1 | grep -v "^device\|^shape\|^fp8 emul" | tail -n ${TAIL:-200} >> $L; }
TAIL=6 TMO=120 run test $D/moe_grouped_tests --gtest_filter='*F4TwoProducers*'
for c in 1 2 3; do
  TMO=100 run full-$c $D/moe_bench --fmt nvfp4 --shape glm5,dsv3,glm5-ep8,glm5-tp8 --tokens 512,1024,1536 --wg 1 --ab "--wip-p2cfg $c"
done
TMO=60 run zipf-1 $D/moe_bench --fmt nvfp4 --shape glm5,glm5-tp8 --routing zipf1 --tokens 768,1024 --wg 1 --ab "--wip-p2cfg 1"
TMO=60 run hot-1 $D/moe_bench --fmt nvfp4 --shape glm5,glm5-tp8 --routing hot8 --tokens 48,64 --ab "--wip-p2cfg 1"
echo "== done $(date +%T)" >> $L
