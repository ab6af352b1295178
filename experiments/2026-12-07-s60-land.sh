#!/usr/bin/env bash
# Session 60 (carry ["build-run/s60/land"]; ~150 s on an H100): moe_grouped_tests of 9352877
# (BF16's full launch on the warp-specialized pair kernels by default; built here) on the tests
# that take moe_launch's configurations (the new defaults) and the BF16 variants' bit-identity
# test. Log: $OUT/land.log.
set -u
LOG=land
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
TMO=200 TAIL=60 run tests build-run/s60/land/moe_grouped_tests --gtest_filter='*LargeBatch*:*RandomRouting*:*HeuristicTakes*:*GlmShape*:*ExpertsWithout*:*WarpgroupMmaTileGemm*:*WarpgroupMmaSmall*:*PackedWeights*:*SharedExpert*:*EveryTileWidth*:*Bf16WeightTiles*'
echo "== done $(date +%T)" >>"$L"
