#!/usr/bin/env bash
# one device call (any tree from the f4p2_split commit; builds here with scripts/stage-wip.sh
# s51/split "" HEAD moe_bench moe_grouped_tests and carry build-run/s51/split, or on the device):
# P2's full launch split by expert (GroupedLaunch::f4p2_split, moe_bench --f4p2-split N: experts
# of >= N slots on the one-producer kernel's 128-token tiles): its bit-identity test, then
# `--wg 1 --ab "--f4p2-split N"` under skewed routing at 20..48 tokens per expert (hot experts
# read their weights once per 128 tokens instead of 64), and against the heuristic where it keeps
# the hybrid (hot8 T 640..896 unsharded: P2 alone 13-18% slower there, session 50).
set -u
D=${D:-build-run/s51/split}
LOG=split
source "$(dirname "$0")/device-run.sh"  # $L, run
TAIL=6 TMO=150 run test $D/moe_grouped_tests --gtest_filter='*F4TwoProducersSplit*'
for n in 65 96 128; do
  TMO=120 run split-$n $D/moe_bench --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --routing uniform,zipf1,zipf1.5,hot8 --tokens 640,1024,1536 --wg 1 --ab "--f4p2-split $n"
done
TMO=90 run vs-heuristic $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 --routing hot8,zipf1.5 --tokens 640,768,896 --ab "--wg 1 --f4p2-split 65"
echo "== done $(date +%T)" >> $L
