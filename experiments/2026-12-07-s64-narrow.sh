#!/usr/bin/env bash
# Session 64 (carry ["build-run/s64/rs"]; ~300 s; its moe_bench without --wip-rs is 51e9bbd's
# kernels and defaults). Session 63's sustained blocks, read with the right orientation (its
# script named the orders the other way round: abtab.py's speed-ups came out inverted), had the
# NARROW instance (--narrow 1: tiles of <= 64 tokens on both consumer warpgroups, no padding
# warpgroup) 2.8-3.2% faster at FP8 glm5 / dsv3 T 4096 and 0.2-1.2% at T 8192, where the
# heuristic does not take it (only at <= 64 tokens per expert, kGroupedNarrowMaxMean). Here: the
# same in both orders over more T, shapes and NVFP4 (F4's narrow instance), then interleaved
# (single replays, unthrottled).
# "on-off-narrow": the variant on the command line (A) and off in --ab (B), B/A = speed-up.
# Logs: $OUT/narrow.log; experiments/abtab.py narrow.log.
set -u
LOG=narrow
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
B=build-run/s64/rs/moe_bench
S="--iters 10 --sustain-ms 800 --ab-blocks 4"
F1="--fmt fp8 --shape glm5,dsv3 --tokens 3072,4096,6144,8192 $S"
TMO=90 run on-off-narrow $B $F1 --narrow 1 --ab "--narrow 0"
TMO=90 run off-on-narrow $B $F1 --ab "--narrow 1"
F2="--fmt nvfp4 --shape glm5 --tokens 4096,8192 $S"
TMO=40 run on-off-narrow $B $F2 --narrow 1 --ab "--narrow 0"
TMO=40 run off-on-narrow $B $F2 --ab "--narrow 1"
F3="--fmt fp8 --shape glm5-ep8,glm5-tp8 --tokens 4096,8192 $S"
TMO=40 run on-off-narrow $B $F3 --narrow 1 --ab "--narrow 0"
TMO=40 run off-on-narrow $B $F3 --ab "--narrow 1"
TMO=60 run interleaved-narrow $B --fmt fp8,nvfp4 --shape glm5,dsv3,glm5-ep8,glm5-tp8 \
  --tokens 3072,4096,8192 --iters 10 --ab "--narrow 1"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
