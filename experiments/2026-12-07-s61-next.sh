#!/usr/bin/env bash
# The next session's first call (carry [".deps"]; ~480 s on an H100): scripts/gpu-test.sh on the
# tree (4ddd4b7's thresholds have not run it), then the device build's moe_bench where the
# thresholds moved (unsharded / EP8 FP8 from 20 tokens per expert, BF16 from 24: the column "wg"
# says the full launch), and on an H200 the same cells against the streaming launch
# (bench/moe/crossover.sh: does session 61's H100 ratio carry?); torch's whole layer against ours. Logs: $OUT/gpu-test.out,
# summary.txt, next.log. (crossover.sh's BASE=2: the streaming configuration, moe_bench --wg 2, as
# the baseline where the heuristic now takes the full launch.)
set -u
LOG=next
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
gpu_test
B=build-gpu/bin/moe_bench
TMO=60 run fp8 $B --fmt fp8 --shape glm5,glm5-ep8 --routing uniform,zipf1 --tokens 608,640,768 --iters 20
TMO=60 run bf16 $B --fmt bf16 --shape glm5,glm5-ep8 --tokens 736,768 --iters 20
# BF16's full launch with hot experts (hot8 T 1024 / 2048: 32 / 64 per expert): moe_launch's pairs
# + deferral against the old 256-thread kernel, both orders (python3 experiments/abtab.py next.log).
OFF="--bf16-tma 0 --bf16-ws 0 --bf16-defer 0"
H="--fmt bf16 --shape glm5,dsv3 --routing hot8,zipf1 --tokens 1024,2048 --iters 10"
TMO=60 run "off-on-pairsd" $B $H $OFF --ab "--bf16-tma 1 --bf16-ws 2 --bf16-defer 1"
TMO=60 run "on-off-pairsd" $B $H --ab "$OFF"
# torch's whole layer (moe_vs_torch.py --layer full: sort, gather, GEMMs, combine; first run of
# that mode) against ours and against torch's GEMMs alone, T 8192 and the EP8 T 768 row.
mkdir -p "$o/rd"
for f in bf16 fp8; do
  TMO=60 TAIL=4 run "ours-$f" $B --fmt $f --shape glm5-tp8,glm5,glm5-ep8 --tokens 768,8192 --iters 10 \
    --routing-dir "$o/rd" --json "$o/ours-$f.jsonl"
  for layer in gemms full; do
    TMO=150 TAIL=12 run "torch-$f-$layer" python3 bench/moe/moe_vs_torch.py --routing-dir "$o/rd" \
      --ours "$o/ours-$f.jsonl" --shape glm5-tp8,glm5,glm5-ep8 --iters 10 --layer $layer
  done
done
rm -rf "$o/rd"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  BASE=2 ROUNDS=2 SUSTAIN_MS=500 ITERS=20 OUT=$o/x TMO=120 TAIL=30 run xover-fp8 bash bench/moe/crossover.sh \
    $B --shape glm5,glm5-ep8 --fmt fp8 --tokens 512,640
  BASE=2 ROUNDS=2 SUSTAIN_MS=500 ITERS=20 OUT=$o/x TMO=80 TAIL=30 run xover-bf16 bash bench/moe/crossover.sh \
    $B --shape glm5,glm5-ep8 --fmt bf16 --tokens 640,768
  rm -rf "$o/x"
fi
echo "== done $(date +%T)" >>"$L"
