#!/usr/bin/env bash
# The GPU machine's test run (Ubuntu 24.04, CUDA 13.0, CMake 4, no Debian packages, no network).
# Run in the repo root with .deps/ carried from the build machine (scripts/gpu-deps.sh):
#   bash scripts/gpu-test.sh            # unpack deps, configure sm_90a, build, ctest -L gpu,
#                                       # compute-sanitizer memcheck (+ racecheck) on the model
#                                       # tests, racecheck on the absorbed-MLA kernel tests,
#                                       # memcheck + racecheck on the warpgroup-MMA MoE GEMM
# Logs go to $OUT when it is set (the device tool: summary.txt, the rest packed into
# gpu-test-logs.tgz at the end), else build-gpu/logs. Env: MOE_GPU_JOBS
# (build parallelism, default nproc), MOE_GPU_SANITIZE=0 to skip the sanitizer runs (moe: only
# the grouped MoE kernels' memcheck and racecheck, when no other GPU code changed),
# MOE_GPU_BENCH=1 to also write the GLM-5-shaped checkpoint (make-tiny --shape glm5, NVFP4,
# MOE_BENCH_LAYERS layers, default 4) and run bench/decode_step on it (bench.txt); if the NVFP4
# run fails, it retries with BF16 experts at MOE_BENCH_BF16_LAYERS (default 2) layers. The
# sanitizer runs go beside ctest (MOE_GPU_PARALLEL=0, or MOE_GPU_BENCH=1: after it).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${MOE_GPU_BUILD:-build-gpu}
logs=${OUT:-$root/$build/logs}
mkdir -p "$logs"
# shellcheck source=scripts/gpu-env.sh
source "$root/scripts/gpu-env.sh"  # prefix, arch, moe_unpack_deps
status=0
step() { echo "== $* ($(date +%T))" | tee -a "$logs/summary.txt"; }

step "unpack .deps into $prefix"
moe_unpack_deps || exit 2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$logs/summary.txt"

step "configure ($build, sm_90a)"
moe_configure "$build" "$logs/configure.log" || { tail -n 40 "$logs/configure.log"; exit 3; }

step "build"
targets=${MOE_GPU_TARGETS:-cuda_ops_tests cuda_model_tests moe_grouped_tests moengine moe_bench}
[ "${MOE_GPU_BENCH:-0}" = 1 ] && targets="$targets decode_step_bench"
# shellcheck disable=SC2086
cmake --build "$build" -j"${MOE_GPU_JOBS:-$(nproc)}" --target $targets >"$logs/build.log" 2>&1 ||
  { grep -E "error|Error" "$logs/build.log" | head -n 40; exit 4; }
grep -c "warning" "$logs/build.log" | sed 's/^/build warnings: /' | tee -a "$logs/summary.txt"

# The sanitizer runs, in two lanes (model + MLA, grouped MoE) that each append to a summary file of
# their own ($1) and return 1 on a failure. Without MOE_GPU_BENCH they run beside ctest (their tests
# check results, not times; ctest's are mostly the CPU reference's arithmetic), which keeps the
# whole script under the device tool's 600 s per command: alone, after the build (~60 s), ctest took
# 167 s, the model racecheck 198 s and the grouped racecheck 118 s on an H100 (session 47).
lane_model() {
  local sum=$1 st=0 bin="$build/bin/cuda_model_tests"
  echo "== compute-sanitizer memcheck: cuda_model_tests ($(date +%T))" >>"$sum"
  timeout 400 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" \
    >"$logs/memcheck.log" 2>&1 || st=1
  grep -E "ERROR SUMMARY|PASSED|FAILED" "$logs/memcheck.log" | tail -n 5 >>"$sum"
  echo "== compute-sanitizer racecheck: cuda_model_tests (glm_moe_dsa fixture) ($(date +%T))" >>"$sum"
  timeout 450 compute-sanitizer --tool racecheck --error-exitcode 9 "$bin" \
    --gtest_filter='Fixtures/*/0' >"$logs/racecheck.log" 2>&1 || st=1
  grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED" "$logs/racecheck.log" | tail -n 5 >>"$sum"
  # The absorbed-MLA core's shared-memory pipeline on ragged batches with DSA selections.
  echo "== compute-sanitizer racecheck: cuda_ops_tests (absorbed MLA) ($(date +%T))" >>"$sum"
  timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 "$build/bin/cuda_ops_tests" \
    --gtest_filter='*MlaAttentionAbsorbedShortContexts*:*MlaAttentionNoAttendedKey*' \
    >"$logs/racecheck-mla.log" 2>&1 || st=1
  grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED" "$logs/racecheck-mla.log" | tail -n 5 >>"$sum"
  return $st
}
# The warpgroup-MMA GEMM's cp.async ring, its tile lists and gathered rows (and the hybrid);
# the streaming GEMM's stream-K partial sums and arrival counters; the shared expert's slot;
# gate_up's ring with its first stages issued before the wait (EarlyGateUp); the one-warp
# grouping (GroupOneWarp); NVFP4 computed in FP8 with its activation tiles by TMA
# (F4ActivationsByTma: the F4 producers' full barrier counts them as bytes); the warp-specialized
# kernels' rings wrapping within an item, BF16 (MoeGroupedBf16Ws), FP8, its pairs and NVFP4
# (WarpSpecializedRingWraps): stages and headers reused across the `empty` barriers.
lane_moe() {
  local sum=$1 st=0 tool
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer $tool: moe_grouped_tests (warpgroup-MMA GEMM, stream-K) ($(date +%T))" >>"$sum"
    timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 "$build/bin/moe_grouped_tests" \
      --gtest_filter='*WarpgroupMmaSmall*:*StreamKSmall*:*PackKernel*:*SharedExpertSmall*:*Fp8ActivationQuantization*:*EarlyGateUp*:*GroupOneWarp*:*F4ActivationsByTma*:*MoeGroupedBf16Ws*:*WarpSpecializedRingWraps*' \
      >"$logs/$tool-wgmma.log" 2>&1 || st=1
    grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED" "$logs/$tool-wgmma.log" | tail -n 5 >>"$sum"
  done
  return $st
}
sanitize=${MOE_GPU_SANITIZE:-1}
lanes=()
lane_dir=$(mktemp -d)  # the lanes' summaries (not in $logs: the device tool returns 8 files)
[ "$sanitize" = 1 ] && lanes+=(model)
{ [ "$sanitize" = 1 ] || [ "$sanitize" = moe ]; } && lanes+=(moe)
# Beside ctest unless the decode benchmark runs (its timings want the GPU to themselves) or
# MOE_GPU_PARALLEL=0.
parallel=${MOE_GPU_PARALLEL:-1}
[ "${MOE_GPU_BENCH:-0}" = 1 ] && parallel=0
export MOE_REQUIRE_GPU=1
pids=()
if [ "$parallel" = 1 ]; then
  for ln in "${lanes[@]}"; do
    : >"$lane_dir/$ln.txt"
    step "sanitizer lane $ln started beside ctest"
    lane_$ln "$lane_dir/$ln.txt" &
    pids+=($!)
  done
