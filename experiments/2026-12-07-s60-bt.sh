#!/usr/bin/env bash
# Session 60 (carry ["build-run/s60/bt"]; QUICK=1 by default, ~200 s on an H100):
# experiments/2026-12-07-bf16-tma.sh on build-run/s60/bt (e281594 + experiments/2026-12-07-bf16-tma.patch
# with GroupedLaunch::bf16_defer, built here; BUILD.txt): the BF16 warp-specialized kernel and its
# pairs with and without the deferred stage release against the default, T 2048 / 8192. Log:
# $OUT/bt.log (python3 experiments/abtab.py bt.log).
set -u
D=build-run/s60/bt QUICK=${QUICK:-1} bash "$(dirname "$0")/2026-12-07-bf16-tma.sh"
