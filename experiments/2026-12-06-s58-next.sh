#!/usr/bin/env bash
# The session after 58, first call (carry ["build-run/s58/comb"]; ~70 s on an H100, ~400 s on an
# H200). build-run/s58/comb: 6e2123b + experiments/2026-12-06-combine-unroll.patch, built here
# (scripts/stage-wip.sh s58/comb experiments/2026-12-06-combine-unroll.patch 6e2123b); its
# moe_bench is HEAD's with the extra switch (combine_unroll off by default), so it also serves the
# H200 list. Runs experiments/2026-12-06-combine-unroll.sh (its tests with 6e2123b's
# StreamKRepeatsAreBitIdentical, not yet run on a GPU; then --combine-unroll 1 against 0, both
# orders), then on an H200 only experiments/2026-12-06-s54-h200.sh on the same moe_bench. Logs:
# $OUT/comb.log, $OUT/h200.log.
set -u
here=$(dirname "$0")
D=build-run/s58/comb bash "$here/2026-12-06-combine-unroll.sh"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  D=build-run/s58/comb bash "$here/2026-12-06-s54-h200.sh"
fi
