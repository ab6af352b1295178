#!/usr/bin/env bash
# GPU-machine run for the grouped MoE kernels: unpack .deps, build (sm_90a), run the grouped
# parity tests, then moe_bench (one run per set of rows) and moe_vs_torch.py on the same routing
# files, then bench/moe/targets.py (issue 5's targets against the run). Logs under $OUT
# (summary.txt, bench.log, ours.jsonl, torch.log, torch.jsonl, table.md, targets.md).
# Env:
#   MOE_BENCH_PRESET=issue5   the rows issue 5 asks for (~4 min on an H200 with MOE_SKIP_TESTS=1):
#                             TP8/EP8 shares and glm5 / dsv3 at T 1..256, Zipf/hot routing, the mid range
#                             T 512..1536 (where the streaming and warpgroup-MMA launches meet),
#                             prefill T 4096/8192.
#   MOE_BENCH_SETS            rows as lines "shapes routings tokens fmts sweep iters", e.g.
#                             "glm5-tp8,glm5-ep8 uniform,zipf1.5 1,8,64 bf16,fp8 1 20"
#                             (overrides the preset; see moe_bench.cu for the names).
#   Without either: one set from MOE_BENCH_SHAPES (glm5,dsv3), MOE_BENCH_ROUTINGS (uniform),
#   MOE_BENCH_TOKENS (1,4,8,32,64,128,256), MOE_BENCH_FMT (bf16,fp8,nvfp4), MOE_BENCH_SWEEP (1),
#   MOE_BENCH_ITERS (20).
#   MOE_SKIP_TESTS=1, MOE_SKIP_TORCH=1, MOE_TORCH_TIMEOUT (s, default 300), MOE_EXTRA_TARGETS.
#   MOE_TORCH_LAYER=gemms|full: torch's timed layer (moe_vs_torch.py --layer: its grouped GEMMs on
#                             sorted, gathered rows, the default, or with the sort, gather, combine).
#   MOE_BENCH_FLUSH=memset|read: the L2 flush of both benchmarks (moe_bench --flush; read leaves
#                             clean lines, docs/perf.md session 53).
#   MOE_BENCH_PHASES=1:       moe_bench --phases 1 (each case's kernels timed apart: the table's
#                             cells add ours' GEMM kernels alone and their TFLOP/s).
#   MOE_BENCH_SUSTAIN_MS=N: moe_bench --sustain-ms N (each case held under load N ms before it is
#                             timed: power-limited clocks; the NVFP4 ring at T 8..64 is 12-16%
#                             slower after ~1 s on the H200, docs/perf.md session 27).
#   MOE_PREBUILT=DIR: run DIR/bin/moe_bench and DIR/bin/moe_grouped_tests as built on the build
#   machine (cuda-release preset: static cudart, sm_90a) instead of building here.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/build-gpu/logs}
mkdir -p "$out"
if [ -n "${MOE_PREBUILT:-}" ]; then
  build=$MOE_PREBUILT
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/summary.txt"
  echo "== prebuilt binaries from $build" | tee -a "$out/summary.txt"
else
  # shellcheck source=scripts/gpu-env.sh
  source "$root/scripts/gpu-env.sh"
  moe_unpack_deps || exit 2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/summary.txt"
  build=build-gpu
  moe_configure $build "$out/configure.log" || { tail -n 30 "$out/configure.log"; exit 3; }
  echo "== build $(date +%T)" | tee -a "$out/summary.txt"
  targets="moe_bench"
  [ "${MOE_SKIP_TESTS:-0}" != 1 ] && targets="$targets moe_grouped_tests"
  # shellcheck disable=SC2086
  cmake --build $build -j"$(nproc)" --target $targets ${MOE_EXTRA_TARGETS:-} \
    >"$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -n 30; exit 4; }
  echo "== build done $(date +%T)" | tee -a "$out/summary.txt"
fi
status=0
if [ "${MOE_SKIP_TESTS:-0}" != 1 ]; then
  MOE_REQUIRE_GPU=1 timeout 150 $build/bin/moe_grouped_tests >"$out/tests.log" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|OK \]|Failure|error:|Expected|Which is" "$out/tests.log" | head -40 | tee -a "$out/summary.txt"
fi

