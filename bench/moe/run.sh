#!/usr/bin/env bash
# GPU-machine run for the grouped MoE kernels: unpack .deps, build (sm_90a), run the grouped
# parity tests, then moe_bench and moe_vs_torch.py on the same routing. Logs under $OUT.
# Env: MOE_BENCH_TOKENS, MOE_BENCH_FMT, MOE_BENCH_SHAPES, MOE_SKIP_TESTS=1.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/build-gpu/logs}
mkdir -p "$out"
prefix=/tmp/moe-deps
arch=x86_64-linux-gnu
rm -rf "$prefix" && mkdir -p "$prefix"
for f in .deps/*.deb; do dpkg-deb -x "$f" "$prefix"; done
for pc in "$prefix"/usr/lib/$arch/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc; do
  [ -f "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$prefix/usr|" "$pc"
done
export PKG_CONFIG_PATH="$prefix/usr/lib/$arch/pkgconfig:$prefix/usr/share/pkgconfig"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$prefix/usr/lib/$arch"
pc_args=()
command -v pkg-config >/dev/null 2>&1 || pc_args=(-DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/summary.txt"
build=build-gpu
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_PREFIX_PATH="$prefix/usr" \
  -DGTest_DIR="$prefix/usr/lib/$arch/cmake/GTest" \
  -Dnlohmann_json_DIR="$prefix/usr/share/cmake/nlohmann_json" \
  -DCMAKE_CXX_FLAGS="-isystem $prefix/usr/include" -DCMAKE_CUDA_FLAGS="-isystem $prefix/usr/include" \
  "${pc_args[@]}" >"$out/configure.log" 2>&1 || { tail -n 30 "$out/configure.log"; exit 3; }
echo "== build $(date +%T)" | tee -a "$out/summary.txt"
cmake --build $build -j"$(nproc)" --target moe_bench moe_grouped_tests ${MOE_EXTRA_TARGETS:-} \
  >"$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -n 30; exit 4; }
echo "== build done $(date +%T)" | tee -a "$out/summary.txt"
status=0
if [ "${MOE_SKIP_TESTS:-0}" != 1 ]; then
  MOE_REQUIRE_GPU=1 timeout 150 $build/bin/moe_grouped_tests >"$out/tests.log" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|OK \]|Failure|error:|Expected|Which is" "$out/tests.log" | head -40 | tee -a "$out/summary.txt"
fi
echo "== bench $(date +%T)" | tee -a "$out/summary.txt"
rd=/tmp/moe-routing && mkdir -p $rd
$build/bin/moe_bench --tokens "${MOE_BENCH_TOKENS:-1,4,8,32,64,128,256}" \
  --fmt "${MOE_BENCH_FMT:-bf16,fp8,nvfp4}" --shape "${MOE_BENCH_SHAPES:-glm5,dsv3}" \
  --sweep "${MOE_BENCH_SWEEP:-1}" --iters "${MOE_BENCH_ITERS:-20}" --routing-dir $rd --json "$out/ours.jsonl" 2>&1 | tee "$out/bench.log" || status=1
echo "== torch $(date +%T)" | tee -a "$out/summary.txt"
PYTHONUNBUFFERED=1 timeout 150 python3 bench/moe/moe_vs_torch.py --routing-dir $rd --ours "$out/ours.jsonl" \
  --shape "${MOE_BENCH_SHAPES:-glm5,dsv3}" --md "$out/table.md" 2>&1 | tee "$out/torch.log" || status=1
echo "== done $(date +%T), status $status" | tee -a "$out/summary.txt"
exit $status
