#!/usr/bin/env bash
# The next session's first call (session 68; carry [".deps", "build-run/s68/bin"]: moe_bench and
# moe_grouped_tests built here from the tree that adds GroupedLaunch::narrow_act_box, static
# cudart, sm_90a, 35 MB; without them the scripts build on the device).
# On an H200: issue 5's table and verdicts (-s66-h200.sh with the carried moe_bench; its default
# launch is the kernels of fd74631: narrow_act_box is off).
# On an H100: experiments/2026-12-08-narrow-box.sh (its test, then --narrow-box 0 / 1, ~200 s),
# then, in the call's time left, s68-first.sh's `--phases 1` of sharded and NVFP4 decode.
# Logs: $OUT/box.log, $OUT/tests.log, $OUT/s68.log (or -s66-h200.sh's).
# Read the phases with experiments/phase_floor.py $OUT/s68.log (per-GEMM % of the H100 peak).
set -u
d=$(dirname "$0")
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  MOE_PREBUILT=build-run/s68 exec bash "$d/2026-12-07-s66-h200.sh"
fi
timeout 330 bash "$d/2026-12-08-narrow-box.sh"
LOG=s68
source "$d/device-run.sh"  # $o, $L, run
P=build-run/s68/bin/moe_bench
[ -x "$P" ] || P=build-gpu/bin/moe_bench
[ -x "$P" ] || exit 0
TMO=$((560 - SECONDS)) TAIL=400 run phases-decode $P --phases 1 --flush read \
  --fmt fp8,nvfp4,bf16 --shape glm5-tp8,glm5-ep8,glm5 --tokens 8,64,256 --iters 40
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
