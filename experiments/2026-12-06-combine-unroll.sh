#!/usr/bin/env bash
# Session 58 (~60 s): experiments/2026-12-06-combine-unroll.patch on 6e2123b, built here
# (scripts/stage-wip.sh s58/comb experiments/2026-12-06-combine-unroll.patch 6e2123b; carry
# ["build-run/s58/comb"]). The combine adds a row chunk's K slots in a loop unrolled by 4, so at
# K 9 (8 routed + the shared expert) its loads go out in three rounds of L2 latency;
# `--combine-unroll 1` issues all of them (K <= 16) before the first add (the same adds in the
# same order). Tests (bit-identity, both per-slot output types, shared, bad ids, 16 / 17 slots),
# then 1 against 0, both orders: every format T 1..4 on the four shapes, NVFP4 T 8 / 64, read
# flush. Log: $OUT/comb.log. (StreamKRepeatsAreBitIdentical rides along: 6e2123b's, not yet run.)
set -u
LOG=comb
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=${D:-build-run/s58/comb}
TMO=120 TAIL=20 run tests $D/moe_grouped_tests --gtest_filter='*CombineUnroll*:*SharedExpertSmall*:*StreamKRepeats*'
S="--shape glm5,dsv3,glm5-tp8,glm5-ep8"
TMO=60 run "off-on-1" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --combine-unroll 0 --ab "--combine-unroll 1"
TMO=60 run "on-off-1" $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 $S --tokens 1,2,3,4 --iters 60 --combine-unroll 1 --ab "--combine-unroll 0"
TMO=40 run "off-on-1" $D/moe_bench --flush read --fmt nvfp4 $S --tokens 8,64 --iters 40 --combine-unroll 0 --ab "--combine-unroll 1"
TMO=40 run "on-off-1" $D/moe_bench --flush read --fmt nvfp4 $S --tokens 8,64 --iters 40 --combine-unroll 1 --ab "--combine-unroll 0"
echo "== done $(date +%T)" >>"$L"
