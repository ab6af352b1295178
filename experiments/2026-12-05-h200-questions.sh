#!/usr/bin/env bash
# The questions sessions 45-47 left for an H200 (their H100 numbers are in docs/perf.md; the
# thresholds they set were measured on the H100, where decode is further from HBM's limit).
# Device tool: carry [".deps"] (scripts/gpu-deps.sh); one call per phase, each under 600 s:
#   bash experiments/2026-12-05-h200-questions.sh crossover  # heuristic vs --wg 1, FP8
#   bash experiments/2026-12-05-h200-questions.sh crossover-bf16  # the same, BF16
#   bash experiments/2026-12-05-h200-questions.sh hybrid32   # FP8 --hybrid-min 32 (kept at 48)
#   bash experiments/2026-12-05-h200-questions.sh padtiled   # the tiled padding patch, sustained
#   bash experiments/2026-12-05-h200-questions.sh nvfp4      # sessions 51-52's NVFP4 defaults
# Logs under $OUT (h200-<phase>.log, crossover-*.jsonl).
set -u
o=${OUT:-/tmp/out}
mkdir -p "$o"
phase=${1:?usage: $0 crossover|crossover-bf16|hybrid32|padtiled|nvfp4}
case $phase in
  crossover | crossover-bf16 | hybrid32 | padtiled | nvfp4) ;;
  *)
    echo "unknown phase $phase (crossover, crossover-bf16, hybrid32, padtiled, nvfp4)" >&2
    exit 2
    ;;
esac
L=$o/h200-$phase.log
# shellcheck source=scripts/gpu-env.sh
source scripts/gpu-env.sh
moe_unpack_deps || exit 2
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >>"$L"
if [ "$phase" = padtiled ]; then
  git apply experiments/2026-12-05-pad-zero-tiled.patch 2>/dev/null ||
    git apply --reverse --check experiments/2026-12-05-pad-zero-tiled.patch ||
    { echo "pad-zero-tiled.patch does not apply" >>"$L"; exit 3; }
fi
if [ ! -f build-gpu/build.ninja ]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_PREFIX_PATH="$prefix/usr" \
    -DGTest_DIR="$prefix/usr/lib/$arch/cmake/GTest" \
    -Dnlohmann_json_DIR="$prefix/usr/share/cmake/nlohmann_json" \
    -DCMAKE_CXX_FLAGS="-isystem $prefix/usr/include" \
    -DCMAKE_CUDA_FLAGS="-isystem $prefix/usr/include" \
    "${pkg_config_args[@]}" >"$o/cfg.log" 2>&1 || { tail -n 20 "$o/cfg.log" >>"$L"; exit 3; }
fi
cmake --build build-gpu -j16 --target moe_bench >"$o/build.log" 2>&1 ||
  { grep -B2 -A6 error "$o/build.log" | head -n 40 >>"$L"; exit 4; }
H=build-gpu/bin/moe_bench
run() {
  local tag=$1
  shift
  echo "== $tag $(date +%T): $*" >>"$L"
  timeout "${TMO:-200}" "$@" 2>&1 | grep -v "^device\|^shape" >>"$L"
}
case $phase in
  crossover)  # where the warpgroup-MMA launch overtakes streaming (moe_config.cc's thresholds)
    ROUNDS=2 SUSTAIN_MS=500 OUT=$o TMO=500 run fp8 bash bench/moe/crossover.sh "$H" \
      --shape glm5,glm5-ep8,glm5-tp8 --fmt fp8 --tokens 128,256,384,512,768
    ;;
  crossover-bf16)
    ROUNDS=2 SUSTAIN_MS=500 OUT=$o TMO=500 run bf16 bash bench/moe/crossover.sh "$H" \
      --shape glm5,glm5-ep8,glm5-tp8 --fmt bf16 --tokens 256,512,768,1024
    ;;
  hybrid32)  # FP8's hybrid per-expert threshold 32 instead of 48 (H100: 0.93-1.00)
    TMO=280 run uniform "$H" --fmt fp8 --shape glm5,glm5-ep8,glm5-tp8 --tokens 256,384,512,768 \
      --ab "--hybrid-min 32"
    TMO=280 run zipf "$H" --fmt fp8 --shape glm5,glm5-ep8,glm5-tp8 --routing zipf1,zipf1.5 \
      --tokens 256,512,768 --ab "--hybrid-min 32"
    ;;
  nvfp4)  # set on an H100: the hybrid's split (session 52) and the full launch's (session 51),
    # each default against what it replaced (B/A > 1: the default wins)
    R="--routing uniform,zipf1,zipf1.5,hot8"
    OLD="--f4p2-big 1 --f4p2-split 0 --f4p2-split-share 0"
    TMO=120 run hybrid-below-512 "$H" --fmt nvfp4 --shape glm5,dsv3 $R --tokens 128,192,256,384,448 \
      --ab "--hybrid-min 48 $OLD"
    TMO=120 run hybrid-from-512 "$H" --fmt nvfp4 --shape glm5,dsv3 $R --tokens 512,576 \
      --ab "--hybrid-min 32 $OLD"
    TMO=120 run full-split "$H" --fmt nvfp4 --shape glm5,dsv3 $R --tokens 640,1024,1536 \
      --ab "--f4p2-split 0"
    ;;
  padtiled)  # zero padding rows of the TMA activation tiles (H100: T 8192 1.8% faster sustained)
    TMO=500 run sustained "$H" --fmt fp8 --shape glm5,dsv3 --tokens 4096,8192 \
      --sustain-ms 1500 --ab-blocks 3 --ab "--wip-pt 1"
    ;;
esac
echo "== done $(date +%T)" >>"$L"
