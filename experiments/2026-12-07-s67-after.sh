#!/usr/bin/env bash
# The next session's first call (session 67; carry [".deps"]): on an H200
# experiments/2026-12-07-s66-h200.sh (issue 5's table and targets.py's verdicts: the H200 last
# ran in session 41); on an H100 (~150 s, a device build of moe_bench) two questions of session
# 67. (1) Why narrow gains on EP8 at 261 per expert and loses unsharded at 256: a reading to test
# is clock, not work: EP8's ~1 ms layer runs below the 700 W cap in interleaved replays, where
# narrow's fewer MMA cycles count, the unsharded 6 ms layer at the cap. EP8 T 8192 in sustained
# blocks (`--sustain-ms 800`, both orders): a gain that vanishes there supports it. (2) Is EP8
# T 16384's ~1000 TF/s its 520 tokens per expert (fewer partial tiles) or its shape: unsharded
# glm5 / dsv3 T 16384 (512 per expert) with `--phases 1`.
# Carry [".deps", "build-run/s67/bin"] (a moe_bench built here; without it, a device build).
# Logs: as -s66-h200.sh, or $OUT/after.log.
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  MOE_PREBUILT=build-run/s67 exec bash "$(dirname "$0")/2026-12-07-s66-h200.sh"
fi
LOG=after
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_build
# A moe_bench built here and carried (carry [".deps", "build-run/s67/bin"]; built from a13d3da's
# tree, the same kernels as b4e49f4) saves the device build; else build it there.
P=build-run/s67/bin/moe_bench
if [ -x "$P" ] && "$P" --help >/dev/null 2>&1; then
  echo "== prebuilt $P" >>"$L"
else
  gpu_build moe_bench || exit 1
  P=build-gpu/bin/moe_bench
fi
F="--fmt fp8 --shape glm5-ep8,dsv3-ep8 --tokens 8192 --iters 10 --sustain-ms 800 --ab-blocks 4"
TMO=60 run ep8-on-off $P $F --narrow 1 --ab "--narrow 0"
TMO=60 run ep8-off-on $P $F --narrow 0 --ab "--narrow 1"
TMO=30 TAIL=40 run phases-16384 $P --phases 1 --fmt fp8 --shape glm5,dsv3 --tokens 16384 --iters 5
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
