#!/usr/bin/env bash
# one device call on build-run/s50/depth2 (5df7df0 + experiments/2026-12-06-p2-half-a.patch, built
# here: scripts/stage-wip.sh s50/depth2 experiments/2026-12-06-p2-half-a.patch 5df7df0 moe_bench
# moe_grouped_tests): P2's variants are bit-identical (F4TwoProducersIsBitIdentical with
# wip_p2cfg 1..3), then each against main's 3 ring / 3 raw stages of 128 activation rows,
# interleaved, with stages of 64 activation rows (64-row activation boxes): 1 = 4 / 3, 2 = 3 / 3,
# 3 = 3 / 4 (the full launch, `--wg 1`; the hybrid's big tiles at hot8 T 48 / 64 by default).
# The phases are 2026-12-06-p2-depth.sh's, on this build; the log is half-a.log.
D=build-run/s50/depth2 LOG=half-a exec bash "$(dirname "$0")/2026-12-06-p2-depth.sh"