fi

step "ctest -L gpu"
(cd "$build" && ctest -L gpu --output-on-failure -j4 --timeout 600) >"$logs/ctest.log" 2>&1 || status=1
grep -E "tests passed|tests failed|Total Test time|\*\*\*Failed|Failed  |Skipped" "$logs/ctest.log" |
  tee -a "$logs/summary.txt"

if [ "${MOE_GPU_BENCH:-0}" = 1 ]; then
  model=${MOE_BENCH_MODEL:-/tmp/moe-glm5-shape}
  bench() {  # bench LABEL MAKE_TINY_ARGS...
    local label=$1
    shift
    step "make-tiny --shape glm5 $* ($label)"
    rm -rf "$model"
    "$build/bin/moengine" make-tiny --shape glm5 --out "$model" "$@" 2>&1 | tail -n 2 |
      tee -a "$logs/summary.txt" || return 1
    du -sh "$model" | tee -a "$logs/summary.txt"
    step "decode_step_bench ($label)"
    timeout 400 "$build/bin/decode_step_bench" --model-path "$model" \
      >"$logs/bench-$label.txt" 2>&1
  }
  if bench nvfp4 --layers "${MOE_BENCH_LAYERS:-4}"; then
    cat "$logs/bench-nvfp4.txt" | tee -a "$logs/summary.txt"
  else
    tail -n 5 "$logs/bench-nvfp4.txt" | tee -a "$logs/summary.txt"
    if bench bf16 --bf16 --layers "${MOE_BENCH_BF16_LAYERS:-2}"; then
      cat "$logs/bench-bf16.txt" | tee -a "$logs/summary.txt"
    else
      tail -n 5 "$logs/bench-bf16.txt" | tee -a "$logs/summary.txt"
      status=1
    fi
  fi
  rm -rf "$model"
fi
if [ "$parallel" = 1 ]; then
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
    tee -a "$logs/summary.txt" <"$lane_dir/${lanes[$i]}.txt"
  done
else
  for ln in "${lanes[@]}"; do
    : >"$lane_dir/$ln.txt"
    lane_$ln "$lane_dir/$ln.txt" || status=1
    tee -a "$logs/summary.txt" <"$lane_dir/$ln.txt"
  done
fi
step "done, status $status"
# The device tool returns at most 8 files from $OUT and this run writes up to 9 logs beside
# summary.txt (session 51 lost two files that way): there they go into one archive. Only this
# script's own logs: a caller's logs in $OUT stay where they are (session 63).
if [ -n "${OUT:-}" ]; then
  own=()
  for f in configure build ctest memcheck racecheck racecheck-mla memcheck-wgmma racecheck-wgmma; do
    if [ -f "$logs/$f.log" ]; then own+=("$f.log"); fi
  done
  if [ ${#own[@]} -gt 0 ]; then
    (cd "$logs" && tar czf gpu-test-logs.tgz "${own[@]}" && rm -f "${own[@]}") ||
      echo "gpu-test.sh: could not pack the logs in $logs" >&2
  fi
fi
exit $status