# Sets of rows: "shapes routings tokens fmts sweep iters" per line.
sets=${MOE_BENCH_SETS:-}
if [ -z "$sets" ] && [ "${MOE_BENCH_PRESET:-}" = issue5 ]; then
  # Sharded decode shares (compare glm5-tp8 with the Triton TP8 rows of h200-anchors.md);
  # the unsharded layers at T 1..256 (issue 5's first two targets, session 66); skewed routing
  # on the whole layer and on the busiest EP8 rank; prefill (heuristic config, fewer replays:
  # each takes tens of ms).
  sets="glm5-tp8,glm5-ep8,dsv3-tp8,dsv3-ep8 uniform 1,8,32,64,128,256 bf16,fp8,nvfp4 1 20
glm5,dsv3 uniform 1,2,4,8,32,64,128,256 bf16,fp8,nvfp4 1 20
glm5 zipf1,zipf1.5,hot8 8,64,256,1024 bf16,fp8,nvfp4 1 20
glm5-ep8 zipf1,zipf1.5,hot8 8,64,256,1024 bf16,fp8,nvfp4 1 20
glm5,glm5-tp8,glm5-ep8 uniform,zipf1 512,768,1024,1280,1536 bf16,fp8,nvfp4 0 10
glm5,dsv3,glm5-tp8 uniform 4096,8192 bf16,fp8,nvfp4 0 10"
elif [ -z "$sets" ] && [ -n "${MOE_BENCH_PRESET:-}" ]; then
  echo "run.sh: unknown MOE_BENCH_PRESET=${MOE_BENCH_PRESET} (known: issue5)" >&2
  exit 2
fi
[ -z "$sets" ] && sets="${MOE_BENCH_SHAPES:-glm5,dsv3} ${MOE_BENCH_ROUTINGS:-uniform} \
${MOE_BENCH_TOKENS:-1,4,8,32,64,128,256} ${MOE_BENCH_FMT:-bf16,fp8,nvfp4} \
${MOE_BENCH_SWEEP:-1} ${MOE_BENCH_ITERS:-20}"

rd=/tmp/moe-routing && rm -rf $rd && mkdir -p $rd
: >"$out/ours.jsonl"
: >"$out/bench.log"
rm -f "$out/torch.jsonl"
n=0
while read -r shapes routings tokens fmts sweep iters; do
  [ -z "${shapes:-}" ] && continue
  n=$((n + 1))
  echo "== bench set $n: $shapes $routings T=$tokens $fmts sweep=$sweep iters=$iters $(date +%T)" |
    tee -a "$out/summary.txt" | tee -a "$out/bench.log"
  $build/bin/moe_bench --shape "$shapes" --routing "$routings" --tokens "$tokens" --fmt "$fmts" \
    --sweep "${sweep:-1}" --iters "${iters:-20}" --sustain-ms "${MOE_BENCH_SUSTAIN_MS:-0}" \
    --flush "${MOE_BENCH_FLUSH:-memset}" --phases "${MOE_BENCH_PHASES:-0}" \
    --routing-dir $rd --json "$out/ours.$n.jsonl" \
    </dev/null >>"$out/bench.log" 2>&1 || { status=1; tail -n 5 "$out/bench.log"; }
  cat "$out/ours.$n.jsonl" >>"$out/ours.jsonl" 2>/dev/null
done <<<"$sets"
grep -vE "^  sweep" "$out/bench.log" | tee -a "$out/summary.txt"

if [ "${MOE_SKIP_TORCH:-0}" != 1 ]; then
  echo "== torch $(date +%T)" | tee -a "$out/summary.txt"
  PYTHONUNBUFFERED=1 timeout "${MOE_TORCH_TIMEOUT:-300}" python3 bench/moe/moe_vs_torch.py \
    --routing-dir $rd --ours "$out/ours.jsonl" --md "$out/table.md" --flush "${MOE_BENCH_FLUSH:-memset}" \
    --layer "${MOE_TORCH_LAYER:-gemms}" --json "$out/torch.jsonl" --time-budget $(( ${MOE_TORCH_TIMEOUT:-300} - 40 )) >"$out/torch.log" 2>&1 ||
    status=1
  tail -n 80 "$out/torch.log" | tee -a "$out/summary.txt"
fi
# Issue 5's targets against this run (bench/moe/targets.py; indicative off the H200).
echo "== targets" | tee -a "$out/summary.txt"
torch_json=()
[ -s "$out/torch.jsonl" ] && torch_json=(--torch "$out/torch.jsonl")
python3 bench/moe/targets.py --ours "$out/ours.jsonl" "${torch_json[@]}" --md "$out/targets.md" \
  --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)" 2>&1 |
  tee -a "$out/summary.txt" || status=1
echo "== done $(date +%T), status $status" | tee -a "$out/summary.txt"
exit $status
