#!/usr/bin/env bash
# GPU-machine profile of the grouped MoE GEMMs: Nsight Compute counters (pipe utilisation, warp
# stall reasons, speed of light) for one kernel launch of each GEMM per (fmt, T), and the SASS of
# the grouped GEMM kernels. Uses binaries built on the build machine (cuda-release preset) and
# carried: MOE_PREBUILT=DIR (default build-run) holds bin/moe_bench.
# Env: MOE_PROFILE_SETS lines "shape routing T fmt [moe_bench flags, e.g. --pipe 1 --ctas 2]"
#      (default: glm5 uniform 64 for each format),
#      MOE_PROFILE_KERNEL (ncu kernel-name regex, default moe_gemm; the whole layer's launches:
#      'moe_(gemm|group|quant|wgmma|tile|combine)' -- a bare 'moe' also matches moe_bench's
#      weight-filling kernels, which live in namespace moe), MOE_PROFILE_COUNT (launches profiled
#      per set, default 2: gate_up and down; the whole layer's are 4-6), OUT (logs).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
build=${MOE_PREBUILT:-build-run}
out=${OUT:-$root/build-gpu/profile}
mkdir -p "$out"
sets=${MOE_PROFILE_SETS:-$'glm5 uniform 64 nvfp4\nglm5 uniform 64 fp8\nglm5 uniform 64 bf16'}
kernel=${MOE_PROFILE_KERNEL:-moe_gemm}
count=${MOE_PROFILE_COUNT:-2}
metrics="regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active$,regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active$,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum"
n=0
while read -r shape routing T fmt extra; do
  [ -z "${shape:-}" ] && continue
  n=$((n + 1))
  echo "== profile $n: $shape $routing T=$T $fmt $(date +%T)"
  # shellcheck disable=SC2086  # $extra: moe_bench flags, split on purpose
  timeout 300 ncu --clock-control none --kernel-name "regex:$kernel" --launch-count "$count" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --metrics "$metrics" \
    "$build/bin/moe_bench" --shape "$shape" --routing "$routing" --tokens "$T" --fmt "$fmt" \
    --sweep 0 --iters 3 ${extra:-} >"$out/ncu.$n.$shape.$fmt.T$T.txt" 2>&1
  echo "   rc=$? $(grep -c 'gpu__time_duration' "$out/ncu.$n.$shape.$fmt.T$T.txt") kernels"
done <<<"$sets"
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$build/bin/moe_bench" |
    awk '/Function : /{keep = ($0 ~ /moe_gemm/)} keep' | gzip >"$out/sass_moe_gemm.txt.gz"
fi
