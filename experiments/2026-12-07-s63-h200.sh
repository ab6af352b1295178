#!/usr/bin/env bash
# A short H200 call (carry ["build-run/s62/xs"]; ~60 s): build-run/s62/xs's moe_bench with
# --x-scatter 1 (HEAD's default since 6aeb52b; the kernels are HEAD's), prefill with each kernel
# timed apart (--phases 1: the GEMMs' own TFLOP/s) and the decode coverage with a clean L2
# (--flush read), unsharded and sharded. Log: $OUT/h200.log.
set -u
LOG=h200
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
P=${P:-build-run/s62/xs/bin/moe_bench}  # (s63-next.sh: build-run/s63/xpad's)
TMO=60 TAIL=60 run prefill $P --x-scatter 1 --phases 1 --fmt fp8,nvfp4,bf16 --shape glm5,dsv3 \
  --tokens 4096,8192 --iters 10
TMO=60 TAIL=120 run decode $P --x-scatter 1 --flush read --fmt nvfp4,fp8,bf16 \
  --shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 1,2,4,8,32,64,128,256 --iters 20
TMO=30 TAIL=20 run hot $P --x-scatter 1 --phases 1 --fmt fp8 --shape glm5,glm5-ep8 --routing hot8 \
  --tokens 1024 --iters 10
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
