#!/usr/bin/env bash
# Session 58 (carry ["build-run/s58/bench", "build-run/s58/step"], binaries built here). On an
# H200: the s54 list (experiments/2026-12-06-s54-h200.sh with D=build-run/s58/bench, ~300 s). On
# anything else: the decode step of the GLM-5-shaped checkpoint (moengine make-tiny --shape glm5
# --layers 4, NVFP4 experts; bench/decode_step B 1 / 16 / 64, context 1024), as gpu-test.sh's
# MOE_GPU_BENCH runs it, on b750cfc's binaries (build-run/s58/step; the last run was session 32's,
# on the H200). Log: $OUT/step.log (or h200.log).
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  D=build-run/s58/bench exec bash "$(dirname "$0")/2026-12-06-s54-h200.sh"
fi
LOG=step
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
S=build-run/s58/step
m=/tmp/moe-glm5-shape
rm -rf "$m"
TMO=200 run make-tiny $S/moengine make-tiny --shape glm5 --layers 4 --out "$m"
du -sh "$m" >>"$L"
TMO=300 run decode-step $S/decode_step_bench --model-path "$m"
echo "== done $(date +%T)" >>"$L"
