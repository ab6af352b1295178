#!/usr/bin/env bash
# The next session's first call (carry ["build-run/s62/xs"]; ~70 s on an H100, ~140 s on an
# H200), on build-run/s62/xs's moe_bench with --x-scatter 1 (HEAD's kernels and defaults since
# 6aeb52b). 1. Under the power cap (session 63: FP8 prefill holds 700 W, the SM clock 1.20-1.46
# GHz), does the NARROW instance win once the clock follows each variant's own power? A tile of
# <= 64 tokens then computes no padding rows (both warpgroups on its 64 tokens, half the weight
# rows each); interleaved single replays read it level at T 8192 (session 50), which hides a
# variant that draws less power. `--ab "--narrow 1"` in rounds of sustained blocks (--ab-blocks 4
# --sustain-ms 800), both orders, FP8 glm5 / dsv3 T 4096 / 8192 (not NVFP4: its narrow instance
# spills). 2. On an H200 only: experiments/2026-12-07-s63-h200.sh's runs (prefill --phases,
# decode coverage with a clean L2, hot8). Logs: $OUT/next.log (and $OUT/h200.log on an H200);
# experiments/abtab.py next.log tabulates part 1.
set -u
LOG=next
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
P=build-run/s62/xs/bin/moe_bench
F="--x-scatter 1 --fmt fp8 --shape glm5,dsv3 --tokens 4096,8192 --iters 10 --sustain-ms 800 --ab-blocks 4"
TMO=60 run on-off-narrow $P $F --ab "--narrow 1"
TMO=60 run off-on-narrow $P $F --narrow 1 --ab "--narrow 0"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash "$(dirname "$0")/2026-12-07-s63-h200.sh"
fi
