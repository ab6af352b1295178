# Sourced by the device scripts of experiments/ (session 50 on): the log $L under $OUT (name
# LOG, default the script's), MOE_SOURCE_DIR_OVERRIDE for binaries built here, the GPU's name,
# and run TAG CMD...: a header line, then CMD's output (less moe_bench's device / shape lines;
# its last TAIL lines, default 200) under a timeout of TMO seconds (default 90).
o=${OUT:-/tmp/out}
mkdir -p "$o"
L=$o/${LOG:-log}.log
export MOE_SOURCE_DIR_OVERRIDE=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader >>"$L"
run() {
  local tag=$1
  shift
  echo "== $tag $(date +%T): $*" >>"$L"
  timeout "${TMO:-90}" "$@" 2>&1 | grep -v "^device\|^shape\|^fp8 emul" | tail -n "${TAIL:-200}" >>"$L"
}
# gpu_test: scripts/gpu-test.sh on the tree with the usual targets, its output in $o/gpu-test.out
# and its status in $o/summary.txt (session 54 on).
gpu_test() {
  MOE_GPU_TARGETS="cuda_ops_tests cuda_model_tests moe_grouped_tests moengine moe_bench" \
    bash scripts/gpu-test.sh >"$o/gpu-test.out" 2>&1
  echo "gpu-test.sh rc=$?" >>"$o/summary.txt"
}
# gpu_build TARGET...: unpacks .deps, configures build-gpu/ (scripts/gpu-env.sh, as
# bench/moe/run.sh does) and builds TARGET...; output in $o/build.out (configure in
# $o/configure.log), the last 20 lines in $L on failure (session 65 on).
gpu_build() {
  # shellcheck source=scripts/gpu-env.sh
  source scripts/gpu-env.sh
  { moe_unpack_deps && moe_configure build-gpu "$o/configure.log" &&
    cmake --build build-gpu -j"$(nproc)" --target "$@"; } >"$o/build.out" 2>&1 ||
    { tail -n 20 "$o/build.out" >>"$L"; return 1; }
  echo "== built $* $(date +%T) (${SECONDS}s)" >>"$L"
}
