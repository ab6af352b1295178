#!/usr/bin/env bash
# Session 68's experiment (carry [".deps", "build-run/s68/bin"]; ~150 s on a warm machine): the
# NARROW instance's activation boxes of 64 rows (GroupedLaunch::narrow_act_box, moe_bench
# --narrow-box 0|1; built here from the tree of the commit that adds it). Reading to test: a
# narrow item (<= 64 tokens) costs ~0.9 of a full one (sessions 64-67) because it needs a stage
# (48 KB from L2 on a lone unit: its own 32 KB of weights + 16 KB of activation rows, of which
# the consumers read 8) in half the MMA cycles; with one 64-row box a stage is 40 KB. If the L2
# or TMA bytes bound it, narrow items get cheaper: FP8 T 4096..6144 (128..192 per expert, where
# the default takes narrow) and EP8 T 8192 faster, and narrow at glm5 T 8192 (256 per expert,
# where it now loses 0.8-1.1%) level or better. If the ring's latency (4 stages) bounds it,
# level. First the bit-identity test (NarrowActivationBoxesAreBitIdentical; also the existing
# activation-box tests on this binary).
# Logs: $OUT/box.log (the tests' output in $OUT/tests.log).
set -u
LOG=box
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_build
B=build-run/s68/bin
if ! { [ -x "$B/moe_bench" ] && "$B/moe_bench" --help >/dev/null 2>&1; }; then
  gpu_build moe_bench moe_grouped_tests || exit 1
  B=build-gpu/bin
fi
MOE_REQUIRE_GPU=1 timeout 200 "$B/moe_grouped_tests" \
  --gtest_filter='*NarrowActivationBoxes*:*ActivationsByTma*:*ActivationsByPosition*:*WgmmaNarrow*' \
  >"$o/tests.log" 2>&1
echo "== tests rc=$? $(date +%T)" >>"$L"
grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|Failure|Expected" "$o/tests.log" | head -20 >>"$L"
F="--fmt fp8 --iters 20"
# Interleaved, both orders (B / A: > 1 means B slower).
TMO=120 run default-on $B/moe_bench $F --shape glm5,dsv3 --tokens 4096,5120,6144 --ab "--narrow-box 1"
TMO=60 run ep8-on $B/moe_bench $F --shape glm5-ep8,dsv3-ep8 --tokens 6144,8192,9216 \
  --ab "--narrow-box 1"
TMO=60 run n1-t8192-on $B/moe_bench $F --shape glm5,dsv3 --tokens 8192 --narrow 1 \
  --ab "--narrow-box 1"
TMO=60 run n0-vs-n1box $B/moe_bench $F --shape glm5,dsv3 --tokens 8192 --narrow 0 \
  --ab "--narrow 1 --narrow-box 1"
TMO=60 run phases $B/moe_bench $F --shape glm5,glm5-ep8 --tokens 8192 --narrow 1 --narrow-box 1 \
  --phases 1 --iters 5
# Sustained blocks (power): T 5120 / EP8 8192, both orders.
S="--fmt fp8 --iters 10 --sustain-ms 800 --ab-blocks 4"
TMO=90 run sus-on-off $B/moe_bench $S --shape glm5 --tokens 5120 --narrow-box 1 --ab "--narrow-box 0"
TMO=90 run sus-off-on $B/moe_bench $S --shape glm5 --tokens 5120 --narrow-box 0 --ab "--narrow-box 1"
TMO=60 run sus-ep8-on-off $B/moe_bench $S --shape glm5-ep8 --tokens 8192 --narrow-box 1 \
  --ab "--narrow-box 0"
TMO=60 run sus-ep8-off-on $B/moe_bench $S --shape glm5-ep8 --tokens 8192 --narrow-box 0 \
  --ab "--narrow-box 1"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
