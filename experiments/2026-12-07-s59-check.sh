#!/usr/bin/env bash
# Session 59 (carry [".deps", "build-run/s58/step"]; ~400 s on an H100): scripts/gpu-test.sh on
# the tree (device build; HEAD 3fd8cae + docs: 6e2123b's StreamKRepeatsAreBitIdentical among
# them), then the decode step of the GLM-5-shaped checkpoint on b750cfc's binaries (same kernel
# source; build-run/s58/step, built here): moengine make-tiny --shape glm5 --layers 4, then
# decode_step_bench B 1 / 16 / 64, context 1024 (the last run: session 32, H200). Logs:
# $OUT/gpu-test.out, summary.txt, step.log.
set -u
LOG=step
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
S=build-run/s58/step
m=/tmp/moe-glm5-shape
rm -rf "$m"
TMO=200 run make-tiny $S/moengine make-tiny --shape glm5 --layers 4 --out "$m"
du -sh "$m" >>"$L"
TMO=200 run decode-step $S/decode_step_bench --model-path "$m"
echo "== done $(date +%T)" >>"$L"
