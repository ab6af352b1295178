#!/usr/bin/env bash
# Session 65 (carry [".deps"]). On an H200 (the issue's GPU; last measured there in session 41):
# issue 5's table against torch with a device build (bench/moe/run.sh, MOE_BENCH_PRESET=issue5,
# read flush, --phases 1, moe_grouped_tests first; ~6 min), then the unsharded decode coverage
# T 1..256 and prefill T 4096 / 8192, each only while the call's 600 s hold it. On an H100: the
# NARROW instance at T 7168 (224 per expert: where between 192 and 256 does it stop paying?) in
# sustained blocks both orders ("on-off": narrow on the command line, A; B/A = speed-up) and
# interleaved with EP8 at T 7168 / 8192, the default against --narrow 0 at T 5120 / 6144 (it
# should take narrow now: B/A > 1), then scripts/gpu-test.sh on the tree if time is left.
# Logs: $OUT/h200.log, $OUT/table/ (summary.txt, bench.log, torch.log, table.md) or gpu-test.out.
set -u
LOG=h200
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  P=build-gpu/bin/moe_bench
  gpu_build moe_bench || exit 1
  S="--iters 10 --sustain-ms 800 --ab-blocks 4"
  F="--fmt fp8 --shape glm5,dsv3 --tokens 7168 $S"
  TMO=40 run on-off-narrow $P $F --narrow 1 --ab "--narrow 0"
  TMO=40 run off-on-narrow $P $F --ab "--narrow 1"
  TMO=40 run default-vs-narrow0 $P --fmt fp8 --shape glm5,dsv3,glm5-ep8 --tokens 5120,6144 \
    --iters 10 --ab "--narrow 0"
  TMO=40 run interleaved-narrow $P --fmt fp8 --shape glm5,dsv3,glm5-ep8 --tokens 7168,8192 \
    --iters 10 --ab "--narrow 1"
  echo "== bench done $(date +%T) (${SECONDS}s)" >>"$L"
  [ -z "${NO_GT:-}" ] && [ "$SECONDS" -lt 200 ] && gpu_test  # NO_GT=1: skip it
  echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
  exit 0
fi
OUT=$o/table MOE_BENCH_PRESET=issue5 MOE_BENCH_FLUSH=read MOE_BENCH_PHASES=1 MOE_TORCH_TIMEOUT=150 \
  timeout 420 bash bench/moe/run.sh >"$o/run.out" 2>&1
echo "== table done $(date +%T) (${SECONDS}s)" >>"$L"
P=build-gpu/bin/moe_bench
[ "$SECONDS" -lt 500 ] && TMO=60 run decode-read $P --flush read --fmt nvfp4,fp8,bf16 \
  --shape glm5,dsv3 --tokens 1,2,4,8,16,32,64,128,256 --iters 20
[ "$SECONDS" -lt 540 ] && TMO=50 run prefill $P --phases 1 --fmt fp8,nvfp4,bf16 --shape glm5,dsv3 \
  --tokens 4096,8192 --iters 10
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
