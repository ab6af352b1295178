#!/usr/bin/env bash
# Session 54: where the ring's T 1 time goes (carry build-run/s54/ed, ~90 s). ncu sections
# SpeedOfLight / SchedulerStats / WarpStateStats / Occupancy on the GEMM kernels of glm5 T 1 and 8,
# TP8 T 1 (NVFP4), glm5 / TP8 BF16 T 1. Logs: $OUT/ncu-*.txt.
set -u
o=${OUT:-/tmp/out}
mkdir -p "$o"
export MOE_SOURCE_DIR_OVERRIDE=$PWD
D=${D:-build-run/s54/ed}
N="ncu --clock-control none --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy --kernel-name regex:moe_gemm --launch-count 2"
for c in "glm5 1 nvfp4" "glm5 8 nvfp4" "glm5-tp8 1 nvfp4" "glm5-tp8 1 bf16" "glm5 1 bf16"; do
  set -- $c
  timeout 100 $N $D/moe_bench --shape $1 --tokens $2 --fmt $3 --sweep 0 --iters 3 >"$o/ncu-$1-$2-$3.txt" 2>&1
done
