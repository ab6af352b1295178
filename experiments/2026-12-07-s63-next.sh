#!/usr/bin/env bash
# The next session's first call (carry [".deps", "build-run/s63/xpad"]; ~550 s on an H100 with
# gpu-test.sh, ~220 s on an H200 without it). build-run/s63/xpad = 781478e +
# experiments/2026-12-07-x-padded.patch (moe_bench and moe_grouped_tests built here; with
# --wip-xpad 0 it runs HEAD's kernels and defaults).
# Under the power cap (session 63: FP8 prefill holds 700 W, the SM clock 1.20-1.46 GHz), two
# ways to compute less or cheaper padding, each in rounds of sustained blocks (--ab-blocks 4
# --sustain-ms 800: each variant at the clock its own power allows; interleaved single replays
# hide a variant that draws less) and both orders, FP8 glm5 / dsv3 T 4096 / 8192:
# 1. x's copy by padded position (GroupedLaunch::wip_x_padded, --wip-xpad 1): gate_up's TMA
#    boxes carry zeros past a tile's count instead of the next expert's tokens. First its test
#    (GateUpActivationsByPositionAreBitIdentical with the padded cases), then the A/B.
# 2. The NARROW instance (--narrow 1): a tile of <= 64 tokens computes no padding rows (level in
#    interleaved replays, session 50).
# 3. On an H200: experiments/2026-12-07-s63-h200.sh's runs on the same binary; elsewhere
#    scripts/gpu-test.sh on the tree (HEAD since 6aeb52b has not run it: one test assertion and
#    gpu-test.sh's own log packing are new).
# Logs: $OUT/next.log (and $OUT/h200.log on an H200); experiments/abtab.py next.log tabulates
# the A/Bs.
set -u
LOG=next
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
B=build-run/s63/xpad
TMO=150 TAIL=30 run test env MOE_REQUIRE_GPU=1 $B/moe_grouped_tests \
  --gtest_filter='MoeGroupedTest.GateUpActivationsByPositionAreBitIdentical'
F="--fmt fp8 --shape glm5,dsv3 --tokens 4096,8192 --iters 10 --sustain-ms 800 --ab-blocks 4"
TMO=60 run on-off-xpad $B/moe_bench $F --ab "--wip-xpad 1"
TMO=60 run off-on-xpad $B/moe_bench $F --wip-xpad 1 --ab "--wip-xpad 0"
TMO=60 run on-off-narrow $B/moe_bench $F --ab "--narrow 1"
TMO=60 run off-on-narrow $B/moe_bench $F --narrow 1 --ab "--narrow 0"
TMO=30 run interleaved-xpad $B/moe_bench --fmt fp8 --shape glm5,dsv3,glm5-ep8 --tokens 4096,8192 \
  --iters 10 --ab "--wip-xpad 1"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  P=$B/moe_bench bash "$(dirname "$0")/2026-12-07-s63-h200.sh"
else
  gpu_test  # (device-run.sh: $OUT/gpu-test.out, summary.txt)
fi
