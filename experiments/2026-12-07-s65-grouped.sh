#!/usr/bin/env bash
# Session 65's short check of 21c888e (carry [".deps"], ~150 s on an H100): the grouped MoE
# kernels' GPU tests (moe_grouped_tests, every format against the reference backend) on a device
# build of the tree, whose default launches now take the NARROW instance up to 192 tokens per
# expert. Log: $OUT/grouped.log.
set -u
LOG=grouped
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
gpu_build moe_grouped_tests || exit 1
TMO=200 TAIL=40 run moe_grouped_tests env MOE_REQUIRE_GPU=1 build-gpu/bin/moe_grouped_tests
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
