#!/usr/bin/env bash
# Session 62 (carry ["build-run/s62/pre"]: 88b953a's moe_bench and moe_grouped_tests built here,
# static cudart, sm_90a). First the GPU test 88b953a changed (GlmShapeSmallBatch on 8 experts, so
# it stays on the hybrid under the full launch's 20 / 24 thresholds; the rest of gpu-test.sh passed
# on this tree's kernels this session). Then, on an H200 only (the issue's GPU; last measured there
# in session 41): issue 5's table against torch (bench/moe/run.sh, MOE_BENCH_PRESET=issue5, read
# flush), the unsharded decode rows T 1..256 of every format, and torch's whole layer at prefill,
# each skipped when the call's 600 s would not hold it. Logs: $OUT/h200.log, summary.txt, bench.log,
# torch.log, table.md.
set -u
LOG=h200
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
P=build-run/s62/pre/bin
TMO=120 TAIL=30 run glm-small env MOE_REQUIRE_GPU=1 $P/moe_grouped_tests \
  --gtest_filter='MoeGroupedTest.GlmShapeSmallBatch:MoeGroupedTest.HybridSplitsExpertsByTokenCount'
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || exit 0
MOE_PREBUILT=build-run/s62/pre MOE_SKIP_TESTS=1 MOE_BENCH_PRESET=issue5 MOE_BENCH_FLUSH=read \
  MOE_TORCH_TIMEOUT=150 timeout 330 bash bench/moe/run.sh >"$o/run.out" 2>&1
echo "== table done $(date +%T) (${SECONDS}s)" >>"$L"
[ "$SECONDS" -lt 470 ] && TMO=80 run coverage-read $P/moe_bench --flush read --fmt nvfp4,fp8,bf16 \
  --shape glm5,dsv3 --tokens 1,2,4,8,16,32,64,128,256 --iters 20
if [ "$SECONDS" -lt 500 ]; then
  mkdir -p "$o/rd"
  TMO=40 TAIL=8 run ours-fp8 $P/moe_bench --fmt fp8,nvfp4 --shape glm5,dsv3 --tokens 4096,8192 \
    --iters 10 --routing-dir "$o/rd" --json "$o/ours-pf.jsonl"
  TMO=$((590 - SECONDS)) TAIL=12 run torch-full python3 bench/moe/moe_vs_torch.py --routing-dir "$o/rd" \
    --ours "$o/ours-pf.jsonl" --shape glm5,dsv3 --iters 10 --layer full
  rm -rf "$o/rd"
fi
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
