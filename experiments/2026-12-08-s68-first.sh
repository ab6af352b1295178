#!/usr/bin/env bash
# Session 68's calls (carry [".deps", "build-run/s68/bin"] or [".deps", "build-run/s67/bin"]). On an H200: issue 5's table and
# verdicts (-s66-h200.sh with the carried moe_bench). On an H100 (~60 s): where sharded and NVFP4
# decode lose their bandwidth, per kernel (`--phases 1`, read flush) at T 8 / 64 / 256 for TP8,
# EP8 and unsharded glm5 in every format (the targets furthest from 90% on the H100 in session
# 59's table: TP8 FP8 80-82%, TP8 NVFP4 60-71%, EP8 NVFP4 76%, unsharded NVFP4 T 256 75% of the
# H100's 3.35 TB/s).
# Then (H100) issue 5's table as -s66-h200.sh makes it, in the call's remaining time.
# Logs: as -s66-h200.sh, or $OUT/s68.log (+ -s66-h200.sh's).
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  pb=build-run/s68
  [ -x $pb/bin/moe_bench ] || pb=build-run/s67
  MOE_PREBUILT=$pb exec bash "$(dirname "$0")/2026-12-07-s66-h200.sh"
fi
LOG=s68
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_build
P=build-run/s68/bin/moe_bench  # (carried; else build-run/s67's, else a device build)
[ -x "$P" ] || P=build-run/s67/bin/moe_bench
if [ -x "$P" ] && "$P" --help >/dev/null 2>&1; then
  echo "== prebuilt $P" >>"$L"
else
  gpu_build moe_bench || exit 1
  P=build-gpu/bin/moe_bench
fi
TMO=200 TAIL=400 run phases-decode $P --phases 1 --flush read --fmt fp8,nvfp4,bf16 \
  --shape glm5-tp8,glm5-ep8,glm5 --tokens 8,64,256 --iters 40
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
# Then issue 5's table on this GPU (last on an H100 in session 59, before BF16 took the
# warp-specialized pairs and FP8's narrow rules moved), verdicts marked indicative by
# targets.py; no torch whole layer (the call's 600 s).
export MOE_PREBUILT=${P%/bin/moe_bench}
MOE_TABLE_TMO=$((560 - SECONDS)) MOE_NO_FULL=1 bash "$(dirname "$0")/2026-12-07-s66-h200.sh"
# The same rows judged against the H100's own 3.35 TB/s (bench/moe/targets.py --peak).
if [ -s "$o/table/ours.jsonl" ]; then
  tj=()
  [ -s "$o/table/torch.jsonl" ] && tj=(--torch "$o/table/torch.jsonl")
  python3 bench/moe/targets.py --ours "$o/table/ours.jsonl" "${tj[@]}" --peak 3350 \
    --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)" \
    --md "$o/table/targets-3350.md" >/dev/null 2>>"$L"
fi
