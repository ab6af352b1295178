#!/usr/bin/env bash
# one device call on binaries built here (scripts/stage-wip.sh; carry build-run/s50/n1 and
# build-run/s50/probe): where the narrow instance stops paying on the one-k-loop tree
# (2026-12-06-narrow-one-loop.sh where), the heuristic against NVFP4's full launch on P2
# interleaved (2026-12-05-f4p2-landed.sh mid: settles 2c008cf's thresholds), and P2's timing
# probes (2026-12-05-f4p2-probes.patch on 258605c: what bounds P2).
set -u
o=${OUT:-/tmp/out}; mkdir -p $o; L=$o/staged.log
N=build-run/s50/n1/moe_bench; P=build-run/s50/probe/moe_bench
export MOE_SOURCE_DIR_OVERRIDE=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader >> $L
run() { local tag=$1; shift; echo "== $tag $(date +%T): $*" >> $L
  timeout ${TMO:-90} "$@" 2>&1 | grep -v "^device\|^shape\|^fp8 emul" | tail -n 200 >> $L; }
A=$N B=$N OUT=$o bash experiments/2026-12-06-narrow-one-loop.sh where
TMO=150 run mid-unsharded $N --fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 512,640,768,896,1024 --ab "--wg 1"
TMO=100 run mid-sharded $N --fmt nvfp4 --shape glm5-ep8,glm5-tp8 --routing uniform,zipf1,hot8 --tokens 320,384,448,512 --ab "--wg 1"
for pr in 1 2 3; do
  TMO=100 run probe-$pr $P --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --tokens 512,1024,1536 --wg 1 --ab "--wip-probe $pr"
done
echo "== done $(date +%T)" >> $L
