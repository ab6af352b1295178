#!/usr/bin/env bash
# one device call (~150 s) on build-run/s52/hs (HEAD e37375a + experiments/2026-12-06-hybrid-split.
# patch, built here: scripts/stage-wip.sh s52/hs experiments/2026-12-06-hybrid-split.patch e37375a
# moe_bench moe_grouped_tests; carry build-run/s52/hs). The hybrid's big tiles on P2 (f4p2_big 2)
# split by expert: big experts of >= 96 slots on a third list of 128-token tiles for the
# one-producer kernel (GroupedLaunch::f4p2_split on the hybrid, MoeGroupParams::big2_min). First
# the bit-identity tests, then unsharded glm5 / dsv3 T 64..512 against the heuristic (hybrid from
# 48 / 32 tokens per expert, big tiles on the one-producer kernel from T 65): the split alone, and
# with the hybrid from 16 / 24 tokens; then TP8 / EP8 with the split (moe_launch would not split
# there). Log: $OUT/hybrid-split.log.
set -u
D=${D:-build-run/s52/hs}
LOG=hybrid-split
source "$(dirname "$0")/device-run.sh"  # $L, run
TAIL=12 TMO=200 run test $D/moe_grouped_tests --gtest_filter='*F4TwoProducersSplit*:*HybridSplitsExperts*:*GroupingMatches*:*GroupOneWarp*'
S="--fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 64,128,192,256,384,512"
TMO=60 run split $D/moe_bench $S --ab "--f4p2-big 2 --f4p2-split 96"
for n in 16 24; do
  TMO=60 run "split-min$n" $D/moe_bench $S --ab "--hybrid-min $n --f4p2-big 2 --f4p2-split 96"
done
TMO=60 run sharded $D/moe_bench --fmt nvfp4 --shape glm5-tp8,glm5-ep8 --routing uniform,zipf1,zipf1.5,hot8 --tokens 128,256,384 --ab "--f4p2-big 2 --f4p2-split 96"
echo "== done $(date +%T)" >>"$L"
